"""The worker: the one process that runs a submission's code, inside the sandbox.

`python -S -m cs336_harness.grading.worker ADAPTERS_PY`, started by the judge
(`remote.RemoteAdapters`) with the protocol on its stdin and stdout. It says it has booted
(torch imported, no submission code run yet), imports the submission's adapters, says
whether that worked, then answers one `run_*` call per request until its stdin closes.

Nothing here is trusted: the submission can replace any of it once imported. That is
fine, because the judge believes nothing the worker says beyond "this is the value I
returned", and checks even that (`protocol.decode`).
"""

from __future__ import annotations

import faulthandler
import os
import sys
import traceback
from types import ModuleType
from typing import Any

from cs336_harness.adapter_loader import load_module
from cs336_harness.grading.protocol import (
    Closed,
    Unsendable,
    encode,
    read_frame,
    write_all,
    write_frame,
)


def _exception_line(error: BaseException) -> str:
    return traceback.format_exception_only(type(error), error)[-1].strip()


def answer(module: ModuleType, request: dict[str, Any]) -> bytes:
    """The reply frame to one call: its value, or how it failed."""
    name = str(request.get("call", ""))
    function = getattr(module, name, None) if name.startswith("run_") else None
    if not callable(function):
        return encode({"not_implemented": name})
    try:
        value = function(*request.get("args", []), **request.get("kwargs", {}))
    except NotImplementedError:
        return encode({"not_implemented": name})
    except BaseException as error:  # SystemExit and KeyboardInterrupt are the submission's too
        return encode({"raised": type(error).__name__, "message": str(error)})
    try:
        return encode({"value": value})
    except Unsendable as error:
        return encode({"unsendable": str(error)})


def main(argv: list[str]) -> int:
    # The protocol keeps the pipes on descriptors of its own; fd 0 reads nothing and fd 1
    # goes to the log with stderr, so that a print() cannot fall into a frame.
    requests, replies = os.dup(0), os.dup(1)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    faulthandler.enable()  # "Fatal Python error: Segmentation fault" in the log, for the judge
    write_frame(replies, {"booted": True})
    try:
        module = load_module(argv[1])
    except BaseException as error:
        write_frame(replies, {"import_error": _exception_line(error)})
        return 0
    write_frame(replies, {"ready": True})
    while True:
        try:
            request = read_frame(requests)
        except Closed:
            return 0
        write_all(replies, answer(module, request))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
