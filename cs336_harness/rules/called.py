"""A forbidden call site the watcher saw while a family's tests ran, as every report writes
it (`pytest --rules` and the grader's): evidence from the submission's own process."""

from __future__ import annotations

from dataclasses import dataclass

from cs336_harness.untrusted import clean

CALLED_HEADING = (
    "assignment rules (calls seen while it ran, as its own process reported them: "
    "evidence it could hide, not proof)"
)


@dataclass(frozen=True, order=True)
class Called:
    """A forbidden definition the submission called from `path`:`line` while the tests of
    `family` ran; `count` torch calls were seen through it (a module's construction and
    forward make several)."""

    family: str
    path: str
    line: int
    name: str
    count: int

    def __str__(self) -> str:
        calls = f"{self.count} torch call{'s' * (self.count != 1)}"
        return f"{self.family}: {self.path}:{self.line}: {self.name} ({calls})"


# What the judge keeps of the forbidden calls the worker reports: distinct sites per test
# (and per reply), the characters of a name or a path, and the largest line or count.
CALLED_SITES = 32
CALLED_CHARS = 200
CALLED_MAX = 10**9

# A forbidden call site as the worker reports it: (name, path, line, count).
CallSite = tuple[str, str, int, int]


def _bounded(value: object) -> int | None:
    return min(value, CALLED_MAX) if type(value) is int and value >= 0 else None


def read_called(entries: object) -> list[CallSite]:
    """The well-formed `[name, path, line, count]` entries among the first CALLED_SITES of
    `entries`, their text cleaned and cut to one line; anything else is left out."""
    sites = []
    for entry in entries[:CALLED_SITES] if isinstance(entries, list) else ():
        if not (isinstance(entry, list) and len(entry) == 4):
            continue
        name, path, line, count = entry[0], entry[1], _bounded(entry[2]), _bounded(entry[3])
        if isinstance(name, str) and isinstance(path, str) and line is not None and count:
            sites.append((clean(name, CALLED_CHARS), clean(path, CALLED_CHARS), line, count))
    return sites
