"""Tests of the first-difference report: when the LM's (or the block's) output test fails, its
message names the first sublayer of the submission's module that departs from the oracle,
or says why it cannot.

Each wrong module with a `FIRST_DIFFERENCE` (family → the words its failure must contain)
runs the two output test files in-process (pytester), as in `tests/meta/test_meta.py`; so do
three adapters files written here, whose LM is wrong (no final norm) while what
`get_transformer_lm` offers cannot locate it: nothing, a model without the SPEC's names, or
the right model. Marked `meta`, run by `make meta`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

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
NOT_LOCATED = {
    "no_module_adapter": (
        WRONG_LM + "del get_transformer_lm\n",
        "the first difference could not be located: not implemented: get_transformer_lm",
    ),
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


@pytest.fixture(scope="module", autouse=True)
def _dynamo_imported_once():
    """pytester takes modules imported during an inline run out of `sys.modules` again
    afterwards. torch.optim's first call imports torch._dynamo, which imports triton, a
    native extension that aborts the process when imported a second time: so import it
    once here, outside every run."""
    import torch._dynamo  # noqa: F401


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


@pytest.mark.parametrize("name", NOT_LOCATED)
def test_the_failure_says_why_it_cannot_locate(pytester, name):
    source, words = NOT_LOCATED[name]
    adapters = pytester.makepyfile(**{name: source})
    failures = output_failures(pytester, adapters)
    assert set(failures) == {"transformer_lm"}
    unnamed = [text for text in failures["transformer_lm"] if words not in text]
    assert not unnamed, f"{words!r} is not in\n{unnamed[0]}"
