"""Linear that casts its weight and input to bfloat16 for the product (a `dtype=torch.bfloat16`
left in from a speed experiment) and returns float32: right to about bfloat16's precision.
No catalogued mistake; its failures open with that shape of error."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"linear"})
ERROR_SHAPE = "half_precision"


def run_linear(d_in, d_out, weights, in_features):
    return (in_features.bfloat16() @ weights.bfloat16().T).float()
