"""Control groups, on cgroup v1 or v2: one per grading lane for CPU, one per worker for memory,
processes and CPU time (docs/architecture.md, "Control groups")."""

from __future__ import annotations

import contextlib
import errno
import functools
import math
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
OWN_GROUPS = Path("/proc/self/cgroup")
V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")
V2_CONTROLLERS = ("memory", "pids", "cpu")
# A run's tree is named after its grader's process id.
PREFIX = "cs336-grade-"
# What a host without cgroups does not bound, for the reports and the terminal.
WITHOUT = (
    "memory is bounded per process (RLIMIT_DATA), not for the worker's process tree, shared "
    "memory or kernel objects; CPU is shared by affinity, not by weight"
)


@dataclass(frozen=True)
class Cgroups:
    """The grading run's cgroup tree: `dirs` maps each controller to its base directory
    (several controllers may share one, and under v2 all do). Empty `dirs`: none could be
    made, for the reason in `unavailable`."""

    version: int = 0
    dirs: tuple[tuple[str, str], ...] = ()
    unavailable: str = ""

    @property
    def enabled(self) -> bool:
        return bool(self.dirs)

    @property
    def description(self) -> str:
        """One line for every report."""
        if self.enabled:
            return f"cgroup v{self.version}: memory, processes and CPU per worker"
        return f"no cgroups ({self.unavailable}): {WITHOUT}"

    def _bases(self) -> list[Path]:
        return list(dict.fromkeys(Path(d) for _, d in self.dirs))

    def _base(self, controller: str) -> Path:
        return Path(dict(self.dirs)[controller])

    def lane(self, lane: int) -> list[Path]:
        return [base / f"lane-{lane}" for base in self._bases()]

    def judge(self, lane: int) -> list[Path]:
        return [directory / "judge" for directory in self.lane(lane)]

    def worker(self, lane: int, serial: int) -> WorkerGroup:
        return WorkerGroup(self, tuple(str(d / f"worker-{serial}") for d in self.lane(lane)))

    # -- the grader's part: the tree and the lanes -------------------------------------

    def make_lanes(self, lanes: int) -> None:
        """Create a group per lane with equal CPU weight, and its judge's group."""
        for lane in range(lanes):
            for directory in self.lane(lane):
                directory.mkdir(exist_ok=True)
                if self.version == 2:
                    _enable(directory, ("memory", "pids"))
            for directory in self.judge(lane):
                directory.mkdir(exist_ok=True)

    def remove(self) -> None:
        """Kill whatever is left in the tree and remove it, deepest groups first."""
        for base in self._bases():
            _remove_tree(base)

    def to_dict(self) -> dict[str, object]:
        return {"version": self.version, "dirs": [list(p) for p in self.dirs]}

    @classmethod
    def from_dict(cls, data: dict[str, object] | None) -> Cgroups:
        if not data:
            return cls(unavailable="not set up")
        dirs = tuple((str(c), str(d)) for c, d in data.get("dirs", []))  # type: ignore[union-attr]
        return cls(version=int(data.get("version", 0)), dirs=dirs)  # type: ignore[arg-type]


@dataclass(frozen=True)
class WorkerGroup:
    """One worker's groups (one directory per hierarchy)."""

    cgroups: Cgroups
    dirs: tuple[str, ...]

    def _file(self, controller: str, name: str) -> Path:
        base = self.cgroups._base(controller)
        directory = next(Path(d) for d in self.dirs if Path(d).parent.parent == base)
        return directory / name

    def create(self, memory: int, processes: int) -> None:
        """Make the groups and set their limits (0: no memory limit)."""
        for directory in self.dirs:
            Path(directory).mkdir(exist_ok=True)
        if self.cgroups.version == 1:
            if memory:
                _write(self._file("memory", "memory.limit_in_bytes"), memory)
                # Where swap is accounted, the same limit on memory + swap: no escape to swap.
                with contextlib.suppress(FileNotFoundError):
                    _write(self._file("memory", "memory.memsw.limit_in_bytes"), memory)
        else:
            if memory:
                _write(self._file("memory", "memory.max"), memory)
                with contextlib.suppress(FileNotFoundError):
                    _write(self._file("memory", "memory.swap.max"), 0)
                # One process out of memory ends the whole worker, not a random part of it.
                with contextlib.suppress(FileNotFoundError):
                    _write(self._file("memory", "memory.oom.group"), 1)
        _write(self._file("pids", "pids.max"), processes)

    def procs_files(self) -> list[str]:
        """The `cgroup.procs` files a process writes "0" to, to join this worker's groups."""
        return [str(Path(d) / "cgroup.procs") for d in self.dirs]

    @functools.cached_property
    def _cpu_counter(self) -> str:
        if self.cgroups.version == 1:
            return str(self._file("cpuacct", "cpuacct.usage"))
        return str(self._file("cpu", "cpu.stat"))

    def cpu_seconds(self) -> float:
        """CPU time used by every process the worker ever ran, reaped ones included. Read
        with a system call or two: the judge asks ten times a second, and about ten times a
        call."""
        fd = os.open(self._cpu_counter, os.O_RDONLY)
        try:
            text = os.read(fd, 4096).decode()
        finally:
            os.close(fd)
        if self.cgroups.version == 1:
            return int(text) / 1e9
        return _pairs(text).get("usage_usec", 0) / 1e6

    def oom_kills(self) -> int:
        """How often the kernel killed a process of the group for passing its memory limit."""
        name = "memory.oom_control" if self.cgroups.version == 1 else "memory.events"
        try:
            return _keyed(self._file("memory", name)).get("oom_kill", 0)
        except OSError:
            return 0

    def peak_memory(self) -> int:
        """The most memory the group held at once, in bytes (0 where the kernel can't say)."""
        name = "memory.max_usage_in_bytes" if self.cgroups.version == 1 else "memory.peak"
        try:
            return int(self._file("memory", name).read_text())
        except (OSError, ValueError):
            return 0

    def remove(self) -> None:
        for directory in self.dirs:
            _remove_tree(Path(directory))


