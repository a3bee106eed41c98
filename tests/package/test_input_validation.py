"""The bundled `cs336_basics` rejects bad arguments with an error that names the problem.

These test the reference package directly, not through the adapters: SPEC only asks every
implementation to raise past `context_length`; the messages checked here are this package's
promise to its users, so a misuse is reported where it happens rather than as a shape error
from deep inside torch.
"""

import pytest
import torch
from jaxtyping import TypeCheckError

import cs336_basics as cb

x4 = torch.randn(2, 5, 8)
ids = torch.tensor([[1, 2, 3]])

CASES = {
    "rope_odd_d_k": (lambda: cb.RotaryPositionalEmbedding(10000.0, 7, 16), ValueError, "d_k"),
    "rope_position_past_max_seq_len": (
        lambda: cb.RotaryPositionalEmbedding(10000.0, 8, 4)(x4, torch.arange(5)),
        IndexError,
        "token_positions",
    ),
    "rope_negative_position": (
        lambda: cb.RotaryPositionalEmbedding(10000.0, 8, 16)(x4, torch.tensor([0, 1, -1, 2, 3])),
        IndexError,
        "token_positions",
    ),
    "rope_float_positions": (
        lambda: cb.RotaryPositionalEmbedding(10000.0, 8, 16)(x4, torch.arange(5.0)),
        TypeError,
        "token_positions",
    ),
    "mha_d_model_not_divisible_by_num_heads": (
        lambda: cb.MultiHeadSelfAttention(10, 3),
        ValueError,
        "divisible by num_heads",
    ),
    "linear_wrong_input_width": (
        lambda: cb.Linear(4, 3)(x4),
        ValueError,
        "last dimension of x must be 4",
    ),
    "rmsnorm_wrong_input_width": (
        lambda: cb.RMSNorm(4)(x4),
        ValueError,
        "last dimension of x must be 4",
    ),
    "embedding_id_out_of_range": (
        lambda: cb.Embedding(3, 4)(ids),
        IndexError,
        r"\[0, 3\)",
    ),
    "attention_q_k_widths_differ": (
        lambda: cb.scaled_dot_product_attention(x4, torch.randn(2, 5, 6), x4),
        ValueError,
        "d_k",
    ),
    "attention_k_v_lengths_differ": (
        lambda: cb.scaled_dot_product_attention(x4, x4, torch.randn(2, 4, 8)),
        ValueError,
        "K|V",
    ),
    "attention_mask_not_bool": (
        lambda: cb.scaled_dot_product_attention(x4, x4, x4, torch.ones(5, 5)),
        TypeError,
        "bool",
    ),
    "attention_mask_wrong_shape": (
        lambda: cb.scaled_dot_product_attention(x4, x4, x4, torch.ones(4, 5, dtype=torch.bool)),
        ValueError,
        "mask",
    ),
    "transformer_lm_sequence_past_context": (
        lambda: cb.TransformerLM(11, 2, 8, 1, 2, 16, 10000.0)(ids),
        ValueError,
        "context_length",
    ),
    "transformer_lm_token_id_out_of_range": (
        lambda: cb.TransformerLM(3, 4, 8, 1, 2, 16, 10000.0)(ids),
        IndexError,
        r"\[0, 3\)",
    ),
}


@pytest.mark.parametrize("call, error, message", CASES.values(), ids=CASES.keys())
def test_bad_argument_is_named(call, error, message):
    # Under --typecheck the argument's annotation may refuse it first (jaxtyping's message
    # names the parameter and the annotation), before the package's own check.
    with pytest.raises((error, TypeCheckError)) as raised:
        call()
    if not raised.errisinstance(TypeCheckError):
        raised.match(message)
