"""The store and the solve queue an app uses, kept in `app.extensions` by create_app."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask, current_app

from optsched.infra.queue import SolveQueue
from optsched.infra.store import PlanStore

EXTENSION = "optsched"


@dataclass(frozen=True)
class Services:
    store: PlanStore
    queue: SolveQueue


def services(app: Flask | None = None) -> Services:
    return (app or current_app).extensions[EXTENSION]