def join(procs_files: list[str]) -> None:
    """Move the calling process into groups. Runs in a forked child before exec (a
    `preexec_fn`): only open/write/close, which take no lock another thread could hold."""
    for path in procs_files:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)


def _write(path: Path, value: int) -> None:
    path.write_text(str(value))


def _keyed(path: Path) -> dict[str, int]:
    return _pairs(path.read_text())


def _pairs(text: str) -> dict[str, int]:
    """`name value` lines, as in cpu.stat, memory.events and memory.oom_control."""
    pairs = (line.split() for line in text.splitlines())
    return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].lstrip("-").isdigit()}


def _enable(directory: Path, controllers: tuple[str, ...]) -> None:
    """v2: hand `controllers` to the children of `directory`."""
    (directory / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in controllers))


def _kill_members(directory: Path) -> None:
    kill = directory / "cgroup.kill"  # v2, Linux 5.14 and later: the whole subtree at once
    if kill.exists():
        with contextlib.suppress(OSError):
            kill.write_text("1")
        return
    with contextlib.suppress(OSError):
        for pid in (directory / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(pid), signal.SIGKILL)


def _remove_tree(root: Path) -> None:
    if not root.is_dir():
        return
    groups = sorted((Path(d) for d, _, _ in os.walk(root)), key=lambda p: -len(p.parts))
    for directory in groups:
        for attempt in range(50):  # killed processes take a moment to leave their group
            try:
                directory.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError as error:
                if error.errno != errno.EBUSY:
                    break
                _kill_members(directory)
                time.sleep(0.01 * (attempt + 1))


# -- finding the hierarchies ---------------------------------------------------------------


# (filesystem type, mount point, root within the hierarchy, super options)
Mount = tuple[str, str, str, set[str]]


def _mounts() -> list[Mount]:
    found = []
    for line in MOUNTINFO.read_text().splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")
        fstype, options = fields[dash + 1], set(fields[dash + 3].split(","))
        if fstype in ("cgroup", "cgroup2"):
            found.append((fstype, _unescape(fields[4]), _unescape(fields[3]), options))
    return found


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    for code in ("040", "011", "012", "134"):
        field = field.replace(f"\\{code}", chr(int(code, 8)))
    return field


def _own_paths() -> dict[str, str]:
    """This process's group in each hierarchy: controller name (or "" for v2) → path."""
    paths: dict[str, str] = {}
    for line in OWN_GROUPS.read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _inside(mount_point: str, mount_root: str, path: str) -> Path:
    """The directory of group `path` in a hierarchy mounted at `mount_point`."""
    relative = os.path.relpath(path, mount_root)
    if relative.startswith(".."):  # our group is above what this mount shows
        return Path(mount_point)
    return Path(mount_point) / relative


def _v2_candidate(mounts: list[Mount], own: dict[str, str]) -> tuple[dict[str, Path], str]:
    for fstype, point, _, _ in mounts:
        if fstype != "cgroup2":
            continue
        try:
            available = set((Path(point) / "cgroup.controllers").read_text().split())
        except OSError:
            continue
        missing = [c for c in V2_CONTROLLERS if c not in available]
        if not missing:
            return {c: Path(point) for c in V2_CONTROLLERS}, ""
        if available:
            return {}, f"cgroup v2 lacks the {', '.join(missing)} controller"
    return {}, ""


