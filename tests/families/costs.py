"""What the model's larger components cost, where upstream tests no cost: each family's
adapter run on inputs of a working size, its CPU time read against a yardstick and set
beside the bundled implementation's (`budgets.REFERENCE`), and said when it is far more. A
hardening test (scored apart, 0 points unless a rubric gives them), and an efficiency test.

The inputs are random, of fixed shapes: what is measured is cost, and no output is compared.
Where a cost is far over, the same call with more heads (the model dimension kept) says
whether the heads are looped over in Python.

It also holds what the other cost tests share with these and with `make bench`: the
session's yardstick, the tokenizer's cost case as its probes take it, and the CPU time a
BPE trainer is charged."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from cs336_harness.adapters.probes import tokenizer
from cs336_harness.cost import budgets

HARDENING = (
    "upstream tests no cost of the model's components; this project sets each beside the "
    "bundled implementation's"
)
# A cost test judges what a call costs, not what it computes (the family's other tests do):
# one that computes nothing costs nothing.
TRIVIAL = "an adapter that computes nothing costs nothing"
# The working size every family is measured at.
BATCH, SEQ, D_MODEL, HEADS, D_FF, VOCAB, LAYERS = 4, 128, 128, 8, 384, 512, 2


@dataclass(frozen=True)
class Shape:
    batch: int = BATCH
    seq: int = SEQ
    d_model: int = D_MODEL
    heads: int = HEADS


WORKING = Shape()
# Where a cost is far over, two pairs of small calls, where the tensors' own work is little
# and what a call costs for each head or each position shows: the heads 2 and 32, then the
# positions 8 and 128. In whole-tensor operations each pair costs about the same; looped
# over in Python, the larger many times the smaller.
HEADS_PAIR = (Shape(1, 16, 128, 2), Shape(1, 16, 128, 32))
POSITIONS_PAIR = (Shape(1, 8, 32, 2), Shape(1, 128, 32, 2))


def _tensor(generator: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=generator) * 0.05


def _attention_weights(g: torch.Generator, d: int, prefix: str = "") -> dict[str, torch.Tensor]:
    names = ("q_proj", "k_proj", "v_proj", "output_proj")
    return {f"{prefix}{n}.weight": _tensor(g, d, d) for n in names}


def _block_weights(g: torch.Generator, d: int, prefix: str = "") -> dict[str, torch.Tensor]:
    return _attention_weights(g, d, f"{prefix}attn.") | {
        f"{prefix}ln1.weight": 1 + _tensor(g, d),
        f"{prefix}ln2.weight": 1 + _tensor(g, d),
        f"{prefix}ffn.w1.weight": _tensor(g, 3 * d, d),
        f"{prefix}ffn.w2.weight": _tensor(g, d, 3 * d),
        f"{prefix}ffn.w3.weight": _tensor(g, 3 * d, d),
    }


def _sdpa(g: torch.Generator, s: Shape) -> dict[str, Any]:
    q, k, v = (_tensor(g, s.batch, s.heads, s.seq, s.d_model // s.heads) for _ in range(3))
    causal = torch.ones(s.seq, s.seq, dtype=torch.bool).tril()
    return {"Q": q, "K": k, "V": v, "mask": causal.expand(s.batch, s.heads, -1, -1).contiguous()}


def _mha(g: torch.Generator, s: Shape) -> dict[str, Any]:
    weights = _attention_weights(g, s.d_model)
    return {
        "d_model": s.d_model,
        "num_heads": s.heads,
        "q_proj_weight": weights["q_proj.weight"],
        "k_proj_weight": weights["k_proj.weight"],
        "v_proj_weight": weights["v_proj.weight"],
        "o_proj_weight": weights["output_proj.weight"],
        "in_features": _tensor(g, s.batch, s.seq, s.d_model),
    }


def _block(g: torch.Generator, s: Shape) -> dict[str, Any]:
    return {
        "d_model": s.d_model,
        "num_heads": s.heads,
        "d_ff": 3 * s.d_model,
        "max_seq_len": s.seq,
        "theta": 10000.0,
        "weights": _block_weights(g, s.d_model),
        "in_features": _tensor(g, s.batch, s.seq, s.d_model),
    }


def _lm(g: torch.Generator, s: Shape) -> dict[str, Any]:
    weights = {"token_embeddings.weight": _tensor(g, VOCAB, s.d_model)}
    for layer in range(LAYERS):
        weights |= _block_weights(g, s.d_model, f"layers.{layer}.")
    weights |= {
        "ln_final.weight": 1 + _tensor(g, s.d_model),
        "lm_head.weight": _tensor(g, VOCAB, s.d_model),
    }
    return {
        "vocab_size": VOCAB,
        "context_length": s.seq,
        "d_model": s.d_model,
        "num_layers": LAYERS,
        "num_heads": s.heads,
        "d_ff": 3 * s.d_model,
        "rope_theta": 10000.0,
        "weights": weights,
        "in_indices": torch.randint(VOCAB, (s.batch, s.seq), generator=g),
    }


@dataclass(frozen=True)
class Workload:
    adapter: str
    inputs: Callable[[torch.Generator, Shape], dict[str, Any]]
    # Calls timed together at the working size: about 20 ms of the bundled implementation's
    # CPU, enough for a reading at /proc's hundredth of a second where no cgroup counts finer.
    times: int


WORKLOADS = {
    "scaled_dot_product_attention": Workload("run_scaled_dot_product_attention", _sdpa, 8),
    "multihead_self_attention": Workload("run_multihead_self_attention", _mha, 4),
    "transformer_block": Workload("run_transformer_block", _block, 2),
    "transformer_lm": Workload("run_transformer_lm", _lm, 1),
}
# The small calls of the diagnosis: timed together, as many as make tens of milliseconds.
SMALL_TIMES = 20


def bpe_seconds(adapters: Any, case: Any, corpus: str, vocab_size: int) -> float:
    """The CPU seconds of training the BPE cost case's `corpus` to `vocab_size` tokens."""
    _, seconds = tokenizer.bpe_training.measured(
        adapters,
        corpus=case[corpus],
        vocab_size=vocab_size,
        special_tokens=case.params["special_tokens"],
    )
    return seconds


