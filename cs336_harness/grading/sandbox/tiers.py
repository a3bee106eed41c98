"""The sandbox the worker runs in: its tiers (bubblewrap, a user of its own, none), `choose`
taking the strongest the host allows, `check_sandbox` trying it once, and `Sandbox` starting
a worker in it (docs/architecture.md, "The sandbox's tiers")."""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cs336_harness.cost.cpu import orphans_kept, process_tree_cpu_seconds
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.sandbox import (
    cgroups,
    interpreter,
    shared_temp,
    socket_filter,
    user_tier,
)
from cs336_harness.grading.sandbox.cgroups import Cgroups, WorkerGroup
from cs336_harness.grading.sandbox.interpreter import COURSE_PACKAGES, python_paths, site_packages
from cs336_harness.grading.sandbox.limits import Limits, apply_rlimits

HARNESS_MOUNT = "/harness"
# Inside the private /tmp, the folder bound as the worker's /dev/shm.
SHM_DIR = ".shm"
SUBMISSION_MOUNT = "/submission"
WORKER_MODULE = "cs336_harness.grading.worker.process"
# User ids of the workers when the grader is root: one per grading of a submission, so that
# the process limit and the kernel's same-user permissions never join two submissions, nor
# what one left behind the next one graded in its lane. Each is drawn at random from
# [2^20, 2^31), above the ranges handed to people's accounts and to containers' subordinate
# ids: two graders on one host, or in two containers sharing a kernel, do not share one, so
# neither a process limit (counted per user across the host) nor a kill of every process of
# a user reaches from one into the other.
UID_FIRST, UID_END = 1 << 20, 1 << 31


def draw_uid(taken: Collection[int] = ()) -> int:
    """A worker's user id, none of `taken` (this run's)."""
    while (uid := UID_FIRST + secrets.randbelow(UID_END - UID_FIRST)) in taken:
        pass
    return uid


PR_SET_PDEATHSIG = 1
# unshare(2) and mount(2) flags, for the private /tmp (os.unshare is Python 3.12+ only).
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000
_LIBC = ctypes.CDLL(None, use_errno=True)
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) or pass --no-sandbox"
# The tiers, strongest first (`Sandbox.kind`), and the choice of the strongest that works.
BUBBLEWRAP, USER, NONE = "bubblewrap", "user", "none"
AUTO = "auto"
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
# Who the sandboxed worker says it is. Its user id has no entry in any passwd file it can
# see (there is no /etc), so getpass.getuser() must find a name here: torch 2.11's
# `import torch._dynamo` asks for one (the user's compile cache directory), and without it
# no worker could start, which scored every submission 0.
IDENTITY = {"USER": "cs336-worker", "LOGNAME": "cs336-worker"}


def own_python_paths() -> tuple[str, ...]:
    """The grader's interpreter, its standard library and site-packages."""
    return python_paths(sys.prefix, sys.base_prefix, tuple(site_packages()))


def _cpu_count(cpus: int) -> dict[str, str]:
    """What the worker's os.cpu_count() answers: Python 3.13 reads PYTHON_CPU_COUNT itself,
    and the worker sets os.cpu_count from it on older ones (`worker/process.py`'s
    `count_cpus`). Without it, a Pool sized by os.cpu_count() starts a process per host CPU
    in a lane that has one."""
    return {"PYTHON_CPU_COUNT": str(cpus)}


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


def _namespaces_refused() -> str:
    """Why this host refuses bubblewrap's namespaces (a forked child tries a mount namespace
    and says how it failed), or "": the reason a container's EPERM would otherwise hide."""
    flags = CLONE_NEWNS if os.geteuid() == 0 else CLONE_NEWUSER | CLONE_NEWNS
    pid = os.fork()
    if pid == 0:
        code = 0 if _LIBC.unshare(flags) == 0 else ctypes.get_errno() or 255
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    number = os.waitstatus_to_exitcode(status)
    if number == 0:
        return ""
    return (
        f"this host refuses a mount namespace (unshare: {os.strerror(number)}), as a "
        "container without CAP_SYS_ADMIN does"
    )


