"""Linear written as an einsum that gives both axes of the weight one name,
`einsum("...d,dd->...d")`, which takes W's diagonal: each feature times W[i, i]. It errors
where W is not square and is wrong where it is; the attention projections with it."""

import torch

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._component_mistakes import ProjectionAdapters

CAUGHT_BY = frozenset({"linear", "multihead_self_attention", "multihead_self_attention_with_rope"})
DIAGNOSED_AS = "linear_einsum_diagonal"


def run_linear(d_in, d_out, weights, in_features):
    return torch.einsum("...d,dd->...d", in_features, weights)


def _diagonal(*weights):
    return tuple(torch.diag(torch.diagonal(w)) for w in weights)


_adapters = ProjectionAdapters(lambda q, k, v, o, num_heads: _diagonal(q, k, v, o))
run_multihead_self_attention = _adapters.run_multihead_self_attention
run_multihead_self_attention_with_rope = _adapters.run_multihead_self_attention_with_rope
