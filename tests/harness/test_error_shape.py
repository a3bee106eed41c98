"""The error's shape (`cs336_harness/judging/diagnosis/error_shape.py`) on synthetic outputs: each
kind of line where its statement holds to the tolerance, none for an output within it, the
generic summary for noise, and the most specific true statement where several hold. The
wrong modules that declare `ERROR_SHAPE` show the lines on real mistakes (`test_meta.py`)."""

from __future__ import annotations

import numpy as np
import pytest

from cs336_harness.judging.diagnosis.error_shape import KINDS, describe

TOL = {"rtol": 1e-5, "atol": 1e-5}
FLOAT32_ROUNDING = 2.0**-24


@pytest.fixture
def expected() -> np.ndarray:
    """A (batch, seq, d) output of O(1) values, none near 0."""
    rng = np.random.default_rng(0)
    values = rng.standard_normal((4, 6, 8))
    return np.where(np.abs(values) < 0.1, 0.5, values)


def kind(actual: np.ndarray, expected: np.ndarray, **options) -> str | None:
    shape = describe(actual, expected, **(TOL | options))
    return None if shape is None else shape.kind


def line(actual: np.ndarray, expected: np.ndarray, **options) -> str | None:
    shape = describe(actual, expected, **(TOL | options))
    return None if shape is None else shape.line


def test_an_output_within_the_tolerance_gets_no_description(expected):
    assert describe(expected + 0.9e-5, expected, **TOL) is None
    with_nan = expected.copy()
    with_nan[0, 0, 0] = np.nan  # NaN where the expected is NaN too matches
    assert describe(with_nan, with_nan, **TOL) is None
    assert describe(expected + 1.1e-5 + 1e-5 * np.abs(expected), expected, **TOL) is not None


def test_noise_gets_only_the_generic_summary(expected):
    noisy = expected + np.random.default_rng(1).normal(0, 0.01, expected.shape)
    assert line(noisy, expected) == (
        "error shape: no simple pattern: 190 of 192 elements differ (99.0%); the error's RMS "
        "is 0.009084, the expected's 0.9723"
    )


def test_the_generic_summary_says_where_the_error_concentrates(expected):
    noisy = expected + np.random.default_rng(1).normal(0, 0.01, expected.shape)
    noisy[:, 0] += 1.0
    assert line(noisy, expected).endswith(
        "; it is largest at positions [0] along axis -2, 107× that of the median one"
    )


def test_nan_and_inf_where_the_expected_is_finite(expected):
    actual = expected.copy()
    actual[1, :, 2] = np.nan
    assert line(actual, expected) == (
        "error shape: NaN in 6 of 192 elements where the expected is finite (only batch rows "
        "[1], entries [2] of the last axis); every other element matches"
    )
    actual[3, 0, 0] = -np.inf
    actual[0] += 1.0
    assert line(actual, expected) == (
        "error shape: NaN in 6 and -inf in 1 of 192 elements where the expected is finite (only "
        "batch rows [1, 3], entries [0, 2] of the last axis); 48 of the other elements differ too"
    )
    finite = np.ones(3)
    assert line(finite, np.array([1.0, np.nan, 1.0])) == (
        "error shape: a different value in 1 element where the expected is NaN or inf; every "
        "other element matches"
    )


def test_zeros(expected):
    assert line(np.zeros_like(expected), expected) == (
        "error shape: the output is zero everywhere (nothing written, or a factor of 0?)"
    )


def test_a_constant_factor_named_where_it_is_a_root_or_a_reciprocal(expected):
    assert line(expected / np.sqrt(8), expected) == (
        "error shape: the output is the expected times 0.3536 = 1/√8 (a constant factor: a "
        "scale applied twice, not at all, or with the wrong value?)"
    )
    assert line(expected * 8, expected).startswith(
        "error shape: the output is the expected times 8 ("
    )
    assert line(expected / 16, expected).startswith(
        "error shape: the output is the expected times 0.0625 = 1/16 ("
    )
    assert line(-expected, expected) == (
        "error shape: the output is the expected negated (times -1: a sign flipped?)"
    )


def test_a_factor_is_held_to_the_tolerance(expected):
    off = 2 * expected
    off[0, 0, 0] += 1e-3
    assert kind(off, expected) == "generic"
    assert kind(2 * expected + 5e-6 * np.sign(expected), expected) == "factor"


