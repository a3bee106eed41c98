"""The yardstick: a fixed piece of pure-Python work whose CPU time says how fast this host
runs Python code now, so that a submission's CPU time can be read as a multiple of it.

The work is of the kind a BPE trainer's loop does (dictionaries keyed by tuples of small
integers, counted, searched for their largest entry and rebuilt), over a working set of a
few megabytes, so that what slows one (an older interpreter, a slower core, a neighbour
sharing the core's caches) slows the other alike. `python -m cs336_harness.cost.yardstick`
prints its time as the grader's judge reads it: in a process of its own, with the worker's
interpreter, on the worker's CPUs, where no code of the submission can reach it.
"""

from __future__ import annotations

import itertools
import sys
import time

# Repetitions, their median taken: on a loaded host the same work costs more CPU time
# (caches shared and flushed, a core's sibling busy), and the median reads the host's pace
# as a longer call meets it, where the shortest would read it at its best moment.
REPEATS = 3
# The work's size: about 40 ms of CPU a run on the machines that calibrated the budgets.
ITEMS = 1200
ROUNDS = 10


def _items(count: int) -> list[tuple[int, ...]]:
    """`count` tuples of 2 to 9 small integers, the same every time (a linear congruential
    generator: no global random state is touched)."""
    state, items = 12345, []
    for _ in range(count):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        length = 2 + state % 8
        item = []
        for _ in range(length):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            item.append(state % 48)
        items.append(tuple(item))
    return items


def work(count: int = ITEMS, rounds: int = ROUNDS) -> int:
    """Count the adjacent pairs of every item, weighted; replace the commonest pair by a new
    integer everywhere; again, `rounds` times. Returns a checksum, so nothing is skipped."""
    items = _items(count)
    weights = [1 + (i * 7919) % 50 for i in range(count)]
    checksum = 0
    for step in range(rounds):
        pairs: dict[tuple[int, int], int] = {}
        for item, weight in zip(items, weights, strict=True):
            for pair in itertools.pairwise(item):
                pairs[pair] = pairs.get(pair, 0) + weight
        best = max(pairs, key=lambda pair: (pairs[pair], pair))
        new, rebuilt = 100 + step, []
        for item in items:
            out, i = [], 0
            while i < len(item):
                if item[i : i + 2] == best:
                    out.append(new)
                    i += 2
                else:
                    out.append(item[i])
                    i += 1
            rebuilt.append(tuple(out))
        items = rebuilt
        checksum += pairs[best] + len(pairs)
    return checksum


def seconds(repeats: int = REPEATS) -> float:
    """The yardstick's CPU time in this process: the median of `repeats` runs (an odd
    number; `statistics` is not imported for it: the judge starts a process for each
    yardstick, and that import is a fifth of the process's start)."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return sorted(times)[len(times) // 2]


if __name__ == "__main__":
    # The judge reads JSON; one float's is its repr, and importing `json` would cost as much
    # as the rest of the process's start.
    sys.stdout.write(f'{{"seconds": {seconds()!r}}}')
