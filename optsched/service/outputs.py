"""The night's output directory: timeline.json, segments.csv, summary.json, gantt.png, power.png.

Written into a temporary directory beside the target, then swapped in with renames (an atomic exchange
on Linux), so an interrupted run leaves either the old complete directory or the new complete one.
"""

from __future__ import annotations

import csv
import ctypes
import ctypes.util
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optsched.schema.night import NightPlan

SEGMENT_COLUMNS = (
    "job",
    "priority",
    "segment",
    "from_hours",
    "to_hours",
    "from",
    "to",
    "device",
    "count",
    "devices",
    "cap_w",
    "speed",
    "speedup",
    "work_hours",
    "restart",
)


def segments_csv(plan: NightPlan) -> str:
    """One row per job x device group x segment."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SEGMENT_COLUMNS)
    for job in plan.jobs:
        for k, s in enumerate(job.segments):
            for a in s.allocations:
                writer.writerow(
                    [
                        job.job,
                        job.priority,
                        k,
                        repr(s.from_hours),
                        repr(s.to_hours),
                        s.from_,
                        s.to,
                        a.device,
                        len(a.devices),
                        " ".join(str(i) for i in a.devices),
                        repr(a.cap_w),
                        repr(a.speed),
                        repr(s.speedup),
                        repr(s.work_hours),
                        "yes" if s.restart else "no",
                    ]
                )
    return out.getvalue()


def _json(document: Any) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def night_files(plan: NightPlan) -> dict[str, Callable[[], bytes]]:
    """File name -> a function producing its bytes (charts are drawn only when written)."""
    from optsched.charts import gantt_png, power_png

    return {
        "timeline.json": lambda: _json(plan.timeline_document()),
        "segments.csv": lambda: segments_csv(plan).encode("utf-8"),
        "summary.json": lambda: _json(plan.summary.model_dump(mode="json")),
        "gantt.png": lambda: gantt_png(plan),
        "power.png": lambda: power_png(plan),
    }


# Written into every output directory: only a directory holding it is ever replaced (or deleted) by a later run.
MARKER = ".optsched-night"
MARKER_TEXT = b"Written by `optsched night --out`; the next run with this --out replaces this whole directory.\n"


class OutputRefused(OSError):
    """`--out` names something a run must not replace: `.`, `..`, a symlink, or a directory it did not write."""


def check_output_dir(out: Path) -> None:
    """OutputRefused unless `out` may be replaced as a whole: it does not exist yet, or it is a real directory
    (not a symlink) that an earlier run wrote (it holds MARKER), and it is neither `.`, `..` nor an ancestor of
    the working directory. Checked before anything is written."""
    out = Path(out)
    if out.name in ("", ".", "..") or Path(os.path.abspath(out)) in (Path.cwd(), *Path.cwd().parents):
        raise OutputRefused(f"{out} is the working directory or one of its parents; name a new directory for --out")
    if out.is_symlink():
        raise OutputRefused(f"{out} is a symbolic link; name a directory itself for --out")
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out} exists and is not a directory")
    if out.is_dir() and not (out / MARKER).is_file():
        raise OutputRefused(
            f"{out} exists and was not written by optsched night (no {MARKER} in it); it is replaced as a whole, "
            "so name a new directory for --out, or remove this one yourself"
        )


def write_night_outputs(plan: NightPlan, out: Path, writer: Callable[[Path, bytes], None] | None = None) -> None:
    """Write every output into a fresh directory beside `out`, then swap it in; on any error `out` is untouched
    and nothing temporary is left. Refused (OutputRefused) when `out` is not ours to replace: check_output_dir."""
    out = Path(out)
    check_output_dir(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(out)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-{os.getpid()}-", dir=out.parent))
    try:
        os.chmod(tmp, 0o755)  # mkdtemp's 0700 would make the published directory private
        (tmp / MARKER).write_bytes(MARKER_TEXT)
        for name, produce in night_files(plan).items():
            (writer or _write_file)(tmp / name, produce())
        _fsync_dir(tmp)
        _swap_in(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _swap_in(new: Path, out: Path) -> None:
    """Put `new` at `out`: atomically exchanged with an existing directory when the OS can, else rename aside first."""
    if not out.exists():
        os.rename(new, out)
    elif _exchange(new, out):
        shutil.rmtree(new)  # `new` now holds the old outputs
    else:
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-{os.getpid()}-", dir=out.parent))
        os.rename(out, old / out.name)
        os.rename(new, out)
        shutil.rmtree(old)
    _fsync_dir(out.parent)


def _exchange(a: Path, b: Path) -> bool:
    """renameat2(RENAME_EXCHANGE): swap two paths in one step (Linux >= 3.15, glibc >= 2.28); False if unavailable."""
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return bool(rc == 0)


def _remove_stale(out: Path) -> None:
    """Temporary directories left by runs that were killed (their process is gone)."""
    for stale in out.parent.glob(f".{out.name}.tmp-*"):
        pid = stale.name[len(f".{out.name}.tmp-") :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    for stale in out.parent.glob(f".{out.name}.old-*"):
        pid = stale.name[len(f".{out.name}.old-") :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            if not out.exists() and (stale / out.name).is_dir():
                os.rename(stale / out.name, out)  # killed between the two renames: the old outputs come back
            shutil.rmtree(stale, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
