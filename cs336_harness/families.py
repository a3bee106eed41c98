"""Every test family in one place: its name, its title and default points in the rubric,
its tolerances, the families it is built from, its part of the assignment and its test module.

The pytest plugin refuses a `family` marker not named here; the grader's rubric takes its
titles, points and order from here (a course's `rubric.toml` may override them);
diagnosis names a block's or a model's failed parts from `built_from`; `make margins`
finds each family's tests through `module`; the fixture generator refuses to write
cases of an unknown family or to leave a family without cases; the seed sweep runs the
upstream-style implementation on the `MODEL` part. Adding a family starts here
(docs/architecture.md, "Adding a family").

Tolerances: |actual − expected| ≤ atol + rtol·|expected| elementwise. `expected` is the
float64 oracle's output; every fixture is scaled so outputs are O(1) (at most ~6 in
magnitude, silu's ±90 aside), so atol and rtol are of one size. float32's unit roundoff is
u = 2⁻²⁴ ≈ 6e-8. Each bound below is about ten times the largest error measured for two
correct float32 implementations written in different styles (`tests/adapters.py`,
from-scratch; `tests/evidence/fused.py`, fused PyTorch ops) and the float32 error analysis
of the operation, and far below the error of every deliberately wrong module in
`tests/evidence/wrong/` (the meta-test checks both sides). Measured with `make margins`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

# A lookup does no arithmetic: the rows must come back bit for bit.
EXACT = {"rtol": 0.0, "atol": 0.0}

# Elementwise: a few roundings per element. Measured: 9.5e-7 at |y| = 90, 4.8e-7 at |y| ≈ 8.
ELEMENTWISE = {"rtol": 1e-6, "atol": 1e-6}

# Outputs in [0, 1]; a log-sum-exp formulation loses up to |x − max|·u relative on tiny
# probabilities, which atol covers. Measured: 6e-8.
SOFTMAX = {"rtol": 1e-6, "atol": 1e-7}

# A 64-term mean of squares, an rsqrt and a product: a few u relative. Measured: 4.8e-7 at 6.
RMSNORM = {"rtol": 2e-6, "atol": 2e-6}

# Dot products of up to 128 terms, summed in whatever order the BLAS picks: about √n·u times
# Σ|x_i w_i| ≈ 6, i.e. ~4e-6 at worst in practice. Measured: 9.5e-7 (linear), 6.9e-7 (swiglu).
LINEAR = {"rtol": 1e-5, "atol": 1e-5}
SWIGLU = LINEAR

# Most implementations build the cos/sin table in float32, so the angle carries u·angle of
# error: with angles up to 63 rad and |x| up to ~4 that is up to 1.4e-5. Measured: 1.7e-6
# for a float32 table, 2.4e-7 for a float64 one. Wrong pairings, frequencies or positions
# are off by O(1).
ROPE = {"rtol": 2e-5, "atol": 2e-5}

# Two matmuls around a softmax, d ≤ 16. Measured: 4.2e-7.
ATTENTION = {"rtol": 5e-6, "atol": 5e-6}

# Four projections, attention and (with RoPE) the table rounding above. Measured: 2.9e-6.
MULTIHEAD_ATTENTION = {"rtol": 3e-5, "atol": 3e-5}

# A block and up to three stacked blocks plus the head: errors add across sublayers rather
# than compounding, as the norms rescale each layer's input. Measured: 2.3e-6 (block),
# 2.6e-6 (LM logits).
TRANSFORMER_BLOCK = {"rtol": 3e-5, "atol": 3e-5}
TRANSFORMER_LM = TRANSFORMER_BLOCK

# The architecture-variant families. Measured with `make margins` (both correct modules,
# every case); the errors quoted are the largest |actual − expected| / (1 + |expected|),
# i.e. the smallest equal rtol = atol that would pass.

# A mean, a centred mean of squares, an rsqrt and an affine map: a few u relative, like
# RMSNorm. Measured: 1.9e-7 (the fused module at outputs ~5); 0.49 ulp in bf16 and fp16.
LAYERNORM = RMSNORM

# erf or tanh and a few products per element. Measured: 2.5e-7 (fused erf GELU at
# x = -3, where 1 + erf cancels). Exact and tanh GELU differ by up to 4.7e-4.
GELU = {"rtol": 2e-6, "atol": 2e-6}

# Two matmuls around a GELU, like SwiGLU. Measured: 6.4e-7.
POSITIONWISE_FEEDFORWARD = LINEAR

# Like TRANSFORMER_LM, but models without any norm let the residual stream (and the
# logits, up to ~10) grow layer by layer, and their rounding with it. Measured: 6.4e-6 (no
# norm), 4.0e-6 (GPT-2), 3.7e-6 (no positions), 3.0e-6 or less for the other variants.
# The subtlest wrong variant, tanh GELU in place of exact, moves logits by 2.4e-4 relative.
TRANSFORMER_LM_FROM_CONFIG = {"rtol": 5e-5, "atol": 5e-5}


# The training half.

# A max, a sum of exps, a log and a mean: a few u relative to the loss. A log-sum-exp that is
# rounded back at the size of the largest logit (torch.logsumexp, or max + log Σ exp) loses
# up to u/2 of that logit, so the absolute bound grows with it: logits of ±4000 allow 2.4e-4,
# still ~100 times below the smallest wrong answer (a mean taken over the wrong count).
CROSS_ENTROPY = {"rtol": 2e-6, "atol": 2e-6}
CROSS_ENTROPY_PER_UNIT_LOGIT = 4 * 2**-24

# One global norm (a sum of ≤ 20 squares and a square root) and one product per element:
# a few u relative; there is no absolute floor, as the epsilon case's gradients are ~1e-7.
GRADIENT_CLIPPING = {"rtol": 1e-5, "atol": 0.0}

# 30 steps of |Δθ| ≤ lr ≈ 0.02 on parameters of size ~1, each step rounding θ, m and v in
# float32: the error grows like steps · u · |θ| ≈ 2e-6. The handout and torch.optim.AdamW
# differ in two places, and every combination is accepted (the test takes the nearest): the
# decay after the update or first differs by ~lr² · λ per step (≥ 3e-4 after 12 steps), ε on
# √v or on √v̂ by up to 1.7e-4 where ε = 1e-6 (two_groups; ~1e-7 where ε = 1e-8, where the
# two coincide). Coupled L2 decay or a missing bias correction differ by far more.
ADAMW = {"rtol": 1e-5, "atol": 1e-5}

# Plain float arithmetic and one cosine; a float32 implementation is within a few u.
LEARNING_RATE_SCHEDULE = {"rtol": 1e-6, "atol": 1e-12}

# The LM's parameter gradients of sum(projection · logits) (`transformer_lm_module`): here
# `atol` is relative to each gradient's largest entry (the test scales it), since a weight's
# gradient sums over every position terms as large as that entry, and entries near zero are
# what is left of their cancellation (up to 2.7e-2 of themselves in float32). Measured: 2.3e-6
# of the largest entry (both correct modules; ln1's gain in the first layer).
TRANSFORMER_LM_PARAMETER_GRADIENTS = {"rtol": 3e-5, "atol": 3e-5}


# Gradients: the `*_backward` tests compare the gradient each float input receives (from a
# random projection of the output, inputs O(1)) with the oracle's. The measured errors are
# the largest |actual − expected| / (1 + |expected|) of the from-scratch, fused and
# upstream-style modules over the backward cases of seeds 1–40 and 336; the wrong modules
# these tests exist for pass no gradient at all, or one off by O(1). The weights' gradients
# are compared with the same tolerance: each sums over at most 21 positions products of
# the same O(1) terms. Measured (seeds 1–10 and 336): at most 7.2e-6 (the block's, fused
# module), 7 times below its tolerance, the least margin of any family.

# Elementwise chains of a few roundings, like their forwards. Measured: 2.9e-7 (SiLU).
ELEMENTWISE_BACKWARD = {"rtol": 3e-6, "atol": 3e-6}

# The tanh form's derivative takes 1 − tanh², which loses u relative to tanh where tanh is
# near ±1 (|x| ≈ 3), and autograd takes it from the rounded float32 tanh. Measured: 7.5e-7
# (tanh form), 2.3e-7 (exact).
GELU_BACKWARD = {"rtol": 1e-5, "atol": 1e-5}

# p (d − Σ p d): the difference cancels where p is near one-hot. Measured: 3.3e-7.
SOFTMAX_BACKWARD = {"rtol": 3e-6, "atol": 3e-6}

# (g·d − x̂ · mean(x̂ g d)) / rms, d_model 16: a few u, like the forward. Measured: 2.3e-7
# (RMSNorm), 2.3e-7 (LayerNorm).
RMSNORM_BACKWARD = {"rtol": 3e-6, "atol": 3e-6}
LAYERNORM_BACKWARD = RMSNORM_BACKWARD

# Products with the transposed matrices: the forward's analysis. Measured: 1.5e-7 (linear),
# 5.3e-7 (SwiGLU), 4.8e-7 (GELU FFN).
LINEAR_BACKWARD = LINEAR
SWIGLU_BACKWARD = LINEAR
POSITIONWISE_FEEDFORWARD_BACKWARD = LINEAR

# The gradient is the output gradient rotated back by the same cos/sin table, so a float32
# table's angle error (u · angle, angles here up to 31 rad) is the forward's. Measured: 3.8e-7.
ROPE_BACKWARD = ROPE

# Through the softmax backward to Q and K (d_k 8, sharp rows). Measured: 1.1e-6 (Q).
ATTENTION_BACKWARD = {"rtol": 1e-5, "atol": 1e-5}

# Three projections into sharp causal heads (q, k scaled up), then the attention backward:
# a rounding of q or k moves the logits, which the sharp softmax amplifies. Measured: 4.0e-6
# (MHA), 3.9e-6 (with RoPE), 5.0e-6 (the block, whose input gradients reach 16).
MULTIHEAD_ATTENTION_BACKWARD = {"rtol": 5e-5, "atol": 5e-5}
TRANSFORMER_BLOCK_BACKWARD = MULTIHEAD_ATTENTION_BACKWARD

# The table's gradient: each row the sum of the projection's rows at the ids that pick it
# (here at most a handful), exact but for the order of those few additions.
EMBEDDING_BACKWARD = {"rtol": 1e-6, "atol": 1e-6}

# (softmax − one_hot) / N with N = 12 positions: entries ≤ 1/12 of the projection, each
# within a few u of it. Measured: 1.5e-8 absolute at 0.08.
CROSS_ENTROPY_BACKWARD = {"rtol": 1e-6, "atol": 1e-7}


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
    built_from: tuple[str, ...] = ()
    # The test module under tests/families/, where it is not test_<name>.
    test_module: str = ""
    # Whether `pytest --device` puts its cases' inputs and weights on that device: not where
    # no adapter takes them as tensors (a NumPy dataset, bytes, numbers), nor for the modules
    # `get_transformer_lm`/`_block` build, which take no device and are judged where they
    # are built, on the CPU (see tests/families/test_lm_module.py).
    case_on_device: bool = True

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


# What a block is built from; a model adds its embedding and its blocks.
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

M, T, K, B = Part.MODEL, Part.TRAINING, Part.TOKENIZER, Part.BEYOND
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
        part=M,
        tolerance=LINEAR,
        backward=LINEAR_BACKWARD,
    ),
    Family(
        "embedding",
        "Embedding",
        catches="ids of any shape, ids 0 and vocab−1; rows must be exact",
        points=1,
        part=M,
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
        part=M,
        tolerance=RMSNORM,
        backward=RMSNORM_BACKWARD,
    ),
    Family(
        "swiglu",
        "SwiGLU",
        catches="w1/w3 roles, d_ff not a multiple of 64",
        points=2,
        part=M,
        tolerance=SWIGLU,
        backward=SWIGLU_BACKWARD,
    ),
    Family(
        "rope",
        "RoPE",
        catches=(
            "positions not 0..seq−1 (offset, unsorted, repeated, batched), Θ = 100 and 500000, "
            "pairing"
        ),
        points=2,
        part=M,
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
        part=M,
        tolerance=ATTENTION,
        backward=ATTENTION_BACKWARD,
    ),
    Family(
        "multihead_self_attention",
        "Multi-head self-attention",
        catches="head layout, causality, 1 and 8 heads, extra leading dims",
        points=3,
        part=M,
        tolerance=MULTIHEAD_ATTENTION,
        backward=MULTIHEAD_ATTENTION_BACKWARD,
    ),
    Family(
        "multihead_self_attention_with_rope",
        "Multi-head self-attention with RoPE",
        catches="RoPE on q/k only, omitted/offset/batched positions",
        points=2,
        part=M,
        tolerance=MULTIHEAD_ATTENTION,
        backward=MULTIHEAD_ATTENTION_BACKWARD,
    ),
    Family(
        "transformer_block",
        "Transformer block",
        catches="pre-norm order, distinct norm gains, another shape and Θ",
        points=3,
        part=M,
        tolerance=TRANSFORMER_BLOCK,
        backward=TRANSFORMER_BLOCK_BACKWARD,
        built_from=_BLOCK_PARTS,
    ),
    Family(
        "transformer_lm",
        "Transformer LM",
        catches="the reference model and two other shapes; an error past `context_length`",
        points=2,
        part=M,
        tolerance=TRANSFORMER_LM,
        built_from=_LM_PARTS,
    ),
    Family(
        "transformer_lm_truncated_input",
        "Transformer LM, truncated input",
        catches="inputs shorter than the context (nothing padded)",
        points=1,
        part=M,
        tolerance=TRANSFORMER_LM,
        built_from=_LM_PARTS,
    ),
    Family(
        "transformer_lm_module",
        "Transformer LM as a module",
        catches=(
            "`get_transformer_lm`'s model: every parameter registered under its SPEC name and "
            "shape, a strict load of the weights, each parameter's gradient (2 shapes)"
        ),
        points=1,
        part=B,
        tolerance=TRANSFORMER_LM_PARAMETER_GRADIENTS,
        test_module="test_lm_module",
        case_on_device=False,
    ),
    Family(
        "transformer_block_module",
        "Transformer block as a module",
        catches="`get_transformer_block`'s block: parameters and a strict load",
        points=1,
        part=B,
        test_module="test_lm_module",
        case_on_device=False,
    ),
    Family(
        "silu",
        "SiLU",
        catches="overflow at ±90 (a naive sigmoid), leading dims",
        points=1,
        part=M,
        tolerance=ELEMENTWISE,
        backward=ELEMENTWISE_BACKWARD,
    ),
    Family(
        "softmax",
        "Softmax",
        catches="overflow at +1000 and 1e4 (no max shift), softmax over dims 0 and −2",
        points=1,
        part=M,
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
        part=B,
        tolerance=LAYERNORM,
        backward=LAYERNORM_BACKWARD,
    ),
    Family(
        "gelu",
        "GELU",
        catches="exact vs tanh (they differ by up to 4.7e-4), ±90",
        points=1,
        part=B,
        tolerance=GELU,
        backward=GELU_BACKWARD,
    ),
    Family(
        "positionwise_feedforward",
        "Position-wise feed-forward (GELU)",
        catches="the exact-GELU two-matrix FFN (`w1.weight`, `w2.weight`), d_ff below d_model",
        points=1,
        part=B,
        tolerance=POSITIONWISE_FEEDFORWARD,
        backward=POSITIONWISE_FEEDFORWARD_BACKWARD,
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
        part=B,
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
        part=T,
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
        part=T,
        tolerance=ADAMW,
    ),
    Family(
        "learning_rate_schedule",
        "Cosine learning-rate schedule",
        catches=(
            "`it = 0`, warm-up's end, along the cosine, the cycle's end and past it; no warm-up"
        ),
        points=1,
        part=T,
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
        part=T,
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
        part=T,
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
        part=T,
    ),
    Family(
        "decoding",
        "Decoding (temperature, top-p, generation)",
        catches=(
            "the top-p distribution (40000 samples), temperature, greedy = arg-max, generation "
            "stopping at end-of-text or after `max_new_tokens`"
        ),
        points=3,
        part=B,
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
        part=K,
        case_on_device=False,
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
        part=K,
        case_on_device=False,
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
