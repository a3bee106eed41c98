"""When the host, not the submission, failed: the container's memory read from its own
cgroup (`container.py`), and a judge run that stopped before its first test or lost a
process to the container's memory (`grader._host_failure`). Nothing is graded here."""

from __future__ import annotations

from pathlib import Path

import pytest

from cs336_harness.grading.grader import _host_failure
from cs336_harness.grading.judge.record import RunRecord
from cs336_harness.grading.sandbox import container

SETTING = "(Gradescope: the assignment's Autograder settings, container memory)"


@pytest.fixture
def cgroup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A container's cgroup files as cgroup v1 lays them out, this process in /box."""
    (tmp_path / "memory" / "box").mkdir(parents=True)
    (tmp_path / "self").write_text("4:memory:/box\n3:pids:/box\n")
    monkeypatch.setattr(container, "ROOT", tmp_path)
    monkeypatch.setattr(container, "SELF", tmp_path / "self")
    return tmp_path / "memory" / "box"


def test_the_container_memory_and_its_kills_are_read_from_its_own_cgroup(cgroup: Path):
    (cgroup / "memory.limit_in_bytes").write_text(f"{768 << 20}\n")
    (cgroup / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert (container.memory_limit(), container.oom_kills()) == (768 << 20, 2)
    (cgroup / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "none"
    assert container.memory_limit() is None


def test_a_judge_that_stops_before_its_first_test_is_the_hosts_failure(cgroup: Path):
    (cgroup / "memory.limit_in_bytes").write_text(f"{768 << 20}\n")
    assert _host_failure(RunRecord(started=0), -9, killed=0) == (
        "not graded: the judge stopped before its first test (it was killed by SIGKILL; if for "
        f"memory, the container's memory limit (768 MiB) is too small to grade: raise it {SETTING})"
    )
    assert _host_failure(RunRecord(started=0), None, killed=0).startswith(
        "not graded: the judge stopped before its first test (it stopped answering;"
    )
    # Once a test began, the submission's code may have run: its verdicts stand.
    assert _host_failure(RunRecord(started=1), -9, killed=0) == ""
    assert _host_failure(RunRecord(started=0), 1, killed=0) == ""  # tests failed: pytest's 1
    assert _host_failure(RunRecord(started=5), 1, killed=1) == (
        "not graded: the kernel stopped 1 process(es) for memory: the container's memory limit "
        f"(768 MiB) is too small to grade: raise it {SETTING}"
    )
