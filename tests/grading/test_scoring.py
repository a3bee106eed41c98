"""Rubric and points: upstream's families, credit per case or all or nothing per family,
the families beyond the rubric reported apart, verdict precedence."""

import re
from dataclasses import replace
from pathlib import Path

import pytest

from cs336_harness.families import BY_NAME, FAMILIES
from cs336_harness.grading.results import (
    HARDENING,
    GradedTest,
    Status,
    SubmissionResult,
    family_status,
)
from cs336_harness.grading.scoring import (
    DEFAULT_RUBRIC,
    FamilyPoints,
    Gradescope,
    RubricError,
    load_rubric,
    score,
)

CORE = {
    "linear": 1,
    "embedding": 1,
    "rmsnorm": 1,
    "swiglu": 2,
    "rope": 2,
    "scaled_dot_product_attention": 5,
    "multihead_self_attention": 3,
    "multihead_self_attention_with_rope": 2,
    "transformer_block": 3,
    "transformer_lm": 2,
    "transformer_lm_truncated_input": 1,
}


def test_the_rubric_gives_the_core_components_23_points():
    rubric = load_rubric()
    assert {f.family: f.points for f in rubric.families if f.family in CORE} == CORE
    assert sum(CORE.values()) == 23


# The upstream handout's points for the training half (Spring 2025).
TRAINING = {
    "cross_entropy": 2,
    "adamw": 2,
    "learning_rate_schedule": 1,
    "gradient_clipping": 1,
    "data_loading": 2,
    "checkpointing": 1,
}


def test_the_rubric_gives_the_training_half_the_handouts_points():
    rubric = load_rubric()
    assert {f.family: f.points for f in rubric.families if f.family in TRAINING} == TRAINING


def test_the_rubric_is_the_registry_and_covers_every_family_the_tests_carry():
    carried = {
        match
        for path in (DEFAULT_RUBRIC.parent / "tests" / "families").glob("test_*.py")
        for match in re.findall(r'pytest\.mark\.family\("(\w+)"', path.read_text())
    }
    rubric = load_rubric()
    upstream = [f for f in FAMILIES if f.upstream]
    assert [f.family for f in rubric.families] == [f.name for f in upstream]
    assert {f.family: f.points for f in rubric.families} == {f.name: f.points for f in upstream}
    assert carried == set(BY_NAME)


# Beyond upstream's handout: its adapters are not the assignment's.
BEYOND = {
    "transformer_lm_module",
    "transformer_block_module",
    "layernorm",
    "gelu",
    "positionwise_feedforward",
    "transformer_lm_from_config",
    "decoding",
}


def test_the_default_rubric_is_upstream_s_assignment_credited_per_case():
    rubric = load_rubric()
    assert {f.name for f in FAMILIES if not f.upstream} == BEYOND
    assert not {f.family for f in rubric.families} & BEYOND
    # The model's 23 and SiLU's and softmax's point, the training half's 9, the tokenizer's 30.
    assert sum(f.points for f in rubric.families) == 23 + 2 + 9 + 30 == 64
    assert rubric.partial


@pytest.mark.parametrize(("credit", "partial"), [("case", True), ("family", False)])
def test_the_rubric_s_scoring_table_says_how_a_family_is_credited(
    tmp_path: Path, credit: str, partial: bool
):
    path = tmp_path / "rubric.toml"
    path.write_text(f'[families]\nrope = {{ points = 2 }}\n[scoring]\ncredit = "{credit}"\n')
    rubric = load_rubric(path)
    assert rubric.partial is partial
    submission = _submission(("rope", Status.PASSED), ("rope", Status.FAILED))
    assert score(submission, rubric).points == (1.0 if partial else 0.0)
    assert score(submission, rubric, partial=not partial).points == (0.0 if partial else 1.0)


def test_a_course_s_families_table_stands_alone_and_titles_default_to_the_registry(tmp_path):
    path = tmp_path / "rubric.toml"
    path.write_text("[families]\nrope = { points = 3 }\n")
    rubric = load_rubric(path)
    assert [(f.family, f.title, f.points) for f in rubric.families] == [("rope", "RoPE", 3.0)]


