"""The sandbox's second tier, a user id of its own where namespaces are refused: its folders
(`SharedFolder`), the check that it can read nothing it must not (`check`), and the sweep of
its processes when it ends (docs/architecture.md, "The sandbox's tiers")."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.sandbox import interpreter, socket_filter
from cs336_harness.paths import REPO_ROOT

# What holds the oracle and the fixture generator in this copy: the worker must not read it.
PROTECTED = (REPO_ROOT / "cs336_staff",)
# The OOM killer's choice, from -1000 (never) to 1000 (first): the worker before the judge
# and the grader, whose death would cost the whole report. Raising it needs no privilege.
OOM_SCORE_ADJ = b"1000"


def setpriv(uid: int) -> list[str]:
    """The command prefix that drops to `uid` (and its group), with no capabilities."""
    return [
        "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
    ]  # fmt: skip


def raise_oom_score() -> None:
    """In the worker's forked child before exec: the OOM killer takes it first. One
    open/write/close, safe there."""
    fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
    try:
        os.write(fd, OOM_SCORE_ADJ)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class SharedFolder:
    """The folder the tier's workers read from and live in, outside the run's private work
    folder: `harness/` (the public harness code, readable by all), and per worker a copy of
    its submission (`source`, readable by its group only) and its home (its own)."""

    root: Path

    @classmethod
    def create(cls, harness: Path) -> SharedFolder:
        """Make the share with a copy of the harness package at `harness/cs336_harness`."""
        root = Path(tempfile.mkdtemp(prefix="cs336-grade-share-"))
        root.chmod(0o711)  # others may pass through, not list it
        shutil.copytree(harness / "cs336_harness", root / "harness" / "cs336_harness")
        _chmod_tree(root / "harness", directories=0o755, files=0o644)
        return cls(root)

    @property
    def harness(self) -> Path:
        return self.root / "harness"

    def source(self, uid: int, serial: int) -> Path:
        return self.root / f"source-{uid}-{serial}"

    def home(self, uid: int, serial: int) -> Path:
        return self.root / f"home-{uid}-{serial}"

    def prepare(self, submission: Path, serial: int, uid: int) -> tuple[Path, Path]:
        """A copy of `submission` only `uid`'s group can read (it cannot change it), and a
        home only `uid` can enter: (source, home)."""
        source, home = self.source(uid, serial), self.home(uid, serial)
        for path in (source, home):
            remove(path)
        shutil.copytree(submission, source, symlinks=True)
        _chmod_tree(source, directories=0o750, files=0o640, group=uid)
        home.mkdir(mode=0o700)
        os.chown(home, uid, uid)
        return source, home

    def remove(self) -> None:
        remove(self.root)


def _chmod_tree(root: Path, directories: int, files: int, group: int | None = None) -> None:
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        if group is not None:
            os.chown(path, 0, group)
        path.chmod(directories if path.is_dir() else files)


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(path)


def _living(uid: int) -> list[int]:
    """The processes whose real or effective user id is `uid`, zombies left out. Read from
    /proc/PID/status, which says the truth where the folder's owner may not (a process that
    makes itself undumpable has its /proc folder owned by root)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            status = Path(f"/proc/{entry.name}/status").read_text()
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            ids = fields["Uid"].split()
            if str(uid) in ids[:2] and not fields["State"].strip().startswith(("Z", "X")):
                found.append(int(entry.name))
    return found


def sweep(uid: int) -> None:
    """Kill every process of `uid`, whatever session or process group it made for itself,
    round after round until none is left: a process forked while a round ran is in the
    next (the user id's process limit bounds how many there can be)."""
    for _ in range(1000):
        living = _living(uid)
        if not living:
            return
        for pid in living:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# Run as the worker's user: whether it can run Python, import the harness, read what it must
# not, and open an internet socket. Prints one JSON line.
PROBE = """
import json, os, socket, subprocess, sys
readable = [p for p in sys.argv[1:] if os.access(p, os.R_OK)]
import cs336_harness
# Started as the submission's own code starts one (a spawned Pool, a subprocess), with no
# privilege left: setpriv's exec can reach an interpreter that this cannot.
subprocess.run([sys.executable, "-S", "-c", "pass"], check=True)
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()
    online = True
except PermissionError:
    online = False
print(json.dumps({"readable": readable, "online": online}))
"""


def check(
    share: SharedFolder,
    uid: int,
    python: str,
    site: tuple[str, ...],
    protected: list[Path],
    filtered: bool,
) -> None:
    """Start the worker's Python (`python`) as `uid` once, with the seccomp filter where
    `filtered`; a
    GraderError says what stops the tier: the interpreter it cannot run, the harness it
    cannot import, a protected path it can read, or a filter that lets a socket through."""
    network = socket_filter.compiled() if filtered else None
    home = share.home(uid, -1)
    remove(home)
    home.mkdir(mode=0o700)
    os.chown(home, uid, uid)
    command = [*setpriv(uid), python, *interpreter.FLAGS, "-c", PROBE]
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home), "LANG": "C.UTF-8"}
    try:
        done = subprocess.run(
            [*command, *map(str, protected)],
            capture_output=True,
            text=True,
            cwd=home,
            env=interpreter.environment([str(share.harness)], env, site),
            timeout=120,
            preexec_fn=None if network is None else network.install,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise GraderError(f"the worker's user cannot be started: {error}") from None
    finally:
        remove(home)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise GraderError(
            f"the worker's user (uid {uid}) cannot run {python} and import the "
            f"harness: {last}; every folder from / to the interpreter and site-packages must "
            "be open to other users (a Python under /root, mode 0700, is not)"
        )
    readable = json.loads(done.stdout)["readable"]
    if readable:
        raise GraderError(
            f"the worker's user (uid {uid}) could read {readable[0]}, which holds the "
            f"oracle or expected outputs: chmod -R o-rwx {readable[0]} (the autograder's "
            "setup.sh does), or grade where bubblewrap's namespaces work"
        )
    if filtered and json.loads(done.stdout)["online"]:
        raise GraderError(f"the worker's user (uid {uid}) could open an internet socket under "
                          "the seccomp filter")  # fmt: skip
