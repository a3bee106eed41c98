"""The judge's side of the worker: `RemoteAdapters`, whose calls and probes run in the
sandboxed worker as plain data, and the test failure each thing that goes wrong there becomes
(docs/architecture.md, "When the worker fails")."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _pytest.outcomes import Failed

from cs336_harness.adapters import inputs_unchanged
from cs336_harness.adapters.loader import (
    AdapterImportFailure,
    NotImplementedFailure,
    SubmissionRaised,
)
from cs336_harness.adapters.not_implemented import message as not_implemented
from cs336_harness.adapters.probes.registry import needs_of
from cs336_harness.grading import process_exit
from cs336_harness.grading.sandbox.limits import BOOT_WALL, Limits, format_size
from cs336_harness.grading.sandbox.tiers import Worker
from cs336_harness.grading.sandbox.timekeeping import CallClock, Deadline, Overfilled, Timeout
from cs336_harness.grading.worker.protocol import Closed, ProtocolError, read_frame, write_frame
from cs336_harness.rules.called import CALLED_MAX, CALLED_SITES, CallSite, read_called

# How an allocation past RLIMIT_DATA reads: Python's, torch's CPU allocator's, and the
# dynamic loader's (a library whose segments no longer fit).
MEMORY_SIGNS = ("MemoryError", "can't allocate memory", "failed to map segment")
LOG_TAIL = 4000
BOOT_FAILED = "the worker could not start, before any of the submission's code had run"
# Calls of one adapter that ran out of time one after another, past which its other calls are
# not made: a blocked adapter (a deadlocked pool) would otherwise spend the submission's time
# limit on its family alone, and the families after it would lose calls they pass.
GIVE_UP_AFTER = 3


class WorkerTimeout(Failed):
    """The worker did not answer in time and was stopped."""


class LoadSensitiveTimeout(WorkerTimeout):
    """A time-out that load alone could cause: a call's wall-clock cap, or a worker that did
    not start in time (no submission code had run yet)."""


class ShareTimeout(WorkerTimeout):
    """The test's family used up its share of the grading deadline (`recorder.FamilyTimeShares`)."""


class WorkerBootTimeout(LoadSensitiveTimeout):
    """The worker did not boot in time: graded again alone when load may explain it, and
    else the host's failure, as `WorkerBootFailure`."""


class WorkerBootFailure(AdapterImportFailure):
    """The worker died or broke the protocol before it booted: none of the submission's code
    had run, so the failure is the host's (its sandbox, its Python, its limits), and the
    grader reports it as such rather than as the submission's."""


class WorkerCrash(Failed):
    """The worker died during the call."""


class BadReply(Failed):
    """The worker's reply broke the protocol (malformed, oversized, wrong dtype)."""


def _timeout(timeout: Timeout, message: str) -> WorkerTimeout:
    kind = LoadSensitiveTimeout if timeout.wall_clock else WorkerTimeout
    return kind(message, pytrace=False)


def _fatal_line(log: Path, booting_from: int | None = None) -> str:
    """The interpreter's last word, e.g. "Fatal Python error: Aborted", if it left one. For a
    worker that died booting, `booting_from` is where the log stood when it started: what it
    wrote since is the host's output, none of the submission's, and its last line (such as a
    traceback's exception line) is the word instead."""
    try:
        with log.open("rb") as f:
            f.seek(max(booting_from or 0, log.stat().st_size - LOG_TAIL))
            tail = f.read().decode(errors="replace")
    except OSError:
        return ""
    marker = "Fatal Python error"
    lines = [ln[ln.index(marker) :].strip() for ln in tail.splitlines() if marker in ln]
    if not lines and booting_from is not None:
        lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    return f" ({lines[-1][:200]})" if lines else ""


def _raised_message(kind: str, message: str, limits: Limits) -> str:
    text = f"{kind}: {message}" if message else kind
    if limits.memory and any(sign in text for sign in MEMORY_SIGNS):
        text += f" (memory limit: {format_size(limits.memory)})"
    return text


