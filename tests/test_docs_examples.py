"""Every command and Python block in README.md and docs/ runs (the names and paths they cite: tests/test_names.py).

A fenced block's info string says what it is: `bash`, `sh`, `console` (the `$ ` lines are run, the rest is shown
output) and `python` are run; `bash {.server}` is the command that starts the REST service, which the test runs
itself on a free port and hands to the examples as `$OPTSCHED_URL`; `bash {.no-run}` (starts a long-running
service, installs system packages) and any other language (`text`, `json`, `ini`) are shown only and counted.
The blocks of one page run in order, in one sandbox folder that mirrors the repository through symbolic links,
with `.venv/bin` first on PATH, as a reader's shell after the start page's `export PATH`. Whatever a page writes
must be git-ignored (the sandbox is a git work tree with the repository's .gitignore), and the repository itself
must be left as it was.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
RUN = {"bash", "sh", "console", "python"}
SHOWN = {"text", "json", "ini", "http"}
# Shown-only commands are rare and each is justified beside it in the page; raising this is a decision.
MAX_NO_RUN = 6
BLOCK_TIMEOUT_S = 900
FENCE = re.compile(r"^(?P<fence>`{3,})(?P<info>[^`]*)$")
INFO = re.compile(r"[\w-]*( \{\.[\w-]+( \.[\w-]+)*\})?")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    flags: tuple[str, ...]
    text: str
    info: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.lang in RUN and not self.flags

    @property
    def kind(self) -> str:
        """run, server (the test starts it), no-run (a command shown only) or shown (not a command)."""
        if self.runs:
            return "run"
        if "server" in self.flags:
            return "server"
        return "no-run" if self.lang in RUN else "shown"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, with the line their fence opens on."""
    found: list[Block] = []
    opened: tuple[int, str, str] | None = None
    body: list[str] = []
    for number, line in enumerate(page.read_text().splitlines(), start=1):
        match = FENCE.match(line.strip()) if opened is None else None
        if opened is None and match:
            opened, body = (number, match["fence"], match["info"].strip()), []
        elif opened is not None and line.strip() == opened[1]:
            words = opened[2].split(maxsplit=1)
            flags = tuple(c.lstrip(".") for c in words[1].strip("{}").split()) if len(words) > 1 else ()
            found.append(Block(page, opened[0], words[0] if words else "", flags, "\n".join(body) + "\n", opened[2]))
            opened = None
        elif opened is not None:
            body.append(line)
    assert opened is None, f"{page}:{opened[0] if opened else 0}: unclosed fence"
    return found


def console_commands(text: str) -> str:
    """The commands of a console block: each `$ ` line with the lines its trailing backslashes continue."""
    commands: list[str] = []
    continuing = False
    for line in text.splitlines():
        if line.startswith("$ ") or continuing:
            commands.append(line[2:] if line.startswith("$ ") and not continuing else line)
            continuing = line.endswith("\\")
    return "\n".join(commands) + "\n"


def repository_state() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout


def sandbox(folder: Path) -> Path:
    """A git work tree that looks like the repository: symbolic links to its top-level entries and .venv, and a copy
    of its .gitignore (git does not follow a linked one)."""
    folder.mkdir()
    for entry in ROOT.iterdir():
        if entry.name == ".gitignore":
            shutil.copy(entry, folder / entry.name)
        elif entry.name != ".git":
            (folder / entry.name).symlink_to(entry)
    subprocess.run(["git", "init", "--quiet"], cwd=folder, check=True)
    return folder


