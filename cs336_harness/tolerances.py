"""Each family's tolerances, with the float32 error analysis and the measurements behind each
(the rule and how they were set: docs/maintaining.md, "Tolerances and the meta-test")."""

from __future__ import annotations

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