class RemoteAdapters:
    """`run_*` calls answered by a worker that `start_worker` launches (again after a crash).

    Time is charged as `timekeeping` says: each call's CPU time, under `limits`' caps, adds
    up to the submission's; a worker's start-up is charged to nobody. `on_start` and
    `on_exit` are told of every worker started and ended (for the verdict record).
    """

    def __init__(
        self,
        start_worker: Callable[[int], Worker],
        limits: Limits,
        log: Path,
        on_start: Callable[[], None] = lambda: None,
        on_exit: Callable[[Worker], None] = lambda worker: None,
        yardstick: Callable[[], float] | None = None,
    ):
        """`yardstick`: times the yardstick where the worker's calls are timed (the
        recorder's runs it with the worker's interpreter, on its CPUs)."""
        self._start_worker = start_worker
        self._yardstick = yardstick
        self.limits = limits
        self.log = log
        self._on_start = on_start
        self._on_exit = on_exit
        self.worker: Worker | None = None
        self._started = 0
        self._booted = False
        # Where the log ended when the current worker started: past it, its own output.
        self._log_from = 0
        # What the submission's calls used so far: CPU seconds, and wall-clock seconds; and
        # the CPU seconds of the last call alone.
        self.cpu_spent = 0.0
        self.wall_spent = 0.0
        self.last_cpu = 0.0
        # Set once importing the adapters failed: every call fails the same way after it.
        self._import_failure: Failed | None = None
        # By adapter (or probe): its calls that ran out of time since its last answer, and,
        # once there are GIVE_UP_AFTER, the time-out its calls not made are.
        self._timeouts: Counter[str] = Counter()
        self._given_up: dict[str, type[WorkerTimeout]] = {}
        # Forbidden calls the worker reported since the last `take_called`.
        self._called: Counter[tuple[str, str, int]] = Counter()
        # Under a deadline (`recorder.FamilyTimeShares`): when the current family's share of it ends
        # and why, on the monotonic clock, and when the judge's time ends altogether.
        self.cutoff: float | None = None
        self.cutoff_reason = ""
        self.end: float | None = None

    @property
    def process(self) -> subprocess.Popen[bytes]:
        assert self.worker is not None
        return self.worker.process

    # -- the worker's life -------------------------------------------------------------

    def start(self) -> None:
        """Start a worker now, so that it boots while the tests are collected."""
        if self.worker is None and self._import_failure is None:
            self._log_from = self.log.stat().st_size if self.log.exists() else 0
            self.worker = self._start_worker(self._started)
            self._started += 1
            assert self.process.stdin is not None
            # Requests are written with a deadline: a worker that stops reading can't block us.
            os.set_blocking(self.process.stdin.fileno(), False)
            self._booted = False
            self._on_start()

    def close(self) -> None:
        """Stop the worker (and, through the sandbox, everything it started)."""
        if self.worker is not None:
            worker, self.worker = self.worker, None
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()
            worker.process.wait()
            for pipe in (worker.process.stdin, worker.process.stdout):
                if pipe is not None:
                    pipe.close()
            self._on_exit(worker)
            worker.release()

    def _died(self, booting: bool = False) -> str:
        """Reap a worker that closed its pipe; how it ended, for a message (`booting`: it
        died before it booted, and its own last line in the log says how)."""
        assert self.worker is not None
        try:
            returncode = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            returncode = None
        how = process_exit.describe(returncode)
        if self.worker.oom_kills():
            how += (
                f": its processes together passed the memory limit "
                f"({format_size(self.limits.memory)}), and the kernel stopped them"
            )
        self.close()
        return f"{how}{_fatal_line(self.log, self._log_from if booting else None)}"

    def _receive(self, deadline: Deadline) -> dict[str, Any]:
        assert self.process.stdout is not None
        reply = read_frame(self.process.stdout.fileno(), deadline, self.limits.reply)
        for name, path, line, count in read_called(reply.get("called")):
            key = (name, path, line)
            if key in self._called or len(self._called) < CALLED_SITES:
                self._called[key] = min(self._called[key] + count, CALLED_MAX)
        return reply

    def take_called(self) -> list[CallSite]:
        """The forbidden calls reported since the last time, most frequent first."""
        taken = [(n, p, line, c) for (n, p, line), c in self._called.most_common()]
        self._called.clear()
        return taken

    def _fail_import(self, failure: Failed) -> Failed:
        self._import_failure = failure
        self.close()
        return failure

    def _clock(self) -> CallClock:
        """The deadline of one call (or the import): its CPU limit and wall-clock cap, or
        what is left of the submission's, whichever is less."""
        limits = self.limits
        cpu_left = limits.submission_timeout - self.cpu_spent
        wall_left = limits.submission_wall - self.wall_spent
        out = f"the submission's time limit ({limits.submission_timeout:g} s of CPU"
        if cpu_left < limits.test_timeout:
            cpu_reason = f"{out}) ran out"
        else:
            cpu_reason = f"no answer within {limits.test_timeout:g} s of CPU time"
        if wall_left < limits.call_wall:
            wall_reason = f"{out}, {limits.submission_wall:g} s of wall-clock time) ran out"
        else:
            wall_reason = (
                f"no answer within {limits.call_wall:g} s of wall-clock time "
                "(waiting, sleeping or blocked)"
            )
        wall = min(limits.call_wall, wall_left)
        if self.cutoff is not None and self.cutoff - time.monotonic() < wall:
            wall, wall_reason = max(self.cutoff - time.monotonic(), 0.0), self.cutoff_reason
        assert self.worker is not None
        return CallClock(
            self.worker.cpu_seconds,
            min(limits.test_timeout, cpu_left),
            wall,
            cpu_reason,
            wall_reason,
            self.worker.overfilled if self.worker.watch is not None else None,
        )

    def _past_cutoff(self) -> bool:
        return self.cutoff is not None and time.monotonic() >= self.cutoff

    def _timed_out(self, timeout: Timeout, message: str) -> WorkerTimeout:
        """The failure a time-out stands for: the family's share of the deadline (final),
        or a limit of the call's own."""
        if self._past_cutoff():
            return ShareTimeout(message, pytrace=False)
        return _timeout(timeout, message)

    def _charge(self, clock: CallClock) -> None:
        self.last_cpu = clock.used()
        self.cpu_spent += self.last_cpu
        self.wall_spent += clock.elapsed()

    def _ready(self) -> None:
        """Wait until the worker has booted and imported the adapters."""
        if self._import_failure is not None:
            raise self._import_failure
        self.start()
        if self._booted:
            return
        # No code of the submission runs before "booted": a failure here is the host's
        # (the sandbox, the environment, a machine too busy), and is charged to nobody, the
        # family's share of a deadline included: the first worker's start is waited for
        # from there.
        waited = time.monotonic()
        boot_end = waited + BOOT_WALL if self.end is None else min(waited + BOOT_WALL, self.end)
        try:
            boot = self._receive(Deadline(boot_end))
            if not boot.get("booted"):
                raise ProtocolError("the worker did not start as the protocol says")
        except Timeout:
            message = (
                f"the worker did not start within {BOOT_WALL:g} s (no submission code had run: "
                "the host was too busy)"
            )
            raise self._fail_import(WorkerBootTimeout(message, pytrace=False)) from None
        except Closed:
            message = _raised_message(BOOT_FAILED, f"it {self._died(booting=True)}", self.limits)
            raise self._fail_import(WorkerBootFailure(message, pytrace=False)) from None
        except ProtocolError as error:
            message = f"{BOOT_FAILED}: {error}"
            raise self._fail_import(WorkerBootFailure(message, pytrace=False)) from None
        if self.cutoff is not None and self._started == 1:
            self.cutoff = min(self.cutoff + time.monotonic() - waited, self.end or self.cutoff)
        self._booted = True
        self._await_import()

    def _await_import(self) -> None:
        clock = self._clock()
        try:
            reply = self._receive(clock)
        except Timeout as timeout:
            message = f"importing the adapters: {timeout}; stopped"
            failure = self._timed_out(timeout, message)
            if isinstance(failure, ShareTimeout):
                # The family's share ran out while a worker imported (a new one, after a
                # crash): that family's loss only; the next family starts a worker anew.
                self.close()
                raise failure from None
            raise self._fail_import(failure) from None
        except Closed:
            message = f"cannot import adapters: the worker {self._died()} while importing them"
            raise self._fail_import(AdapterImportFailure(message, pytrace=False)) from None
        except Overfilled as overfilled:
            message = f"cannot import adapters: {overfilled}; the worker was stopped"
            raise self._fail_import(AdapterImportFailure(message, pytrace=False)) from None
        except ProtocolError as error:
            message = f"cannot import adapters: the worker broke the protocol: {error}"
            raise self._fail_import(AdapterImportFailure(message, pytrace=False)) from None
        finally:
            self._charge(clock)
        if "import_error" in reply:
            message = f"cannot import adapters: {reply['import_error']}"
            raise self._fail_import(AdapterImportFailure(message, pytrace=False))
        if not reply.get("ready"):
            message = "cannot import adapters: the worker broke the protocol"
            raise self._fail_import(AdapterImportFailure(message, pytrace=False))

    def _out_of_time(self) -> WorkerTimeout | None:
        limits = self.limits
        if self._past_cutoff():
            return ShareTimeout(f"{self.cutoff_reason}: this call was not made", pytrace=False)
        if self.cpu_spent >= limits.submission_timeout:
            what = f"{limits.submission_timeout:g} s of CPU"
        elif self.wall_spent >= limits.submission_wall:
            what = f"{limits.submission_wall:g} s of wall-clock time"
        else:
            return None
        return WorkerTimeout(
            f"the submission's time limit ({what}) ran out: this call was not made",
            pytrace=False,
        )

    # -- calls ---------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if not name.startswith("run_"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            return self.call(name, args, kwargs)

        return call

    def probe(self, name: str, kwargs: dict[str, Any]) -> Any:
        """Run the probe `name` (`cs336_harness.adapters.probes`) in the worker."""
        __tracebackhide__ = True
        return self._request(name, {"probe": name, "kwargs": kwargs})

    def measured(self, name: str, kwargs: dict[str, Any]) -> tuple[Any, float]:
        """Run the probe `name` as `probe` does; its value and the CPU seconds the worker
        used for it: every process it ran, by its cgroup's counter, or else by its process
        tree and its user's processes (`Worker.cpu_seconds`)."""
        __tracebackhide__ = True
        value = self.probe(name, kwargs)
        return value, self.last_cpu

    def yardstick(self) -> float:
        """The yardstick's CPU seconds, where the worker's calls are timed."""
        if self._yardstick is None:
            raise RuntimeError("these remote adapters were given no yardstick to time")
        return self._yardstick()

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        return self._request(name, {"call": name, "args": args, "kwargs": kwargs})

    def measured_call(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], times: int = 1
    ) -> tuple[Any, float]:
        """Call the adapter `name` `times` times in one request; the last value, and the CPU
        seconds the worker used for them all (as `measured`)."""
        __tracebackhide__ = True
        request = {"call": name, "args": args, "kwargs": kwargs, "times": times}
        return self._request(name, request), self.last_cpu

    def _request(self, name: str, request: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        out_of_time = self._out_of_time()
        if out_of_time is not None:
            raise out_of_time
        given_up = self._given_up.get(name)
        if given_up is not None:
            raise given_up(
                f"{name}'s last {GIVE_UP_AFTER} calls ran out of time one after another: "
                "this call was not made, so that the rest of the submission keeps its time",
                pytrace=False,
            )
        self._ready()
        assert self.process.stdin is not None
        clock = self._clock()
        try:
            write_frame(self.process.stdin.fileno(), request, clock)
            reply = self._receive(clock)
        except (BrokenPipeError, Closed):
            raise WorkerCrash(
                f"the worker {self._died()} during this call", pytrace=False
            ) from None
        except Timeout as timeout:
            self.close()
            failure = self._timed_out(timeout, f"{timeout}; the worker was stopped")
            if not isinstance(failure, ShareTimeout):  # a deadline's share ends the family
                self._timeouts[name] += 1
                if self._timeouts[name] >= GIVE_UP_AFTER:
                    self._given_up[name] = type(failure)
            raise failure from None
        except Overfilled as overfilled:
            self.close()
            raise Failed(f"{overfilled}; the worker was stopped", pytrace=False) from None
        except ProtocolError as error:
            self.close()
            raise BadReply(f"{name} sent back {error}", pytrace=False) from None
        finally:
            self._charge(clock)
        self._timeouts.pop(name, None)
        # A reply within one slice of the call is checked too.
        overfilled = clock.watch() if clock.watch is not None else ""
        if overfilled:
            self.close()
            raise Failed(f"{overfilled}; the worker was stopped", pytrace=False)
        return self._result(name, reply, request)

    def _result(self, name: str, reply: dict[str, Any], request: dict[str, Any]) -> Any:
        __tracebackhide__ = True
        if "value" in reply:
            changed = reply.get("changed")
            if "call" in request and isinstance(changed, list):
                # Named by the judge: only the arguments it sent, whatever the worker says.
                sent = inputs_unchanged.argument_tensors(request["args"], request["kwargs"])
                names = [n for n, _ in sent if n in changed]
                if names:
                    raise Failed(inputs_unchanged.message(name, ", ".join(names)), pytrace=False)
            return reply["value"]
        if "not_implemented" in reply:
            # The adapters are the ones this judge asked for; the location is the worker's
            # word, which `not_implemented` cleans and cuts.
            needs = " and ".join(needs_of(name))
            raise NotImplementedFailure(not_implemented(needs, reply.get("where")), pytrace=False)
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
