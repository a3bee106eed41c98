"""The diagnosis's own parts: the oracle's variant helpers, the catalog's reading of configs,
the table the grader writes, the matching rule, and the error's shape where no known mistakes
are at hand. The wrong modules prove the catalog end to end (`tests/meta/test_meta.py`); these
run with it, under `make meta`."""

from __future__ import annotations

import dataclasses
import importlib.util
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import torch

from cs336_harness import bpe_fingerprint
from cs336_harness.judging.case_layout import case_kind, case_table
from cs336_harness.judging.diagnosis import plugin
from cs336_harness.judging.diagnosis.diagnose import (
    DISCRIMINATING,
    Candidate,
    LiveCatalog,
    Table,
    _largest,
    fingerprint_index,
    matches,
    output_scale,
    write_table,
)
from cs336_harness.judging.diagnosis.numpy_cases import load
from cs336_harness.judging.pytest_plugin import fixtures_dir
from cs336_staff import oracle
from cs336_staff.catalog import MISTAKES, oracle_config, parts, round_to_bfloat16
from cs336_staff.catalog.attention import rotate
from cs336_staff.oracle.variants import (
    adamw_trajectory_with,
    multihead_self_attention_with,
    transformer_lm_assembled_with,
    transformer_lm_with,
)

TESTS = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def fixtures(request: pytest.FixtureRequest) -> Path:
    return fixtures_dir(request.config)


def test_variant_helpers_with_no_mistake_are_the_oracle(fixtures: Path):
    case = load(fixtures, "multihead_self_attention_with_rope", "batched_positions")
    x, pos, heads = case.inputs["in_features"], case.inputs["token_positions"], 3
    w = [case.weights[f"{p}.weight"] for p in ("q_proj", "k_proj", "v_proj", "output_proj")]
    np.testing.assert_array_equal(
        multihead_self_attention_with(x, *w, heads, theta=1e4, positions=pos),
        oracle.multihead_self_attention(x, *w, heads, theta=1e4, positions=pos),
    )
    for case_id in ("gpt2", "learned_positions", "post_norm", "no_norm"):
        case = load(fixtures, "transformer_lm_from_config", case_id)
        config = oracle_config(case.params["config"])
        ids = case.inputs["in_indices"]
        np.testing.assert_allclose(
            transformer_lm_with(ids, case.weights, config),
            oracle.transformer_lm(ids, case.weights, config),
            rtol=1e-12,
            atol=1e-12,
        )
    case = load(fixtures, "adamw", "two_groups")
    p = case.params
    initial = [case.inputs[f"initial.{i}"] for i in range(p["count"])]
    grads = [
        [case.inputs.get(f"grad.{t}.{i}") for i in range(p["count"])] for t in range(p["steps"])
    ]
    ours = adamw_trajectory_with(initial, grads, p["groups"])
    for step, reference in zip(
        ours, oracle.adamw_trajectory(initial, grads, p["groups"]), strict=True
    ):
        for a, b in zip(step, reference, strict=True):
            np.testing.assert_array_equal(a, b)


def test_assembly_helpers_with_no_mistake_are_the_oracle(fixtures: Path):
    """`block_with` and `transformer_lm_assembled_with` with every switch off compute what
    the oracle does (the block on pre-norm configs, the model on every config)."""
    for entry in case_table(fixtures)["transformer_lm_from_config"]:
        case = load(fixtures, "transformer_lm_from_config", entry["id"])
        config = oracle_config(case.params["config"])
        ids = case.inputs["in_indices"]
        expected = oracle.transformer_lm(ids, case.weights, config)
        np.testing.assert_allclose(
            transformer_lm_assembled_with(ids, case.weights, config), expected,
            rtol=1e-12, atol=1e-12, err_msg=case.id,
        )  # fmt: skip
        if config.get("norm_position", "pre") == "pre":
            np.testing.assert_allclose(
                transformer_lm_assembled_with(ids, case.weights, config, block={}), expected,
                rtol=1e-12, atol=1e-12, err_msg=case.id,
            )  # fmt: skip


def test_the_model_of_correct_parts_and_an_unmistaken_rotation_are_the_oracle(fixtures: Path):
    """`parts.Parts()` builds the oracle's attention, block and LM, and `attention.rotate`
    with no switch on is the oracle's RoPE: each mistake built on them changes only itself."""
    for family in (*parts.everywhere(parts.Parts()), "rope"):
        for entry in case_table(fixtures)[family]:
            if entry["params"].get("backward", False):
                continue
            case = load(fixtures, family, entry["id"])
            if family == "rope":
                x, pos = case.inputs["in_query_or_key"], case.inputs["token_positions"]
                ours = rotate(x, pos, case.params["theta"])
            else:
                ours = parts.everywhere(parts.Parts(), (family,))[family](case)
            np.testing.assert_allclose(ours, case.expected, rtol=1e-6, atol=1e-6, err_msg=case.id)


