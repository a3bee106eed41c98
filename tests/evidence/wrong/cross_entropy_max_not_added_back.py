"""cross-entropy whose log-sum-exp subtracts the largest logit and never adds it back, while
the target's logit is taken unshifted."""

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"cross_entropy"})
DIAGNOSED_AS = "cross_entropy_max_not_added_back"


def run_cross_entropy(inputs, targets):
    shifted = inputs - inputs.amax(dim=-1, keepdim=True)
    log_normaliser = shifted.exp().sum(dim=-1).log()
    return (log_normaliser - inputs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)).mean()