def test_a_fitted_factor_may_round_in_the_outputs_dtype(expected):
    """An exact test (rtol = atol = 0) of a float32 output that a mistake scaled by √8; the
    expected is stored as float32, as the fixtures' are."""
    expected = expected.astype(np.float32).astype(np.float64)
    rounded = (expected.astype(np.float32) * np.float32(np.sqrt(8))).astype(np.float64)
    exact = {"rtol": 0.0, "atol": 0.0}
    assert describe(rounded, expected, **exact).kind == "generic"
    shape = describe(rounded, expected, **exact, rounding=FLOAT32_ROUNDING)
    assert shape.text.startswith("the output is the expected times 2.828 = √8")


def test_a_constant_offset_and_a_factor_with_an_offset(expected):
    assert line(expected - 0.25, expected) == (
        "error shape: the output is the expected minus 0.25 (a constant offset)"
    )
    assert line(0.5 * expected + 0.1, expected) == (
        "error shape: the output is 0.5 = 1/2 × the expected + 0.1 (a constant factor and offset)"
    )


def test_swapped_axes():
    square = np.random.default_rng(2).standard_normal((2, 5, 5))
    assert line(square.swapaxes(-1, -2), square) == (
        "error shape: the output equals the expected with axes -2 and -1 swapped (a transpose "
        "missing, or a reshape where a transpose belongs?)"
    )


REORDERED = {
    "the last axis de-interleaved": [0, 2, 4, 6, 1, 3, 5, 7],
    "the last axis interleaved": [0, 4, 1, 5, 2, 6, 3, 7],
    "each adjacent pair's entries swapped": [1, 0, 3, 2, 5, 4, 7, 6],
    "the last axis rolled by 3 (output[i] = expected[i − 3]": [5, 6, 7, 0, 1, 2, 3, 4],
    "the last axis reversed": [7, 6, 5, 4, 3, 2, 1, 0],
    "permuted: output[i] = expected[p[i]], p = [0, 1, 2, 3, 4, 5, 7, 6]": [0, 1, 2, 3, 4, 5, 7, 6],
}


@pytest.mark.parametrize(
    ("says", "order"),
    REORDERED.items(),
    ids=["de_interleaved", "interleaved", "pairs", "rolled", "reversed", "other"],
)
def test_the_last_axis_reordered(expected, says, order):
    shape = describe(expected[..., order], expected, **TOL)
    assert shape.kind == "axis_permuted" and says in shape.text, shape.text


def test_another_axis_reordered(expected):
    shape = describe(expected[::-1], expected, **TOL)
    assert shape.kind == "axis_permuted" and "axis -3 reversed" in shape.text, shape.text


def test_a_shift_along_the_sequence(expected):
    shifted = np.concatenate([np.zeros_like(expected[:, :1]), expected[:, :-1]], axis=1)
    assert line(shifted, expected) == (
        "error shape: the output matches the expected shifted by 1 position along axis -2: "
        "output[i] = expected[i − 1] wherever that exists"
    )
    ahead = np.concatenate([expected[:, 2:], expected[:, :2] + 1], axis=1)
    assert line(ahead, expected).endswith(
        "shifted by -2 positions along axis -2: output[i] = expected[i + 2] wherever that exists"
    )


def test_a_factor_per_feature_and_per_row(expected):
    gain = np.linspace(0.5, 2.0, 8)
    assert line(expected * gain, expected) == (
        "error shape: the output is the expected times a factor that depends only on the index "
        "along the last axis (0.5 to 2: a per-feature scale, a gain applied twice or left out?)"
    )
    per_batch = np.array([1.0, 2.0, 3.0, 4.0])[:, None, None]
    assert line(expected * per_batch, expected).endswith(
        "depends only on the index along axis -3 (1 to 4)"
    )
    per_row = np.random.default_rng(3).uniform(0.5, 2.0, (4, 6, 1))
    assert line(expected * per_row, expected) == (
        "error shape: the output is the expected times a factor constant along the last axis "
        "that differs between rows (0.5022 to 1.96: a per-row normaliser computed differently?)"
    )
    # A 2-D output's factor per index of axis 0 is its factor per row, and says so.
    assert kind(expected[0] * per_row[0], expected[0]) == "row_factor"


def test_a_few_elements(expected):
    actual = expected.copy()
    actual[1, 2, 3] += 1
    actual[3, 0, 7] -= 1
    assert line(actual, expected) == (
        "error shape: only 2 of 192 elements differ: at (1, 2, 3) and (3, 0, 7)"
    )


def test_only_masked_query_rows(expected):
    mask = np.ones((6, 6), dtype=bool)
    mask[1, 3] = mask[4, :] = False  # query 1 sees some keys; query 4 none
    actual = expected.copy()
    actual[:, 4] += 1
    assert line(actual, expected, mask=mask) == (
        "error shape: only query rows whose mask hides every key differ (4 of the 4 such rows, "
        "of 24; the others match)"
    )
    actual[:, 1] += 1
    assert line(actual, expected, mask=mask) == (
        "error shape: only query rows whose mask hides some key differ (8 of the 8 such rows, of "
        "24; the rows that see every key match)"
    )
    assert kind(actual, expected) == "some_indices"


