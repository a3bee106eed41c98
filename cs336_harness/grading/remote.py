"""The judge's side of the worker: an `adapters` object whose `run_*` calls run elsewhere.

Under the grader the trusted tests get a `RemoteAdapters` instead of the in-process
`Adapters`: each call's arguments go to the sandboxed worker as plain data, and the reply
comes back as plain data (`protocol`), so no code of the submission ever runs in the
process that holds the expected outputs and writes the verdicts. What can go wrong in the
worker becomes one test's failure:

| in the worker                         | the test                                   |
|---------------------------------------|--------------------------------------------|
| the adapter raises                    | gets `SubmissionRaised` (an `Exception`)   |
| missing, or NotImplementedError       | fails "not implemented: run_x"             |
| importing the adapters fails or hangs | fails, and so does every later call        |
| no reply within the time limit        | times out; the worker is killed            |
| the worker dies                       | crashes; the next call starts a new worker |
| a malformed or oversized reply        | fails; the worker is killed                |
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _pytest.outcomes import Failed

from cs336_harness.adapter_loader import AdapterImportFailure, NotImplementedFailure
from cs336_harness.grading.limits import Limits, format_size
from cs336_harness.grading.protocol import Closed, ProtocolError, Timeout, read_frame, write_frame
from cs336_harness.probes import needs_of

# Starting Python and importing torch, before any submission code runs: generous, since
# graded submissions share the cores; it counts against the submission's time all the same.
BOOT_TIMEOUT = 120.0
# How an allocation past RLIMIT_DATA reads: Python's, and torch's CPU allocator's.
MEMORY_SIGNS = ("MemoryError", "can't allocate memory")
LOG_TAIL = 4000


class SubmissionRaised(Exception):
    """The submission's adapter raised; the message is its type and message."""


class WorkerTimeout(Failed):
    """The worker did not answer in time and was stopped."""


class WorkerCrash(Failed):
    """The worker died during the call."""


class BadReply(Failed):
    """The worker's reply broke the protocol (malformed, oversized, wrong dtype)."""


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _exit_description(returncode: int | None) -> str:
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        return f"was killed by {_signal_name(-returncode)}"
    if 128 < returncode <= 128 + 64:  # bwrap reports a child's death by signal N as 128 + N
        return f"was killed by {_signal_name(returncode - 128)} (exit code {returncode})"
    return f"exited with code {returncode}"


def _fatal_line(log: Path) -> str:
    """The interpreter's last word, e.g. "Fatal Python error: Aborted", if it left one."""
    try:
        with log.open("rb") as f:
            f.seek(max(0, log.stat().st_size - LOG_TAIL))
            tail = f.read().decode(errors="replace")
    except OSError:
        return ""
    marker = "Fatal Python error"
    lines = [ln[ln.index(marker) :].strip() for ln in tail.splitlines() if marker in ln]
    return f" ({lines[-1][:200]})" if lines else ""


def _raised_message(kind: str, message: str, limits: Limits) -> str:
    text = f"{kind}: {message}" if message else kind
    if limits.memory and any(sign in text for sign in MEMORY_SIGNS):
        text += f" (memory limit: {format_size(limits.memory)})"
    return text


