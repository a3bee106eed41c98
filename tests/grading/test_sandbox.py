"""The worker's sandbox, checked from inside: what it sees, who it is, what it can reach."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cs336_harness.grading.sandbox.limits import Limits, apply_rlimits
from cs336_harness.grading.sandbox.tiers import UID_END, UID_FIRST, Sandbox, draw_uid
from tests.grading.conftest import Listener

LIMITS = Limits(processes=16)
# As the grader draws one for each grading: above people's and containers' ids.
UID = draw_uid()

# Run inside the sandbox: a report of the worker's world, as JSON.
PROBE = """
import getpass, json, os, socket, sys
def can(action):
    try:
        action()
        return True
    except OSError:
        return False
def connect():
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
def forks():
    count = 0
    while count < 200:
        try:
            if os.fork() == 0:
                __import__("time").sleep(30)
                os._exit(0)
        except OSError:
            break
        count += 1
    return count
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
print(json.dumps({
    "uid": os.getuid(),
    "user": getpass.getuser(),
    "root": sorted(os.listdir("/")),
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "capabilities": status["CapEff"].strip(),
    "no_new_privs": status["NoNewPrivs"].strip(),
    "submission_writable": can(lambda: open("/submission/x", "w")),
    "tmp_writable": can(lambda: open("/tmp/x", "w")),
    "shm_writable": can(lambda: open("/dev/shm/x", "w")),
    "cpu_count_said": os.environ.get("PYTHON_CPU_COUNT"),
    "harness_writable": can(lambda: open("/harness/cs336_harness/x", "w")),
    "reaches_host_loopback": can(connect),
    "forks": forks(),
}))
"""


def _probe(sandbox: Sandbox, tmp_path: Path, python: str, user: str | None = None) -> dict:
    (tmp_path / "harness" / "cs336_harness").mkdir(parents=True)
    (tmp_path / "submission").mkdir()
    for path in (tmp_path, *tmp_path.parents):  # pytest's temp dirs are 0700
        if str(path).startswith("/tmp/"):
            path.chmod(path.stat().st_mode | 0o055)
    command = sandbox.command(tmp_path / "harness", tmp_path / "submission", UID, LIMITS)
    listener = Listener()
    command = [*command[: command.index(sys.executable)], python, "-S", "-c", PROBE,
               str(listener.port)]  # fmt: skip
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    rlimits = LIMITS.rlimits(own_user=user is None)
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd="/tmp",
        timeout=60,
        preexec_fn=lambda: apply_rlimits(rlimits),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) | {"accepted": listener.accepted}


BASE = {"bin", "dev", "harness", "lib", "lib64", "proc", "sbin", "submission", "tmp", "usr"}


def _assert_confined(world: dict, sandbox: Sandbox) -> None:
    """Only the system, the Python environment (its top directory, e.g. /root for a pyenv
    Python) and the two mounts are there: nothing else of the host's file system."""
    assert world["uid"] != 0
    # A name, though no passwd file lists the uid: libraries ask (torch._dynamo's import).
    assert world["user"] == "cs336-worker"
    environment = {Path(p).parts[1] for p in sandbox.mounts}
    assert BASE <= set(world["root"]) <= BASE | environment
    assert len(world["pids"]) <= 3  # bwrap's init, the probe (and setpriv's exec of it)
    assert world["capabilities"] == "0000000000000000"
    assert not world["submission_writable"] and not world["harness_writable"]
    assert world["tmp_writable"]
    # POSIX semaphores and shared memory (multiprocessing's locks, queues and pools) need it.
    assert world["shm_writable"]
    assert world["cpu_count_said"] == "1"
    assert not world["reaches_host_loopback"] and world["accepted"] == 0


def test_each_grading_draws_a_user_id_no_other_has():
    taken = {draw_uid() for _ in range(1000)}
    assert len(taken) == 1000 and all(UID_FIRST <= uid < UID_END for uid in taken)
    assert draw_uid(taken) not in taken


@pytest.mark.skipif(os.geteuid() != 0, reason="the grader drops to its own user as root only")
def test_as_root_the_worker_runs_as_a_user_of_its_own(tmp_path: Path):
    sandbox = Sandbox()
    world = _probe(sandbox, tmp_path, sys.executable)
    _assert_confined(world, sandbox)
    assert world["uid"] == UID and world["no_new_privs"] == "1"
    # The process limit holds (the probe and its threads count too); the forked sleepers
    # ended with the sandbox.
    assert world["forks"] < LIMITS.processes


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("runuser") is None or not Path("/usr/bin/python3").exists(),
    reason="needs root to become another user, and a Python under /usr that user can run",
)
def test_as_another_user_the_worker_runs_in_a_user_namespace(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(Sandbox, "_as_root", lambda self: False)
    sandbox = Sandbox(mounts=("/usr",), site=())
    world = _probe(sandbox, tmp_path, "/usr/bin/python3", "nobody")
    _assert_confined(world, sandbox)
    assert world["uid"] == 65534
