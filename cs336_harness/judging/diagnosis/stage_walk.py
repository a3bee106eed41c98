"""Where a failing Transformer block or LM first departs from the oracle, found with upstream's
adapters alone, stage by stage (docs/checking.md, "Where a block or LM failure starts: the
first difference")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
import torch

from cs336_harness.adapters.loader import SubmissionRaised
from cs336_harness.judging.cases import Case
from cs336_harness.judging.compare import describe_difference

# The size arguments of run_transformer_lm (rope_theta besides) and of run_transformer_block,
# which get_transformer_lm and get_transformer_block take too.
LM_SIZES = ("vocab_size", "context_length", "d_model", "num_layers", "num_heads", "d_ff")
BLOCK_SIZES = ("d_model", "num_heads", "d_ff", "max_seq_len", "theta")
# The SPEC's RMSNorm eps (docs/contract.md), which the oracle's norms use.
EPS = 1e-5
ATTENTION = "run_multihead_self_attention_with_rope"
SILENCED = ("attn.output_proj.weight", "ffn.w2.weight")
# Sublayer name → the oracle's (input, output), from the fixtures' trace.
Oracle = Mapping[str, tuple[torch.Tensor, torch.Tensor]]


class _Located(Exception):
    """The walk's answer, one line, raised where it is found."""


