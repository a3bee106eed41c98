"""LayerNorm with the unbiased variance (divide by d_model - 1, `torch.var`'s default), in
the LayerNorm adapter and in every LayerNorm of a config-built model."""

import torch

from cs336_basics import LayerNorm, ModelConfig, TransformerLM
from tests.adapters import *  # noqa: F403  (every other component stays correct)

CAUGHT_BY = frozenset({"layernorm", "transformer_lm_from_config"})
DIAGNOSED_AS = "layernorm_unbiased_variance"


def _unbiased_layernorm(x, weight, bias, eps):
    x32 = x.float()
    centred = x32 - x32.mean(-1, keepdim=True)
    var = x32.var(-1, keepdim=True)  # the mistake: correction=1
    return (centred / torch.sqrt(var + eps) * weight.float() + bias.float()).to(x.dtype)


class _UnbiasedLayerNorm(LayerNorm):
    def forward(self, x):
        return _unbiased_layernorm(x, self.weight, self.bias, self.eps)


def run_layernorm(d_model, eps, weights, biases, in_features):
    return _unbiased_layernorm(in_features, weights, biases, eps)


def run_transformer_lm_from_config(config, weights, in_indices):
    model = TransformerLM.from_config(
        ModelConfig.from_dict(config), dtype=weights["token_embeddings.weight"].dtype
    )
    for module in model.modules():
        if isinstance(module, LayerNorm):
            module.__class__ = _UnbiasedLayerNorm  # same parameters, the wrong forward
    model.load_state_dict(weights)
    model.eval()
    with torch.no_grad():
        return model(in_indices)
