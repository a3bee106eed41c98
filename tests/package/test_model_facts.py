"""Facts about the bundled `cs336_basics` model that hold whatever the adapters: parameter
counts, parameter names per variant, the two RoPE pairings' equivalence, dropout's modes,
tied-embedding loading, the GPT-style reading of the upstream remove_rope ablation, and
the config's JSON round trip and errors.

These test the package itself (no family marker, no adapters), mostly in float64 so that
"equal" can mean equal to 1e-12. (Differences are bounded by hand: torch.testing's first
call imports torch.distributed, 4 s.)
"""

import dataclasses
import json

import numpy as np
import pytest
import torch
from jaxtyping import TypeCheckError
from safetensors.torch import load_file, save_file

from cs336_basics import ModelConfig, TransformerBlock, TransformerLM, dropout
from cs336_harness.judging.pytest_plugin import DEFAULT_FIXTURES
from cs336_staff import oracle
from cs336_staff.fixturegen.variant_cases import VARIANTS
from cs336_staff.fixturegen.weights import lm_weights

META = torch.device("meta")
SIZES = {
    "vocab_size": 61,
    "context_length": 12,
    "d_model": 32,
    "num_layers": 2,
    "num_heads": 4,
    "d_ff": 64,
}
GPT2_SMALL = ModelConfig(
    vocab_size=50257,
    context_length=1024,
    d_model=768,
    num_layers=12,
    num_heads=12,
    d_ff=3072,
    norm="layernorm",
    positions="learned",
    ffn="gelu",
    gelu_approximate="tanh",
    bias=True,
    tie_embeddings=True,
)


def _ids(seed: int = 0, batch: int = 3) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(
        0, SIZES["vocab_size"], (batch, SIZES["context_length"]), generator=generator
    )


def _parameter_count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())  # a tied matrix is listed once


def test_gpt2_small_has_124_439_808_parameters():
    assert _parameter_count(TransformerLM.from_config(GPT2_SMALL, device=META)) == 124_439_808


def test_default_architecture_at_gpt2_xl_sizes_has_2_127_057_600_parameters():
    # The SPEC's positional constructor, unchanged; the meta device allocates nothing.
    model = TransformerLM(50257, 1024, 1600, 48, 25, 6400, 10000.0, device=META)
    assert _parameter_count(model) == 2_127_057_600


@pytest.mark.parametrize(
    ("config", "oracle_config"),
    [(config, oracle_config or config) for _, _, config, oracle_config in VARIANTS],
    ids=[case_id for case_id, *_ in VARIANTS],
)
def test_state_dict_names_and_shapes_match_the_oracle(config, oracle_config):
    model = TransformerLM.from_config(config, device=META)
    shapes = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    assert shapes == oracle.lm_parameter_shapes(oracle_config)


def test_block_from_config_is_the_lm_block():
    config = GPT2_SMALL
    block = TransformerBlock.from_config(config, device=META)
    lm_block = TransformerLM.from_config(config, device=META).layers[0]
    assert block.state_dict().keys() == lm_block.state_dict().keys()
    assert "ln1.bias" in block.state_dict() and "attn.q_proj.bias" in block.state_dict()


def _rows_for_half_pairing(d_model: int, num_heads: int) -> torch.Tensor:
    """Row order taking q/k projection weights from the interleaved to the half pairing.

    Within a head of size d_k, interleaved pair k is dims (2k, 2k+1) and half pair k is
    dims (k, k + d_k/2), both rotated by the same angle p·Θ^(-2k/d_k). So if the half model's
    q/k row k is the interleaved row 2k and its row k + d_k/2 the interleaved row 2k+1, every
    pair of the half model holds exactly the interleaved model's pair and is rotated alike.
    Attention reads q and k only through q·k, a sum over dims that one permutation applied to
    both leaves unchanged; v and the output projection are untouched.
    """
    d_k = d_model // num_heads
    within_head = torch.cat([torch.arange(0, d_k, 2), torch.arange(1, d_k, 2)])
    return torch.cat([head * d_k + within_head for head in range(num_heads)])