def untracked(folder: Path) -> list[str]:
    """What git would offer to add in the sandbox, besides its links: whatever the examples wrote and no ignore rule
    (the repository's, or one a tool wrote beside its cache) covers."""
    links = {entry.name for entry in folder.iterdir() if entry.is_symlink()}
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "-z"], cwd=folder,
                            capture_output=True, text=True, check=True).stdout
    paths = [line[3:] for line in status.split("\0") if line]
    return [path for path in paths if path.split("/")[0] not in links and path != ".gitignore"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`optsched serve` on a free port in its own folder, as the `bash {.server}` blocks start it."""
    folder = tmp_path_factory.mktemp("docs-server")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "optsched"), "serve", "--port", str(port), "--workers", "2"],
        cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "OPTSCHED_DATABASE_URL": f"sqlite:///{folder}/optsched.db", "OPTSCHED_AUTH": "off"},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/readyz", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"optsched serve did not become ready: {process.stderr}") from None
                time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def run_block(block: Block, folder: Path, env: dict[str, str]) -> None:
    if block.lang == "python":
        command, script = [sys.executable, "-"], block.text
    else:
        script = console_commands(block.text) if block.lang == "console" else block.text
        command = ["bash", "-e", "-o", "pipefail", "-c", script]
        script = ""
    result = subprocess.run(command, cwd=folder, env=env, input=script, capture_output=True, text=True,
                            timeout=BLOCK_TIMEOUT_S, check=False)
    assert result.returncode == 0, (
        f"{block.where}: the {block.lang} block exits {result.returncode}\n--- block\n{block.text}"
        f"--- stdout\n{result.stdout[-3000:]}--- stderr\n{result.stderr[-3000:]}"
    )


def page_param(page: Path) -> object:
    relative = str(page.relative_to(ROOT))
    # Every page, the README too: its examples took 15.7 s of the fast tier's minute (measured 2026-12-02).
    marks = [pytest.mark.slow]
    return pytest.param(page, id=relative, marks=marks)


@pytest.fixture(scope="module")
def installed() -> None:
    """`make install` at the root first: a `make` target run in the sandbox must find nothing to install there."""
    subprocess.run(["make", "install"], cwd=ROOT, check=True, capture_output=True)


@pytest.mark.parametrize("page", [page_param(page) for page in PAGES if any(b.runs for b in blocks(page))])
def test_page_examples_run(page: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if re.search(r"^\s*make ", page.read_text(), re.MULTILINE):
        request.getfixturevalue("installed")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("OPTSCHED_DATABASE_URL", None)
    env.pop("OPTSCHED_QUEUE_URL", None)
    if "OPTSCHED_URL" in page.read_text():
        env["OPTSCHED_URL"] = request.getfixturevalue("server")
    folder = sandbox(tmp_path / "repo")
    before = repository_state()
    for block in blocks(page):
        if block.runs:
            run_block(block, folder, env)
    assert untracked(folder) == [], "the examples leave files git would track"
    assert repository_state() == before, "the examples changed the repository"


def test_every_block_says_what_it_is() -> None:
    """A block is run, starts the server, or is shown on purpose: nothing is left out silently."""
    counts: Counter[str] = Counter()
    for page in PAGES:
        for block in blocks(page):
            assert block.lang in RUN | SHOWN, f"{block.where}: info string {block.lang!r}: say what the block is"
            # The site's Markdown (pymdownx.superfences) takes a fence's flags only as classes: `bash {.no-run}`;
            # after `bash no-run` it saw no fence, and the page below it rendered as text.
            assert INFO.fullmatch(block.info), f"{block.where}: write flags as classes: bash {{.no-run}}"
            assert set(block.flags) <= {"no-run", "server"}, f"{block.where}: unknown flags {block.flags}"
            if "server" in block.flags:
                commands = [line.split("#")[0].strip() for line in block.text.splitlines() if line.strip()]
                assert all(c == "make serve" or c.startswith("optsched serve") for c in commands), block.where
            counts[block.kind] += 1
    print(f"docs blocks: {dict(counts)}")
    assert counts["run"] >= 20
    assert counts["no-run"] <= MAX_NO_RUN, f"{counts['no-run']} commands are shown but not run"


def test_console_commands_keep_their_continuations() -> None:
    text = "$ optsched plan a.json \\\n    -o b.json\nshown output\n$ echo done\n"
    assert shlex.split(console_commands(text).replace("\\\n", " ")) == [
        "optsched", "plan", "a.json", "-o", "b.json", "echo", "done"]


def test_sandbox_reports_only_what_git_would_track(tmp_path: Path) -> None:
    folder = sandbox(tmp_path / "repo")
    (folder / "plan.json").write_text("{}")
    (folder / "plans").mkdir()
    (folder / "plans" / "plan.json").write_text("{}")
    (folder / "cache").mkdir()
    (folder / "cache" / ".gitignore").write_text("*\n")
    assert untracked(folder) == ["plan.json"]
