"""A worker that dies before it boots: the judge's failure names the host, in the dying
worker's own words, never in the words an earlier worker of the same submission left in
the shared log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cs336_harness.grading.limits import Limits
from cs336_harness.grading.remote import BOOT_FAILED, RemoteAdapters, WorkerBootFailure
from cs336_harness.grading.sandbox import Worker

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