def test_the_diagonal_and_the_triangles():
    square = np.random.default_rng(4).standard_normal((3, 5, 5))
    eye = np.eye(5)
    assert line(square + eye, square) == (
        "error shape: only the positions on the diagonal of the last two axes differ"
    )
    assert line(square + np.triu(np.ones((5, 5)), 1), square) == (
        "error shape: only the positions above the diagonal (those a causal mask hides) of the "
        "last two axes differ"
    )
    assert kind(square + np.tril(np.ones((5, 5)), -1), square) == "below_diagonal"


def test_only_some_batch_rows_or_positions(expected):
    actual = expected.copy()
    actual[[1, 3]] += 1
    assert line(actual, expected) == "error shape: only batch rows [1, 3] differ"
    actual = expected.copy()
    actual[2, :5] += np.arange(1, 6)[:, None]
    assert line(actual, expected) == (
        "error shape: only batch rows [2], positions [0 … 4] along axis -2 differ"
    )


@pytest.mark.parametrize(
    ("shape", "changed", "says"),
    [
        ((12,), np.s_[2:6], "only elements [2 … 5] differ"),
        ((5, 6), np.s_[1:3, :], "only rows [1, 2] differ"),
        ((5, 6), np.s_[:, 4], "only columns [4] differ"),
        ((2, 4, 5, 6), np.s_[:, 1:3], "only indices [1, 2] along axis -3 differ"),
    ],
)
def test_axes_are_named_by_their_place(shape, changed, says):
    expected = np.random.default_rng(5).uniform(1.0, 2.0, shape)
    actual = expected.copy()
    actual[changed] += np.random.default_rng(6).uniform(1.0, 2.0, actual[changed].shape)
    assert line(actual, expected) == f"error shape: {says}"


def test_a_single_value():
    assert line(np.array(3.0), np.array(2.0)) == (
        "error shape: the output is 3 where 2 is expected (ratio 1.5, difference 1)"
    )


def _attention(q, k, v, allowed, fill=-np.inf):
    """Attention written out apart from error_shape's own: masked scores set to `fill`, a
    query with no key left gets zeros."""
    scores = np.where(allowed, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), fill)
    out = np.zeros((*scores.shape[:-1], v.shape[-1]))
    for index in np.ndindex(scores.shape[:-1]):
        row = scores[index]
        if np.isfinite(row).any():
            weights = np.exp(row - row.max())
            out[index] = weights / weights.sum() @ v[index[:-1]]
    return out


@pytest.fixture
def attention_case():
    """Q, K, V (2, 5, 4) and a random mask with one fully masked query row."""
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((2, 5, 4)) for _ in range(3))
    mask = rng.random((2, 5, 5)) < 0.6
    mask[0, 2] = False
    mask[:, :, 0] |= np.arange(5) != 2  # every other query sees some key
    return q, k, v, mask


@pytest.mark.parametrize(
    ("reading", "says"),
    [
        ("ignored", "the mask is not applied: every query attends every key"),
        ("zero", "masked positions hold 0 where -inf belongs: the output is attention with the "
         "masked scores set to 0 (filled with 0, or the scores times the mask)"),
        ("inverted", "the mask is applied inverted: True hides a key, False lets a query "
         "attend it"),
        ("finite", "masked scores are a large finite number, not -inf: a query whose keys are "
         "all masked averages every value instead of getting zeros"),
        ("transposed", "the mask is applied transposed: query i attends key j where mask[j, i] "
         "is True"),
    ],
)  # fmt: skip
def test_a_misapplied_attention_mask(attention_case, reading, says):
    q, k, v, mask = attention_case
    allowed, fill = {
        "ignored": (np.ones_like(mask), -np.inf),
        "zero": (mask, 0.0),
        "inverted": (~mask, -np.inf),
        "finite": (mask, -1e4),
        "transposed": (np.swapaxes(mask, -1, -2), -np.inf),
    }[reading]
    expected, actual = _attention(q, k, v, mask), _attention(q, k, v, allowed, fill)
    assert line(actual, expected, mask=mask, attention=(q, k, v)) == f"error shape: {says}"
    # Without the inputs, only where the rows differ can be said.
    assert kind(actual, expected, mask=mask) != "masking"


