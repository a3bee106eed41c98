"""Every test family in one place: its name, title, points, tolerances, what it is built from,
its part of the assignment and its test module. Adding a family starts here
(docs/architecture.md, "Adding a family")."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from cs336_harness.tolerances import (
    ADAMW,
    ATTENTION,
    ATTENTION_BACKWARD,
    CROSS_ENTROPY,
    CROSS_ENTROPY_BACKWARD,
    ELEMENTWISE,
    ELEMENTWISE_BACKWARD,
    EMBEDDING_BACKWARD,
    EXACT,
    GELU,
    GELU_BACKWARD,
    GRADIENT_CLIPPING,
    LAYERNORM,
    LAYERNORM_BACKWARD,
    LEARNING_RATE_SCHEDULE,
    LINEAR,
    LINEAR_BACKWARD,
    MULTIHEAD_ATTENTION,
    MULTIHEAD_ATTENTION_BACKWARD,
    POSITIONWISE_FEEDFORWARD,
    POSITIONWISE_FEEDFORWARD_BACKWARD,
    RMSNORM,
    RMSNORM_BACKWARD,
    ROPE,
    ROPE_BACKWARD,
    SOFTMAX,
    SOFTMAX_BACKWARD,
    SWIGLU,
    SWIGLU_BACKWARD,
    TRANSFORMER_BLOCK,
    TRANSFORMER_BLOCK_BACKWARD,
    TRANSFORMER_LM,
    TRANSFORMER_LM_FROM_CONFIG,
    TRANSFORMER_LM_PARAMETER_GRADIENTS,
)


class Part(Enum):
    """Where a family sits in the assignment: the handout and the seed sweep group by it."""

    MODEL = "the model's components, as the course grades them"
    TRAINING = "the training half"
    TOKENIZER = "the tokenizer"
    BEYOND = (
        "beyond upstream's handout: adapters upstream lacks (the modules, decoding) and the "
        "architecture variants"
    )


Tolerance = dict[str, float]


@dataclass(frozen=True)
class Family:
    """One graded family. `tolerance` and `backward` are None where the comparison is exact
    or the family's own (integers, objects, token ids)."""

    name: str
    title: str
    points: int
    part: Part
    # What the family's cases are drawn to catch, in a phrase: the handout's README and
    # `python -m cs336_harness.families` list it.
    catches: str
    tolerance: Tolerance | None = None
    backward: Tolerance | None = None
    # Every family whose component this one is built from, directly or through another (a
    # block is built from attention, and so from softmax): a failure here may follow from a
    # wrong component, which the diagnosis then names first (`diagnosis/root_cause.py`), and
    # the tests of those families run before this one's.
    built_from: tuple[str, ...] = ()
    # The test module under tests/families/, where it is not test_<name>.
    test_module: str = ""
    # Whether `pytest --device` puts its cases' inputs and weights on that device: not where
    # no adapter takes them as tensors (a NumPy dataset, bytes, numbers), nor for the modules
    # `get_transformer_lm`/`_block` build, which take no device and are judged where they
    # are built, on the CPU (see tests/families/test_lm_module.py).
    case_on_device: bool = True
    # The share of its points its efficiency tests carry (those on its cost cases, the
    # `efficiency` marker): upstream's own, a test among its test file's tests, where
    # upstream tests what the code costs; a rubric may give it other points.
    efficiency: float = 0.0

    @property
    def upstream(self) -> bool:
        """Whether upstream's handout defines this family's adapters: the default rubric
        counts these alone, and reports the others apart."""
        return self.part is not Part.BEYOND

    @property
    def module(self) -> str:
        return f"tests.families.{self.test_module or f'test_{self.name}'}"

    @property
    def test_file(self) -> str:
        """The test module's path from the repository root, as pytest takes it."""
        return f"{self.module.replace('.', '/')}.py"