def test_configs_with_upstream_flags_read_as_the_generator_wrote_them(fixtures: Path):
    for entry in case_table(fixtures)["transformer_lm_from_config"]:
        case = load(fixtures, "transformer_lm_from_config", entry["id"])
        logits = oracle.transformer_lm(
            case.inputs["in_indices"], case.weights, oracle_config(case.params["config"])
        )
        np.testing.assert_allclose(logits, case.expected, rtol=1e-6, atol=1e-6, err_msg=case.id)


def test_bfloat16_rounding_is_torchs():
    rng = np.random.default_rng(0)
    ties = 1 + np.arange(64) * 2.0**-8  # halfway cases: to even
    values = np.concatenate([rng.standard_normal(4096) * 10.0 ** rng.integers(-30, 30, 4096), ties])
    values = np.concatenate([values, [3.4e38, -3.4e38, 0.0, 1e-40]]).astype(np.float32)
    torchs = torch.from_numpy(values).to(torch.bfloat16).double().numpy()
    np.testing.assert_array_equal(round_to_bfloat16(values), torchs)


def test_the_table_holds_what_the_catalog_computes(fixtures: Path, tmp_path: Path):
    table = Table(write_table(fixtures, tmp_path / "table.safetensors"))
    live = LiveCatalog(fixtures)
    assert table.families == live.families
    assert table.mistake_families == live.mistake_families
    cases = [
        ("rope", "theta_100"),
        ("transformer_lm", "reference"),
        ("transformer_lm", "twelve_layers_small_embeddings"),  # masked by the jitter
        ("train_bpe", "shakespeare"),
    ]
    for family, case_id in cases:
        ours = {c.mistake: c for c in live.candidates(family, case_id)}
        theirs = {c.mistake: c for c in table.candidates(family, case_id)}
        assert ours.keys() == theirs.keys()
        for mistake, candidate in ours.items():
            other = theirs[mistake]
            assert (candidate.message, candidate.shape, candidate.graded, candidate.scale) == (
                other.message,
                other.shape,
                other.graded,
                other.scale,
            )
            np.testing.assert_array_equal(candidate.index, other.index)
            np.testing.assert_array_equal(candidate.values, other.values)
    assert table.candidates("tokenizer", "emoji") is None


def _candidate(values, mistake="m") -> Candidate:
    values = np.asarray(values, dtype=np.float64)
    return Candidate(mistake, mistake, values.shape, np.arange(values.size), values.ravel())


def test_matching_takes_nan_for_nan_and_leaves_out_what_the_truth_matches():
    expected = np.array([0.5, 0.5])
    with_nan = _candidate([np.nan, 0.5], "nan")
    close_to_truth = _candidate([0.5, 0.5 + 1e-9], "truth")
    far = _candidate([1.0, 0.0], "far")
    found = matches(np.array([np.nan, 0.5]), expected, [with_nan, close_to_truth, far], 1e-6, 1e-6)
    assert [m.candidate.mistake for m in found] == ["nan"]
    assert matches(np.array([0.5, 0.5 + 2e-9]), expected, [close_to_truth], 1e-6, 1e-6) == []
    best = matches(np.array([1.0, 1e-7]), expected, [far, _candidate([1.0, 0.0], "b")], 1e-6, 1e-6)
    assert [m.usage for m in best] == [pytest.approx(1e-7 / 1e-6)] * 2
    # An output ten times the correct one's size rounds ten times as much in absolute terms.
    assert output_scale(np.array([50.0, 0.04]), expected) == 50.0
    large = dataclasses.replace(_candidate([50.0, 0.04], "large"), scale=50.0)
    assert matches(np.array([50.0, 0.04 + 5e-6]), expected, [large], 1e-6, 1e-6) != []
    assert matches(np.array([50.0, 0.04 + 5e-6]), expected, [far], 1e-6, 1e-6) == []


def test_a_bpe_model_is_told_from_the_oracles_by_its_tokens_not_their_ids(fixtures: Path):
    """The upstream-style trainer gives the special tokens the top ids (the contract allows
    it): its fingerprint is the oracle's on every stored case, so no mistake can match it; a
    model with one merge more or less has another shape, and matches only a mistake of its
    own size."""
    path = TESTS / "evidence" / "upstream_style" / "cs336_basics" / "bpe.py"
    spec = importlib.util.spec_from_file_location("upstream_style_bpe", path)
    upstream = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(upstream)
    for entry in case_table(fixtures)["train_bpe"]:
        if case_kind(entry["params"]) is not None:  # the speed test's corpora: no fingerprint
            continue
        case = load(fixtures, "train_bpe", entry["id"])
        text = bytes(case.inputs["corpus"].tolist()).decode("utf-8")
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "corpus.txt").write_text(text, encoding="utf-8")
            vocab, merges = upstream.train_bpe(Path(tmp) / "corpus.txt", **case.params)
        ours = bpe_fingerprint.fingerprint(vocab.values(), merges)
        np.testing.assert_array_equal(ours, case.expected, err_msg=entry["id"])
    fewer = bpe_fingerprint.fingerprint(list(vocab.values())[:-1], merges[:-1])
    mistake = _candidate(fewer)
    assert [m.usage for m in matches(fewer, case.expected, [mistake], 0.0, 0.0)] == [0.0]
    assert matches(case.expected, case.expected, [mistake], 0.0, 0.0) == []


