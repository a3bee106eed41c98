"""The worker, `python -P -S -m cs336_harness.grading.worker.process ADAPTERS_PY POLICY_JSON`:
the one process that runs a submission's code, in the sandbox. It boots, imports the adapters
from a writable copy of the submission, then answers one call or probe at a time under the
rules' watcher (docs/architecture.md, "The worker")."""

from __future__ import annotations

import faulthandler
import gc
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from cs336_harness.adapters import deferred_dynamo, inputs_unchanged
from cs336_harness.adapters.loader import exception_line, load_module
from cs336_harness.adapters.not_implemented import where_raised
from cs336_harness.adapters.probes.registry import needs_of, registered, run_probe
from cs336_harness.grading.worker import error_context, stand_ins
from cs336_harness.grading.worker.protocol import (
    TEXT_CHARS,
    Closed,
    Unsendable,
    encode,
    read_frame,
    write_all,
    write_frame,
)
from cs336_harness.rules.policy import Policy
from cs336_harness.rules.runtime import Watcher


def count_cpus() -> None:
    """os.cpu_count() says the lane's CPUs (PYTHON_CPU_COUNT, which Python 3.13 reads
    itself): `Pool()` and `Pool(os.cpu_count())` start that many processes, not one per CPU
    of the host."""
    cpus = os.environ.get("PYTHON_CPU_COUNT", "")
    if sys.version_info < (3, 13) and cpus.isdigit():
        os.cpu_count = lambda: int(cpus)


def light_spawned_processes() -> None:
    """A process the submission starts by `spawn` or `forkserver` (a `Pool` for BPE's
    pre-tokenization) imports what its task needs, not this worker: multiprocessing runs the
    parent's `__main__` again in each child, found by its module name or file, which would
    cost each of them torch's import (upstream's tests run under pytest, whose `__main__`
    imports little). Without either, a child imports nothing for the main module."""
    main = sys.modules["__main__"]
    main.__spec__ = None
    vars(main).pop("__file__", None)


# The most times one request may ask for a call to be made (a cost test's `times`).
MAX_TIMES = 1000

# The writable copy of the submission, in the worker's home (`working_copy`).
COPY = "submission"


def working_copy(source: Path, copy: Path) -> None:
    """Copy the submission (`source`, the folder holding `tests/adapters.py`, read-only in
    the sandbox) to `copy` and make that the working directory: code that writes a cache
    beside itself or into its working directory works, as on the student's machine, within
    the bounds of the worker's /tmp, and the submission the grader reads stays as it was."""
    shutil.copytree(source, copy, symlinks=True)
    os.chdir(copy)


def _callable(module: ModuleType, request: dict[str, Any]) -> tuple[str, Callable[[], Any] | None]:
    """What one request asks to run: a `run_*` adapter, or a probe of the adapters."""
    kwargs = request.get("kwargs", {})
    if "probe" in request:
        name = str(request["probe"])
        if name not in registered():
            return name, None
        return name, lambda: run_probe(module, name, kwargs)
    name = str(request.get("call", ""))
    function = getattr(module, name, None) if name.startswith("run_") else None
    if not callable(function):
        return name, None
    args, times = request.get("args", []), request.get("times", 1)
    if not isinstance(times, int) or not 1 <= times <= MAX_TIMES:
        times = 1

    def repeated() -> Any:  # the last call's value: a cost test times them all
        for _ in range(times - 1):
            function(*args, **kwargs)
        return function(*args, **kwargs)

    return name, repeated


def _reply(module: ModuleType, request: dict[str, Any], watcher: Watcher) -> dict[str, Any]:
    """The reply to one call or probe, run under `watcher`: its value, or how it failed."""
    name, run = _callable(module, request)
    if run is None:
        return {"not_implemented": name}
    # A call's tensor arguments are checked for changes in place (a probe checks its own).
    args, kwargs = request.get("args", []), request.get("kwargs", {})
    before = {} if "probe" in request else inputs_unchanged.fingerprints(args, kwargs)
    try:
        with watcher:
            value = run()
        changed = inputs_unchanged.changed(before)
    except NotImplementedError as error:
        reply = {"not_implemented": name}
        where = where_raised(error, module, needs_of(name) if "probe" in request else [name])
        if where:  # raised below the adapter; the judge cleans and cuts it again
            reply["where"] = where[:TEXT_CHARS]
        return reply
    except BaseException as error:  # SystemExit and KeyboardInterrupt are the submission's too
        # Cut here, where the judge would cut it anyway: a message of megabytes would make
        # the frame's header too large to be read at all.
        message = str(error) + error_context.note(error)
        return {"raised": type(error).__name__, "message": message[:TEXT_CHARS]}
    return {"value": value} | ({"changed": changed} if changed else {})


def answer(module: ModuleType, request: dict[str, Any], watcher: Watcher) -> bytes:
    """The reply frame to one call or probe, with the forbidden calls `watcher` saw."""
    reply = _reply(module, request, watcher)
    called = watcher.take()
    try:
        return encode(reply | {"called": called})
    except Unsendable as error:
        return encode({"unsendable": str(error), "called": called})


def main(argv: list[str]) -> int:
    # The protocol keeps the pipes on descriptors of its own; fd 0 reads nothing and fd 1
    # goes to the log with stderr, so that a print() cannot fall into a frame.
    requests, replies = os.dup(0), os.dup(1)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    faulthandler.enable()  # "Fatal Python error: Segmentation fault" in the log, for the judge
    # Before any of the submission's code: its optimizer's first call then does not import
    # torch._dynamo (a second or more of CPU, in whichever test makes it).
    deferred_dynamo.install()

    count_cpus()
    light_spawned_processes()
    given = Path(argv[1]).resolve()
    source = given.parent.parent
    root = Path(os.environ.get("HOME") or "/tmp") / COPY
    adapters = root / given.relative_to(source)
    watcher = Watcher(root, adapters, Policy.from_json(argv[2]), whole=True)
    write_frame(replies, {"booted": True})
    try:
        working_copy(source, root)
        stand_ins.install(root)
        with watcher:
            module = load_module(str(adapters))
    except BaseException as error:
        # Paths as the student knows them: relative to the top of the submission.
        line = exception_line(error).replace(f"{root}/", "") + error_context.note(error)
        write_frame(replies, {"import_error": line, "called": watcher.take()})
        return 0
    # What is loaded by now (torch, the submission's modules: over 160,000 objects) lives as
    # long as the worker. Frozen, no collection walks it again: a full one costs some 80 ms
    # here, which a timed call would be charged and the yardstick, timed in a small process
    # of its own, never pays.
    gc.freeze()
    write_frame(replies, {"ready": True, "called": watcher.take()})
    while True:
        try:
            request = read_frame(requests)
        except Closed:
            return 0
        write_all(replies, answer(module, request, watcher))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
