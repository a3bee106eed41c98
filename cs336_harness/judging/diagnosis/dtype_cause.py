"""The likely cause of an output returned in a wider float dtype than its half-precision
input, read from the dtype failure's line."""

from __future__ import annotations

import re

# compare.py's line; `tests/harness/test_error_shape.py` fails if its wording changes.
DTYPE_LINE = re.compile(r"output: dtype torch\.(?P<actual>\w+), expected torch\.(?P<expected>\w+)")
HALF = ("bfloat16", "float16")
WIDER = ("float32", "float64")

ID = "output_left_in_wider_dtype"
MESSAGE = (
    "the output is left in {actual} for a {expected} input: the computation was upcast (or a "
    "float32 weight promoted it) and the result never cast back; return it in the input's "
    "dtype, result.to(x.dtype)"
)


def cause(message: str) -> str | None:
    """The `likely cause: ...` line for a failure whose message is `message`, if it is
    compare's dtype line for a wider float output where half precision is expected."""
    match = DTYPE_LINE.fullmatch(message.strip())
    if match is None or match["actual"] not in WIDER or match["expected"] not in HALF:
        return None
    return f"likely cause: {MESSAGE.format(**match.groupdict())}"
