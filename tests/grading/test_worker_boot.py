"""A worker's start: one that dies before it boots is the host's failure, in the dying
worker's own words, never in the words an earlier worker of the same submission left in
the shared log; its optimizers do not import torch._dynamo, and no garbage collection walks
what it loaded."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cs336_harness.grading.judge.remote import (
    BOOT_FAILED,
    RemoteAdapters,
    ShareTimeout,
    WorkerBootFailure,
)
from cs336_harness.grading.sandbox.limits import Limits
from cs336_harness.grading.sandbox.tiers import Worker
from tests.grading import synthetic
from tests.grading.conftest import grade

FOUND = "torch._dynamo imported by the time a checkpoint was loaded:"
FROZEN = "objects out of the garbage collector's reach:"
EARLIER = "an earlier worker ran the submission's code and said: FORGED (memory limit: 1 TiB)"


def _judge(log: Path, code: str) -> RemoteAdapters:
    """Judge-side adapters whose every worker runs `code` in place of booting."""

    def start(serial: int) -> Worker:
        with log.open("ab") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-c", code],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        return Worker(process)

    return RemoteAdapters(start_worker=start, limits=Limits(), log=log)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("raise KeyError('getpwuid(): uid not found: 64000')", "(KeyError: "),
        ("import os; os._exit(3)", ""),  # silent: no words at all, not the earlier ones
    ],
)
def test_a_worker_that_dies_booting_is_the_hosts_failure_in_its_own_words(
    tmp_path: Path, code: str, words: str
):
    log = tmp_path / "worker.log"
    log.write_text(EARLIER + "\n")
    judge = _judge(log, code)
    with pytest.raises(WorkerBootFailure) as raised:
        judge._ready()
    message = raised.value.msg
    assert message.startswith(f"{BOOT_FAILED}: it exited with code"), message
    assert "FORGED" not in message
    assert words in message
    if not words:
        assert message == f"{BOOT_FAILED}: it exited with code 3"
    # Every later call fails the same way, without starting another worker.
    with pytest.raises(WorkerBootFailure):
        judge._ready()


# A worker that boots and never finishes importing the adapters, and one that does.
STALLS = (
    "import os, time; from cs336_harness.grading.worker.protocol import write_frame\n"
    "write_frame(os.dup(1), {'booted': True}); time.sleep(60)"
)
READY = (
    "import os, sys; from cs336_harness.grading.worker.protocol import write_frame\n"
    "out = os.dup(1); write_frame(out, {'booted': True}); write_frame(out, {'ready': True})\n"
    "sys.stdin.buffer.read()"
)


def test_a_family_whose_share_ends_while_importing_costs_only_that_family(tmp_path: Path):
    """Under a deadline a submission that crashes its worker makes each new worker import
    again; when its family's share ends during an import, the next family gets a worker of
    its own, not that family's time-out (seen: a softmax that killed its worker cost every
    later family its points)."""
    codes = iter([STALLS, READY])
    log = tmp_path / "worker.log"

    def start(serial: int) -> Worker:
        with log.open("ab") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-c", next(codes)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        return Worker(process)

    judge = RemoteAdapters(start_worker=start, limits=Limits(), log=log)
    judge.cutoff, judge.cutoff_reason = (
        time.monotonic() + 1,
        "the softmax tests used up their share",
    )
    with pytest.raises(ShareTimeout, match="used up their share"):
        judge._ready()
    judge.cutoff = None  # the next family, whose share has not begun to run out
    judge._ready()
    judge.close()


# Says, after each checkpoint it loads (AdamW's tests and checkpointing's have made and
# stepped optimizers by then), whether torch._dynamo has been imported, and how many objects
# the garbage collector leaves alone.
SAYS_WHAT_IT_FOUND = synthetic.Synthetic(
    adapters_tail=f"""
    import gc
    import sys

    _correct_load_checkpoint = run_load_checkpoint

    def run_load_checkpoint(src, model, optimizer):
        iteration = _correct_load_checkpoint(src, model, optimizer)
        print("{FOUND}", "torch._dynamo" in sys.modules, file=sys.stderr, flush=True)
        print("{FROZEN}", gc.get_freeze_count(), file=sys.stderr, flush=True)
        return iteration
    """
)
# Fewer than torch's import leaves alone (some 160,000 objects with torch 2.11).
TORCH_OBJECTS = 100_000


@pytest.fixture(scope="module")
def worker_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The output of the worker that graded SAYS_WHAT_IT_FOUND, every test passed (the
    students' report leaves it out where every test passed; grading.json keeps it)."""
    tmp = tmp_path_factory.mktemp("says")
    synthetic.write_submission(tmp / "says", SAYS_WHAT_IT_FOUND)
    run = grade(tmp / "says", "--stored-inputs", out=tmp / "out")
    assert run.returncode == 0, run.stderr
    assert {t["extra_data"]["status"] for t in run.results()["tests"]} == {"passed"}
    return run.graded()["output"]


def test_a_worker_runs_optimizers_without_importing_torch_dynamo(worker_output: str):
    """torch.optim's first call would import torch._dynamo (a second or more of CPU) to
    guard against a compiler nothing runs; the worker defers that guard, so no test pays
    for it (`cs336_harness/adapters/deferred_dynamo.py`)."""
    found = re.findall(rf"^{FOUND} (True|False)$", worker_output, re.MULTILINE)
    assert found and set(found) == {"False"}, found


def test_no_collection_in_a_worker_walks_what_it_loaded(worker_output: str):
    """torch and the submission's modules are frozen once loaded: a full collection during a
    timed call would walk them, tens of milliseconds the yardstick's own process never pays."""
    frozen = [int(n) for n in re.findall(rf"^{FROZEN} (\d+)$", worker_output, re.MULTILINE)]
    assert frozen and min(frozen) > TORCH_OBJECTS, frozen