class RemoteAdapters:
    """`run_*` calls answered by a worker that `start_worker` launches (again after a crash).

    `deadline` (time.monotonic()) ends the submission's time: a call still running then
    times out, and later calls fail at once.
    """

    def __init__(
        self,
        start_worker: Callable[[], subprocess.Popen[bytes]],
        limits: Limits,
        deadline: float,
        log: Path,
        on_start: Callable[[], None] = lambda: None,
    ):
        self._start_worker = start_worker
        self.limits = limits
        self.deadline = deadline
        self.log = log
        self._on_start = on_start
        self.worker: subprocess.Popen[bytes] | None = None
        self._booted = False
        # Set once importing the adapters failed: every call fails the same way after it.
        self._import_failure: Failed | None = None

    # -- the worker's life -------------------------------------------------------------

    def start(self) -> None:
        """Start a worker now, so that it boots while the tests are collected."""
        if self.worker is None and self._import_failure is None:
            self.worker = self._start_worker()
            assert self.worker.stdin is not None
            # Requests are written with a deadline: a worker that stops reading can't block us.
            os.set_blocking(self.worker.stdin.fileno(), False)
            self._booted = False
            self._on_start()

    def close(self) -> None:
        """Stop the worker (and, through the sandbox, everything it started)."""
        if self.worker is not None:
            with contextlib.suppress(ProcessLookupError):
                self.worker.kill()
            self.worker.wait()
            for pipe in (self.worker.stdin, self.worker.stdout):
                if pipe is not None:
                    pipe.close()
            self.worker = None

    def _died(self) -> str:
        """Reap a worker that closed its pipe; how it ended, for a message."""
        assert self.worker is not None
        try:
            returncode = self.worker.wait(timeout=5)
        except subprocess.TimeoutExpired:
            returncode = None
        how = _exit_description(returncode)
        self.close()
        return f"{how}{_fatal_line(self.log)}"

    def _receive(self, deadline: float) -> dict[str, Any]:
        assert self.worker is not None and self.worker.stdout is not None
        return read_frame(self.worker.stdout.fileno(), deadline, self.limits.reply)

    def _fail_import(self, failure: Failed) -> Failed:
        self._import_failure = failure
        self.close()
        return failure

    def _ready(self) -> None:
        """Wait until the worker has booted and imported the adapters."""
        if self._import_failure is not None:
            raise self._import_failure
        self.start()
        if self._booted:
            return
        # No code of the submission runs before "booted": a failure here is the host's
        # (the sandbox, the environment), and retrying would only fail again.
        try:
            boot = self._receive(min(time.monotonic() + BOOT_TIMEOUT, self.deadline))
            if not boot.get("booted"):
                raise ProtocolError("the worker did not start as the protocol says")
        except Timeout:
            raise self._fail_import(self._out_of_time("the worker did not start in time")) from None
        except Closed:
            message = f"the worker could not start: it {self._died()}"
            raise self._fail_import(AdapterImportFailure(message, pytrace=False)) from None
        except ProtocolError as error:
            message = f"the worker could not start: {error}"
            raise self._fail_import(AdapterImportFailure(message, pytrace=False)) from None
        self._booted = True
        self._await_import()

    def _await_import(self) -> None:
        timeout = self.limits.test_timeout
        try:
            reply = self._receive(min(time.monotonic() + timeout, self.deadline))
        except Timeout:
            message = f"importing the adapters took longer than {timeout:g} s; stopped"
            raise self._fail_import(WorkerTimeout(message, pytrace=False)) from None
        except Closed:
            message = f"cannot import adapters: the worker {self._died()} while importing them"
            raise self._fail_import(AdapterImportFailure(message, pytrace=False)) from None
        except ProtocolError as error:
            message = f"cannot import adapters: the worker broke the protocol: {error}"
            raise self._fail_import(AdapterImportFailure(message, pytrace=False)) from None
        if "import_error" in reply:
            message = f"cannot import adapters: {reply['import_error']}"
            raise self._fail_import(AdapterImportFailure(message, pytrace=False))
        if not reply.get("ready"):
            message = "cannot import adapters: the worker broke the protocol"
            raise self._fail_import(AdapterImportFailure(message, pytrace=False))

    def _out_of_time(self, what: str) -> WorkerTimeout:
        if time.monotonic() >= self.deadline:
            limit = self.limits.submission_timeout
            return WorkerTimeout(
                f"the submission's time limit ({limit:g} s) ran out: {what}", pytrace=False
            )
        return WorkerTimeout(what, pytrace=False)

    # -- calls ---------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if not name.startswith("run_"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            return self.call(name, args, kwargs)

        return call

    def probe(self, name: str, kwargs: dict[str, Any]) -> Any:
        """Run the probe `name` (`cs336_harness.probes`) in the worker."""
        __tracebackhide__ = True
        return self._request(name, {"probe": name, "kwargs": kwargs})

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        return self._request(name, {"call": name, "args": args, "kwargs": kwargs})

    def _request(self, name: str, request: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        if time.monotonic() >= self.deadline:
            raise self._out_of_time("this call was not made")
        self._ready()
        assert self.worker is not None and self.worker.stdin is not None
        deadline = min(time.monotonic() + self.limits.test_timeout, self.deadline)
        try:
            write_frame(self.worker.stdin.fileno(), request, deadline)
            reply = self._receive(deadline)
        except (BrokenPipeError, Closed):
            raise WorkerCrash(
                f"the worker {self._died()} during this call", pytrace=False
            ) from None
        except Timeout:
            self.close()
            raise self._out_of_time(
                f"no answer within {self.limits.test_timeout:g} s; the worker was stopped"
            ) from None
        except ProtocolError as error:
            self.close()
            raise BadReply(f"{name} sent back {error}", pytrace=False) from None
        return self._result(name, reply)

    def _result(self, name: str, reply: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        if "value" in reply:
            return reply["value"]
        if "not_implemented" in reply:
            needs = " and ".join(needs_of(name))
            raise NotImplementedFailure(f"not implemented: {needs}", pytrace=False)
        if "raised" in reply:
            kind, message = str(reply["raised"]), str(reply.get("message", ""))
            raise SubmissionRaised(_raised_message(kind, message, self.limits))
        if "unsendable" in reply:
            raise BadReply(
                f"{name} returned a {reply['unsendable']}, which has no plain-data form",
                pytrace=False,
            )
        self.close()
        raise BadReply(f"{name} sent back a reply the protocol does not know", pytrace=False)
