"""Finding and using the cgroup hierarchies: v1 and v2 layouts on a fake /sys/fs/cgroup,
and the real one where this host lets the tests write to it (root, as in CI)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cs336_harness.grading.sandbox import cgroups

V1_MOUNTINFO = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / {root}/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / {root}/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / {root}/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / {root}/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / {root}/unified rw,relatime - cgroup2 cgroup2 rw
"""
V1_OWN = "8:pids:/\n4:memory:/jobs/42\n2:cpuacct:/\n1:cpu:/\n0::/\n"
V2_MOUNTINFO = "30 23 0:26 / {root} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
V2_OWN = "0::/user.slice/session-1.scope\n"


def _fake_host(tmp_path: Path, monkeypatch, mountinfo: str, own: str) -> Path:
    root = tmp_path / "cgroup"
    root.mkdir()
    (tmp_path / "mountinfo").write_text(mountinfo.format(root=root))
    (tmp_path / "own").write_text(own)
    monkeypatch.setattr(cgroups, "MOUNTINFO", tmp_path / "mountinfo")
    monkeypatch.setattr(cgroups, "OWN_GROUPS", tmp_path / "own")
    return root


def test_v1_groups_go_under_the_graders_own_group_in_each_hierarchy(tmp_path, monkeypatch):
    root = _fake_host(tmp_path, monkeypatch, V1_MOUNTINFO, V1_OWN)
    for controller in ("cpu", "cpuacct", "pids", "memory/jobs/42"):
        (root / controller).mkdir(parents=True)
    groups = cgroups.set_up(2, name="run")
    assert groups.version == 1
    assert dict(groups.dirs) == {
        "memory": str(root / "memory/jobs/42/run"),
        "pids": str(root / "pids/run"),
        "cpu": str(root / "cpu/run"),
        "cpuacct": str(root / "cpuacct/run"),
    }
    assert (root / "cpu/run/lane-1/judge").is_dir()
    worker = groups.worker(1, 3)
    worker.create(memory=1 << 30, processes=64)
    memory = root / "memory/jobs/42/run/lane-1/worker-3"
    assert (memory / "memory.limit_in_bytes").read_text() == str(1 << 30)
    assert (root / "pids/run/lane-1/worker-3/pids.max").read_text() == "64"
    assert str(memory / "cgroup.procs") in worker.procs_files()
    (root / "cpuacct/run/lane-1/worker-3/cpuacct.usage").write_text("2500000000\n")
    assert worker.cpu_seconds() == 2.5