@pytest.mark.parametrize(
    "text",
    [
        "[families]\n",
        "families = { linear = 1 }\n",
        "[families]\nlinear = { points = -1 }\n",
        "[families]\ntrain_bpe = { points = 15, efficiency = 16 }\n",
        "[families]\ntrain_bpe = { points = 15, efficiency = true }\n",
    ],
)
def test_a_malformed_rubric_is_an_error(tmp_path: Path, text: str):
    path = tmp_path / "rubric.toml"
    path.write_text(text)
    with pytest.raises(RubricError):
        load_rubric(path)


def test_the_rubric_s_gradescope_table_is_read_with_its_family_overrides(tmp_path: Path):
    assert load_rubric().gradescope == Gradescope()
    text = DEFAULT_RUBRIC.read_text()
    path = tmp_path / "rubric.toml"
    path.write_text(text[: text.index("[gradescope]")] + GRADESCOPE)
    settings = load_rubric(path).gradescope
    assert (settings.visibility, settings.output_format, settings.leaderboard) == (
        "after_published",
        "html",
        True,
    )
    assert settings.test_visibility("rope") == "hidden"
    assert settings.test_visibility(HARDENING) == "after_due_date"
    assert settings.test_visibility("linear") == "after_published"


GRADESCOPE = """\
[gradescope]
visibility = "after_published"
output_format = "html"
leaderboard = true
[gradescope.family_visibility]
rope = "hidden"
hardening = "after_due_date"
"""


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[gradescope]\nvisibility = "public"', "visibility must be one of visible, hidden"),
        ("[gradescope]\nstdout_visibility = 1", "stdout_visibility must be one of"),
        ('[gradescope]\noutput_format = "pdf"', "output_format must be one of text, ansi"),
        ('[gradescope]\nleaderboard = "yes"', "leaderboard must be true or false"),
        ("[gradescope]\ncolour = 1", "may hold only visibility, stdout_visibility"),
        ('[gradescope.family_visibility]\nropee = "hidden"', "'ropee' is not a family"),
        ('[gradescope.family_visibility]\nrope = "later"', "rope must be one of"),
        ("[gradescope]\nfamily_visibility = 1", "family_visibility must be a table"),
        ('[gradscope]\nvisibility = "hidden"', "unknown 'gradscope'"),
    ],
)
def test_a_malformed_gradescope_table_is_an_error(tmp_path: Path, table: str, message: str):
    text = DEFAULT_RUBRIC.read_text()
    path = tmp_path / "rubric.toml"
    path.write_text(text[: text.index("[gradescope]")] + table + "\n")
    with pytest.raises(RubricError, match=re.escape(message)):
        load_rubric(path)


def _submission(*verdicts: tuple[str, Status]) -> SubmissionResult:
    tests = tuple(
        GradedTest(f"t::{family}{i}", family, s) for i, (family, s) in enumerate(verdicts)
    )
    return SubmissionResult("s", Path("."), tests, "", 0.0, 1)


def test_a_family_earns_its_share_per_case_or_all_or_nothing():
    rubric = load_rubric()
    submission = _submission(
        ("rope", Status.PASSED),
        ("rope", Status.FAILED),
        ("linear", Status.PASSED),
    )
    strict, partial = score(submission, rubric, partial=False), score(submission, rubric)
    assert [(f.family, f.points) for f in strict.families] == [("linear", 1.0), ("rope", 0.0)]
    assert strict.max_points == 3.0  # families without tests are not graded
    assert [f.points for f in partial.families] == [1.0, 1.0]
    rope = strict.families[1]
    assert rope.test_points(rope.tests[0]) == (0.0, 1.0)  # passed, but the family did not
    assert partial.families[1].test_points(rope.tests[0]) == (1.0, 1.0)


