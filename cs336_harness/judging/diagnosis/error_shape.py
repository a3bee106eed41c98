"""The shape of a wrong output's error, read from the output and the expected values alone:
the first of `CHECKS`, in order, that holds within the test's tolerance (docs/checking.md,
"The shape of an error")."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

PREFIX = "error shape: "
# A fitted number needs this many elements per fitted value before it is evidence: with
# fewer, any output fits (a scalar is always "the expected times something").
PER_FITTED = 3
FEW = 3
SHIFTS = (1, -1, 2, -2, 3, -3)
# A named form of a factor (1/8, √8) is given when it holds to this relative precision.
NAMED_PRECISION = 1e-5
NAMED_LIMIT = 65536
# The generic summary names where the error is largest when one index's RMS error is at least
# this many times the median index's along its axis.
CONCENTRATED = 3.0
# An error within this many units in the last place of a half-precision format, everywhere,
# is that format's: a bfloat16 matmul of d terms rounds each product and partial sum, a few
# units in all for the widths here; beyond that the error says nothing about precision.
HALF_UNITS = 8
# The narrower first: an error within float16's precision is within bfloat16's too.
HALF_EPS = {"float16": 2.0**-11, "bfloat16": 2.0**-8}
# The masked-score fill that stands for "finite, not -inf" (-1e9 as students write it).
FINITE_FILL = -1e9

Bools = NDArray[np.bool_]
Floats = NDArray[np.float64]


@dataclass(frozen=True)
class ErrorShape:
    kind: str  # one of KINDS
    text: str

    @property
    def line(self) -> str:
        return f"{PREFIX}{self.text}"


@dataclass(frozen=True)
class _Pair:
    """The output and the expected, the tolerance, and which elements differ."""

    actual: Floats
    expected: Floats
    rtol: float
    atol: float
    mask: Bools | None
    rounding: float
    attention: tuple[Floats, Floats, Floats] | None = None

    def close(self, value: Floats, scale: float = 1.0, rtol: float | None = None) -> Bools:
        """Where the output matches `value` by the test's rule (atol times `scale`)."""
        a, rtol = self.actual, self.rtol if rtol is None else rtol
        with np.errstate(invalid="ignore"):
            near = np.abs(a - value) <= self.atol * scale + rtol * np.abs(value)
        return near | (a == value) | (np.isnan(a) & np.isnan(value))

    def matches(self, value: Floats) -> bool:
        """The output is `value` (the expected, its values moved) within the tolerance."""
        return bool(self.close(value).all())

    def fits(self, value: Floats, scale: float) -> bool:
        """The output is `value` (the expected, with a fitted factor or offset applied) within
        the tolerance, its atol times `scale`, plus two roundings of the output's dtype."""
        return bool(self.close(value, scale, self.rtol + 2 * self.rounding).all())

    @cached_property
    def differ(self) -> Bools:
        return ~self.close(self.expected)


