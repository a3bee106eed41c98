"""Where a failure starts: the first wrong component of the same submission. A family built from
others (`families.py`'s `built_from`) runs after them, so when one of its tests fails, the
session already knows which of its components failed and what mistake each was named; a
failure that follows from one of them opens with it, and the class report lists it under
that component's mistake (docs/checking.md, "Where a failure starts").

Plain Python: the grader's reports read what the judge recorded with it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cs336_harness.families import BY_NAME, FAMILIES

# How a failure that follows from a wrong component opens, and the property that records it
# (the component's family, then `:` and its mistake's id where one was named).
FOLLOWS = "follows from your "
PROPERTY = "follows_from"


def built_from(family: str) -> tuple[str, ...]:
    return BY_NAME[family].built_from if family in BY_NAME else ()


def run_order(families: Sequence[str | None]) -> list[int]:
    """The positions of `families` (one per test, in collection order) in the order that runs
    every family after the families it is built from: each family's tests stay together and
    in their order, and a family moves only as far as its components require."""
    present = list(dict.fromkeys(families))
    placed: list[str | None] = []
    waiting = list(present)
    while waiting:
        for family in waiting:
            parts = [p for p in built_from(family) if p in present] if family else []
            if all(p in placed for p in parts):
                placed.append(family)
                waiting.remove(family)
                break
        else:  # a cycle, which the registry's test refuses: keep what is left as it was
            placed += waiting
            break
    rank = {family: i for i, family in enumerate(placed)}
    return sorted(range(len(families)), key=lambda i: (rank[families[i]], i))


def deepest(families: Collection[str]) -> list[str]:
    """Those of `families` that are built from none of the others, in the registry's order."""
    order = [f.name for f in FAMILIES]
    return sorted(
        (f for f in families if not any(other in built_from(f) for other in families)),
        key=lambda f: order.index(f) if f in order else len(order),
    )


def home(mistake_families: Iterable[str]) -> str:
    """The family a mistake is made in, of those where the catalog can show it: the one the
    others are built from (SwiGLU's, not the block's), the registry's first among several."""
    found = deepest(set(mistake_families))
    return found[0] if found else ""


@dataclass(frozen=True)
class Cause:
    """What a failure follows from: a family of the same submission (the failing family itself
    for a backward failure under a named forward output) and the mistake named there, if
    any."""

    family: str
    mistake: str = ""

    @property
    def property(self) -> str:
        return f"{self.family}:{self.mistake}" if self.mistake else self.family

    @classmethod
    def parse(cls, value: str) -> Cause:
        family, _, mistake = value.partition(":")
        return cls(family, mistake)


@dataclass
class Session:
    """What one submission's session has seen fail so far, family by family: the named
    mistakes of its failed tests (counted; None for a failure no mistake names), and the
    families with a failed contract test: a family whose only failures are hardening
    tests is not wrong by the contract, and nothing follows from it."""

    named: dict[str, Counter[str | None]] = field(default_factory=dict)
    wrong: set[str] = field(default_factory=set)

    def record(self, family: str, mistake: str | None, *, contract: bool = True) -> None:
        self.named.setdefault(family, Counter())[mistake] += 1
        if contract:
            self.wrong.add(family)

    def name(self, family: str) -> str:
        """The mistake named most often among the family's failures ("": none was named)."""
        named = [(m, n) for m, n in self.named.get(family, Counter()).most_common() if m]
        return named[0][0] if named else ""

    def roots(self, family: str) -> list[Cause]:
        """The first wrong components of `family`: those of its components that failed and
        are built from no other that failed."""
        wrong = [c for c in built_from(family) if c in self.wrong]
        return [Cause(c, self.name(c)) for c in deepest(wrong)]


def explains(cause: Cause, mistake: str, families: Mapping[str, Collection[str]]) -> bool:
    """Whether `mistake`, named on a downstream output, is the component's own: the one its
    tests named, or another the catalog shows in that component's family."""
    return mistake == cause.mistake or cause.family in families.get(mistake, ())


def follows_line(causes: Sequence[Cause], *, forward: bool = False) -> str:
    """The line a failure that follows from `causes` opens with; `forward`: the cause is the
    failing family's own forward output (a gradient, an exception beside it)."""
    parts = []
    for cause in causes:
        what = f"{cause.family}'s forward output" if forward else cause.family
        parts.append(f"{what} ({cause.mistake})" if cause.mistake else f"{what}, whose tests fail")
    that = "that" if len(causes) == 1 else "those"
    return f"{FOLLOWS}{' and your '.join(parts)}: fix {that} first"


def also_line(causes: Sequence[Cause]) -> str:
    """The line a failure of its own adds where a component it is built from is wrong too."""
    named = [f"{c.family}" + (f" ({c.mistake})" if c.mistake else "") for c in causes]
    that = "that" if len(causes) == 1 else "those"
    return f"your {' and your '.join(named)} also fail{'s' * (len(causes) == 1)}: fix {that} too"
