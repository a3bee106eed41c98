"""Where a failure starts (`cs336_harness/judging/diagnosis/root_cause.py`): the order the
families run in, the first wrong components, and the lines that say so. The meta-test shows
them on the wrong modules' runs (`tests/meta/test_meta.py`'s `check_follows`)."""

from cs336_harness.families import FAMILIES
from cs336_harness.judging.diagnosis.root_cause import (
    FOLLOWS,
    Cause,
    Session,
    also_line,
    built_from,
    deepest,
    follows_line,
    home,
    run_order,
)


def test_every_family_runs_after_those_it_is_built_from_and_the_others_keep_their_order():
    names = [f.name for f in FAMILIES]
    # The test files' order: by name.
    collected = sorted(names)
    order = [collected[i] for i in run_order(collected)]
    for i, family in enumerate(order):
        assert set(built_from(family)) <= set(order[:i]), family
    unbuilt = [f for f in collected if not built_from(f)]
    assert [f for f in order if not built_from(f)] == unbuilt


def test_a_family_s_tests_stay_together_and_in_their_order():
    families = ["transformer_block", "rope", "transformer_block", "rope", None, "softmax"]
    assert run_order(families) == [1, 3, 4, 5, 0, 2]


def test_the_first_wrong_components_are_those_built_from_no_other_wrong_one():
    assert deepest({"transformer_block", "scaled_dot_product_attention", "softmax"}) == ["softmax"]
    assert deepest({"rope", "scaled_dot_product_attention", "transformer_lm"}) == [
        "rope",
        "scaled_dot_product_attention",
    ]
    assert home({"multihead_self_attention_with_rope", "rope", "transformer_block"}) == "rope"


def test_a_session_traces_a_failure_to_its_first_wrong_components():
    session = Session()
    session.record("scaled_dot_product_attention", "attention_unscaled")
    session.record("scaled_dot_product_attention", None)
    session.record("rmsnorm", None, contract=False)  # a hardening test alone: not wrong
    session.record("multihead_self_attention", "attention_unscaled")
    assert session.roots("transformer_block") == [
        Cause("scaled_dot_product_attention", "attention_unscaled")
    ]
    assert session.roots("rope") == []


def test_the_lines_name_the_component_and_its_mistake():
    cause = Cause("scaled_dot_product_attention", "attention_unscaled")
    assert follows_line([cause]) == (
        f"{FOLLOWS}scaled_dot_product_attention (attention_unscaled): fix that first"
    )
    assert follows_line([Cause("rope")]) == f"{FOLLOWS}rope, whose tests fail: fix that first"
    assert follows_line([cause], forward=True).startswith(
        f"{FOLLOWS}scaled_dot_product_attention's forward output (attention_unscaled)"
    )
    assert also_line([cause, Cause("rope")]) == (
        "your scaled_dot_product_attention (attention_unscaled) and your rope also fail: "
        "fix those too"
    )
    assert Cause.parse(cause.property) == cause and Cause.parse("rope") == Cause("rope")