class _Walk:
    """Calls of one submission's adapters on one device, compared at one tolerance; `matched`
    lists the stages so far that match the oracle.

    Each stage is compared by the failing family's own tolerance (families.py's
    TRANSFORMER_BLOCK, which TRANSFORMER_LM equals): it bounds a whole block's or LM's
    float32 error, so it holds for any one stage of it, each of whose families is as tight
    or tighter (RMSNORM, SWIGLU, LINEAR, MULTIHEAD_ATTENTION, the embedding exact). The
    oracle's inputs are its float64 values rounded to float32, an error of u relative that
    every stage carries through about unchanged. Measured: the three correct
    implementations use at most 10 % of it on any stage (stored cases, seeds 5001-5003)."""

    def __init__(self, adapters: Any, device: torch.device, rtol: float, atol: float):
        self.adapters, self.device, self.rtol, self.atol = adapters, device, rtol, atol
        self.matched: list[str] = []

    def _here(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value.to(self.device)
        if isinstance(value, dict):
            return {key: self._here(item) for key, item in value.items()}
        return value

    def run(self, stage: str, adapter: str, **kwargs: Any) -> Any:
        """`adapter(**kwargs)` with every tensor on the walk's device; what it raises ends
        the walk at `stage`."""
        kwargs = {key: self._here(value) for key, value in kwargs.items()}
        try:
            return getattr(self.adapters, adapter)(**kwargs)
        except pytest.fail.Exception as failure:  # not implemented, an input changed, a time-out
            before = f"the {len(self.matched)} stages before it match the oracle; "
            raise _Located(
                f"{before if self.matched else ''}the walk over the stages stopped at {stage}: "
                f"{failure.msg}"
            ) from None
        except SubmissionRaised as error:  # under the grader: "ValueError: ..."
            raise _Located(f"first difference: {stage}: {adapter} raised {error}") from None
        except Exception as error:  # the submission's exception, whatever it is
            raised = " ".join(f"{type(error).__name__}: {error}".split())[:300]
            raise _Located(f"first difference: {stage}: {adapter} raised {raised}") from None

    def off(self, actual: Any, expected: torch.Tensor) -> str | None:
        return describe_difference(actual, expected, self.rtol, self.atol)

    def stage(
        self, stage: str, adapter: str, family: str, expected: torch.Tensor, **kwargs: Any
    ) -> None:
        """Run one sublayer's component adapter on the oracle's input of `stage`; raise where
        its output departs from the oracle's."""
        off = self.off(self.run(stage, adapter, **kwargs), expected)
        if off is not None:
            before = "; every stage before it matches" if self.matched else ""
            raise _Located(
                f"first difference: {stage}: {adapter}, given the oracle's input of {stage} "
                f"and its weights, departs from the oracle's output of {stage}: {off}{before}. "
                f"The component itself computes something else on this input (the {family} "
                f"family's tests check {adapter} alone)"
            )
        self.matched.append(stage)


def _block_sublayers(
    walk: _Walk, oracle: Oracle, prefix: str, weights: dict[str, torch.Tensor], sizes: dict
) -> None:
    """The stages `{prefix}ln1`, `.attn`, `.ln2` and `.ffn` of one block, in forward order."""

    def weight(name: str) -> torch.Tensor:
        return weights[f"{prefix}{name}.weight"]

    def norm(name: str) -> None:
        x, y = oracle[prefix + name]
        walk.stage(prefix + name, "run_rmsnorm", "rmsnorm", y, d_model=sizes["d_model"],
                   eps=EPS, weights=weight(name), in_features=x)  # fmt: skip

    norm("ln1")
    x, y = oracle[f"{prefix}attn"]
    walk.stage(
        f"{prefix}attn",
        ATTENTION,
        "multihead_self_attention_with_rope",
        y,
        d_model=sizes["d_model"],
        num_heads=sizes["num_heads"],
        max_seq_len=sizes["max_seq_len"],
        theta=sizes["theta"],
        q_proj_weight=weight("attn.q_proj"),
        k_proj_weight=weight("attn.k_proj"),
        v_proj_weight=weight("attn.v_proj"),
        o_proj_weight=weight("attn.output_proj"),
        in_features=x,
        token_positions=torch.arange(x.shape[-2]).unsqueeze(0),  # upstream's (1, seq)
    )
    norm("ln2")
    x, y = oracle[f"{prefix}ffn"]
    walk.stage(
        f"{prefix}ffn",
        "run_swiglu",
        "swiglu",
        y,
        d_model=sizes["d_model"],
        d_ff=sizes["d_ff"],
        w1_weight=weight("ffn.w1"),
        w2_weight=weight("ffn.w2"),
        w3_weight=weight("ffn.w3"),
        in_features=x,
    )


def _silenced(weights: dict[str, torch.Tensor], names: tuple[str, ...]) -> dict:
    return weights | {name: torch.zeros_like(weights[name]) for name in names}


def _block_joining(
    walk: _Walk, layer: int | None, block: dict[str, torch.Tensor], sizes: dict, oracle: tuple
) -> None:
    """How `run_transformer_block` joins sublayers that each match alone: raise unless the
    block, given the oracle's input `x` with `block`'s weights, gives the oracle's `out`.
    `layer`: the LM's layer it is (None: a lone block); `oracle`: the oracle's (x, h, out),
    h = x + attn(ln1(x)) being ln2's input."""
    x, h, out = oracle
    where = "the block" if layer is None else f"layers.{layer}"

    def run(weights: dict[str, torch.Tensor], features: torch.Tensor) -> Any:
        return walk.run(
            where, "run_transformer_block", **sizes, weights=weights, in_features=features
        )

    whole = run(block, x)
    off = walk.off(whole, out)
    if off is None:
        walk.matched.append(where)
        return
    if not isinstance(whole, torch.Tensor) or whole.shape != out.shape:
        raise _Located(f"first difference: {where}: run_transformer_block's output: {off}")
    head = (
        f"first difference: {where}: run_transformer_block on the oracle's input of {where} "
        f"departs from its output ({off}), though each of its sublayers matches the oracle alone"
        if layer is not None
        else "first difference: inside run_transformer_block, though each of the block's "
        "sublayers matches the oracle alone"
    )
    off = walk.off(run(_silenced(block, SILENCED), x), x)
    if off is not None:
        raise _Located(
            f"{head}. With both silenced (attn.output_proj.weight and ffn.w2.weight zero) the "
            f"block must return its input unchanged, and does not ({off}): a residual "
            "connection is missing, or a norm sits on the residual stream (post-norm, where "
            "the block is pre-norm: h = x + attn(ln1(x)), out = h + ffn(ln2(h)))"
        )
    off = walk.off(run(_silenced(block, SILENCED[1:]), x), h)
    if off is not None:
        raise _Located(
            f"{head}. With the FFN silenced (ffn.w2.weight zero) the block must give "
            f"x + attn(ln1(x)), the oracle's input of ln2, and does not ({off}): the attention "
            "half differs. The block runs ln1 or attn otherwise than run_rmsnorm and "
            f"{ATTENTION} do (other weights, eps, token positions or causal mask), or "
            "joins them otherwise (ln1 elsewhere, the residual not the block's input)"
        )
    off = walk.off(run(_silenced(block, SILENCED[:1]), h), out)
    if off is not None:
        raise _Located(
            f"{head}. With the attention silenced (attn.output_proj.weight zero), on the "
            f"oracle's input of ln2 (h), the block must give h + ffn(ln2(h)), and does not "
            f"({off}): the FFN half differs. The block runs ln2 or ffn otherwise than "
            "run_rmsnorm and run_swiglu do (other weights or eps), or feeds ln2 something "
            "other than h"
        )
    raise _Located(
        f"{head}. Each half matches with the other silenced, and with both silenced the input "
        "passes through unchanged: the halves are joined otherwise, in another order (the "
        "FFN before the attention) or with the FFN reading something other than "
        "h = x + attn(ln1(x)) (the block's input, the attention's output)"
    )


def _answer(walk_over: Callable[[], None]) -> str:
    try:
        walk_over()
    except _Located as located:
        return str(located)
    raise AssertionError("a walk ends by raising its answer")


def block_stages(adapters: Any, case: Case, oracle: Oracle, *, rtol: float, atol: float) -> str:
    """Where `run_transformer_block` departs from the oracle on `case` (a `transformer_block`
    case; `oracle` its trace), in one line: a sublayer, how they are joined, or where the
    walk stopped."""
    walk = _Walk(adapters, case["in_features"].device, rtol, atol)
    sizes = {key: case.params[key] for key in BLOCK_SIZES}

    def walk_over() -> None:
        _block_sublayers(walk, oracle, "", case.weights, sizes)
        x, h = oracle["ln1"][0], oracle["ln2"][0]
        _block_joining(walk, None, dict(case.weights), sizes, (x, h, case.expected))
        raise _Located(
            "no stage departs: run_transformer_block's values match the oracle's on this "
            "input, so what failed above is not one of values"
        )

    return _answer(walk_over)


def lm_stages(adapters: Any, case: Case, oracle: Oracle, *, rtol: float, atol: float) -> str:
    """As `block_stages`, for `run_transformer_lm` on a `transformer_lm` case: the
    embedding, each layer's sublayers and the layer as `run_transformer_block` computes it,
    the final norm and the head, then how `run_transformer_lm` joins them."""
    p = case.params
    ids = case["in_indices"]
    walk = _Walk(adapters, ids.device, rtol, atol)
    weights = case.weights
    layer_sizes = {
        "d_model": p["d_model"],
        "num_heads": p["num_heads"],
        "d_ff": p["d_ff"],
        "max_seq_len": p["context_length"],
        "theta": p["rope_theta"],
    }
    layer_inputs = [oracle[f"layers.{i}.ln1"][0] for i in range(p["num_layers"])]
    layer_inputs.append(oracle["ln_final"][0])

    def head(features: torch.Tensor, stage: str) -> Any:
        normed = walk.run(stage, "run_rmsnorm", d_model=p["d_model"], eps=EPS,
                          weights=weights["ln_final.weight"], in_features=features)  # fmt: skip
        return walk.run(stage, "run_linear", d_in=p["d_model"], d_out=p["vocab_size"],
                        weights=weights["lm_head.weight"], in_features=normed)  # fmt: skip

    def lm(lm_weights: dict[str, torch.Tensor]) -> Any:
        sizes = {key: p[key] for key in (*LM_SIZES, "rope_theta")}
        return walk.run("the LM", "run_transformer_lm", **sizes, weights=lm_weights, in_indices=ids)

    def walk_over() -> None:
        walk.stage(
            "token_embeddings",
            "run_embedding",
            "embedding",
            layer_inputs[0],
            vocab_size=p["vocab_size"],
            d_model=p["d_model"],
            weights=weights["token_embeddings.weight"],
            token_ids=ids,
        )
        for i in range(p["num_layers"]):
            prefix = f"layers.{i}."
            _block_sublayers(walk, oracle, prefix, weights, layer_sizes)
            block = {k.removeprefix(prefix): v for k, v in weights.items() if k.startswith(prefix)}
            h = oracle[f"{prefix}ln2"][0]
            _block_joining(walk, i, block, layer_sizes, (layer_inputs[i], h, layer_inputs[i + 1]))
        x, y = oracle["ln_final"]
        walk.stage("ln_final", "run_rmsnorm", "rmsnorm", y, d_model=p["d_model"], eps=EPS,
                   weights=weights["ln_final.weight"], in_features=x)  # fmt: skip
        x, y = oracle["lm_head"]
        walk.stage("lm_head", "run_linear", "linear", y, d_in=p["d_model"], d_out=p["vocab_size"],
                   weights=weights["lm_head.weight"], in_features=x)  # fmt: skip
        whole = lm(weights)
        off = walk.off(whole, case.expected)
        if off is None:
            raise _Located(
                "no stage departs: run_transformer_lm's values match the oracle's on this "
                "input, so what failed above is not one of values"
            )
        if not isinstance(whole, torch.Tensor) or whole.shape != case.expected.shape:
            raise _Located(f"first difference: run_transformer_lm's output: {off}")
        names = tuple(f"layers.{i}.{name}" for i in range(p["num_layers"]) for name in SILENCED)
        bare = walk.off(lm(_silenced(weights, names)), head(layer_inputs[0], "the LM"))
        common = (
            "first difference: how run_transformer_lm joins its stages. Every stage matches "
            "the oracle alone, each layer whole (run_transformer_block) included"
        )
        if bare is not None:
            raise _Located(
                f"{common}; but with every layer silenced (each one's attn.output_proj.weight "
                "and ffn.w2.weight zero) it must give lm_head(ln_final(token_embeddings)), as "
                f"run_linear(run_rmsnorm(run_embedding(ids))) does, and does not ({bare}): the "
                "path around the layers differs (the final norm skipped, repeated or "
                "misplaced, the embeddings scaled, another weight for the head)"
            )
        raise _Located(
            f"{common}, and so does the path around the layers with every layer silenced: "
            "the layers are chained otherwise. Each must read the previous one's output, in "
            "order, with its own weights and positions 0 … seq−1"
        )

    return _answer(walk_over)
