"""A real Slurm 22.05 on this machine for the tests: munged, slurmctld and one slurmd per node, fake typed GPUs.

Everything lives in a fresh directory under /tmp whose parents are world-executable (munged checks every
directory above its socket); the ports are free ones picked at run time, so two runs (or a developer's own
cluster) never clash. Every daemon is stopped by its PID at the end. The node Prolog is the project's own
(optsched/adapters/slurm/prolog.sh), logging to `prolog_log`.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "mungekey")


def slurm_installed() -> bool:
    return all(shutil.which(d) or os.path.exists(f"/usr/sbin/{d}") for d in DAEMONS)


@dataclass(frozen=True)
class NodeSpec:
    name: str
    gpu_type: str
    gpus: int


DEFAULT_NODES = (NodeSpec("n1", "h100", 4), NodeSpec("n2", "a100", 4), NodeSpec("n3", "l4", 4), NodeSpec("n4", "l4", 4))


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _daemon(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


@dataclass
class LocalSlurm:
    nodes: tuple[NodeSpec, ...] = DEFAULT_NODES
    base: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="optsched-slurm-")))
    pids: list[int] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.base / "etc" / "slurm.conf"

    @property
    def prolog_log(self) -> Path:
        return self.base / "hookout" / "prolog.log"

    @property
    def out(self) -> Path:
        """A folder every job may write to (the job scripts' reports)."""
        return self.base / "jobout"

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def start(self) -> LocalSlurm:
        b = self.base
        for sub in ("etc", "state", "log", "run", "munge", "spool", "fakedev", "hookout", "jobout"):
            (b / sub).mkdir(parents=True, exist_ok=True)
        b.chmod(0o755)
        (b / "munge").chmod(0o755)
        for sub in ("hookout", "jobout"):
            (b / sub).chmod(0o777)
        for node in self.nodes:
            (b / "spool" / node.name).mkdir(exist_ok=True)
            (b / "fakedev" / node.name).mkdir(exist_ok=True)
            for i in range(node.gpus):
                (b / "fakedev" / node.name / f"nvidia{i}").symlink_to("/dev/null")
        key = b / "munge" / "munge.key"
        subprocess.run([_daemon("mungekey"), "-c", "-k", str(key)], check=True, capture_output=True)
        key.chmod(0o600)
        prolog = b / "etc" / "prolog.sh"
        prolog.write_bytes(resources.files("optsched.adapters.slurm").joinpath("prolog.sh").read_bytes())
        prolog.chmod(0o755)
        ctld_port, *node_ports = _free_ports(1 + len(self.nodes))
        self._write_conf(ctld_port, node_ports, prolog)

        subprocess.run(
            [
                _daemon("munged"),
                f"--key-file={key}",
                f"--socket={b}/munge/munge.socket",
                f"--pid-file={b}/run/munged.pid",
                f"--log-file={b}/log/munged.log",
                f"--seed-file={b}/munge/munged.seed",
            ],
            check=True,
            capture_output=True,
        )
        self.pids.append(self._read_pid(b / "run" / "munged.pid"))
        self._spawn([_daemon("slurmctld"), "-D", "-i", "-f", str(self.conf)], "slurmctld")
        self._wait(lambda: "UP" in self._ok(["scontrol", "ping"]), "slurmctld answering")
        for node in self.nodes:
            self._spawn([_daemon("slurmd"), "-D", "-f", str(self.conf), "-N", node.name], f"slurmd-{node.name}")
        self._wait(self.all_idle, "every node idle")
        return self

    def _write_conf(self, ctld_port: int, node_ports: list[int], prolog: Path) -> None:
        b = self.base
        lines = [
            "ClusterName=optschedtest",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            # The user running the tests (root here and in CI): Slurm's daemons need no other account.
            f"SlurmUser={getpass.getuser()}",
            f"SlurmdUser={getpass.getuser()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={b}/munge/munge.socket",
            f"StateSaveLocation={b}/state",
            f"SlurmdSpoolDir={b}/spool/%n",
            f"SlurmctldLogFile={b}/log/slurmctld.log",
            f"SlurmdLogFile={b}/log/slurmd-%n.log",
            f"SlurmctldPidFile={b}/run/slurmctld.pid",
            f"SlurmdPidFile={b}/run/slurmd-%n.pid",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SlurmdParameters=config_overrides",
            "GresTypes=gpu",
            "ReturnToService=2",
            "MpiDefault=none",
            "MailProg=/bin/true",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=bf_interval=1,sched_interval=1",
            "MinJobAge=86400",
            f"Prolog={prolog}",
            f"PlugStackConfig={b}/etc/plugstack.conf",
        ]
        for node, port in zip(self.nodes, node_ports, strict=True):
            lines.append(
                f"NodeName={node.name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=8 RealMemory=4000 "
                f"Gres=gpu:{node.gpu_type}:{node.gpus} Features={node.gpu_type}"
            )
        lines.append(
            f"PartitionName=gpu Nodes={','.join(n.name for n in self.nodes)} Default=YES MaxTime=INFINITE State=UP"
        )
        self.conf.write_text("\n".join(lines) + "\n")
        (b / "etc" / "plugstack.conf").write_text("")
        # The Prolog finds its log through this file beside slurm.conf (slurmd gives it no environment of ours).
        (b / "etc" / "optsched-prolog.conf").write_text(f"OPTSCHED_PROLOG_LOG={self.prolog_log}\n")
        gres = ["AutoDetect=off"] + [
            f"NodeName={n.name} Name=gpu Type={n.gpu_type} File={b}/fakedev/{n.name}/nvidia[0-{n.gpus - 1}]"
            for n in self.nodes
        ]
        (b / "etc" / "gres.conf").write_text("\n".join(gres) + "\n")

    def _spawn(self, argv: list[str], name: str) -> None:
        log = open(self.base / "log" / f"{name}.out", "wb")  # noqa: SIM115 - the daemon keeps it
        proc = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env, start_new_session=True
        )
        log.close()
        self.pids.append(proc.pid)

    def _ok(self, argv: list[str]) -> str:
        done = subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=10)
        return done.stdout if done.returncode == 0 else ""

    def all_idle(self) -> bool:
        states = self._ok(["sinfo", "-h", "-N", "-o", "%N %T"]).split("\n")
        return sum(line.endswith(" idle") for line in states) == len(self.nodes)

    def _wait(self, ready, what: str, timeout_s: float = 30.0) -> None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if ready():
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"local Slurm: no {what} after {timeout_s:g} s; logs in {self.base}/log")

    @staticmethod
    def _read_pid(path: Path) -> int:
        for _ in range(100):
            if path.exists() and path.read_text().strip():
                return int(path.read_text())
            time.sleep(0.05)
        raise RuntimeError(f"no pid file {path}")

    def scontrol(self, *args: str) -> str:
        return subprocess.run(
            ["scontrol", *args], capture_output=True, text=True, env=self.env, check=True, timeout=10
        ).stdout

    def sbatch(self, *args: str, script: str) -> str:
        """Submit `script` with these options; the job id."""
        done = subprocess.run(
            ["sbatch", "--parsable", *args],
            input=script,
            capture_output=True,
            text=True,
            env=self.env,
            check=True,
            timeout=10,
        )
        return done.stdout.strip().split(";")[0]

    def resume_all(self) -> None:
        """Every drained or down node back in service (resuming an idle one is an error Slurm reports: ignored)."""
        for node in self.nodes:
            subprocess.run(
                ["scontrol", "update", f"nodename={node.name}", "state=resume"],
                capture_output=True,
                env=self.env,
                timeout=10,
            )

    def cancel_all(self) -> None:
        """Cancel every job and wait until none runs."""
        subprocess.run(["scancel", "--full", "-p", "gpu"], capture_output=True, env=self.env, timeout=10)
        end = time.monotonic() + 20
        while self._ok(["squeue", "-h", "-t", "R,CG,PD", "-o", "%i"]).strip() and time.monotonic() < end:
            time.sleep(0.2)

    def stop(self) -> None:
        """Every daemon by its PID: the Slurm daemons first (they use munge while stopping), munged last."""
        if self.pids:
            self.cancel_all()
        slurm, munge = self.pids[1:], self.pids[:1]
        for group in (slurm, munge):
            for pid in group:
                _signal(pid, signal.SIGTERM)
            end = time.monotonic() + 10
            while any(_alive(p) for p in group) and time.monotonic() < end:
                time.sleep(0.05)
            for pid in group:
                if _alive(pid):
                    _signal(pid, signal.SIGKILL)
        self.pids.clear()
        shutil.rmtree(self.base, ignore_errors=True)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass  # munged is not our child (it daemonised)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
