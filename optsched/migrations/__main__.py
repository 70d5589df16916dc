from optsched.migrations import main

main()