def test_a_trivial_pass_earns_only_beside_a_test_of_its_family_that_tells_it_apart(
    tmp_path: Path,
):
    why = "a clipping that does nothing gives them"
    alone = (
        GradedTest("t::clip0", "gradient_clipping", Status.PASSED, trivial=why),
        GradedTest("t::clip1", "gradient_clipping", Status.FAILED),
        GradedTest("t::lm0", "transformer_lm", Status.FAILED),
        GradedTest("t::lm1", "transformer_lm", Status.PASSED, kind=HARDENING, trivial=why),
    )
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(DEFAULT_RUBRIC.read_text().replace("points = 0\n", "points = 4\n"))
    result = score(SubmissionResult("s", Path("."), alone, "", 0.0, 1), load_rubric(rubric))
    assert result.points == 0
    clipping = next(f for f in result.families if f.family == "gradient_clipping")
    assert clipping.test_points(alone[0]) == (0.0, clipping.max_points / 2)
    assert not clipping.counts(alone[0])
    # The same pass beside one that tells them apart earns; in the hardening entry too,
    # which the family's contract test unlocks.
    told = (alone[0], replace(alone[1], status=Status.PASSED), *alone[2:])
    told = (*told[:2], replace(told[2], status=Status.PASSED), told[3])
    for partial in (True, False):
        result = score(SubmissionResult("s", Path("."), told, "", 0.0, 1), load_rubric(rubric),
                       partial)  # fmt: skip
        assert result.points == result.max_points


def test_efficiency_tests_carry_upstream_s_share_of_their_family_or_the_rubric_s(
    tmp_path: Path,
):
    """train_bpe's speed test is one of upstream's three: 5 of its 15 points, whatever the
    number of this project's other tests; a course's rubric may weigh it otherwise."""
    tests = (
        *(GradedTest(f"t::bpe{i}", "train_bpe", Status.PASSED) for i in range(11)),
        GradedTest("t::speed", "train_bpe", Status.FAILED, efficiency=True),
    )
    submission = SubmissionResult("s", Path("."), tests, "", 0.0, 1)
    [bpe] = score(submission, load_rubric()).families
    assert (bpe.points, bpe.max_points, bpe.efficiency_points) == (10.0, 15.0, 5.0)
    assert bpe.test_points(tests[-1]) == (0.0, 5.0)
    assert bpe.test_points(tests[0]) == (10 / 11, 10 / 11)
    assert score(submission, load_rubric(), partial=False).points == 0
    rubric = tmp_path / "rubric.toml"
    rubric.write_text("[families]\ntrain_bpe = { points = 15, efficiency = 3 }\n")
    assert score(submission, load_rubric(rubric)).points == 12.0
    # A run with no efficiency test (one that selected tests) gives their points to the rest.
    assert score(replace(submission, tests=tests[:-1]), load_rubric()).points == 15.0
    assert load_rubric().get("tokenizer").efficiency == pytest.approx(15 / 22)


@pytest.mark.parametrize(
    ("table", "message"),
    [('credit = "test"', "credit must be one of case, family"), ("partial = true", "only credit")],
)
def test_a_malformed_scoring_table_is_an_error(tmp_path: Path, table: str, message: str):
    path = tmp_path / "rubric.toml"
    path.write_text(f"[families]\nrope = {{ points = 2 }}\n[scoring]\n{table}\n")
    with pytest.raises(RubricError, match=re.escape(message)):
        load_rubric(path)


def test_a_family_shows_its_most_serious_verdict():
    assert family_status([Status.PASSED, Status.PASSED]) == Status.PASSED
    assert family_status([Status.NOT_IMPLEMENTED] * 3) == Status.NOT_IMPLEMENTED
    assert family_status([Status.NOT_IMPLEMENTED, Status.FAILED]) == Status.FAILED
    assert family_status([Status.FAILED, Status.CRASHED, Status.TIMED_OUT]) == Status.CRASHED
    assert family_status([Status.ERROR, Status.TIMED_OUT]) == Status.TIMED_OUT


