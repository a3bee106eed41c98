"""The pytest side of the diagnosis: a failing comparison's message opens with its likely
cause or its error's shape (docs/checking.md, "Diagnosis: the likely cause of a wrong
output")."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from cs336_harness import withheld
from cs336_harness.judging.case_layout import case_kind
from cs336_harness.judging.cases import Case
from cs336_harness.judging.compare import OracleMismatch
from cs336_harness.judging.diagnosis import dtype_cause
from cs336_harness.judging.diagnosis.diagnose import (
    COMPONENTS,
    FORWARD_EXPECTED,
    NO_MATCH,
    LiveCatalog,
    Source,
    Table,
    matches,
    opening_lines,
    shipped_table,
)
from cs336_harness.judging.diagnosis.error_shape import describe
from cs336_harness.judging.diagnosis.numpy_cases import DERIVED_EXPECTED
from cs336_harness.judging.pytest_plugin import fixtures_dir
from cs336_harness.paths import REPO_ROOT

_SOURCE = pytest.StashKey[Source | None]()
_FAILED = pytest.StashKey[set[str]]()
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
    config.stash[_FAILED] = set()


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


def _diagnose(item: pytest.Item, mismatch: OracleMismatch) -> None:
    case = getattr(item, "funcargs", {}).get("case")
    if not isinstance(case, Case) or not _is_forward_output(case, mismatch.expected):
        return
    source = _source(item.config, fixtures_dir(item.config))
    candidates = None if source is None else source.candidates(case.family, case.id)
    actual, expected = mismatch.actual.numpy(), mismatch.expected.double().numpy()
    found = []
    if candidates is not None:
        found = matches(actual, expected, candidates, mismatch.rtol, mismatch.atol)
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
        return
    failed = item.config.stash[_FAILED]
    also = [f for f in COMPONENTS.get(case.family, ()) if f in failed]
    lines += opening_lines(found, also)
    message = mismatch.msg if found else f"{NO_MATCH}; {mismatch.msg}"
    mismatch.msg = "\n".join([*lines, message])
    item.user_properties.append((PROPERTY, ",".join(m.candidate.mistake for m in found) or "none"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    # Before the report is made from the exception, so that every reader of it (the terminal,
    # JUnit, the grader's record) sees the diagnosis.
    mismatch = call.excinfo.value if call.excinfo is not None else None
    if call.when == "call" and isinstance(mismatch, OracleMismatch):
        try:
            _diagnose(item, mismatch)
        except Exception as error:  # a bug here must not cost the report of the failure
            mismatch.msg = f"(diagnosis failed: {error!r})\n{mismatch.msg}"
    elif call.when == "call" and type(mismatch) is pytest.fail.Exception:
        line = dtype_cause.cause(mismatch.msg)
        if line is not None:
            mismatch.msg = f"{line}\n{mismatch.msg}"
            item.user_properties.append((PROPERTY, dtype_cause.ID))
    report = yield
    marker = item.get_closest_marker("family")
    if call.when == "call" and report.failed and marker is not None:
        item.config.stash[_FAILED].add(marker.args[0])
    return report