def test_an_offset_per_row(expected):
    logits = expected.copy()
    shifted = logits - logits.max(-1, keepdims=True)
    assert line(shifted, logits).startswith(
        "error shape: the output is the expected plus an offset constant along the last axis "
        "that differs between rows ("
    )
    centred = logits - logits.mean(-1, keepdims=True)
    assert line(centred, logits) == (
        "error shape: each row is off by its mean: the output is the expected centred along "
        "the last axis (a mean subtracted?)"
    )
    # One row off by a constant is a location first.
    one_row = logits.copy()
    one_row[1, 2] += 0.5
    assert kind(one_row, logits) == "some_indices"


def test_an_error_of_half_precision(expected):
    import torch

    x = torch.from_numpy(expected).float()
    w = torch.randn(8, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float32)
    exact = (x.double() @ w.double().T).numpy()
    in_bfloat16 = (x.bfloat16() @ w.bfloat16().T).double().numpy()
    in_float16 = (x.half() @ w.half().T).double().numpy()
    assert line(in_bfloat16, exact) == (
        "error shape: the error is within bfloat16's precision: at most 8ε of each element, or "
        "of an eighth of the largest near 0 (ε = 0.003906): arithmetic, or a weight, in bfloat16?"
    )
    assert line(in_float16, exact).startswith("error shape: the error is within float16's")
    # Before where the differences are: an element that happens to match leaves the rest.
    one_matches = in_bfloat16[0, 0].copy()
    one_matches[3] = exact[0, 0, 3]
    assert kind(one_matches, exact[0, 0]) == "half_precision"
    # Noise larger than bfloat16's precision is not half precision.
    noisy = exact + np.random.default_rng(8).normal(0, 0.05, exact.shape)
    assert kind(noisy, exact) == "generic"


def test_the_most_specific_true_statement_wins(expected):
    # A factor leaves the zero rows of the expected right: "only rows [..] differ" holds too.
    zero_rows = expected.copy()
    zero_rows[0] = 0.0
    assert kind(3 * zero_rows, zero_rows) == "factor"
    # A roll is a shift too, but explains every element.
    assert kind(np.roll(expected, 1, axis=1), expected) == "axis_permuted"
    # A factor on some masked rows only (1 elsewhere) is a per-row factor first.
    mask = np.ones((6, 6), dtype=bool)
    mask[2, 0] = False
    scaled = expected.copy()
    scaled[1, 2] *= 0.5
    scaled[3, 2] *= 0.7
    assert kind(scaled, expected, mask=mask) == "row_factor"
    bumped = expected.copy()
    bumped[[1, 3], 2] += 1.0
    assert kind(bumped, expected, mask=mask) == "masked_rows"
    assert set(KINDS) >= {"factor", "row_factor", "masked_rows", "some_indices", "generic"}
    # A masking reading explains every element; its rows are also the masked ones.
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal((1, 4, 3)) for _ in range(3))
    causal = np.tril(np.ones((4, 4), dtype=bool))
    correct, unmasked = _attention(q, k, v, causal), _attention(q, k, v, np.ones_like(causal))
    assert kind(unmasked, correct, mask=causal, attention=(q, k, v)) == "masking"
    assert kind(unmasked, correct, mask=causal) == "masked_rows"


def test_outputs_of_another_shape_get_none(expected):
    assert describe(expected[0], expected, **TOL) is None


def test_an_output_left_in_float32_for_a_half_input_names_its_cause():
    """`dtype_cause` reads compare's own failure line: run through compare, so a change in
    its wording fails here."""
    import torch

    from cs336_harness.judging.compare import assert_matches_oracle
    from cs336_harness.judging.diagnosis import dtype_cause

    def failure(actual: torch.Tensor, dtype: torch.dtype, what: str = "output") -> str:
        with pytest.raises(pytest.fail.Exception) as failed:
            assert_matches_oracle(actual, torch.zeros(3), dtype=dtype, rtol=0, atol=0, what=what)
        return failed.value.msg

    for half in (torch.bfloat16, torch.float16):
        for wider in (torch.float32, torch.float64):
            line = dtype_cause.cause(failure(torch.zeros(3, dtype=wider), half))
            assert line == (
                f"likely cause: the output is left in {str(wider)[6:]} for a {str(half)[6:]} "
                "input: the computation was upcast (or a float32 weight promoted it) and the "
                "result never cast back; return it in the input's dtype, result.to(x.dtype)"
            )
    assert dtype_cause.cause(failure(torch.zeros(3, dtype=torch.bfloat16), torch.float32)) is None
    assert dtype_cause.cause(failure(torch.zeros(3), torch.bfloat16, what="the gradient")) is None
    assert dtype_cause.cause(failure(torch.zeros(4), torch.float32)) is None  # a wrong shape