def _v1_candidate(mounts: list[Mount], own: dict[str, str]) -> tuple[dict[str, Path], str]:
    parents: dict[str, Path] = {}
    for controller in V1_CONTROLLERS:
        mount = next((m for m in mounts if m[0] == "cgroup" and controller in m[3]), None)
        if mount is None:
            return {}, f"no cgroup v1 {controller} controller is mounted"
        parents[controller] = _inside(mount[1], mount[2], own.get(controller, "/"))
    return parents, ""


def _remove_stale(parent: Path) -> None:
    """Remove the trees of earlier runs whose grader is gone (killed with SIGKILL, say).
    "Gone" is judged in this PID namespace: graders sharing one hierarchy must share it."""
    for tree in parent.glob(f"{PREFIX}[0-9]*"):
        pid = tree.name.removeprefix(PREFIX)
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _remove_tree(tree)


def set_up(lanes: int, name: str | None = None) -> Cgroups:
    """The run's tree with a group per lane, or an empty `Cgroups` saying why not."""
    name = name or f"{PREFIX}{os.getpid()}"
    try:
        mounts, own = _mounts(), _own_paths()
    except OSError as error:
        return Cgroups(unavailable=f"cannot read the cgroup mounts: {error.strerror}")
    reasons = []
    for version, candidate in ((2, _v2_candidate), (1, _v1_candidate)):
        parents, reason = candidate(mounts, own)
        if reason:
            reasons.append(reason)
        if not parents:
            continue
        cgroups = Cgroups(version, tuple((c, str(p / name)) for c, p in parents.items()))
        try:
            for parent in set(parents.values()):
                _remove_stale(parent)
            if version == 2:
                _enable(next(iter(parents.values())), V2_CONTROLLERS)
            for base in cgroups._bases():
                base.mkdir()
            if version == 2:
                _enable(cgroups._bases()[0], V2_CONTROLLERS)
            cgroups.make_lanes(lanes)
        except OSError as error:
            cgroups.remove()
            reasons.append(f"cannot create cgroup v{version} groups: {error.strerror}")
            continue
        return cgroups
    return Cgroups(unavailable="; ".join(reasons) or "no cgroup hierarchy is mounted")


def cpu_quota() -> float | None:
    """How many CPUs' worth of time this process's cgroup and its ancestors allow (a
    container's `--cpus`, Gradescope's half a vCPU), or None where nothing caps it."""
    try:
        mounts, own = _mounts(), _own_paths()
    except OSError:
        return None
    quotas = []
    for fstype, point, root, options in mounts:
        if fstype == "cgroup2":
            files, group = ("cpu.max",), own.get("", "/")
        elif "cpu" in options:
            files, group = ("cpu.cfs_quota_us", "cpu.cfs_period_us"), own.get("cpu", "/")
        else:
            continue
        directory = _inside(point, root, group)
        while directory.is_relative_to(point):
            with contextlib.suppress(OSError, ValueError):
                words = " ".join((directory / f).read_text() for f in files).split()
                if words[0] not in ("max", "-1"):
                    quotas.append(int(words[0]) / int(words[1]))
            if directory == Path(point):
                break
            directory = directory.parent
    return min(quotas, default=None)


# The fewest CPUs a lane's os.cpu_count() says. Every machine a student runs on has two or
# more, and Gradescope's container says its host's count whatever its quota, so a real
# trainer that sizes its pool `cpu_count() - 1` (one public solution does) would fail only
# here with one. A second process costs a lane nothing it is judged on: CPU time, not wall
# time, is charged, and a pool's start cancels out of the efficiency test.
MIN_CPU_COUNT = 2


def lane_cpu_count(lane: int, lanes: int, weighted: bool) -> int:
    """The CPUs a lane's worker may count on (what its `os.cpu_count()` says): its share of
    the ones this process may use (`weighted`: lanes share them all by cgroup weight; else
    each is pinned to `lane_cpus`), within the CPU time its container allows, and never
    fewer than `MIN_CPU_COUNT`."""
    share = len(os.sched_getaffinity(0)) // lanes if weighted else len(lane_cpus(lane, lanes))
    quota = cpu_quota()
    if quota is not None:
        share = min(share, math.ceil(quota / lanes))
    return max(MIN_CPU_COUNT, share)


def lane_cpus(lane: int, lanes: int) -> set[int]:
    """Without cgroups, the CPUs a lane is pinned to: a share of the ones this process may
    use, so that a busy submission slows only the lanes that share its CPUs."""
    cpus = sorted(os.sched_getaffinity(0))
    if lanes <= len(cpus):
        return set(cpus[lane::lanes])
    return {cpus[lane % len(cpus)]}
