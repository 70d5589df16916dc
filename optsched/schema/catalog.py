"""The device catalog shipped in models/devices/ (installed as the package optsched.catalog)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any


@lru_cache(maxsize=1)
def device_catalog() -> dict[str, dict[str, Any]]:
    """Model name -> {power_levels, memory_gb, idle_w, ...}, merged from every catalog file."""
    catalog: dict[str, dict[str, Any]] = {}
    folder = resources.files("optsched.catalog").joinpath("devices")
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".json"):
            catalog.update(json.loads(entry.read_text(encoding="utf-8"))["models"])
    return catalog


def catalog_entry(model: str) -> dict[str, Any] | None:
    return device_catalog().get(model)


def sample_workload_path(name: str) -> Any:
    """A sample workload shipped in models/workloads/ (a Traversable usable with open())."""
    return resources.files("optsched.catalog").joinpath("workloads", f"{name}.json")
