"""The pytest side of the diagnosis: a failing comparison's message opens with its likely
cause or its error's shape (docs/checking.md, "Diagnosis: the likely cause of a wrong
output"), and a failure that follows from a wrong component of the same submission with that
component (`root_cause`).

PYTEST_DONT_REWRITE: a plugin, not a test, so pytest leaves its asserts as they are
(and does not warn that it was imported before its rewriting began)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from _pytest.outcomes import Failed

from cs336_harness import withheld
from cs336_harness.adapters.loader import SubmissionRaised
from cs336_harness.judging.case_layout import case_kind
from cs336_harness.judging.cases import Case
from cs336_harness.judging.compare import OracleMismatch
from cs336_harness.judging.diagnosis import dtype_cause, root_cause
from cs336_harness.judging.diagnosis.diagnose import (
    FORWARD_EXPECTED,
    LIKELY_CAUSE,
    NO_MATCH,
    OR,
    LiveCatalog,
    Match,
    Source,
    Table,
    matches,
    opening_lines,
    preferred,
    shipped_table,
)
from cs336_harness.judging.diagnosis.error_shape import describe
from cs336_harness.judging.diagnosis.numpy_cases import DERIVED_EXPECTED
from cs336_harness.judging.pytest_plugin import fixtures_dir
from cs336_harness.paths import REPO_ROOT

_SOURCE = pytest.StashKey[Source | None]()
_SESSION = pytest.StashKey[root_cause.Session]()
_HOMES = pytest.StashKey[dict[str, str]]()
# The property each diagnosed report carries: the matching mistakes' ids, best first, or
# "none" (the meta-test reads it).
PROPERTY = "diagnosis"
# The property a report whose message opens with its error's shape carries: that line's kind
# (`error_shape.KINDS`; the meta-test reads it).
SHAPE_PROPERTY = "error_shape"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("cs336").addoption(
        "--diagnosis-table",
        metavar="FILE",
        help="known mistakes' outputs on the fixtures, written by cs336-grade "
        "(default: computed from the catalog where this copy has the oracle)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_SESSION] = root_cause.Session()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every family's tests after those of the families it is built from (`root_cause`)."""
    order = root_cause.run_order([_family(item) for item in items])
    items[:] = [items[i] for i in order]


