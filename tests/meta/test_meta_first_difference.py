"""Tests of the first-difference report: when the LM's (or the block's) output test fails, its
message names the first sublayer of the submission's module that departs from the oracle,
or says why it cannot; with upstream's adapters alone (no `get_transformer_lm` /
`get_transformer_block`), the first stage that departs as the component adapters compute it,
or how the stages are joined.

Each wrong module with a `FIRST_DIFFERENCE` (family → the words its failure must contain)
runs the two output test files in-process (pytester), as in `tests/meta/test_meta.py`; so do
adapters files written here: LMs whose mistake lies past every layer, in upstream's shape,
and LMs that `get_transformer_lm` cannot locate (a model without the SPEC's names, or the
right model). And the walk over upstream's adapters never tells a correct implementation
that a stage differs. Marked `meta`, run by `make meta`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from cs336_harness.adapters.loader import Adapters, NotImplementedFailure
from cs336_harness.families import BY_NAME
from cs336_harness.judging.case_layout import case_table
from cs336_harness.judging.cases import load_case
from cs336_harness.judging.diagnosis.first_difference import in_transformer_block, in_transformer_lm
from cs336_harness.judging.diagnosis.stage_walk import SILENCED
from cs336_harness.judging.pytest_plugin import fixtures_dir

TESTS = Path(__file__).resolve().parent.parent
OUTPUT_TESTS = {
    "transformer_lm": "test_transformer_lm",
    "transformer_block": "test_transformer_block",
}
LOCATED = sorted(
    p
    for p in (TESTS / "evidence" / "wrong").glob("*.py")
    if not p.name.startswith("_")
    and hasattr(importlib.import_module(f"tests.evidence.wrong.{p.stem}"), "FIRST_DIFFERENCE")
)
WRONG_LM = """
from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._mistakes import MistakenAdapters, Mistakes

run_transformer_lm = MistakenAdapters(Mistakes(final_norm=False)).run_transformer_lm
"""
# Upstream's handout has neither module adapter.
UPSTREAM_SHAPE = "del get_transformer_lm, get_transformer_block\n"
UPSTREAM_LOCATED = {
    "final_norm_skipped": (
        WRONG_LM + UPSTREAM_SHAPE,
        "with every layer silenced (each one's attn.output_proj.weight and ffn.w2.weight zero) "
        "it must give lm_head(ln_final(token_embeddings))",
    ),
    "blocks_not_chained": (
        """
from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._model_mistakes import AssembledAdapters, Assembly

run_transformer_lm = AssembledAdapters(Assembly(chained=False)).run_transformer_lm
"""
        + UPSTREAM_SHAPE,
        "the layers are chained otherwise",
    ),
    "swiglu_not_implemented": (
        WRONG_LM
        + UPSTREAM_SHAPE
        + """

def run_swiglu(d_model, d_ff, w1_weight, w2_weight, w3_weight, in_features):
    raise NotImplementedError
""",
        "the 4 stages before it match the oracle; the walk over the stages stopped at "
        "layers.0.ffn: not implemented: run_swiglu",
    ),
}
NOT_LOCATED = {
    "other_names": (
        WRONG_LM
        + """
import torch


class Wrapped(torch.nn.Module):
    def __init__(self, **sizes):
        super().__init__()
        self.inner = TransformerLM(**sizes)

    def forward(self, token_ids):
        return self.inner(token_ids)


def get_transformer_lm(**sizes):
    return Wrapped(**sizes)