def describe(
    actual: np.ndarray,
    expected: np.ndarray,
    rtol: float,
    atol: float,
    *,
    mask: np.ndarray | None = None,
    rounding: float = 0.0,
    attention: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> ErrorShape | None:
    """The first statement (in the order of `CHECKS`) that holds of `actual` against
    `expected` within the tolerance; None where they match or their shapes differ. `mask`:
    a boolean attention mask (..., queries, keys), True where a query may attend a key, for
    an output (..., queries, d). `rounding`: the unit roundoff of the output's dtype.
    `attention`: the Q, K and V that, with `mask`, gave the expected output, where the
    output is scaled dot-product attention's."""
    a, e = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if a.shape != e.shape:
        return None
    mask = None if mask is None else np.asarray(mask, np.bool_)
    qkv = None if attention is None else tuple(np.asarray(t, np.float64) for t in attention)
    pair = _Pair(a, e, rtol, atol, mask, rounding, qkv)
    if not pair.differ.any():
        return None
    for kind, check in CHECKS:
        text = check(pair)
        if text is not None:
            return ErrorShape(kind, text)
    return ErrorShape(GENERIC, _generic(pair))


# -- formatting ------------------------------------------------------------------------------


def _num(x: float) -> str:
    """Four significant digits, more where that would print a factor ≠ 1 as 1."""
    for digits in (4, 8, 12):
        text = f"{x:.{digits}g}"
        if x == 1.0 or text not in ("1", "-1"):
            return text
    return text


def _count(n: int) -> str:
    return f"{n} element" if n == 1 else f"{n} elements"


def _range(values: np.ndarray) -> str:
    return f"{float(values.min()):.4g} to {float(values.max()):.4g}"


def _named(c: float) -> str:
    """` = 1/8`, ` = √8`, ` = 1/√8` where a factor that is no integer is one of those, the
    first that fits: scales in this assignment are 1/n, √n or 1/√n of a width."""
    sign, c = ("-" if c < 0 else ""), abs(c)
    if _num(c) == _num(round(c)):
        return ""
    for form, value in (("1/{}", 1 / c), ("√{}", c * c), ("1/√{}", 1 / (c * c))):
        n = round(value)
        if 2 <= n <= NAMED_LIMIT and abs(value - n) <= NAMED_PRECISION * n:
            return f" = {sign}{form.format(n)}"
    return ""


def _index_list(indices: np.ndarray, size: int) -> str:
    idx = [int(i) for i in indices]
    if len(idx) >= 4 and idx == list(range(idx[0], idx[-1] + 1)):
        return f"[{idx[0]} … {idx[-1]}]"
    if len(idx) <= 8:
        return f"[{', '.join(map(str, idx))}]"
    return f"[{', '.join(map(str, idx[:6]))}, …] ({len(idx)} of {size})"


def _indices_text(axis: int, ndim: int, indices: np.ndarray, size: int) -> str:
    """`batch rows [1, 3]`, `positions [0 … 10] along axis -2`, ...: the leading axis of a
    (batch, ..., seq, d) output is its batch, the one before the last its sequence."""
    listed = _index_list(indices, size)
    if ndim == 1:
        return f"elements {listed}"
    if ndim == 2:
        return f"{'rows' if axis == 0 else 'columns'} {listed}"
    if axis == 0:
        return f"batch rows {listed}"
    if axis == ndim - 2:
        return f"positions {listed} along axis -2"
    if axis == ndim - 1:
        return f"entries {listed} of the last axis"
    return f"indices {listed} along axis {axis - ndim}"


def _axis_text(axis: int, ndim: int) -> str:
    return "the last axis" if axis == ndim - 1 else f"axis {axis - ndim}"


def _confinement(where: Bools) -> str | None:
    """The indices along each axis that hold all of `where`'s True elements, for the axes
    where those are not all of them: `batch rows [1], positions [3, 7] along axis -2`."""
    parts = []
    for axis in range(where.ndim):
        others = tuple(i for i in range(where.ndim) if i != axis)
        hit = np.flatnonzero(where.any(axis=others))
        if len(hit) < where.shape[axis]:
            parts.append(_indices_text(axis, where.ndim, hit, where.shape[axis]))
    return ", ".join(parts) or None


# -- 1, 2: values that are not numbers, an output of zeros -----------------------------------


def _nonfinite(p: _Pair) -> str | None:
    a, e = p.actual, p.expected
    finite = np.isfinite(e)
    bad = finite & ~np.isfinite(a)
    lost = ~finite & ~p.close(e)
    if not bad.any() and not lost.any():
        return None
    kinds = [(np.isnan(a), "NaN"), (a == np.inf, "+inf"), (a == -np.inf, "-inf")]
    counts = [f"{name} in {int((bad & m).sum())}" for m, name in kinds if (bad & m).any()]
    parts = []
    if counts:
        parts.append(f"{' and '.join(counts)} of {_count(a.size)} where the expected is finite")
        where = _confinement(bad)
        if where:
            parts[-1] += f" (only {where})"
    if lost.any():
        parts.append(
            f"a different value in {_count(int(lost.sum()))} where the expected is NaN or inf"
        )
    rest = finite & np.isfinite(a)
    off = int((rest & p.differ).sum())
    parts.append(
        f"{off} of the other elements differ too" if off else "every other element matches"
    )
    return "; ".join(parts)


def _zeros(p: _Pair) -> str | None:
    if (np.abs(p.actual) <= p.atol).all():
        return "the output is zero everywhere (nothing written, or a factor of 0?)"
    return None


# -- 3: attention's mask misapplied ------------------------------------------------------------


def _attend(q: Floats, k: Floats, v: Floats, allowed: Bools, fill: float = -np.inf) -> Floats:
    """softmax(QKᵀ/√d_k) V with the scores where `allowed` is False set to `fill`; a query
    with no key left (all -inf) gets zeros, as the tests expect."""
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    scores = np.where(allowed, scores, fill)
    top = scores.max(-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0) @ v


def _masking(p: _Pair) -> str | None:
    if p.attention is None or p.mask is None:
        return None
    q, k, v = p.attention
    scores_shape = (*np.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    try:
        mask = np.broadcast_to(p.mask, scores_shape)
    except ValueError:
        return None
    readings = [
        (np.ones_like(mask), -np.inf, "the mask is not applied: every query attends every key"),
        (mask, 0.0, "masked positions hold 0 where -inf belongs: the output is attention "
         "with the masked scores set to 0 (filled with 0, or the scores times the mask)"),
        (~mask, -np.inf, "the mask is applied inverted: True hides a key, False lets a query "
         "attend it"),
        (mask, FINITE_FILL, "masked scores are a large finite number, not -inf: a query whose "
         "keys are all masked averages every value instead of getting zeros"),
    ]  # fmt: skip
    if mask.shape[-1] == mask.shape[-2]:
        readings.append((np.swapaxes(mask, -1, -2), -np.inf, "the mask is applied "
                         "transposed: query i attends key j where mask[j, i] is True"))  # fmt: skip
    for allowed, fill, text in readings:
        if p.matches(_attend(q, k, v, allowed, fill)):
            return text
    return None


# -- 4: a constant factor, offset, or both -----------------------------------------------------


def _finite(p: _Pair) -> tuple[Floats, Floats]:
    keep = np.isfinite(p.actual) & np.isfinite(p.expected)
    return p.actual[keep], p.expected[keep]


def _factor(p: _Pair) -> str | None:
    a, e = _finite(p)
    energy = float(e @ e)
    if np.count_nonzero(e) < PER_FITTED or energy == 0.0:
        return None
    c = float(a @ e) / energy
    if not p.fits(c * p.expected, max(1.0, abs(c))):
        return None
    if _num(c) == "-1":
        return "the output is the expected negated (times -1: a sign flipped?)"
    return (
        f"the output is the expected times {_num(c)}{_named(c)} (a constant factor: a scale "
        "applied twice, not at all, or with the wrong value?)"
    )


def _offset(p: _Pair) -> str | None:
    a, e = _finite(p)
    if a.size < PER_FITTED:
        return None
    b = float(np.mean(a - e))
    if not p.fits(p.expected + b, 1.0):
        return None
    sign = "plus" if b > 0 else "minus"
    return f"the output is the expected {sign} {_num(abs(b))} (a constant offset)"


def _factor_and_offset(p: _Pair) -> str | None:
    a, e = _finite(p)
    if a.size < 2 * PER_FITTED or np.ptp(e) == 0.0:
        return None
    # Least squares, in closed form: for the sizes of an LM's logits, several times faster
    # than a general solver.
    de = e - e.mean()
    c = float(de @ (a - a.mean())) / float(de @ de)
    b = float(a.mean()) - c * float(e.mean())
    if not p.fits(c * p.expected + b, max(1.0, abs(c))):
        return None
    sign = "+" if b > 0 else "-"
    return (
        f"the output is {_num(c)}{_named(c)} × the expected {sign} {_num(abs(b))} (a constant "
        "factor and offset)"
    )


# -- 5, 6, 7: the same values in other places ---------------------------------------------------


def _axes_permuted(p: _Pair) -> str | None:
    shape, ndim = p.expected.shape, p.expected.ndim
    for order in itertools.permutations(range(ndim)):
        moved = [i for i in range(ndim) if order[i] != i]
        if not moved or any(shape[i] != shape[order[i]] for i in moved) or shape[moved[0]] < 2:
            continue
        if p.matches(np.transpose(p.expected, order)):
            if len(moved) == 2:
                i, j = (m - ndim for m in moved)
                return (
                    f"the output equals the expected with axes {i} and {j} swapped (a transpose "
                    "missing, or a reshape where a transpose belongs?)"
                )
            return f"the output equals the expected with its axes permuted to {order}"
    return None


def _permutation_text(perm: np.ndarray) -> str:
    n = len(perm)
    j = np.arange(n)
    k = int(j[0] - perm[0]) % n
    if np.array_equal(perm, (j - k) % n):
        return f"rolled by {k} (output[i] = expected[i − {k}], wrapping around)"
    if np.array_equal(perm, j[::-1]):
        return "reversed"
    if n % 2 == 0:
        halves = np.concatenate([j[0::2], j[1::2]])
        if np.array_equal(perm, halves):
            return (
                "de-interleaved: its even-indexed entries first, then the odd ones (pairs "
                "written back as two halves?)"
            )
        if np.array_equal(perm, np.argsort(halves)):
            return "interleaved: its two halves' entries alternating (halves written as pairs?)"
        if np.array_equal(perm, j ^ 1):
            return "with each adjacent pair's entries swapped"
    return f"permuted: output[i] = expected[p[i]], p = {_index_list(perm, n)}"


def _axis_permuted(p: _Pair) -> str | None:
    a, e = p.actual, p.expected
    rng = np.random.default_rng(0)  # fixed: the same output always gets the same line
    for axis in reversed(range(e.ndim)):
        n = e.shape[axis]
        if n < 2 or e.size < PER_FITTED:
            continue
        rows_a = np.nan_to_num(np.moveaxis(a, axis, 0).reshape(n, -1))
        rows_e = np.nan_to_num(np.moveaxis(e, axis, 0).reshape(n, -1))
        weights = rng.standard_normal(rows_e.shape[1])
        # Equal slices have equal projections, so matching the k-th smallest projection of
        # the output with the k-th smallest of the expected pairs them up; the check below
        # decides, whatever pairing ties gave.
        perm = np.empty(n, dtype=np.int64)
        perm[np.argsort(rows_a @ weights, kind="stable")] = np.argsort(
            rows_e @ weights, kind="stable"
        )
        if np.array_equal(perm, np.arange(n)) or not p.matches(np.take(e, perm, axis=axis)):
            continue
        how = _permutation_text(perm)
        return f"the output equals the expected with {_axis_text(axis, e.ndim)} {how}"
    return None


def _along(axis: int, part: slice) -> tuple[slice, ...]:
    """An index taking `part` along `axis` and everything along the axes before it."""
    return (*[slice(None)] * axis, part)


def _shift(p: _Pair) -> str | None:
    a, e = p.actual, p.expected
    for axis in reversed(range(e.ndim)):
        n = e.shape[axis]
        for k in SHIFTS:
            if n < abs(k) + 2:
                continue
            late, early = _along(axis, slice(abs(k), None)), _along(axis, slice(None, n - abs(k)))
            out, ref = (late, early) if k > 0 else (early, late)
            # The overlap alone, as views; it must hold something the unshifted expected
            # gets wrong (else the differences are only at the edge: a location, not a shift).
            part = replace(p, actual=a[out], expected=e[ref])
            if part.matches(part.expected) and not part.matches(e[out]):
                word = "position" if abs(k) == 1 else "positions"
                rule = f"[i] = expected[i − {k}]" if k > 0 else f"[i] = expected[i + {-k}]"
                return (
                    f"the output matches the expected shifted by {k} {word} along "
                    f"{_axis_text(axis, e.ndim)}: output{rule} wherever that exists"
                )
    return None


# -- 8, 9: a factor that varies along some axes, an error of half precision -------------------


def _fitted_factor(p: _Pair, keep: tuple[int, ...]) -> Floats | None:
    """The least-squares factor per index of the axes `keep` (summing over the others), if
    the output is the expected times it; a slice of zeros takes factor 1."""
    over = tuple(i for i in range(p.expected.ndim) if i not in keep)
    a, e = np.nan_to_num(p.actual), np.nan_to_num(p.expected)
    energy = (e * e).sum(axis=over, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.where(energy > 0, (a * e).sum(axis=over, keepdims=True) / energy, 1.0)
    if not p.fits(c * p.expected, max(1.0, float(np.abs(c).max()))):
        return None
    return c


def _axis_factor(p: _Pair) -> str | None:
    e = p.expected
    for axis in reversed(range(e.ndim)):
        # A 2-D output's factor along axis 0 is a factor per row: `_row_factor` says so.
        if (e.ndim == 2 and axis == 0) or e.size // e.shape[axis] < PER_FITTED:
            continue
        c = _fitted_factor(p, (axis,))
        if c is not None:
            last = axis == e.ndim - 1
            hint = ": a per-feature scale, a gain applied twice or left out?" if last else ""
            return (
                "the output is the expected times a factor that depends only on the index "
                f"along {_axis_text(axis, e.ndim)} ({_range(c)}{hint})"
            )
    return None


def _row_factor(p: _Pair) -> str | None:
    e = p.expected
    if e.ndim < 2 or e.shape[-1] < PER_FITTED:
        return None
    c = _fitted_factor(p, tuple(range(e.ndim - 1)))
    if c is None:
        return None
    return (
        "the output is the expected times a factor constant along the last axis that differs "
        f"between rows ({_range(c)}: a per-row normaliser computed differently?)"
    )


def _half_precision(p: _Pair) -> str | None:
    """Most elements differ (rounding touches nearly all), each by at most HALF_UNITS·ε of
    itself, or of an eighth of the largest for elements near 0: a sum of rounded terms errs
    in proportion to its terms, not to itself."""
    a, e = p.actual, p.expected
    if not (np.isfinite(a) & np.isfinite(e)).all() or p.differ.mean() <= 0.5:
        return None
    scale = np.abs(e).max(initial=0.0) / 8
    for name, eps in HALF_EPS.items():
        if (np.abs(a - e) <= HALF_UNITS * eps * (np.abs(e) + scale)).all():
            return (
                f"the error is within {name}'s precision: at most {HALF_UNITS}ε of each "
                f"element, or of an eighth of the largest near 0 (ε = {_num(eps)}): "
                f"arithmetic, or a weight, in {name}?"
            )
    return None


# -- 10 to 13: where the differences are ---------------------------------------------------------


def _few(p: _Pair) -> str | None:
    where = np.argwhere(p.differ)
    if len(where) > FEW or p.expected.size <= FEW:
        return None
    at = " and ".join(str(tuple(int(i) for i in w)) for w in where)
    verb = "differs" if len(where) == 1 else "differ"
    return f"only {len(where)} of {p.expected.size} elements {verb}: at {at}"


def _masked_rows(p: _Pair) -> str | None:
    """The mask is an attention mask (..., queries, keys); the output's rows are queries."""
    m, shape = p.mask, p.expected.shape
    if m is None or m.ndim < 2 or p.expected.ndim < 2:
        return None
    try:
        rows = np.broadcast_to(m, (*shape[:-1], m.shape[-1]))
    except ValueError:
        return None
    wrong = p.differ.any(axis=-1)
    for hidden, what, rest in (
        (~rows.any(axis=-1), "every key", "the others match"),
        (~rows.all(axis=-1), "some key", "the rows that see every key match"),
    ):
        if not hidden.all() and not (wrong & ~hidden).any():
            return (
                f"only query rows whose mask hides {what} differ ({int(wrong.sum())} of the "
                f"{int(hidden.sum())} such rows, of {wrong.size}; {rest})"
            )
    return None


def _triangle(part: Callable[[int], Bools], what: str) -> Callable[[_Pair], str | None]:
    def check(p: _Pair) -> str | None:
        shape = p.expected.shape
        if len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] < 2:
            return None
        if (p.differ & ~part(shape[-1])).any():
            return None
        return f"only the positions {what} of the last two axes differ"

    return check


def _some_indices(p: _Pair) -> str | None:
    where = _confinement(p.differ)
    return None if where is None else f"only {where} differ"


# -- 14, 15: an offset per row, a summary ------------------------------------------------------


def _row_offset(p: _Pair) -> str | None:
    a, e = p.actual, p.expected
    if e.ndim < 1 or e.shape[-1] < PER_FITTED or not (np.isfinite(a) & np.isfinite(e)).all():
        return None
    offset = (a - e).mean(-1, keepdims=True)
    if not p.fits(e + offset, 1.0):
        return None
    if p.fits(e - e.mean(-1, keepdims=True), 1.0):
        return (
            "each row is off by its mean: the output is the expected centred along the last "
            "axis (a mean subtracted?)"
        )
    return (
        "the output is the expected plus an offset constant along the last axis that differs "
        f"between rows ({_range(offset)}: a per-row normaliser subtracted, or "
        "log-probabilities where logits belong?)"
    )


def _value(p: _Pair) -> str | None:
    if p.expected.size != 1:
        return None
    a, e = float(p.actual.ravel()[0]), float(p.expected.ravel()[0])
    ratio = f"ratio {_num(a / e)}, " if e != 0 else ""
    return f"the output is {_num(a)} where {_num(e)} is expected ({ratio}difference {_num(a - e)})"


def _generic(p: _Pair) -> str:
    differ = p.differ
    a, e = np.nan_to_num(p.actual), np.nan_to_num(p.expected)
    error = (a - e) ** 2
    # Never "100.0%" while some element matches.
    share = differ.mean() if differ.all() else min(differ.mean(), 0.999)
    text = (
        f"no simple pattern: {int(differ.sum())} of {differ.size} elements differ "
        f"({share:.1%}); the error's RMS is {_num(float(np.sqrt(error.mean())))}, "
        f"the expected's {_num(float(np.sqrt((e * e).mean())))}"
    )
    best: tuple[float, int, int] | None = None
    for axis in range(e.ndim):
        if e.shape[axis] < 3:
            continue
        others = tuple(i for i in range(e.ndim) if i != axis)
        rms = np.sqrt(error.mean(axis=others))
        median = float(np.median(rms))
        ratio = float(rms.max()) / median if median > 0 else np.inf
        if ratio >= CONCENTRATED and (best is None or ratio > best[0]):
            best = (ratio, axis, int(rms.argmax()))
    if best is not None:
        ratio, axis, index = best
        place = _indices_text(axis, e.ndim, np.array([index]), e.shape[axis])
        times = "far above" if np.isinf(ratio) else f"{ratio:.0f}× that of"
        text += f"; it is largest at {place}, {times} the median one"
    return text


CHECKS: tuple[tuple[str, Callable[[_Pair], str | None]], ...] = (
    ("nonfinite", _nonfinite),
    ("zeros", _zeros),
    ("masking", _masking),
    ("factor", _factor),
    ("offset", _offset),
    ("factor_and_offset", _factor_and_offset),
    ("axes_permuted", _axes_permuted),
    ("axis_permuted", _axis_permuted),
    ("shift", _shift),
    ("axis_factor", _axis_factor),
    ("row_factor", _row_factor),
    ("half_precision", _half_precision),
    ("few", _few),
    ("masked_rows", _masked_rows),
    ("diagonal", _triangle(lambda n: np.eye(n, dtype=np.bool_), "on the diagonal")),
    (
        "above_diagonal",
        _triangle(
            lambda n: np.triu(np.ones((n, n), np.bool_), 1),
            "above the diagonal (those a causal mask hides)",
        ),
    ),
    (
        "below_diagonal",
        _triangle(lambda n: np.tril(np.ones((n, n), np.bool_), -1), "below the diagonal"),
    ),
    ("some_indices", _some_indices),
    ("row_offset", _row_offset),
    ("value", _value),
)
GENERIC = "generic"
# Every kind of line, in the order they are tried.
KINDS = (*(kind for kind, _ in CHECKS), GENERIC)