@pytest.mark.parametrize(
    ("seed", "d_model", "num_heads", "bias"),
    [(0, 16, 2, False), (1, 32, 4, True), (2, 24, 1, False), (3, 48, 3, True)],
)
def test_half_pairing_is_interleaved_with_q_k_rows_permuted(seed, d_model, num_heads, bias):
    torch.manual_seed(seed)
    # Θ = 100 turns every pair by a large angle, so a wrong permutation cannot hide.
    sizes = SIZES | {"d_model": d_model, "num_heads": num_heads, "rope_theta": 100.0}
    interleaved = TransformerLM.from_config(sizes | {"bias": bias}, dtype=torch.float64)
    half = TransformerLM.from_config(
        sizes | {"bias": bias, "rope_pairing": "half"}, dtype=torch.float64
    )
    state = interleaved.state_dict()
    if bias:  # zero-initialised biases would not show a wrong permutation of theirs
        for name in state:
            if name.endswith(".bias"):
                state[name] = torch.randn_like(state[name])
        interleaved.load_state_dict(state)
    rows = _rows_for_half_pairing(d_model, num_heads)
    qk = ("attn.q_proj.weight", "attn.k_proj.weight", "attn.q_proj.bias", "attn.k_proj.bias")
    half.load_state_dict({k: v[rows] if k.endswith(qk) else v for k, v in state.items()})
    ids = _ids(seed)
    with torch.no_grad():
        assert (half(ids) - interleaved(ids)).abs().max() < 1e-12
        half.load_state_dict(state)  # the same weights unpermuted: a different function
        assert (half(ids) - interleaved(ids)).abs().max() > 1e-2


DROPOUT_RATES = {"attn_dropout": 0.1, "residual_dropout": 0.2, "embedding_dropout": 0.3}


def _with_and_without_dropout(rates: dict[str, float]) -> tuple[TransformerLM, TransformerLM]:
    torch.manual_seed(0)
    config = ModelConfig(**SIZES, norm="layernorm", positions="learned", **rates)
    noisy = TransformerLM.from_config(config)
    plain = TransformerLM.from_config(dataclasses.replace(config, **dict.fromkeys(rates, 0.0)))
    plain.load_state_dict(noisy.state_dict())
    return noisy, plain


@torch.no_grad()
def test_eval_mode_is_exactly_the_dropout_free_model():
    noisy, plain = _with_and_without_dropout(DROPOUT_RATES)
    noisy.eval()
    assert torch.equal(noisy(_ids()), plain.eval()(_ids()))
    # Without dropout, training mode changes nothing either.
    assert torch.equal(plain.train()(_ids()), plain.eval()(_ids()))


@torch.no_grad()
@pytest.mark.parametrize("rate", sorted(DROPOUT_RATES))
def test_each_dropout_rate_acts_in_train_mode_reproducibly(rate):
    noisy, _ = _with_and_without_dropout({rate: DROPOUT_RATES[rate]})
    ids = _ids()
    evaluated = noisy.eval()(ids)
    noisy.train()
    torch.manual_seed(1)
    first = noisy(ids)
    torch.manual_seed(1)
    assert torch.equal(noisy(ids), first)
    assert not torch.equal(noisy(ids), first)  # the RNG moved on: a fresh mask
    assert (first - evaluated).abs().max() > 1e-3


def test_dropout_zeroes_a_fraction_p_and_keeps_the_mean():
    torch.manual_seed(0)
    out = dropout(torch.ones(200_000), 0.25)
    assert out.unique().tolist() == [0.0, pytest.approx(4 / 3)]
    assert (out == 0).float().mean().item() == pytest.approx(0.25, abs=0.005)
    assert out.mean().item() == pytest.approx(1.0, abs=0.01)


def test_tied_head_is_the_embedding_matrix_and_is_stored_once(tmp_path):
    config = ModelConfig(**SIZES, tie_embeddings=True)
    model = TransformerLM.from_config(config)
    assert model.lm_head.weight is model.token_embeddings.weight
    state = model.state_dict()
    assert "lm_head.weight" not in state
    save_file(state, tmp_path / "tied.safetensors")  # shared storage would be refused
    fresh = TransformerLM.from_config(config)
    fresh.load_state_dict(load_file(tmp_path / "tied.safetensors"))
    assert torch.equal(fresh.lm_head.weight, model.token_embeddings.weight)


def test_tied_model_loads_an_equal_lm_head_and_rejects_a_different_one():
    model = TransformerLM.from_config(ModelConfig(**SIZES, tie_embeddings=True))
    state = model.state_dict()
    model.load_state_dict(state | {"lm_head.weight": state["token_embeddings.weight"].clone()})
    with pytest.raises(RuntimeError, match=r"lm_head\.weight differs"):
        model.load_state_dict(
            state | {"lm_head.weight": torch.zeros_like(state["token_embeddings.weight"])}
        )


@torch.no_grad()
def test_remove_rope_with_learned_positions_and_gelu_is_a_pre_norm_gpt_model():
    # The upstream ablation flag plus our keys, against the oracle's GPT-style model.
    gpt = SIZES | {"norm": "layernorm", "positions": "learned", "ffn": "gelu", "bias": True}
    model = TransformerLM.from_config(gpt | {"remove_rope": True}, dtype=torch.float64)
    assert all(layer.attn.rope is None for layer in model.layers)
    weights = lm_weights(np.random.default_rng(0), gpt)
    model.load_state_dict({k: torch.from_numpy(v).double() for k, v in weights.items()})
    ids = _ids()
    expected = torch.from_numpy(oracle.transformer_lm(ids.numpy(), weights, gpt))
    assert (model.eval()(ids) - expected).abs().max() < 1e-10


