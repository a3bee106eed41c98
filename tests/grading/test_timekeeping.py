"""The time charged to a submission: CPU time under wall-clock caps."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from cs336_harness.cost.cpu import process_tree_cpu_seconds
from cs336_harness.grading.sandbox.timekeeping import CallClock, Timeout


class Counter:
    """A CPU counter the test moves by hand."""

    def __init__(self):
        self.seconds = 10.0

    def __call__(self) -> float:
        return self.seconds


def _clock(counter: Counter, cpu: float, wall: float) -> CallClock:
    return CallClock(counter, cpu, wall, "out of CPU", "out of wall-clock time")


def test_a_call_is_stopped_by_its_cpu_time_however_little_wall_time_passed():
    counter = Counter()
    clock = _clock(counter, cpu=2.0, wall=60.0)
    assert 0 < clock.remaining() <= 0.1  # short slices: the counter is read again soon
    counter.seconds += 1.9
    clock.remaining()
    counter.seconds += 0.2
    with pytest.raises(Timeout, match="out of CPU") as raised:
        clock.remaining()
    assert not raised.value.wall_clock
    assert clock.used() == pytest.approx(2.1)


def test_a_call_that_uses_no_cpu_is_stopped_by_the_wall_clock():
    counter = Counter()
    clock = _clock(counter, cpu=2.0, wall=0.2)
    time.sleep(0.25)
    with pytest.raises(Timeout, match="out of wall-clock time") as raised:
        clock.remaining()
    assert raised.value.wall_clock


def test_the_last_reading_is_kept_once_the_counter_is_gone():
    counter = Counter()
    clock = _clock(counter, cpu=5.0, wall=60.0)
    counter.seconds += 1.5
    assert clock.used() == pytest.approx(1.5)

    def gone() -> float:
        raise FileNotFoundError("the worker's group was removed")

    clock.cpu_seconds = gone
    assert clock.used() == pytest.approx(1.5)


def test_the_process_tree_counts_children_and_grandchildren():
    spin = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass"
    nested = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {spin!r}])\n{spin}"
    parent = subprocess.Popen([sys.executable, "-c", f"{nested}\nimport time; time.sleep(5)"])
    try:
        deadline = time.monotonic() + 20
        while process_tree_cpu_seconds(parent.pid) < 0.75 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert process_tree_cpu_seconds(parent.pid) >= 0.75  # 0.4 s each, less rounding
    finally:
        parent.kill()
        parent.wait()


# A "judge" that keeps orphans (`cost.cpu.keep_orphans`), starts a "worker" whose work runs
# in a daemon (a double fork: its parent exits, so it leaves the worker's tree), and prints
# what its process tree counted, with and without keeping orphans.
ESCAPE = """
import os, subprocess, sys, time
from cs336_harness.cost import cpu
kept = cpu.keep_orphans() if sys.argv[1] == "keep" else False
spin = "import time\\nend = time.process_time() + 0.5\\nwhile time.process_time() < end: pass"
daemon = f"import os\\nif os.fork() == 0:\\n    os.setsid()\\n    exec({spin!r})\\n"
before = cpu.process_tree_cpu_seconds(os.getpid(), own=False)
subprocess.run([sys.executable, "-c", daemon])
time.sleep(1.5)  # the daemon spins and exits, unreaped: a zombie below the subreaper
print(kept, cpu.process_tree_cpu_seconds(os.getpid(), own=False) - before)
"""


def test_a_daemon_that_leaves_the_worker_is_counted_by_a_judge_that_keeps_orphans():
    """What a call ran counts though it left the call's process tree (an efficiency test's
    measure cannot be dodged so), where no cgroup counts it: its orphans come to the judge."""
    counted = {}
    for mode in ("keep", "let go"):
        done = subprocess.run(
            [sys.executable, "-c", ESCAPE, mode], capture_output=True, text=True, check=True
        )
        kept, seconds = done.stdout.split()
        counted[mode] = (kept, float(seconds))
    assert counted["keep"][0] == "True" and counted["keep"][1] >= 0.45
    assert counted["let go"][1] < 0.1  # init reaps it: the tree alone loses it