""",
        "the first difference could not be located: get_transformer_lm's model has none of "
        "the SPEC's submodules (layers.0.ln1, layers.0.attn, layers.0.ln2, layers.0.ffn and",
    ),
    "right_module": (
        WRONG_LM,
        "every sublayer of get_transformer_lm's model matches the oracle, its output "
        "included: run_transformer_lm computes something other than that model",
    ),
}


def output_failures(pytester: pytest.Pytester, adapters: Path) -> dict[str, list[str]]:
    """Run the LM's and the block's output tests against `adapters`; each family's failure
    messages."""
    files = [str(TESTS / "families" / f"{name}.py") for name in OUTPUT_TESTS.values()]
    recorder = pytester.inline_run(
        *files, f"--adapters={adapters}", "-p", "no:cacheprovider", "-m", "not hardening"
    )
    failures: dict[str, list[str]] = {}
    for report in recorder.getreports("pytest_runtest_logreport"):
        family = dict(report.user_properties).get("family")
        test = report.nodeid.rpartition("::")[2].partition("[")[0]
        if report.failed and test == OUTPUT_TESTS.get(family):
            failures.setdefault(family, []).append(report.longreprtext)
    return failures


@pytest.mark.parametrize("module", LOCATED, ids=[p.stem for p in LOCATED])
def test_the_failure_names_the_wrong_sublayer(pytester, module):
    expected = importlib.import_module(f"tests.evidence.wrong.{module.stem}").FIRST_DIFFERENCE
    failures = output_failures(pytester, module)
    assert set(failures) == set(expected), f"failing output tests: {sorted(failures)}"
    for family, words in expected.items():
        unnamed = [text for text in failures[family] if words not in text]
        assert not unnamed, f"{family}: {words!r} is not in\n{unnamed[0]}"


def lm_failures_say(pytester: pytest.Pytester, name: str, source: str, words: str) -> None:
    """Only the LM's output test fails against the adapters `source`, each time saying
    `words`."""
    adapters = pytester.makepyfile(**{name: source})
    failures = output_failures(pytester, adapters)
    assert set(failures) == {"transformer_lm"}
    unnamed = [text for text in failures["transformer_lm"] if words not in text]
    assert not unnamed, f"{words!r} is not in\n{unnamed[0]}"


@pytest.mark.parametrize("name", UPSTREAM_LOCATED)
def test_upstream_shaped_lm_is_located_past_its_layers(pytester, name):
    source, words = UPSTREAM_LOCATED[name]
    lm_failures_say(pytester, name, source, words)


@pytest.mark.parametrize("name", NOT_LOCATED)
def test_the_failure_says_why_it_cannot_locate(pytester, name):
    source, words = NOT_LOCATED[name]
    lm_failures_say(pytester, name, source, words)


CORRECT = {
    "bundled": TESTS / "adapters.py",
    "fused": TESTS / "evidence" / "fused.py",
    "upstream_style": TESTS / "evidence" / "upstream_style" / "tests" / "adapters.py",
}


class UpstreamOnly:
    """A correct module's adapters as upstream's handout has them (no module adapters, so the
    locator walks the stages), with the adapter `off` returning its output plus one wherever
    no sublayer is silenced (no `attn.output_proj.weight` or `ffn.w2.weight` all zero): the
    walk then finds that whole departing and tries each silenced run, all of which match."""

    def __init__(self, adapters: Adapters, off: str | None):
        self.adapters, self.off = adapters, off

    def probe(self, name, kwargs):
        raise NotImplementedFailure(f"not implemented: {name}", pytrace=False)

    def __getattr__(self, name):
        function = getattr(self.adapters, name)
        if name != self.off:
            return function

        def off_by_one(**kwargs):
            out = function(**kwargs)
            weights = kwargs["weights"].items()
            silenced = any(k.endswith(SILENCED) and not w.any() for k, w in weights)
            return out if silenced else out + 1

        return off_by_one


# (what is off, the family) → what the walk must end with: every comparison on its way,
# each sublayer's, each whole's and each silenced run's, matched the oracle.
WALKS = {
    (None, "transformer_block"): "no stage departs: run_transformer_block's values match",
    (None, "transformer_lm"): "no stage departs: run_transformer_lm's values match",
    ("run_transformer_block", "transformer_block"): "the halves are joined otherwise",
    ("run_transformer_block", "transformer_lm"): "the halves are joined otherwise",
    ("run_transformer_lm", "transformer_lm"): "the layers are chained otherwise",
}
LOCATORS = {"transformer_block": in_transformer_block, "transformer_lm": in_transformer_lm}


@pytest.mark.parametrize("name", CORRECT)
def test_a_correct_implementation_is_told_no_stage_differs(request, name):
    """On every case of the stored draw (a fresh one under `make sweep`), the walk over
    upstream's adapters finds each stage of a correct implementation matching the oracle,
    by the family's tolerance."""
    adapters = Adapters(str(CORRECT[name]))
    fixtures = fixtures_dir(request.config)
    table = case_table(fixtures)
    for (off, family), words in WALKS.items():
        for entry in table[family]:
            if entry["params"].get("backward"):
                continue
            case = load_case(fixtures, family, entry)
            tolerance = BY_NAME[family].tolerance
            report = LOCATORS[family](UpstreamOnly(adapters, off), case, **tolerance)
            assert words in report, f"{name}, {off} off, {family}[{entry['id']}]: {report}"