def _family(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("family")
    return marker.args[0] if marker is not None and marker.args else None


def use_source(config: pytest.Config, source: Source) -> None:
    """Diagnose from `source`, not `--diagnosis-table` or the catalog (the judge's tables,
    written as failures ask: `grading/judge/known_mistakes.py`)."""
    config.stash[_SOURCE] = source


def _source(config: pytest.Config, fixtures: Path) -> Source | None:
    if _SOURCE not in config.stash:
        table = config.getoption("--diagnosis-table")
        if table:
            config.stash[_SOURCE] = Table(Path(table))
        elif withheld.available(withheld.CATALOG):
            config.stash[_SOURCE] = LiveCatalog(fixtures)
        else:
            config.stash[_SOURCE] = shipped_table(REPO_ROOT, fixtures)
    return config.stash[_SOURCE]


def _is_forward_output(case: Case, expected: torch.Tensor) -> bool:
    if case_kind(case.params) is not None:
        return False
    if case.family in DERIVED_EXPECTED:
        derived = DERIVED_EXPECTED[case.family](case.tensors)
        return tuple(expected.shape) == derived.shape and bool((expected.numpy() == derived).all())
    names = FORWARD_EXPECTED.get(case.family, ("expected",))
    return any(name in case.tensors and torch.equal(expected, case.tensors[name]) for name in names)


def _attention_mask(case: Case):
    """The boolean mask a case passes to attention (`scaled_dot_product_attention`'s cases
    hold one where their `mask` param is set), as NumPy; else None. An input, so on
    `--device`."""
    mask = case.tensors.get("mask")
    if not case.params.get("mask") or mask is None or mask.dtype != torch.bool:
        return None
    return mask.cpu().numpy()


def _attention_inputs(case: Case):
    """The Q, K and V of a case with an attention mask, as NumPy float64; else None."""
    names = ("Q", "K", "V")
    if _attention_mask(case) is None or not all(n in case.tensors for n in names):
        return None
    return tuple(case.tensors[n].detach().cpu().double().numpy() for n in names)


def _diagnose(
    item: pytest.Item, mismatch: OracleMismatch, causes: list[root_cause.Cause]
) -> list[Match] | None:
    """Open the message of a failed comparison with its likely cause or its error's shape;
    the matches, best first (None: not a forward output, or no known mistakes to name).
    Where several match, they are ranked by `_rank`."""
    case = getattr(item, "funcargs", {}).get("case")
    if not isinstance(case, Case) or not _is_forward_output(case, mismatch.expected):
        return None
    source = _source(item.config, fixtures_dir(item.config))
    candidates = None if source is None else source.candidates(case.family, case.id)
    actual, expected = mismatch.actual.numpy(), mismatch.expected.double().numpy()
    found = []
    if candidates is not None and source is not None:
        found = preferred(
            matches(actual, expected, candidates, mismatch.rtol, mismatch.atol),
            _rank(item.config, case.family, causes),
        )
    lines = []
    # An exact output (BPE's tokens, as integers) has no shape of error to describe.
    if not found and mismatch.dtype.is_floating_point:
        shape = describe(
            actual,
            expected,
            mismatch.rtol,
            mismatch.atol,
            mask=_attention_mask(case),
            rounding=torch.finfo(mismatch.dtype).eps / 2,
            attention=_attention_inputs(case),
        )
        if shape is not None:
            lines.append(shape.line)
            item.user_properties.append((SHAPE_PROPERTY, shape.kind))
    if candidates is None:  # no known mistakes to name (or to say that none matches)
        mismatch.msg = "\n".join([*lines, mismatch.msg])
        return None
    lines += opening_lines(found)
    message = mismatch.msg if found else f"{NO_MATCH}; {mismatch.msg}"
    mismatch.msg = "\n".join([*lines, message])
    item.user_properties.append((PROPERTY, ",".join(m.candidate.mistake for m in found) or "none"))
    return found


def _rank(
    config: pytest.Config, family: str, causes: list[root_cause.Cause]
) -> Callable[[str], int]:
    """How a mistake ranks among several that match one output: the one the submission's
    wrong components were named first, then one those components' family shows, then one
    made in no component of `family` (its own), then the others."""
    families, homes = _mistake_families(config), _homes(config)
    named = {c.mistake for c in causes}
    parts = root_cause.built_from(family)

    def rank(mistake: str) -> int:
        if mistake in named:
            return 0
        if any(c.family in families.get(mistake, ()) for c in causes):
            return 1
        return 2 if homes.get(mistake) not in parts else 3

    return rank


def _traced(error: BaseException | None) -> bool:
    """Whether a failure can follow from a wrong component: a wrong value, or an exception
    the submission raised (not a check of how it is built, a time-out or a missing
    adapter)."""
    if isinstance(error, OracleMismatch | SubmissionRaised):
        return True
    return isinstance(error, Exception) and not isinstance(error, Failed | AssertionError)


def _prefix(error: BaseException, line: str) -> None:
    """Put `line` before the message of `error`, keeping its type (the grader reads it)."""
    if isinstance(error, Failed):
        error.msg = f"{line}\n{error.msg}"
    else:
        error.args = (f"{line}\n{error.args[0] if error.args else ''}", *error.args[1:])


def _mistake_families(config: pytest.Config) -> dict[str, set[str]]:
    source = _source(config, fixtures_dir(config))
    return {} if source is None else source.mistake_families


def _homes(config: pytest.Config) -> dict[str, str]:
    """Each known mistake's family (`root_cause.home`), worked out once a session."""
    if _HOMES not in config.stash:
        families = _mistake_families(config)
        config.stash[_HOMES] = {m: root_cause.home(fs) for m, fs in families.items()}
    return config.stash[_HOMES]


def _explain(item: pytest.Item, error: BaseException) -> str | None:
    """Diagnose a failed test, and open its message with the wrong components it follows
    from; the mistake it is named, if any."""
    family = _family(item)
    session = item.config.stash[_SESSION]
    traced = family is not None and _traced(error)
    causes = session.roots(family) if traced and family is not None else []
    found = _diagnose(item, error, causes) if isinstance(error, OracleMismatch) else None
    best = found[0].candidate.mistake if found else None
    if not traced or family is None:
        return best
    if causes:
        families = _mistake_families(item.config)
        if best is not None and not any(root_cause.explains(c, best, families) for c in causes):
            # A mistake of this family's own, beside wrong components: both are said.
            _append_after_diagnosis(error, root_cause.also_line(causes))
            return best
        _prefix(error, root_cause.follows_line(causes))
        item.user_properties.append((root_cause.PROPERTY, causes[0].property))
    elif (
        found is None
        and family in session.wrong
        and (session.name(family) or (_backward(item) and not isinstance(error, SubmissionRaised)))
    ):
        # Not a forward output: a gradient, or an exception, of a family whose forward outputs
        # were named (a gradient of one whose were wrong, unnamed): it follows from them. An
        # exception of the backward's own call beside unnamed forward failures (a memory
        # hog's MemoryError in both) is its own, and says so alone.
        cause = root_cause.Cause(family, session.name(family))
        _prefix(error, root_cause.follows_line([cause], forward=True))
        item.user_properties.append((root_cause.PROPERTY, cause.property))
    return best


def _backward(item: pytest.Item) -> bool:
    case = getattr(item, "funcargs", {}).get("case")
    return isinstance(case, Case) and case_kind(case.params) == "backward"


def _append_after_diagnosis(error: BaseException, line: str) -> None:
    """`line` after the diagnosis's opening lines (a likely cause and its other names)."""
    assert isinstance(error, Failed)
    lines = error.msg.splitlines()
    at = next((i for i, text in enumerate(lines) if not _opening(text)), len(lines))
    error.msg = "\n".join([*lines[:at], line, *lines[at:]])


def _opening(line: str) -> bool:
    return line.startswith(LIKELY_CAUSE) or line.lstrip().startswith(OR)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    # Before the report is made from the exception, so that every reader of it (the terminal,
    # JUnit, the grader's record) sees the diagnosis.
    error = call.excinfo.value if call.excinfo is not None else None
    named = None
    if call.when == "call" and type(error) is pytest.fail.Exception:
        line = dtype_cause.cause(error.msg)
        if line is not None:
            error.msg = f"{line}\n{error.msg}"
            item.user_properties.append((PROPERTY, dtype_cause.ID))
    elif call.when == "call" and error is not None:
        try:
            named = _explain(item, error)
        except Exception as failure:  # a bug here must not cost the report of the failure
            if isinstance(error, Failed):
                error.msg = f"(diagnosis failed: {failure!r})\n{error.msg}"
    report = yield
    family = _family(item)
    if call.when == "call" and report.failed and family is not None and _traced(error):
        contract = item.get_closest_marker("hardening") is None
        item.config.stash[_SESSION].record(family, named, contract=contract)
    return report
