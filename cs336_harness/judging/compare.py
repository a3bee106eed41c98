"""Compare an implementation's output with the oracle's, and say precisely how it differs."""

from __future__ import annotations

from typing import Any

import pytest
import torch


class OracleMismatch(pytest.fail.Exception):
    """A value mismatch (shape and dtype were right), with what a diagnosis needs: the output
    as a float64 CPU tensor, the expected tensor, the tolerance it was compared with and the
    output's own dtype. The plugin (`cs336_harness.judging.diagnosis.plugin`) may put lines before
    the message."""

    # As pytest does for its outcomes: the short summary then says `OracleMismatch: ...`, not
    # `cs336_harness.judging.compare.OracleMismatch: ...`.
    __module__ = "builtins"

    def __init__(
        self,
        msg: str,
        actual: torch.Tensor,
        expected: torch.Tensor,
        rtol: float,
        atol: float,
        dtype: torch.dtype,
    ):
        super().__init__(msg, pytrace=False)
        self.actual, self.expected, self.rtol, self.atol = actual, expected, rtol, atol
        self.dtype = dtype


def assert_matches_oracle(
    actual: object,
    expected: torch.Tensor,
    *,
    dtype: torch.dtype,
    rtol: float,
    atol: float,
    what: str = "output",
) -> None:
    """Fail the test unless `actual` has `expected`'s shape, the given dtype, and its values.

    `expected` is the oracle's float64 truth (stored as float32, see the generator). The check
    is `|actual - expected| <= atol + rtol * |expected|` elementwise, done in float64 on the
    CPU so the comparison adds no rounding of its own. `actual` may be on any device, not
    necessarily its inputs' (`pytest --device`): upstream does not ask for that, so it is
    not scored. The failure message names the shape/dtype problem,
    or the largest absolute and relative errors, how many elements are off and where the worst
    one is (torch.testing's report), without a traceback through the harness.
    """
    __tracebackhide__ = True
    if not isinstance(actual, torch.Tensor):
        pytest.fail(f"{what}: expected a torch.Tensor, got {type(actual).__name__}", pytrace=False)
    if tuple(actual.shape) != tuple(expected.shape):
        pytest.fail(
            f"{what}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}",
            pytrace=False,
        )
    if actual.dtype != dtype:
        pytest.fail(f"{what}: dtype {actual.dtype}, expected {dtype}", pytrace=False)
    actual64, expected64 = actual.detach().cpu().double(), expected.double()
    # torch.isclose applies the same rule as torch.testing.assert_close; checking with it first
    # spares passing tests the ~4 s that assert_close's first call spends importing
    # torch.distributed. torch.testing still writes the report when something is off.
    if torch.isclose(actual64, expected64, rtol=rtol, atol=atol).all():
        return
    try:
        torch.testing.assert_close(
            actual64,
            expected64,
            rtol=rtol,
            atol=atol,
            msg=lambda report: (
                f"{what} ({tuple(actual.shape)}, {dtype}) differs from the "
                f"oracle.{report.removeprefix('Tensor-likes are not close!')}"
            ),
        )
    except AssertionError as mismatch:
        report = str(mismatch)
    else:
        return
    # Outside the except block, so the report is not printed a second time as a chained error.
    raise OracleMismatch(report, actual64, expected, rtol, atol, dtype)


def describe_difference(
    actual: Any, expected: torch.Tensor, rtol: float, atol: float
) -> str | None:
    """None when `actual` matches `expected` (`|a - e| <= atol + rtol·|e|` everywhere);
    else how it does not, in a phrase."""
    if not isinstance(actual, torch.Tensor):
        return "not a tensor"
    if tuple(actual.shape) != tuple(expected.shape):
        return f"shape {tuple(actual.shape)}, the oracle's {tuple(expected.shape)}"
    actual64, expected64 = actual.detach().cpu().double(), expected.detach().cpu().double()
    close = torch.isclose(actual64, expected64, rtol=rtol, atol=atol)
    if close.all():
        return None
    error = (actual64 - expected64).abs().nan_to_num(nan=torch.inf)
    worst = tuple(int(i) for i in torch.unravel_index(error.argmax(), error.shape))
    return (
        f"{int((~close).sum())} of {close.numel()} elements off, "
        f"by up to {error.max().item():.3g} at {worst}"
    )


def for_dtype(dtype: torch.dtype, float32: dict[str, float]) -> dict[str, float]:
    """`float32` for float32 outputs; for bf16/fp16 outputs, one unit in the last place.

    A correct half-precision result is rounded once (compute in float32, cast) or twice
    (normalise, cast, then scale by the gain in half precision, as LLaMA's reference
    RMSNorm does): at most 2 · eps/2 = eps relative. The extra 1% absorbs the float32
    arithmetic before the casts. Computing the sum of squares in half precision misses this
    by several units, and float16 squares of values ~300 overflow outright.

    Below the smallest normal number the spacing stops shrinking: a subnormal's unit in the
    last place is the fixed `smallest_normal · eps` (6e-8 in float16), a relative error up
    to 1 there. So one such unit is also allowed absolutely, or a correct result that lands
    in the subnormal range on some draw would fail.

    Near zero the float32 arithmetic before the cast is what errs, and the cast keeps it: a
    LayerNorm element whose exact value is 0 came out 4.9e-9 from a correct fused module in
    bfloat16 (a fresh draw, 2026-11-28), where one subnormal unit allows 9e-41. So float32's
    own `atol` is allowed too.
    """
    if dtype == torch.float32:
        return float32
    info = torch.finfo(dtype)
    return {
        "rtol": 1.01 * info.eps,
        "atol": max(1.01 * info.smallest_normal * info.eps, float32["atol"]),
    }