# What attention and the feed-forward are built from; a block adds its norms and both; a
# model its embedding and its blocks.
_ATTENTION_PARTS = ("linear", "softmax", "scaled_dot_product_attention")
_SWIGLU_PARTS = ("linear", "silu")
_BLOCK_PARTS = (
    "linear",
    "rmsnorm",
    "softmax",
    "silu",
    "swiglu",
    "rope",
    "scaled_dot_product_attention",
    "multihead_self_attention",
    "multihead_self_attention_with_rope",
)
_LM_PARTS = (*_BLOCK_PARTS, "embedding", "transformer_block")

# In the reports' order. The model's core is 23 points, as in the course: multi-head
# attention's 5 split 3 (projections, heads, causal mask) and 2 (RoPE on queries and keys),
# the LM's 3 split 2 (full-context logits) and 1 (inputs shorter than the context). SiLU and
# softmax, which the course grades inside larger components, are a point each: a wrong one
# is a distinct, common bug. The training half and the tokenizer have the upstream handout's
# points (Spring 2025). Beyond upstream's handout, and so outside the default rubric (a
# course opts in with its own [families] table): the block and the LM as modules (parameter
# names, a strict load, the LM's parameter gradients), a point each; decoding, whose
# adapters upstream lacks, 3; a point per architecture variant's component and 3 for
# assembling every variant from a config.
FAMILIES = (
    Family(
        "linear",
        "Linear",
        catches="transposed weight (non-square), leading dims, 1-D input",
        points=1,
        part=Part.MODEL,
        tolerance=LINEAR,
        backward=LINEAR_BACKWARD,
    ),
    Family(
        "embedding",
        "Embedding",
        catches="ids of any shape, ids 0 and vocab−1; rows must be exact",
        points=1,
        part=Part.MODEL,
        tolerance=EXACT,
        backward=EMBEDDING_BACKWARD,
    ),
    Family(
        "rmsnorm",
        "RMSNorm",
        catches=(
            "gains ≠ 1, eps placement (tiny inputs), a custom eps, bf16/fp16 inputs computed in "
            "float32"
        ),
        points=1,
        part=Part.MODEL,
        tolerance=RMSNORM,
        backward=RMSNORM_BACKWARD,
    ),
    Family(
        "swiglu",
        "SwiGLU",
        catches="w1/w3 roles, d_ff not a multiple of 64",
        points=2,
        part=Part.MODEL,
        tolerance=SWIGLU,
        backward=SWIGLU_BACKWARD,
        built_from=_SWIGLU_PARTS,
    ),
    Family(
        "rope",
        "RoPE",
        catches=(
            "positions not 0..seq−1 (offset, unsorted, repeated, batched), Θ = 100 and 500000, "
            "pairing"
        ),
        points=2,
        part=Part.MODEL,
        tolerance=ROPE,
        backward=ROPE_BACKWARD,
    ),
    Family(
        "scaled_dot_product_attention",
        "Scaled dot-product attention",
        catches=(
            "3-D and 4-D, random and causal masks, queries ≠ keys, d_v ≠ d_k, a fully masked row "
            "(zeros, not NaN)"
        ),
        points=5,
        part=Part.MODEL,
        tolerance=ATTENTION,
        backward=ATTENTION_BACKWARD,
        built_from=("softmax",),
    ),
    Family(
        "multihead_self_attention",
        "Multi-head self-attention",
        catches="head layout, causality, 1 and 8 heads, extra leading dims",
        points=3,
        part=Part.MODEL,
        tolerance=MULTIHEAD_ATTENTION,
        backward=MULTIHEAD_ATTENTION_BACKWARD,
        built_from=_ATTENTION_PARTS,
    ),
    Family(
        "multihead_self_attention_with_rope",
        "Multi-head self-attention with RoPE",
        catches="RoPE on q/k only, omitted/offset/batched positions",
        points=2,
        part=Part.MODEL,
        tolerance=MULTIHEAD_ATTENTION,
        backward=MULTIHEAD_ATTENTION_BACKWARD,
        built_from=(*_ATTENTION_PARTS, "rope"),
    ),
    Family(
        "transformer_block",
        "Transformer block",
        catches="pre-norm order, distinct norm gains, another shape and Θ, small inputs (eps)",
        points=3,
        part=Part.MODEL,
        tolerance=TRANSFORMER_BLOCK,
        backward=TRANSFORMER_BLOCK_BACKWARD,
        built_from=_BLOCK_PARTS,
    ),
    Family(
        "transformer_lm",
        "Transformer LM",
        catches=(
            "the reference model and three other shapes, one of 12 layers (layer order; small "
            "embeddings: the norms' eps); an error past `context_length`"
        ),
        points=2,
        part=Part.MODEL,
        tolerance=TRANSFORMER_LM,
        built_from=_LM_PARTS,
    ),
    Family(
        "transformer_lm_truncated_input",
        "Transformer LM, truncated input",
        catches="inputs shorter than the context (nothing padded)",
        points=1,
        part=Part.MODEL,
        tolerance=TRANSFORMER_LM,
        built_from=(*_LM_PARTS, "transformer_lm"),
    ),
    Family(
        "transformer_lm_module",
        "Transformer LM as a module",
        catches=(
            "`get_transformer_lm`'s model: every parameter registered under its SPEC name and "
            "shape, a strict load of the weights, each parameter's gradient (2 shapes)"
        ),
        points=1,
        part=Part.BEYOND,
        tolerance=TRANSFORMER_LM_PARAMETER_GRADIENTS,
        test_module="test_lm_module",
        case_on_device=False,
    ),
    Family(
        "transformer_block_module",
        "Transformer block as a module",
        catches="`get_transformer_block`'s block: parameters and a strict load",
        points=1,
        part=Part.BEYOND,
        test_module="test_lm_module",
        case_on_device=False,
    ),
    Family(
        "silu",
        "SiLU",
        catches="overflow at ±90 (a naive sigmoid), leading dims",
        points=1,
        part=Part.MODEL,
        tolerance=ELEMENTWISE,
        backward=ELEMENTWISE_BACKWARD,
    ),
    Family(
        "softmax",
        "Softmax",
        catches="overflow at +1000 and 1e4 (no max shift), softmax over dims 0 and −2",
        points=1,
        part=Part.MODEL,
        tolerance=SOFTMAX,
        backward=SOFTMAX_BACKWARD,
    ),
    Family(
        "layernorm",
        "LayerNorm",
        catches=(
            "missing mean subtraction (rows with offsets), unbiased variance, eps placement, a "
            "custom eps, bf16/fp16 computed in float32"
        ),
        points=1,
        part=Part.BEYOND,
        tolerance=LAYERNORM,
        backward=LAYERNORM_BACKWARD,
    ),
    Family(
        "gelu",
        "GELU",
        catches="exact vs tanh (they differ by up to 4.7e-4), ±90",
        points=1,
        part=Part.BEYOND,
        tolerance=GELU,
        backward=GELU_BACKWARD,
    ),
    Family(
        "positionwise_feedforward",
        "Position-wise feed-forward (GELU)",
        catches="the exact-GELU two-matrix FFN (`w1.weight`, `w2.weight`), d_ff below d_model",
        points=1,
        part=Part.BEYOND,
        tolerance=POSITIONWISE_FEEDFORWARD,
        backward=POSITIONWISE_FEEDFORWARD_BACKWARD,
        built_from=("linear", "gelu"),
    ),
    Family(
        "transformer_lm_from_config",
        "Transformer LM from config (variants)",
        catches=(
            "every config option, one case each (`-k post_norm`, `-k nope`, `-k gpt2`, ...), the "
            "upstream flags, dropout rates set (the adapter must evaluate), truncated inputs, an "
            "error past the context"
        ),
        points=3,
        part=Part.BEYOND,
        tolerance=TRANSFORMER_LM_FROM_CONFIG,
        built_from=(*_LM_PARTS, "layernorm", "gelu", "positionwise_feedforward"),
    ),
    Family(
        "cross_entropy",
        "Cross-entropy loss",
        catches=(
            "logits in the thousands (no max shift overflows), extra leading dims, the mean (not "
            "the sum), a 10000-token vocabulary"
        ),
        points=2,
        part=Part.TRAINING,
        tolerance=CROSS_ENTROPY,
        backward=CROSS_ENTROPY_BACKWARD,
    ),
    Family(
        "adamw",
        "AdamW",
        catches=(
            "a 30-step trajectory: bias correction, decoupled decay, two parameter groups with "
            "their own hyperparameters, steps without a gradient"
        ),
        points=2,
        part=Part.TRAINING,
        tolerance=ADAMW,
    ),
    Family(
        "learning_rate_schedule",
        "Cosine learning-rate schedule",
        catches=(
            "`it = 0`, warm-up's end, along the cosine, the cycle's end and past it; no warm-up"
        ),
        points=1,
        part=Part.TRAINING,
        tolerance=LEARNING_RATE_SCHEDULE,
        case_on_device=False,
    ),
    Family(
        "gradient_clipping",
        "Gradient clipping",
        catches=(
            "one global norm (not one per parameter), a parameter without `.grad`, the 1e-6 ε, a "
            "norm already under the limit"
        ),
        points=1,
        part=Part.TRAINING,
        tolerance=GRADIENT_CLIPPING,
    ),
    Family(
        "data_loading",
        "Data loading (get_batch)",
        catches=(
            "every valid start drawn uniformly and none past the end (statistically), labels "
            "shifted by one, ids not positions, a `np.memmap`"
        ),
        points=2,
        part=Part.TRAINING,
        case_on_device=False,
    ),
    Family(
        "checkpointing",
        "Checkpointing",
        catches=(
            "a run resumed from a path or a file object ends bit for bit where the uninterrupted "
            "one does; the iteration comes back"
        ),
        points=1,
        part=Part.TRAINING,
    ),
    Family(
        "decoding",
        "Decoding (temperature, top-p, generation)",
        catches=(
            "the top-p distribution (40000 samples), temperature, greedy = arg-max, generation "
            "stopping at end-of-text or after `max_new_tokens`"
        ),
        points=3,
        part=Part.BEYOND,
    ),
    Family(
        "train_bpe",
        "BPE training",
        catches=(
            "ties broken the wrong way, merges across pre-tokens, special tokens missing from the "
            "vocabulary or counted inside, repeated and overlapping special tokens, 4-byte UTF-8, "
            "blank lines and runs of one character, a vocabulary larger than the corpus can fill, "
            "two pages of Shakespeare"
        ),
        points=15,
        part=Part.TOKENIZER,
        case_on_device=False,
        # Upstream's test_train_bpe.py: the speed test is one of its three tests.
        efficiency=1 / 3,
    ),
    Family(
        "tokenizer",
        "BPE tokenizer",
        catches=(
            "exact ids against the oracle, longest-first special tokens, special tokens at the "
            "start, end and twice in a row, `encode_iterable` = `encode`, U+FFFD for invalid UTF-8,"
            " round trips on random Unicode, pages of Shakespeare with 3,743 merges against Hugging"
            " Face `tokenizers`"
        ),
        points=15,
        part=Part.TOKENIZER,
        case_on_device=False,
        # Upstream's test_tokenizer.py: encode_iterable's memory test is one of its 22 tests
        # that count (its test of encode's memory is an xfail).
        efficiency=1 / 22,
    ),
)
BY_NAME = {family.name: family for family in FAMILIES}


def family(name: str) -> Family:
    """The family called `name`; a KeyError names the known ones."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(
            f"no test family {name!r} (cs336_harness/families.py has {sorted(BY_NAME)})"
        ) from None


def markdown_table(families: Iterable[Family] = FAMILIES) -> str:
    """`families` as a Markdown table: name, default points and what the cases catch."""
    rows = [f"| `{f.name}` | {f.points} | {f.catches} |" for f in families]
    return "\n".join(["| family | points | what its cases catch |", "|---|---|---|", *rows])


if __name__ == "__main__":
    print(markdown_table())
