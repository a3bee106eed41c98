"""The judge, one process per lane: it imports torch, pytest and the harness once, then runs
each job line of its stdin in a forked pytest child and answers with the child's exit code
(docs/architecture.md, "The judge: one import, a fork per submission")."""

from __future__ import annotations

import gc
import importlib
import json
import os
import sys
import traceback

import pytest
import torch

import cs336_harness.grading.judge.known_mistakes
import cs336_harness.grading.judge.recorder
import cs336_harness.judging.compare
import cs336_harness.judging.pytest_plugin  # noqa: F401 (imported once here, not in every child)
from cs336_harness.cost.cpu import keep_orphans


def _run_child(args: list[str], log: str) -> None:
    """In the forked child: pytest on the job, output to `log`. Never returns. What its
    workers orphan comes to it, not to init, so their CPU time is still counted."""
    keep_orphans()
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    output = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(output, 1)
    os.dup2(output, 2)
    code = int(pytest.ExitCode.INTERNAL_ERROR)
    try:
        code = int(pytest.main(args))
    except BaseException:  # whatever happens, the child must not return into the job loop
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main(argv: list[str]) -> int:
    if "--preload" in argv:
        importlib.import_module("torch.distributed.tensor")
    torch.set_num_threads(1)  # before any fork: one intra-op thread per child, as the worker
    # Everything imported so far lives as long as the judge: no child's garbage collection
    # walks it (a tenth of a second each), nor copies the pages it would touch.
    gc.freeze()
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # stray prints of ours go to the lane's stderr, not into a reply
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _run_child(job["args"], job["log"])
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        replies.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