def test_positional_constructor_takes_config_keys_and_upstream_flags_by_keyword():
    model = TransformerLM(*SIZES.values(), 10000.0, remove_rope=True, norm="layernorm", device=META)
    assert model.config == ModelConfig(**SIZES, positions="none", norm="layernorm")
    with pytest.raises(ValueError, match="normm"):
        TransformerLM(*SIZES.values(), 10000.0, normm="layernorm")


EVERY_OPTION = ModelConfig(
    **SIZES,
    rope_theta=500000.0,
    norm="layernorm",
    norm_eps=1e-6,
    norm_position="post",
    rope_pairing="half",
    ffn="gelu",
    gelu_approximate="tanh",
    bias=True,
    tie_embeddings=True,
    attn_dropout=0.1,
    residual_dropout=0.2,
    embedding_dropout=0.3,
)


def test_config_json_round_trip(tmp_path):
    EVERY_OPTION.to_json(tmp_path / "config.json")
    assert ModelConfig.from_json(tmp_path / "config.json") == EVERY_OPTION
    assert ModelConfig.from_dict(EVERY_OPTION.to_dict()) == EVERY_OPTION


def test_upstream_model_config_json_reads_as_the_default_model(tmp_path):
    upstream = SIZES | {
        "remove_rmsnorm": False,
        "use_post_norm": False,
        "remove_rope": False,
        "rope_theta": 10000.0,
        "ffn_type": None,
    }
    (tmp_path / "model_config.json").write_text(json.dumps(upstream))
    assert ModelConfig.from_json(tmp_path / "model_config.json") == ModelConfig(**SIZES)
    assert ModelConfig.from_json(DEFAULT_FIXTURES / "model_config.json").vocab_size == 10000


@pytest.mark.parametrize(
    ("flag", "value", "key", "meaning"),
    [
        ("remove_rmsnorm", True, "norm", "none"),
        ("use_post_norm", True, "norm_position", "post"),
        ("remove_rope", True, "positions", "none"),
        ("ffn_type", "silu", "ffn", "silu"),
        ("ffn_type", "swiglu", "ffn", "swiglu"),
    ],
)
def test_upstream_flag_sets_its_key(flag, value, key, meaning):
    assert getattr(ModelConfig.from_dict(SIZES | {flag: value}), key) == meaning


CONFIG_ERRORS = [
    ({"norms": "layernorm"}, ValueError, "norms"),
    ({"norm": "batchnorm"}, ValueError, "norm"),
    ({"positions": "alibi"}, ValueError, "positions"),
    ({"remove_rmsnorm": True, "norm": "layernorm"}, ValueError, "remove_rmsnorm.*norm="),
    ({"remove_rope": False, "positions": "learned"}, ValueError, "remove_rope.*positions="),
    ({"use_post_norm": True, "norm_position": "pre"}, ValueError, "use_post_norm"),
    ({"ffn_type": "gelu"}, ValueError, "ffn_type"),
    ({"remove_rope": 1}, ValueError, "remove_rope"),
    ({"d_model": 30}, ValueError, "num_heads"),
    ({"d_model": 12}, ValueError, "positions='rope'.*head dim"),
    ({"rope_pairing": "half", "positions": "none"}, ValueError, "rope_pairing"),
    ({"gelu_approximate": "tanh"}, ValueError, "gelu_approximate"),
    ({"attn_dropout": 1.0}, ValueError, "attn_dropout"),
    ({"rope_theta": 0.0}, ValueError, "rope_theta"),
    ({"vocab_size": 0}, ValueError, "vocab_size"),
    ({"d_model": 32.0}, TypeError, "d_model"),
    ({"bias": "yes"}, TypeError, "bias"),
]


@pytest.mark.parametrize(
    ("change", "error", "names"),
    CONFIG_ERRORS,
    ids=[",".join(f"{k}={v}" for k, v in change.items()) for change, *_ in CONFIG_ERRORS],
)
def test_config_errors_name_the_key(change, error, names):
    # Under --typecheck a field's annotation may refuse the value first, naming the field.
    with pytest.raises((error, TypeCheckError)) as raised:
        ModelConfig.from_dict(SIZES | change)
    if not raised.errisinstance(TypeCheckError):
        raised.match(names)


def test_config_without_a_size_names_it():
    with pytest.raises(ValueError, match="d_ff"):
        ModelConfig.from_dict({k: v for k, v in SIZES.items() if k != "d_ff"})


def test_odd_head_dim_is_fine_without_rope():
    assert ModelConfig.from_dict(SIZES | {"d_model": 12, "positions": "learned"}).head_dim == 3