def test_v2_groups_go_at_the_root_with_controllers_handed_down(tmp_path, monkeypatch):
    root = _fake_host(tmp_path, monkeypatch, V2_MOUNTINFO, V2_OWN)
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    groups = cgroups.set_up(1, name="run")
    assert groups.version == 2
    assert {d for _, d in groups.dirs} == {str(root / "run")}
    assert (root / "run" / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    assert (root / "run/lane-0/cgroup.subtree_control").read_text() == "+memory +pids"
    worker = groups.worker(0, 0)
    worker.create(memory=1 << 30, processes=64)
    directory = root / "run/lane-0/worker-0"
    assert (directory / "memory.max").read_text() == str(1 << 30)
    assert worker.procs_files() == [str(directory / "cgroup.procs")]
    (directory / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\n")
    (directory / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
    assert worker.cpu_seconds() == 1.5
    assert worker.oom_kills() == 1


def test_trees_of_graders_that_are_gone_are_removed(tmp_path, monkeypatch):
    root = _fake_host(tmp_path, monkeypatch, V2_MOUNTINFO, V2_OWN)
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    gone, alive = root / "cs336-grade-999999999" / "lane-0", root / f"cs336-grade-{os.getpid()}"
    gone.mkdir(parents=True)
    alive.mkdir()
    cgroups.set_up(1, name="run")
    assert not gone.parent.exists()
    assert alive.exists()


def test_a_v2_hierarchy_without_controllers_falls_back_to_v1(tmp_path, monkeypatch):
    """Hybrid hosts mount an empty v2 hierarchy beside the v1 controllers."""
    root = _fake_host(tmp_path, monkeypatch, V1_MOUNTINFO, V1_OWN)
    (root / "unified").mkdir()
    (root / "unified" / "cgroup.controllers").write_text("")
    for controller in ("cpu", "cpuacct", "pids", "memory/jobs/42"):
        (root / controller).mkdir(parents=True)
    assert cgroups.set_up(1, name="run").version == 1


def test_no_writable_hierarchy_says_what_is_not_bounded(tmp_path, monkeypatch):
    _fake_host(tmp_path, monkeypatch, V2_MOUNTINFO, V2_OWN)  # no cgroup.controllers
    groups = cgroups.set_up(1, name="run")
    assert not groups.enabled
    assert "no cgroups (no cgroup v1 memory controller is mounted)" in groups.description
    assert "not for the worker's process tree" in groups.description
    assert groups.judge(0) == []  # lanes join nothing


def test_lanes_share_the_cpus_out_when_there_are_no_cgroups(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert [cgroups.lane_cpus(i, 2) for i in range(2)] == [{0, 2}, {1, 3}]
    assert [cgroups.lane_cpus(i, 6) for i in range(6)] == [{0}, {1}, {2}, {3}, {0}, {1}]


def test_a_lane_says_two_cpus_at_least(monkeypatch):
    """A pool sized `os.cpu_count() - 1` (a public solution's) has a process in every lane:
    at half a vCPU, and with more lanes than CPUs."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(cgroups, "cpu_quota", lambda: None)
    assert [cgroups.lane_cpu_count(i, 2, weighted=False) for i in range(2)] == [2, 2]
    assert [cgroups.lane_cpu_count(i, 4, weighted=True) for i in range(4)] == [2] * 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    assert cgroups.lane_cpu_count(0, 2, weighted=True) == 8
    monkeypatch.setattr(cgroups, "cpu_quota", lambda: 0.5)
    assert cgroups.lane_cpu_count(0, 1, weighted=True) == 2


real_cgroups = cgroups.set_up(1, name="cs336-grade-test-probe")
real_cgroups.remove()


@pytest.mark.skipif(not real_cgroups.enabled, reason=real_cgroups.unavailable)
def test_a_real_worker_group_counts_cpu_and_stops_memory():
    groups = cgroups.set_up(1, name=f"cs336-grade-test-{os.getpid()}")
    try:
        worker = groups.worker(0, 0)
        worker.create(memory=256 << 20, processes=16)
        spin = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"
        subprocess.run(
            [sys.executable, "-c", spin],
            check=True,
            preexec_fn=lambda: cgroups.join(worker.procs_files()),
        )
        assert 0.45 < worker.cpu_seconds() < 2
        hoard = (
            "import mmap\n"
            "m = mmap.mmap(-1, 512 << 20, flags=mmap.MAP_SHARED)\n"
            "m.write(b'x' * (512 << 20))"
        )
        done = subprocess.run(
            [sys.executable, "-c", hoard], preexec_fn=lambda: cgroups.join(worker.procs_files())
        )
        assert done.returncode == -9  # the kernel's OOM killer, not a MemoryError
        assert worker.oom_kills() >= 1
        assert worker.peak_memory() <= 256 << 20
    finally:
        groups.remove()
    assert not any(Path(d).exists() for _, d in groups.dirs)


def test_removing_the_tree_kills_what_is_left_in_it():
    if not real_cgroups.enabled:
        pytest.skip(real_cgroups.unavailable)
    groups = cgroups.set_up(1, name=f"cs336-grade-test-{os.getpid()}")
    worker = groups.worker(0, 0)
    worker.create(memory=0, processes=16)
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        preexec_fn=lambda: cgroups.join(worker.procs_files()),
        start_new_session=True,
    )
    time.sleep(0.2)
    groups.remove()
    assert sleeper.wait(timeout=10) == -9
    assert not any(Path(d).exists() for _, d in groups.dirs)
