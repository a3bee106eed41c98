"""The sandbox the worker runs in: bubblewrap, an unprivileged user, and resource limits.

The worker (`worker.py`) is the only process that runs a submission's code. It is started
in `bwrap` (Debian's `bubblewrap`) with

- its own mount namespace holding only: the system's /usr (and the /bin, /lib links into
  it), the Python installation and its site-packages, read-only; the harness's worker
  code at /harness and the submission's copy at /submission, read-only; a private tmpfs at
  /tmp (its HOME and working directory), as large as the output limit; /proc and /dev.
  No fixtures, oracle, rubric, reports or other submissions exist in it;
- its own PID, network (loopback only, its own), IPC, UTS and cgroup namespaces, a session
  of its own, and death with its parent: every process it starts ends with it;
- an unprivileged user: when the grader runs as root, the worker drops to a user id of its
  own (`uid_base` + the grading lane) with no capabilities and `no_new_privs` (util-linux's
  `setpriv`); otherwise bwrap maps the grader's own user into a user namespace;
- the resource limits of `limits.Limits` (data memory, file size, CPU time, processes).

`--no-sandbox` starts the worker as a plain child process with the same limits, for hosts
without bubblewrap; every report then says so.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.limits import Limits, apply_rlimits

HARNESS_MOUNT = "/harness"
SUBMISSION_MOUNT = "/submission"
WORKER_MODULE = "cs336_harness.grading.worker"
# User ids of the workers when the grader is root: one per lane, so that the process limit
# and the kernel's same-user permissions never join two submissions. Debian keeps
# 64000–64999 for system use, out of the range handed to people's accounts.
UID_BASE = 64000
PR_SET_PDEATHSIG = 1
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) or pass --no-sandbox"
# The environment is rebuilt from nothing: no variable of the grader's reaches the worker.
ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "PYTHONHASHSEED": "0",
    # One intra-op thread: the tensors are tiny, and OpenMP's spinning threads slow down
    # badly when submissions are graded side by side on shared cores.
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def site_packages() -> list[str]:
    """Where the environment's packages are (torch, pytest, ...): on every import path."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def python_paths() -> list[str]:
    """The interpreter, its standard library and site-packages: what the worker reads."""
    candidates = [sys.prefix, sys.base_prefix, *site_packages()]
    unique = sorted({os.path.realpath(p) for p in candidates} | set(candidates))
    # Nested paths are covered by their parent's mount.
    return [p for p in unique if not any(p != q and p.startswith(q + "/") for q in unique)]


def _system_mounts() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        path = Path(name)
        if path.is_symlink():  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    return args


def _readable_parents(destinations: list[str]) -> list[str]:
    """`--dir` for every directory above the mount points, world-readable: bwrap would make
    them 0700, which the worker's unprivileged user could not enter."""
    parents = {str(p) for d in destinations for p in Path(d).parents if str(p) not in ("/", "/tmp")}
    args: list[str] = []
    for parent in sorted(parents, key=lambda p: (p.count("/"), p)):
        args += ["--perms", "0755", "--dir", parent]
    return args