def bpe_charged(adapters: Any, case: Any, allowed: float = 0.0) -> tuple[float, float]:
    """What the speed test charges a trainer (the large corpus to the case's vocabulary,
    less the small one to `budgets.FEW_MERGES` merges), and the large corpus's seconds.
    Where the large call alone costs at most `allowed` seconds, the small one is not timed
    and the large call's cost is charged (`budgets.SMALL_CALL_ABOVE`: for the bundled
    trainer it is a tenth of the test's time)."""
    large = bpe_seconds(adapters, case, "corpus_large", case.params["vocab_size"])
    if large <= allowed:
        return large, large
    few = budgets.few_merges(case.params["special_tokens"])
    return large - bpe_seconds(adapters, case, "corpus_small", few), large


def stored_pages(case: Any) -> dict[str, Any]:
    """The tokenizer's cost case's vocabulary, merges and lines, as its probes take them."""
    tensors = ("vocab_flat", "vocab_lengths", "merges_flat", "merges_lengths", "lines_flat")
    kwargs = {name: case[name] for name in (*tensors, "lines_lengths")}
    return kwargs | {"special_tokens": case.params["special_tokens"]}


def yardstick(adapters: Any) -> float:
    """The yardstick, timed once a session for the cost tests beyond upstream: they set a
    cost beside the bundled one and say only one `budgets.FAR` times it, which a host's pace
    changing in between does not reach. The speed test takes it for its first "before",
    and times its own "after"."""
    if getattr(adapters, "_cost_yardstick", None) is None:
        adapters._cost_yardstick = adapters.yardstick()
    return adapters._cost_yardstick


def check_cost(family: str, adapters: Any, request: pytest.FixtureRequest) -> None:
    """The cost test of `family`: fails, naming the likely cause, where its adapter costs
    `budgets.FAR` times the bundled implementation's CPU and more."""
    __tracebackhide__ = True
    work = WORKLOADS[family]

    def cpu(shape: Shape, times: int) -> float:
        inputs = work.inputs(torch.Generator().manual_seed(0), shape)
        _, seconds = adapters.measured_call(work.adapter, (), inputs, times)
        return seconds / times

    spent = cpu(WORKING, work.times)
    reading = budgets.Beside(spent, yardstick(adapters), budgets.REFERENCE[family])
    budgets.record(request.node, reading.ratio / budgets.FAR)
    if not reading.far:
        return
    heads, positions = (
        cpu(b, SMALL_TIMES) / cpu(a, SMALL_TIMES) for a, b in (HEADS_PAIR, POSITIONS_PAIR)
    )
    cause = budgets.model_cause(positions)
    budgets.fail(
        f"{work.adapter} costs {reading.ratio:.0f} times the bundled implementation's CPU "
        f"({1000 * spent:.1f} ms a call where it takes {1000 * reading.reference_seconds:.1f} "
        f"ms on this host, at batch {BATCH}, {SEQ} positions, d_model {D_MODEL}, {HEADS} "
        "heads)",
        cause,
        f"a small call costs {heads:.1f} times as much with {HEADS_PAIR[1].heads} heads as "
        f"with {HEADS_PAIR[0].heads}, {positions:.1f} times with {POSITIONS_PAIR[1].seq} "
        f"positions as with {POSITIONS_PAIR[0].seq}",
    )
