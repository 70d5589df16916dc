"""`python -m optsched.service.migrate <alembic command>`: Alembic's command line (`revision --autogenerate -m
"what changed"`, `history`, `upgrade head`, ...) against the store at OPTSCHED_DATABASE_URL."""

from __future__ import annotations

from optsched.infra.migrations import main
from optsched.service.settings import Settings

if __name__ == "__main__":
    main(Settings().DATABASE_URL)