def test_the_catalog_has_ids_once_and_a_message_each():
    assert len({m.id for m in MISTAKES}) == len(MISTAKES) >= 25
    assert all(m.message and m.variants for m in MISTAKES)


def test_without_known_mistakes_a_failure_opens_with_its_error_shape(pytester):
    """Where no known mistakes are at hand (a handout run on fixtures of its own, a judge
    without a table), the message opens with the error's shape alone: nothing is said about
    known mistakes, neither a likely cause nor that none matches."""
    wrong = TESTS / "evidence" / "wrong" / "embedding_scaled_by_sqrt_d_model.py"
    with mock.patch.object(plugin, "_source", return_value=None):
        recorder = pytester.inline_run(
            str(TESTS / "families" / "test_embedding.py"), f"--adapters={wrong}",
            "-p", "no:cacheprovider", "-k", "not backward",  # a gradient is not diagnosed
        )  # fmt: skip
    failed = [r for r in recorder.getreports("pytest_runtest_logreport") if r.failed]
    assert len(failed) == 2
    for report in failed:
        lines = report.longreprtext.splitlines()
        # A hardening case's failure says so first (three_dim_ids: a call upstream never makes).
        first, second = lines[1:3] if lines[0].startswith("hardening:") else lines[:2]
        assert first.startswith("error shape: the output is the expected times ")
        assert second.startswith("output ((")
        assert dict(report.user_properties)[plugin.SHAPE_PROPERTY] == "factor"
        assert plugin.PROPERTY not in dict(report.user_properties)


def test_a_fingerprint_leaves_out_what_the_mistake_masks():
    # A variant masks the elements where its own output is ill-conditioned (AdamW's plain
    # second moment): no fingerprint may hold one, small or sampled.
    small = np.ma.masked_array(np.arange(10.0), [False] * 3 + [True] * 7)
    assert fingerprint_index(small, np.zeros(10)).tolist() == [0, 1, 2]
    size = 20_000
    large = np.ma.masked_array(np.arange(float(size)), np.arange(size) % 2 == 1)
    index = fingerprint_index(large, np.zeros(size))
    assert index.size > 1000 and not (index % 2).any()


@pytest.mark.parametrize("values", ["distinct", "tied", "infinite"])
def test_a_fingerprint_keeps_the_elements_argpartition_chose(values: str):
    """The farthest elements are found among those above a sampled bound; where values equal
    at the k-th place leave a choice, it is argpartition's, on every element, as before: a
    table computed since is the one computed then (every fingerprint of the stored draw and
    of two fresh ones, 4,095 in all, compared on 2026-11-28)."""
    rng = np.random.default_rng(0)
    size, k = 640_000, DISCRIMINATING
    gap = {
        "distinct": rng.random(size),
        # Thousands equal at the k-th place: the sample's candidates hold other ones.
        "tied": rng.integers(0, 100, size).astype(np.float64),
        "infinite": np.where(rng.random(size) < 0.001, np.inf, rng.random(size)),
    }[values]
    top = _largest(gap, k)
    assert top.size == k
    assert set(top.tolist()) == set(np.argpartition(-gap, k)[:k].tolist())


def test_without_known_mistakes_a_masked_with_zero_attention_says_so(pytester):
    """The catalog names a mask filled with 0; without it (a handout on fixtures of its own)
    the shape says the same from the case's Q, K, V and mask, on every case with a mask."""
    wrong = TESTS / "evidence" / "wrong" / "attention_mask_filled_with_zero.py"
    with mock.patch.object(plugin, "_source", return_value=None):
        recorder = pytester.inline_run(
            str(TESTS / "families" / "test_scaled_dot_product_attention.py"),
            f"--adapters={wrong}", "-p", "no:cacheprovider", "-k", "not backward",
        )  # fmt: skip
    failed = [r for r in recorder.getreports("pytest_runtest_logreport") if r.failed]
    assert len(failed) == 5  # every case with a mask
    for report in failed:
        lines = report.longreprtext.splitlines()
        # A hardening test's failure opens with that (the fully masked row's), its shape next.
        first = lines[1] if lines[0].startswith("hardening:") else lines[0]
        assert first == (
            "error shape: masked positions hold 0 where -inf belongs: the output is attention "
            "with the masked scores set to 0 (filled with 0, or the scores times the mask)"
        )
        assert dict(report.user_properties)[plugin.SHAPE_PROPERTY] == "masking"