def _set_parent_death_signal() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass(frozen=True)
class Sandbox:
    """How a worker is started. `enabled` False: `--no-sandbox`.

    `mounts` and `site` are read where the environment is known (the grader runs its own
    Python normally; the judge and the worker run with `-S`, which leaves a virtual
    environment's prefix and site-packages unknown to them)."""

    enabled: bool = True
    # Why the sandbox is off, for the reports.
    reason: str = "--no-sandbox"
    uid_base: int = UID_BASE
    mounts: tuple[str, ...] = field(default_factory=lambda: tuple(python_paths()))
    site: tuple[str, ...] = field(default_factory=lambda: tuple(site_packages()))

    @property
    def description(self) -> str:
        """What every report says about the worker's isolation."""
        if self.enabled:
            return "bubblewrap"
        return f"none ({self.reason}): submission code ran unconfined, as the grader's user"

    def _as_root(self) -> bool:
        return os.geteuid() == 0

    def command(self, harness: Path, submission: Path, lane: int, limits: Limits) -> list[str]:
        """The worker's command line; `harness` holds the `cs336_harness` package."""
        adapters = "tests/adapters.py"
        if not self.enabled:
            worker = [sys.executable, "-S", "-m", WORKER_MODULE, str(submission / adapters)]
            return worker
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise GraderError(f"the sandbox needs bwrap, which is not on PATH: {INSTALL_HINT}")
        binds = [(p, p) for p in self.mounts]
        binds += [
            (str(harness / "cs336_harness"), f"{HARNESS_MOUNT}/cs336_harness"),
            (str(submission), SUBMISSION_MOUNT),
        ]
        # The tmpfs first: a Python environment that lives under /tmp is mounted over it.
        command = [bwrap, "--size", str(limits.output), "--perms", "1777", "--tmpfs", "/tmp"]
        command += [*_system_mounts(), *_readable_parents([d for _, d in binds])]
        for source, dest in binds:
            command += ["--ro-bind", source, dest]
        command += [
            "--proc", "/proc",
            "--dev", "/dev",
            "--chdir", "/tmp",
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
        ]  # fmt: skip
        path = os.pathsep.join([HARNESS_MOUNT, *self.site])
        for name, value in (ENV | {"PYTHONPATH": path}).items():
            command += ["--setenv", name, value]
        if self._as_root():
            uid = str(self.uid_base + lane)
            command += [
                "--",
                "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs",
            ]  # fmt: skip
        else:
            command += ["--unshare-user", "--cap-drop", "ALL", "--"]
        return [
            *command,
            sys.executable,
            "-S",
            "-m",
            WORKER_MODULE,
            f"{SUBMISSION_MOUNT}/{adapters}",
        ]

    def environment(self, harness: Path) -> dict[str, str] | None:
        """The worker's environment outside the sandbox (inside, bwrap sets it)."""
        if self.enabled:
            return None
        return ENV | {"PYTHONPATH": os.pathsep.join([str(harness), *self.site])}

    def start(
        self, harness: Path, submission: Path, lane: int, limits: Limits, log: Path
    ) -> subprocess.Popen[bytes]:
        """Start a worker; its protocol is on the returned process's stdin and stdout."""
        rlimits = limits.rlimits(own_user=self.enabled and self._as_root())

        def prepare() -> None:
            apply_rlimits(rlimits)
            if not self.enabled:  # bwrap's --die-with-parent does this inside the sandbox
                _set_parent_death_signal()

        with log.open("ab") as stderr:
            return subprocess.Popen(
                self.command(harness, submission, lane, limits),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd="/tmp",
                env=self.environment(harness),
                start_new_session=True,
                preexec_fn=prepare,
            )


# What the worker must not find in site-packages: the reference implementation and the
# oracle. An editable install (uv's default) leaves only a path there, which is not mounted.
WITHHELD_FROM_WORKER = ("cs336_basics", "cs336_harness/oracle", "cs336_harness/fixturegen")


def check_sandbox(sandbox: Sandbox, harness: Path, limits: Limits) -> None:
    """Start the sandbox once with a trivial command; a GraderError names what failed."""
    if not sandbox.enabled:
        return
    exposed = [str(Path(site) / name) for site in sandbox.site for name in WITHHELD_FROM_WORKER
               if (Path(site) / name).exists()]  # fmt: skip
    if exposed:
        raise GraderError(
            f"the environment's site-packages hold {exposed[0]}, which the sandboxed worker "
            "would see: install this project editable (uv sync does)"
        )
    probe = harness.parent / "probe-submission"
    probe.mkdir(exist_ok=True)
    command = sandbox.command(harness, probe, 0, limits)
    # Everything up to the interpreter, then a Python that finds the harness and exits.
    command = [*command[: command.index(sys.executable)], sys.executable, "-S", "-c",
               "import cs336_harness"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd="/tmp")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise GraderError(f"the sandbox cannot be set up: {last}; {INSTALL_HINT}")
