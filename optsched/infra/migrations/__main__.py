from optsched.infra.migrations import main

main()
