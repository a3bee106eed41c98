"""The generator's evidence bars: each catches the weakness it names, the stored draw clears
them all, and a rejected draw is replaced by one that is still a function of the seed."""

import numpy as np
import pytest

from cs336_staff.fixturegen import evidence, reference_model
from cs336_staff.fixturegen.reference_model import REFERENCE_CONFIG, draw_reference_model
from cs336_staff.fixturegen.weights import lm_weights
from cs336_staff.fixturegen.writer import FixtureSet

FFN_OUT = "layers.1.ffn.w2.weight"
SMALL = REFERENCE_CONFIG | {"vocab_size": 50, "d_model": 16, "d_ff": 32}
IDS = np.random.default_rng(0).integers(0, REFERENCE_CONFIG["vocab_size"], (4, 16))


@pytest.fixture(scope="module")
def model() -> dict[str, np.ndarray]:
    return lm_weights(FixtureSet(336).rng("reference_model"), REFERENCE_CONFIG)


def test_the_stored_draw_clears_every_bar(model):
    assert evidence.shortfalls(model, REFERENCE_CONFIG, IDS) == []


@pytest.mark.parametrize(
    ("weakness", "change"),
    [
        ("changes the logits by only", lambda m: {FFN_OUT: np.zeros_like(m[FFN_OUT])}),
        ("near uniform", lambda m: {k: 0.01 * v for k, v in m.items() if "q_proj" in k}),
        ("norm gains too alike", lambda m: {k: np.ones_like(v) for k, v in m.items() if "ln" in k}),
        ("resembles the embeddings", lambda m: {"lm_head.weight": m["token_embeddings.weight"]}),
    ],
)  # fmt: skip
def test_each_bar_catches_its_weakness(model, weakness, change):
    missed = evidence.shortfalls(model | change(model), REFERENCE_CONFIG, IDS)
    assert any(weakness in line for line in missed), missed


def test_a_rejected_draw_is_redrawn_from_the_seed(monkeypatch):
    verdicts = iter([["too weak"], ["too weak"], []] * 2)
    monkeypatch.setattr(evidence, "shortfalls", lambda *args: next(verdicts))
    monkeypatch.setattr(reference_model, "REFERENCE_CONFIG", SMALL)  # the logic, not the size
    first, second = FixtureSet(7), FixtureSet(7)
    a, b = draw_reference_model(first), draw_reference_model(second)
    assert first.redraws == second.redraws == 2
    assert all(np.array_equal(a[k], b[k]) for k in a)
    plain = lm_weights(FixtureSet(7).rng("reference_model"), SMALL)
    assert not np.array_equal(a["lm_head.weight"], plain["lm_head.weight"])
    monkeypatch.setattr(evidence, "shortfalls", lambda *args: ["never"])
    with pytest.raises(RuntimeError, match=f"no draw in {reference_model.MAX_DRAWS}"):
        draw_reference_model(FixtureSet(7))
