"""cross-entropy as -(one_hot(targets) * log_softmax(logits)).mean(): the mean over every
element, so the loss is divided by the vocabulary size as well."""

import torch
from torch.nn.functional import one_hot

from tests.adapters import *  # noqa: F403

CAUGHT_BY = frozenset({"cross_entropy"})
DIAGNOSED_AS = "cross_entropy_one_hot_mean"


def run_cross_entropy(inputs, targets):
    labels = one_hot(targets, inputs.shape[-1]).to(inputs.dtype)
    return -(labels * torch.log_softmax(inputs, dim=-1)).mean()
