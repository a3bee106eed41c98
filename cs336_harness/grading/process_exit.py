"""How the end of a process (a judge, a worker) is worded in messages, from its exit status."""

from __future__ import annotations

import signal


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def describe(returncode: int | None) -> str:
    """ "exited with code 1", "was killed by SIGKILL", "stopped answering" (None: it was still
    running when it had to be stopped)."""
    if returncode is None:
        return "stopped answering"
    if returncode < 0:
        return f"was killed by {_signal_name(-returncode)}"
    if 128 < returncode <= 128 + 64:  # bwrap reports a child's death by signal N as 128 + N
        return f"was killed by {_signal_name(returncode - 128)} (exit code {returncode})"
    return f"exited with code {returncode}"