def _set_parent_death_signal() -> None:
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _check(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def mount_private_tmp(directory: str, limits: Limits) -> None:
    """In a new mount namespace, mount a tmpfs bounded in bytes and in files on `directory`,
    for bwrap to bind as /tmp. bwrap's own `--tmpfs` takes a size but no file count, and 100,000
    empty files cost the kernel ~330 MiB. Runs in the forked child before exec (only system
    calls); the mount exists in no other namespace and ends with the worker's last process."""
    options = f"size={limits.output},nr_inodes={limits.files},mode=1777".encode()
    _check(_LIBC.unshare(CLONE_NEWNS), "unshare")
    _check(_LIBC.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    _check(_LIBC.mount(b"tmpfs", directory.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options),
           "mount tmpfs")  # fmt: skip
    # The worker's /dev/shm (POSIX semaphores and shared memory: multiprocessing's locks and
    # pools) lives in the same tmpfs, within the same bounds. os.mkdir and os.chmod are
    # single system calls, safe here.
    os.mkdir(f"{directory}/{SHM_DIR}")
    os.chmod(f"{directory}/{SHM_DIR}", 0o1777)


@dataclass
class Worker:
    """A started worker: its process (its protocol on stdin and stdout), its cgroup where
    there is one, and the host directory its private /tmp is mounted on."""

    process: subprocess.Popen[bytes]
    group: WorkerGroup | None = None
    tmp: Path | None = None
    # The user tier: the worker's user id, the folders made for it (its source, its home),
    # and what bounds it in the host's shared temp folders.
    uid: int | None = None
    folders: tuple[Path, ...] = ()
    watch: shared_temp.Watch | None = None

    def cpu_seconds(self) -> float:
        """CPU time of everything the worker ran so far: its cgroup's counter, or else its
        process tree; in the judge, which keeps what its workers orphan (`cost.cpu.
        keep_orphans`), every process below the judge, so that a daemon that left the
        worker's tree is still counted."""
        if self.group is not None:
            return self.group.cpu_seconds()
        if orphans_kept():
            return process_tree_cpu_seconds(os.getpid(), own=False)
        return process_tree_cpu_seconds(self.process.pid)

    def oom_kills(self) -> int:
        return self.group.oom_kills() if self.group is not None else 0

    def peak_memory(self) -> int:
        return self.group.peak_memory() if self.group is not None else 0

    def overfilled(self) -> str:
        """Why it holds too much in the shared temp folders (the user tier), or ""."""
        return self.watch.exceeded() if self.watch is not None else ""

    def release(self) -> None:
        """After the process has ended: end whatever its user id still runs, remove its
        group, its /tmp's mount point and its folders."""
        if self.uid is not None:
            user_tier.sweep(self.uid)
            shared_temp.remove_owned(self.uid)
        if self.group is not None:
            self.group.remove()
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                self.tmp.rmdir()
        for folder in self.folders:
            user_tier.remove(folder)


@dataclass(frozen=True)
class Sandbox:
    """How a worker is started: `kind` is its tier, BUBBLEWRAP, USER (a user of its own
    without namespaces, `user_tier`; `share` its shared folder) or NONE.

    `python` is the worker's interpreter (the course's environment, `course_env`), `mounts`
    and `site` what it reads and its site-packages: read where the environment is known (the
    grader runs its own Python normally; the judge and the worker run with `-S`, which
    leaves a virtual environment's prefix and site-packages unknown to them)."""

    kind: str = BUBBLEWRAP
    # Why a weaker tier than bubblewrap, for the reports.
    reason: str = "--no-sandbox"
    python: str = sys.executable
    mounts: tuple[str, ...] = field(default_factory=own_python_paths)
    site: tuple[str, ...] = field(default_factory=lambda: tuple(site_packages()))
    share: str = ""
    # The course's packages by name, for the worker's message about a module it lacks.
    offered: tuple[str, ...] = ()
    # The user tier: why its seccomp filter (`socket_filter`) cannot be had here; "": it is.
    no_filter: str = ""

    @property
    def description(self) -> str:
        """What every report says about the worker's isolation."""
        if self.kind == BUBBLEWRAP:
            return "bubblewrap"
        if self.kind == USER:
            network = (
                f"no network isolation (no seccomp filter: {self.no_filter})"
                if self.no_filter
                else "no socket but Unix ones (a seccomp filter)"
            )
            return (
                f"user isolation ({self.reason}): a user id of its own, without namespaces; "
                f"{network}"
            )
        return f"none ({self.reason}): submission code ran unconfined, as the grader's user"

    @property
    def confined(self) -> bool:
        return self.kind != NONE

    def _as_root(self) -> bool:
        return os.geteuid() == 0

    @property
    def private_tmp(self) -> bool:
        """Whether /tmp is the file-bounded tmpfs of `mount_private_tmp` (needs root)."""
        return self.kind == BUBBLEWRAP and self._as_root()

    def command(
        self,
        harness: Path,
        submission: Path,
        uid: int,
        limits: Limits,
        tmp: Path | None = None,
        worker_args: tuple[str, ...] = (),
        cpus: int = 1,
    ) -> list[str]:
        """The worker's command line; `harness` holds the `cs336_harness` package, `uid` is
        the user id it runs as when the grader is root, `tmp` the private tmpfs to bind as
        /tmp (else bwrap makes one bounded in bytes only), `worker_args` follow the adapters'
        path, `cpus` is what its os.cpu_count() says."""
        adapters = "tests/adapters.py"
        worker = interpreter.command(WORKER_MODULE, python=self.python)
        if self.kind == NONE:
            return [*worker, str(submission / adapters), *worker_args]
        if self.kind == USER:
            return [*user_tier.setpriv(uid), *worker, str(submission / adapters), *worker_args]
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise GraderError(f"the sandbox needs bwrap, which is not on PATH: {INSTALL_HINT}")
        binds = [(p, p) for p in self.mounts]
        binds += [
            (str(harness / "cs336_harness"), f"{HARNESS_MOUNT}/cs336_harness"),
            (str(submission), SUBMISSION_MOUNT),
        ]
        # The tmpfs first: a Python environment that lives under /tmp is mounted over it.
        if tmp is not None:
            command = [bwrap, "--bind", str(tmp), "/tmp"]
            shm = ["--bind", str(tmp / SHM_DIR), "/dev/shm"]
        else:
            command = [bwrap, "--size", str(limits.output), "--perms", "1777", "--tmpfs", "/tmp"]
            shm = ["--size", str(limits.output), "--perms", "1777", "--tmpfs", "/dev/shm"]
        command += [*_system_mounts(), *_readable_parents([d for _, d in binds])]
        for source, dest in binds:
            command += ["--ro-bind", source, dest]
        command += [
            "--proc", "/proc",
            "--dev", "/dev",
            *shm,
            "--chdir", "/tmp",
            "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
        ]  # fmt: skip
        env = ENV | IDENTITY | _cpu_count(cpus) | self._course()
        for name, value in interpreter.environment([HARNESS_MOUNT], env, self.site).items():
            command += ["--setenv", name, value]
        if self._as_root():
            command += [
                "--",
                "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs",
            ]  # fmt: skip
        else:
            command += ["--unshare-user", "--cap-drop", "ALL", "--"]
        return [*command, *worker, f"{SUBMISSION_MOUNT}/{adapters}", *worker_args]

    def _course(self) -> dict[str, str]:
        return {COURSE_PACKAGES: ",".join(self.offered)} if self.offered else {}

    def environment(self, harness: Path, home: Path, cpus: int = 1) -> dict[str, str] | None:
        """The worker's environment outside bubblewrap (inside, bwrap sets it), `home` its
        private home, temp and working directory."""
        if self.kind == BUBBLEWRAP:
            return None
        private = {"HOME": str(home), "TMPDIR": str(home)} | _cpu_count(cpus) | self._course()
        if self.kind == USER:
            share = user_tier.SharedFolder(Path(self.share))
            return interpreter.environment(
                [str(share.harness)], ENV | IDENTITY | private, self.site
            )
        return interpreter.environment([str(harness)], ENV | private, self.site)

    def start(
        self,
        harness: Path,
        submission: Path,
        lane: int,
        limits: Limits,
        log: Path,
        groups: Cgroups | None = None,
        serial: int = 0,
        worker_args: tuple[str, ...] = (),
        cpus: int = 1,
        uid: int = UID_FIRST,
    ) -> Worker:
        """Start a worker (the `serial`-th of its lane's submission, as `uid` when the grader
        is root); its protocol is on the process's stdin and stdout. Its /tmp's mount point
        is made beside `log`."""
        rlimits = limits.rlimits(own_user=self.confined and self._as_root())
        group = groups.worker(lane, serial) if groups is not None and groups.enabled else None
        if group is not None:
            group.create(limits.memory, limits.processes)
        procs = group.procs_files() if group is not None else []
        tmp = log.parent / f"worker-tmp-{serial}" if self.private_tmp else None
        if tmp is not None:
            tmp.mkdir(exist_ok=True)
        folders: tuple[Path, ...] = ()
        # Compiled here: the forked child only installs it.
        network = socket_filter.compiled() if self.kind == USER and not self.no_filter else None
        if self.kind == USER:  # a copy its group may read, and a home of its own
            share = user_tier.SharedFolder(Path(self.share))
            submission, home = folders = share.prepare(submission, serial, uid)
            paths = (*shared_temp.SHARED, home)
            watch = shared_temp.Watch(uid, paths, limits.output, limits.files)
        else:  # unconfined, its working directory is one of its own, not the host's /tmp
            home = log.parent / f"worker-home-{serial}"
            if self.kind == NONE:
                home.mkdir(mode=0o700, exist_ok=True)

        def prepare() -> None:
            cgroups.join(procs)
            apply_rlimits(rlimits)
            if tmp is not None:
                mount_private_tmp(str(tmp), limits)
            if self.kind != BUBBLEWRAP:  # bwrap's --die-with-parent does this inside it
                _set_parent_death_signal()
            if self.kind == USER:
                user_tier.raise_oom_score()
            if network is not None:
                network.install()

        with log.open("ab") as stderr:
            process = subprocess.Popen(
                self.command(harness, submission, uid, limits, tmp, worker_args, cpus),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd="/tmp" if self.kind == BUBBLEWRAP else home,
                env=self.environment(harness, home, cpus),
                start_new_session=True,
                preexec_fn=prepare,
            )
        if self.kind != USER:
            return Worker(process, group, tmp)
        return Worker(process, group, tmp, uid, folders, watch)


# What the worker must not find in site-packages: the reference implementation and the
# oracle. An editable install (uv's default) leaves only a path there, which is not mounted.
WITHHELD_FROM_WORKER = ("cs336_basics", "cs336_staff")


def check_sandbox(
    sandbox: Sandbox, harness: Path, limits: Limits, protected: tuple[Path, ...] = ()
) -> None:
    """Start the sandbox once with a trivial command; a GraderError names what failed.
    `harness` is the bundle's trusted folder, which the worker must not read, nor (in the
    user tier, where only file permissions keep it out) the `protected` paths: where the
    run's inputs and expected outputs came from."""
    if sandbox.kind == NONE:
        return
    if sandbox.kind == USER:
        candidates = (*user_tier.PROTECTED, harness.parent, *protected)
        hidden = [p for p in candidates if p.exists()]
        share = user_tier.SharedFolder(Path(sandbox.share))
        filtered = not sandbox.no_filter
        user_tier.check(share, draw_uid(), sandbox.python, sandbox.site, hidden, filtered)
        return
    refused = _namespaces_refused()
    if refused:
        raise GraderError(f"the sandbox cannot be set up: {refused}")
    # The site-packages on its path, and those mounted for it to read (a course's view
    # links into the grader's own).
    sites = {*sandbox.site, *(str(p) for m in sandbox.mounts
                              for p in Path(m).glob("lib/python3*/site-packages"))}  # fmt: skip
    exposed = [str(Path(site) / name) for site in sorted(sites) for name in WITHHELD_FROM_WORKER
               if (Path(site) / name).exists()]  # fmt: skip
    if exposed:
        raise GraderError(
            f"the environment's site-packages hold {exposed[0]}, which the sandboxed worker "
            "would see: install this project editable (uv sync does)"
        )
    probe = harness.parent / "probe-submission"
    probe.mkdir(exist_ok=True)
    tmp = harness.parent / "probe-tmp" if sandbox.private_tmp else None
    if tmp is not None:
        tmp.mkdir(exist_ok=True)
    command = sandbox.command(harness, probe, draw_uid(), limits, tmp)
    # Everything up to the interpreter, then a Python that finds the harness and exits.
    command = [*command[: command.index(sandbox.python)], sandbox.python, *interpreter.FLAGS,
               "-c", "import cs336_harness"]  # fmt: skip
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            cwd="/tmp",
            preexec_fn=None if tmp is None else lambda: mount_private_tmp(str(tmp), limits),
        )
    except subprocess.SubprocessError as error:  # the private /tmp could not be mounted
        raise GraderError(f"the sandbox's /tmp cannot be set up: {error}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise GraderError(f"the sandbox cannot be set up: {last}; {INSTALL_HINT}")


def choose(
    wanted: str,
    harness: Path,
    limits: Limits,
    protected: tuple[Path, ...],
    self_check: bool,
    note: Callable[[str], None],
    **runs_in: Any,
) -> Sandbox:
    """The strongest tier `wanted` allows that works here, checked: bubblewrap, else (as
    root) a user of its own without namespaces, each running the worker as `runs_in` says
    (`python`, `mounts`, `site`: the course's environment).
    `harness` is the bundle's trusted folder, `protected` what else the user tier's worker
    must not read. The self-check grades this checkout's own code, which needs no
    confinement: without either tier it runs unconfined, and `note` says so."""
    if wanted == NONE:
        return Sandbox(kind=NONE, **runs_in)
    refusals = []
    if wanted in (AUTO, BUBBLEWRAP):
        sandbox = Sandbox(**runs_in)
        try:
            check_sandbox(sandbox, harness, limits, protected)
            return sandbox
        except GraderError as error:
            refusals.append(str(error))
    if wanted in (AUTO, USER) and os.geteuid() == 0:
        share = user_tier.SharedFolder.create(harness)
        reason = "--sandbox user" if wanted == USER else "namespaces refused here"
        no_filter = socket_filter.unavailable()
        sandbox = Sandbox(
            kind=USER, reason=reason, share=str(share.root), no_filter=no_filter, **runs_in
        )
        try:
            check_sandbox(sandbox, harness, limits, protected)
            if refusals:
                note(f"note: {refusals[0]}; the user tier confines it")
            return sandbox
        except GraderError as error:
            share.remove()
            refusals.append(f"the user tier: {error}")
    elif wanted == USER:
        refusals.append("the user tier needs root")
    if not self_check or wanted != AUTO:
        raise GraderError("; ".join(refusals))
    note(f"note: {refusals[0]}; grading this checkout's own code unconfined")
    return Sandbox(kind=NONE, reason="this checkout's own code; no sandbox works here", **runs_in)
