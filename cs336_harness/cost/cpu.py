"""CPU time of a process and of every process it started, read from /proc: the instrument
where no cgroup counts a worker's processes (locally, or a grader without cgroups).

/proc counts in clock ticks (a hundredth of a second); a process's own time is read more
finely by `time.process_time`, which `call_cpu_seconds` adds to its descendants'."""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37


def _tree(root: int) -> tuple[dict[int, list[int]], dict[int, tuple[float, float]]]:
    """Each process's children, and its (own, reaped children's) CPU seconds."""
    children: dict[int, list[int]] = {}
    times: dict[int, tuple[float, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it exited while we looked
            continue
        # The command name is in parentheses and may hold spaces: split after the last ")".
        fields = stat[stat.rindex(")") + 2 :].split()
        pid, parent = int(entry.name), int(fields[1])
        children.setdefault(parent, []).append(pid)
        own = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        times[pid] = (own, (int(fields[13]) + int(fields[14])) / CLOCK_TICKS)
    return children, times


def process_tree_cpu_seconds(root: int, own: bool = True) -> float:
    """User and system time of `root` and its live descendants (zombies included), with
    what each reaped (a pool's workers once joined). `own`: False leaves out `root`'s own
    time, keeping what it reaped."""
    children, times = _tree(root)
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        mine, reaped = times.get(pid, (0.0, 0.0))
        total += reaped + (mine if own or pid != root else 0.0)
        stack.extend(children.get(pid, []))
    return total


def call_cpu_seconds() -> float:
    """This process's CPU time, read finely, with that of every process below it."""
    return time.process_time() + process_tree_cpu_seconds(os.getpid(), own=False)


def keep_orphans() -> bool:
    """Make this process the subreaper of everything it starts (Linux 3.4+): a process
    orphaned below it, a daemon's double fork, is reparented here rather than to init, and
    stays in this process's tree, its CPU time readable, until this process reaps it or
    ends. Whether the kernel agreed."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1) == 0


def orphans_kept() -> bool:
    """Whether this process is a subreaper (`keep_orphans`)."""
    flag = ctypes.c_int(0)
    return _prctl(PR_GET_CHILD_SUBREAPER, ctypes.addressof(flag)) == 0 and flag.value != 0


def _prctl(option: int, argument: int) -> int:
    return ctypes.CDLL(None, use_errno=True).prctl(option, ctypes.c_ulong(argument), 0, 0, 0)
