"""The time charged to a submission: the CPU time its worker's processes use, read from its
cgroup or /proc, under wall-clock caps (docs/architecture.md, "Limits and the time charged")."""

from __future__ import annotations

import contextlib
import select
import time
from collections.abc import Callable

# How often a wait looks at the CPU counter: a call overruns its limit by at most this.
SLICE = 0.1


class Timeout(Exception):
    """No complete frame arrived before the deadline; the message says which limit passed.
    `wall_clock`: it was a wall-clock limit (which load can make pass), not one of CPU time."""

    def __init__(self, message: str, wall_clock: bool = True):
        super().__init__(message)
        self.wall_clock = wall_clock


class Overfilled(Exception):
    """The worker holds more than its limits in the host's shared temp folders (the user
    tier, `shared_temp.Watch`); the message says how much."""


class Deadline:
    """When to stop waiting for the other end: a point on the monotonic clock.

    `remaining` is how long the next wait may last, and raises Timeout once the time is up.
    A subclass that measures something other than wall-clock time (the CPU time a worker
    used, `timekeeping.CallClock`) returns short slices and decides after each."""

    def __init__(self, at: float):
        self.at = at

    def remaining(self) -> float:
        left = self.at - time.monotonic()
        if left <= 0:
            raise Timeout("the deadline passed")
        return left

    def wait(self, fd: int, write: bool = False) -> None:
        """Return once `fd` is ready to read (or write); Timeout if time runs out first."""
        while True:
            readable, writable, _ = select.select(
                [] if write else [fd], [fd] if write else [], [], self.remaining()
            )
            if readable or writable:
                return


class CallClock(Deadline):
    """The deadline of one wait for a worker's reply.

    It passes when the worker has used `cpu_limit` seconds of CPU since the clock was made,
    or when `wall_limit` seconds of wall-clock time have gone by; `Timeout`'s message says
    which. `cpu_seconds` reads the worker's counter."""

    def __init__(
        self,
        cpu_seconds: Callable[[], float],
        cpu_limit: float,
        wall_limit: float,
        cpu_reason: str,
        wall_reason: str,
        watch: Callable[[], str] | None = None,
    ):
        """`watch`: asked at every slice; a reason it returns stops the wait (`Overfilled`)."""
        started = time.monotonic()
        super().__init__(started + wall_limit)
        self.cpu_seconds = cpu_seconds
        self.cpu_start = cpu_seconds()
        self.cpu_limit = cpu_limit
        self.wall_start = started
        self.reasons = (cpu_reason, wall_reason)
        self.watch = watch
        self._used = 0.0

    def used(self) -> float:
        """CPU seconds the worker used since the clock was made (the last reading, once the
        worker and its counter are gone)."""
        with contextlib.suppress(OSError, ValueError):
            self._used = max(self._used, self.cpu_seconds() - self.cpu_start)
        return self._used

    def elapsed(self) -> float:
        return time.monotonic() - self.wall_start

    def remaining(self) -> float:
        if self.watch is not None and (reason := self.watch()):
            raise Overfilled(reason)
        if self.used() >= self.cpu_limit:
            raise Timeout(self.reasons[0], wall_clock=False)
        if time.monotonic() >= self.at:
            raise Timeout(self.reasons[1])
        return min(SLICE, self.at - time.monotonic())
