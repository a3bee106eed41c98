"""Which known mistake a wrong output matches, by fingerprints of the mistakes' outputs (from
the catalog, or a table written beforehand), and the lines a failure message opens with
(docs/checking.md, "Diagnosis: the likely cause of a wrong output")."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray
from safetensors.numpy import load_file, save_file

from cs336_harness import withheld
from cs336_harness.judging.case_layout import ADAMW_READINGS, case_kind, case_table
from cs336_harness.judging.diagnosis.numpy_cases import load
from cs336_harness.manifest import MANIFEST_NAME, fixtures_digest

FINGERPRINT_SIZE = 4096
DISCRIMINATING = 256

# The stored tensors a family's test compares a forward output with, where not `expected`
# alone (AdamW's test takes the nearest of its accepted readings).
FORWARD_EXPECTED = {"adamw": tuple(ADAMW_READINGS)}

NO_MATCH = "no known mistake matches"
# How a named failure's line opens.
LIKELY_CAUSE = "likely cause: "
# How a further match opens its line: matching within the tolerance, it is one output under
# two names on this case.
OR = "or, the same output here: "


@dataclass(frozen=True)
class Candidate:
    """One mistake's output on one case, as a fingerprint: the values at flat `index`.
    `graded`: the catalog's flag (its effect may stay within the tolerance on some cases).
    `scale`: how many times larger than the correct output it is, at least 1 (see `matches`)."""

    mistake: str
    message: str
    shape: tuple[int, ...]
    index: NDArray[np.int64]
    values: NDArray[np.float64]
    graded: bool = False
    scale: float = 1.0

    @property
    def line(self) -> str:
        return f"{LIKELY_CAUSE}{self.message}"


@dataclass(frozen=True)
class Match:
    candidate: Candidate
    usage: float  # the largest |a − v| / (atol + rtol·|v|): 0 = identical, ≤ 1 = matches


def fingerprint_index(variant: np.ndarray, truth: np.ndarray) -> NDArray[np.int64]:
    """Which flat elements of `variant` its fingerprint keeps (all, up to `FINGERPRINT_SIZE`;
    else the `DISCRIMINATING` farthest from the truth and the rest spread evenly); never a
    masked one (an element where the mistake's own output is ill-conditioned)."""
    mask = np.ma.getmask(variant)
    # Without a mask every element is kept: no index of them to build and read through (the
    # language model's outputs, 640,000 elements for each of some 80 mistakes).
    kept = None if mask is np.ma.nomask else np.flatnonzero(~mask.ravel())
    size = variant.size if kept is None else kept.size
    # A mistake whose output has another shape than the truth (a BPE model with more merges)
    # is told from it by its shape: all of it is kept.
    if size <= FINGERPRINT_SIZE or variant.shape != truth.shape:
        return np.arange(size, dtype=np.int64) if kept is None else kept.astype(np.int64)
    v, t = np.ma.getdata(variant).ravel(), np.asarray(truth, np.float64).ravel()
    if kept is not None:
        v, t = v[kept], t[kept]
    with np.errstate(invalid="ignore"):
        gap = np.abs(v - t) / (1.0 + np.abs(t))
    gap = np.where(np.isnan(gap), np.inf, gap)
    top = _largest(gap, DISCRIMINATING)
    spread = np.linspace(0, size - 1, FINGERPRINT_SIZE - DISCRIMINATING).astype(np.int64)
    chosen = np.unique(np.concatenate([top, spread]))
    return chosen if kept is None else kept[chosen]


def _largest(values: NDArray[np.float64], k: int) -> NDArray[np.intp]:
    """The indices of the `k` largest of `values`: the set `np.argpartition(-values, k)[:k]`
    gives, found among the few values at or above a bound read off a sample (0.6 ms against
    8.9 ms on 640,000 values, a language model's logits). Where values equal at the k-th place
    make the set a choice, argpartition makes it on all of them, as it always did: the table
    stays the same, bit for bit."""
    sample = values[:: max(1, values.size // (64 * k))]
    if sample.size > k:
        # At least k values are at or above the sample's k-th largest: the k largest are.
        bound = np.partition(sample, sample.size - k)[sample.size - k]
        near = np.flatnonzero(values >= bound)
        top = near[np.argpartition(-values[near], k - 1)[:k]]
        if np.count_nonzero(values >= values[top].min()) == k:
            return top
    return np.argpartition(-values, k)[:k]


def output_scale(variant: np.ndarray, truth: np.ndarray) -> float:
    """max |variant| / max(1, max |truth|), at least 1, over finite values: how much larger
    than the correct output a mistaken one is, where that matters for rounding."""
    values = np.ma.compressed(variant)  # every element of a plain array
    largest = float(np.max(np.abs(values), where=np.isfinite(values), initial=0.0))
    return max(1.0, largest / max(1.0, float(np.max(np.abs(truth), initial=0.0))))


def usage(output: np.ndarray, candidate: Candidate, rtol: float, atol: float) -> float:
    """How much of the tolerance `output` uses against the candidate's fingerprint:
    max |a − v| / (atol + rtol·|v|); equal elements (the same infinity, NaN and NaN) use none
    of it, NaN against a number all of it and more (inf)."""
    a = np.asarray(output, np.float64).ravel()[candidate.index]
    v = candidate.values
    same = (a == v) | (np.isnan(a) & np.isnan(v))
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.abs(a - v) / (atol + rtol * np.abs(v))
    share = np.where(same, 0.0, np.where(np.isnan(share), np.inf, share))
    return float(share.max(initial=0.0))


def matches(
    actual: np.ndarray,
    expected: np.ndarray,
    candidates: Sequence[Candidate],
    rtol: float,
    atol: float,
) -> list[Match]:
    """The candidates `actual` matches within the tolerance, best first. A candidate that
    `expected` matches too is left out: that mistake cannot show on this case.

    The tolerance's absolute part is sized for the correct output, O(1); an implementation
    making a mistake whose output is larger (a tied head's logits of ~50) rounds in
    proportion, so against that candidate it is multiplied by the candidate's `scale`."""
    found = []
    for candidate in candidates:
        if tuple(actual.shape) != candidate.shape:
            continue
        share = usage(actual, candidate, rtol, atol * candidate.scale)
        told_apart = tuple(expected.shape) != candidate.shape  # a BPE model of another size
        if share <= 1.0 and (told_apart or usage(expected, candidate, rtol, atol) > 1.0):
            found.append(Match(candidate, share))
    return sorted(found, key=lambda m: m.usage)


def preferred(found: Sequence[Match], rank: Callable[[str], int]) -> list[Match]:
    """`found` (best first) by `rank` of each mistake, lowest first, best first within a rank:
    matches within the tolerance are one output under several names, and which of them is
    meant is the submission's to say, where its other failures say it."""
    return sorted(found, key=lambda m: rank(m.candidate.mistake))


def opening_lines(found: Sequence[Match]) -> list[str]:
    """The lines a failure message opens with: the best match, then the others, each one
    output under another name. Without a match the caller puts `NO_MATCH` before its own
    first line."""
    lines = [found[0].candidate.line] if found else []
    lines += [f"  {OR}{m.candidate.message}" for m in found[1:]]
    return lines


class Source(Protocol):
    @property
    def mistake_families(self) -> dict[str, set[str]]:
        """Each mistake's families: where the catalog shows it."""

    def candidates(self, family: str, case_id: str) -> list[Candidate] | None:
        """The catalogued mistakes that can show on the case; None: the family has none."""


class LiveCatalog:
    """Candidates computed from the catalog (which needs the oracle) when first asked for."""

    def __init__(self, fixtures: Path):
        catalog = withheld.load(withheld.CATALOG)

        self.fixtures = fixtures
        self.messages = {m.id: m.message for m in catalog.MISTAKES}
        self.graded = {m.id for m in catalog.MISTAKES if m.graded}
        self.families = {f for m in catalog.MISTAKES for f in m.variants}
        self.mistake_families = {m.id: set(m.variants) for m in catalog.MISTAKES}

    def candidates(self, family: str, case_id: str) -> list[Candidate] | None:
        if family not in self.families:
            return None
        return _live_candidates(self.fixtures, family, case_id)

    def forward_cases(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(family, case entry) of each stored forward case of a family the catalog covers:
        the cases a diagnosis can be asked for."""
        for family, entries in case_table(self.fixtures).items():
            if family in self.families:
                for entry in entries:
                    if case_kind(entry["params"]) is None:
                        yield family, entry


# Per process, like the fixtures' own cache: a session refuses fixtures that changed on disk.
@cache
def _live_candidates(fixtures: Path, family: str, case_id: str) -> list[Candidate]:
    catalog = withheld.load(withheld.CATALOG)

    case = load(fixtures, family, case_id)
    return [
        Candidate(
            mistake,
            catalog.BY_ID[mistake].message,
            tuple(v.shape),
            index := fingerprint_index(v, case.expected),
            np.ma.getdata(v).ravel()[index],
            catalog.BY_ID[mistake].graded,
            output_scale(v, case.expected),
        )
        for mistake, v in catalog.variants(case)
    ]


def _key(family: str, case_id: str, mistake: str) -> str:
    return f"{family}/{case_id}/{mistake}"


# Where the student handout ships the table of its stored fixtures (`make handout`), for a
# copy that has no catalog to compute it from.
SHIPPED_TABLE = Path("tests") / "known_mistakes.safetensors"


def write_table(fixtures: Path, path: Path, families: Collection[str] | None = None) -> Path:
    """Every candidate of every stored forward case of `fixtures` (of `families` alone, where
    given: none, for the catalog's messages and families only), in one safetensors file that
    `Table` reads without the catalog."""
    live = LiveCatalog(fixtures)
    tensors: dict[str, np.ndarray] = {}
    shapes: dict[str, list[int]] = {}
    scales: dict[str, float] = {}
    for family, entry in live.forward_cases():
        if families is not None and family not in families:
            continue
        for c in live.candidates(family, entry["id"]) or []:
            key = _key(family, entry["id"], c.mistake)
            tensors[f"{key}/index"], tensors[f"{key}/values"] = c.index, c.values
            shapes[key] = list(c.shape)
            scales[key] = c.scale
    metadata = {
        "fixtures": fixtures_digest(fixtures),
        "messages": json.dumps(live.messages),
        "graded": json.dumps(sorted(live.graded)),
        "families": json.dumps(sorted(live.families)),
        "mistake_families": json.dumps({m: sorted(f) for m, f in live.mistake_families.items()}),
        "shapes": json.dumps(shapes),
        "scales": json.dumps(scales),
    }
    save_file(tensors, str(path), metadata=metadata)
    return path


class Table:
    """Candidates read from a file `write_table` wrote."""

    def __init__(self, path: Path):
        from safetensors import safe_open

        with safe_open(str(path), framework="numpy") as f:
            metadata = f.metadata()
        self.tensors = load_file(str(path))
        self.fixtures = metadata.get("fixtures", "")
        self.messages: dict[str, str] = json.loads(metadata["messages"])
        self.graded = set(json.loads(metadata["graded"]))
        self.families = set(json.loads(metadata["families"]))
        self.mistake_families = {
            m: set(f) for m, f in json.loads(metadata.get("mistake_families", "{}")).items()
        }
        self.shapes: dict[str, list[int]] = json.loads(metadata["shapes"])
        self.scales: dict[str, float] = json.loads(metadata["scales"])

    def candidates(self, family: str, case_id: str) -> list[Candidate] | None:
        if family not in self.families:
            return None
        prefix = f"{family}/{case_id}/"
        return [
            Candidate(
                key.removeprefix(prefix),
                self.messages[key.removeprefix(prefix)],
                tuple(shape),
                self.tensors[f"{key}/index"],
                self.tensors[f"{key}/values"],
                key.removeprefix(prefix) in self.graded,
                self.scales[key],
            )
            for key, shape in self.shapes.items()
            if key.startswith(prefix)
        ]


class LazyTable:
    """Candidates read from one table per family (`write_table`'s, of that family alone),
    each got the first time a case of the family asks: `table(family)` returns its path, or
    None where it cannot be had (no candidates, then). A submission that fails nothing asks
    for none; one whose RMSNorm is wrong, for RMSNorm's first (0.4 s in the grader's process
    that writes it, where all the families' take 6 s, the language models' most)."""

    def __init__(self, table: Callable[[str], Path | None]):
        self._path = table
        self._tables: dict[str, Table | None] = {}

    def _table(self, family: str) -> Table | None:
        if family not in self._tables:
            path = self._path(family)
            self._tables[family] = None if path is None else Table(path)
        return self._tables[family]

    @property
    def mistake_families(self) -> dict[str, set[str]]:
        """From any family's table (each holds the catalog's facts); else from the table of
        no family, which holds nothing else."""
        table = next((t for t in self._tables.values() if t is not None), None)
        table = table or self._table("")
        return {} if table is None else table.mistake_families

    def candidates(self, family: str, case_id: str) -> list[Candidate] | None:
        table = self._table(family)
        return None if table is None else table.candidates(family, case_id)


def shipped_table(root: Path, fixtures: Path) -> Table | None:
    """The table a handout at `root` ships, if it was written for `fixtures`."""
    path = root / SHIPPED_TABLE
    if not path.is_file() or not (fixtures / MANIFEST_NAME).is_file():
        return None
    table = Table(path)
    return table if table.fixtures == fixtures_digest(fixtures) else None