def test_hardening_tests_are_scored_apart_for_the_rubric_s_hardening_points(tmp_path: Path):
    tests = (
        GradedTest("t::lm0", "transformer_lm", Status.PASSED),
        GradedTest("t::lm1", "transformer_lm", Status.FAILED, kind=HARDENING),
        GradedTest("t::sdpa", "scaled_dot_product_attention", Status.PASSED, kind=HARDENING),
    )
    submission = SubmissionResult("s", Path("."), tests, "", 0.0, 1)
    result = score(submission, load_rubric(), partial=False)
    assert [(f.family, f.points, f.max_points) for f in result.families] == [
        ("transformer_lm", 2.0, 2.0),  # the contract test alone decides the family
        (HARDENING, 0.0, 0.0),
    ]
    assert [t.nodeid for t in result.families[1].tests] == ["t::lm1", "t::sdpa"]
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(DEFAULT_RUBRIC.read_text().replace("points = 0\n", "points = 4\n"))
    strict, partial = (
        score(submission, load_rubric(rubric), partial=False),
        score(submission, load_rubric(rubric)),
    )
    assert (strict.families[1].points, strict.families[1].max_points) == (0.0, 4.0)
    assert partial.families[1].points == 2.0


def test_families_beyond_the_rubric_are_apart_and_unseen_where_not_implemented():
    tests = (
        GradedTest("t::rope", "rope", Status.PASSED),
        GradedTest("t::ln0", "layernorm", Status.PASSED),
        GradedTest("t::ln1", "layernorm", Status.FAILED, kind=HARDENING),
        GradedTest("t::gelu", "gelu", Status.NOT_IMPLEMENTED),
        GradedTest("t::cfg", "transformer_lm_from_config", Status.NOT_IMPLEMENTED, kind=HARDENING),
        GradedTest("t::sdpa", "scaled_dot_product_attention", Status.FAILED, kind=HARDENING),
    )
    result = score(SubmissionResult("s", Path("."), tests, "", 0.0, 1), load_rubric())
    assert [f.family for f in result.families] == ["rope", HARDENING]
    assert [t.nodeid for t in result.families[1].tests] == ["t::sdpa"]
    # LayerNorm, implemented, apart with its hardening test and no points; GELU and the
    # config-built LM, not implemented at all, nowhere (a class whose handout lacks them).
    [layernorm] = result.beyond
    assert (layernorm.family, layernorm.points, layernorm.max_points) == ("layernorm", 0.0, 0.0)
    assert [t.nodeid for t in layernorm.tests] == ["t::ln0", "t::ln1"]
    assert (result.points, result.max_points) == (2.0, 2.0)
    # A course that opts in grades LayerNorm like any family.
    opted = replace(load_rubric(), families=(*load_rubric().families, FamilyPoints(
        "layernorm", "LayerNorm", 1.0)))  # fmt: skip
    assert [f.family for f in score(result.submission, opted).families] == [
        "rope",
        "layernorm",
        HARDENING,
    ]


def test_the_rules_cost_their_penalty_only_where_the_source_breaks_them(tmp_path: Path):
    path = tmp_path / "rubric.toml"
    path.write_text(
        '[families]\nlinear = { title = "Linear", points = 3 }\n'
        '[rules]\npenalty = 2\nallowed = ["torch.nn.GELU"]\n'
    )
    rubric = load_rubric(path)
    assert not rubric.rules.policy.forbids("torch.nn.GELU")
    assert rubric.rules.policy.forbids("torch.nn.Linear")
    clean = _submission(("linear", Status.PASSED))
    breaking = replace(clean, forbidden_count=1, forbidden=("x.py:1: torch.nn.Linear",))
    assert (score(clean, rubric).points, score(breaking, rubric).points) == (3.0, 1.0)
    assert score(breaking, load_rubric()).points == 1.0  # the default rubric: reported only


@pytest.mark.parametrize(
    "rules", ["penalty = -1", 'penalty = "2"', "allowed = [1]", 'allowed = "torch.nn"', "x = 1"]
)
def test_a_malformed_rules_entry_is_an_error(tmp_path: Path, rules: str):
    path = tmp_path / "rubric.toml"
    path.write_text(f'[families]\nlinear = {{ title = "Linear", points = 1 }}\n[rules]\n{rules}\n')
    with pytest.raises(RubricError, match="rules"):
        load_rubric(path)
