"""A real SLURM cluster on this machine: Debian's slurmctld + slurmd + munge on localhost, one
node, with a configuration, ports, state, spool and log folders of its own (two users on one
machine never share them). The ``slurm_cluster`` fixture of tests/integration/test_slurm_cluster.py
and the store soak (.ci/soak.py) start it with :func:`running_cluster`.

It needs root (slurmd, munge) and the daemons, which it installs with apt where they are
missing (``.ci/run`` does this on a fresh machine); :class:`Unavailable` says why not.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

DEBIAN_PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
DAEMONS = ("slurmctld", "slurmd", "munged", "sbatch", "squeue", "sinfo")

SLURM_CONF = """\
ClusterName={name}
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
StateSaveLocation={state}
SlurmdSpoolDir={spool}
SlurmctldPidFile={run}/slurmctld.pid
SlurmdPidFile={run}/slurmd.pid
SlurmctldLogFile={run}/slurmctld.log
SlurmdLogFile={run}/slurmd.log
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem} State=UNKNOWN
PartitionName=cpu Nodes={host} Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes={host} MaxTime=INFINITE State=UP
"""


class Unavailable(Exception):
    """No cluster can be started here (not root, no daemons and no apt); the message says why."""


class ClusterDied(AssertionError):
    """A daemon of the cluster exited; the message holds the daemons' log tails."""


def have_daemons() -> bool:
    return all(shutil.which(d) or Path(f"/usr/sbin/{d}").exists() for d in DAEMONS)


def install() -> str | None:
    """Install the Debian packages; returns why not, or None when installed."""
    if os.geteuid() != 0:
        return "not root: cannot install or start a SLURM cluster"
    if not shutil.which("apt-get"):
        return "no apt-get to install slurmctld/slurmd/munge"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *DEBIAN_PACKAGES]):
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if out.returncode != 0:
            return f"{' '.join(cmd[:2])} failed: {(out.stderr or out.stdout).strip().splitlines()[-1:]}"
    return None


def sbin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A running single-node cluster: its folder, configuration and daemons, and a check that
    raises :class:`ClusterDied`, with the daemons' log tails, when a daemon died."""

    def __init__(self, root: Path, conf: Path, procs: list[subprocess.Popen]):
        self.root, self.conf, self.procs = root, conf, procs

    @property
    def env(self) -> dict[str, str]:
        """The caller's environment (its throwaway registry and store) with this cluster's SLURM_CONF."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def logs(self) -> str:
        return " | ".join(f"{f}: " + " ".join((self.root / "run" / f).read_text()[-600:].split())
                          for f in ("slurmctld.log", "slurmd.log") if (self.root / "run" / f).exists())

    def check(self) -> None:
        dead = [f"{Path(p.args[0]).name} (exit {p.returncode})" for p in self.procs if p.poll() is not None]
        if dead:
            raise ClusterDied(f"SLURM daemon(s) died: {', '.join(dead)}; logs: {self.logs()}")

    def wait(self, done, timeout: float, poll: float = 1.0):
        """Poll ``done()`` until it returns a true value; raise at once if a daemon dies."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.check()
            value = done()
            if value:
                return value
            time.sleep(poll)
        self.check()
        return done()

    def queued(self) -> list[str]:
        """The ids of this cluster's jobs still queued or running."""
        out = subprocess.run(["squeue", "-h", "-o", "%i"], env=self.env, capture_output=True, text=True, timeout=30)
        return out.stdout.split() if out.returncode == 0 else []

    def drain(self, timeout: float = 60) -> None:
        """Cancel what is left of this cluster's jobs and wait until the queue is empty: a job step
        that cannot report its end to a stopped slurmd leaves its slurmstepd behind."""
        if self.queued():
            subprocess.run(["scancel", *self.queued()], env=self.env, capture_output=True, timeout=30)
        deadline = time.time() + timeout
        while self.queued() and time.time() < deadline:
            time.sleep(0.5)
        time.sleep(1)  # the last step's slurmstepd reports its end


@contextlib.contextmanager
def running_cluster(root: Path) -> Iterator[Cluster]:
    """A cluster in the empty folder ``root`` until the block ends (its jobs cancelled and waited
    out, its daemons stopped). :class:`Unavailable` where none can be started,
    :class:`ClusterDied` where the node never becomes idle."""
    if os.geteuid() != 0:
        raise Unavailable("a local SLURM cluster needs root (slurmd, munge)")
    if not have_daemons():
        why = install()
        if why or not have_daemons():
            raise Unavailable(f"no SLURM daemons: {why or 'installed packages lack them'}")
    for d in ("state", "spool", "run"):
        (root / d).mkdir()
    host = socket.gethostname().split(".")[0]
    mem = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 * 0.8)
    conf = root / "slurm.conf"
    conf.write_text(SLURM_CONF.format(host=host, state=root / "state", spool=root / "spool", run=root / "run",
                                      cpus=os.cpu_count(), mem=mem, name=f"pubench{os.getpid()}",
                                      ctld_port=free_port(), slurmd_port=free_port()))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    if subprocess.run(["pgrep", "-x", "munged"], capture_output=True).returncode != 0:
        Path("/run/munge").mkdir(parents=True, exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        subprocess.run(["su", "-s", "/bin/sh", "munge", "-c", f"{sbin('munged')}"], check=True)
    procs = [subprocess.Popen([sbin("slurmctld"), "-D", "-i", "-f", str(conf)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen([sbin("slurmd"), "-D", "-f", str(conf)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    cluster = Cluster(root, conf, procs)

    def idle():
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True, timeout=30)
        return out.stdout.strip().startswith("idle")

    try:
        if not cluster.wait(idle, 60, poll=0.5):
            raise ClusterDied(f"the SLURM node never became idle; logs: {cluster.logs()}")
        yield cluster
    finally:
        cluster.drain()
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
