"""The first sublayer of a failing Transformer LM (or block) that departs from the oracle,
traced through the submission's own module (docs/checking.md, "Where a block or LM failure
starts: the first difference")."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import torch

from cs336_harness.adapters.loader import NotImplementedFailure, SubmissionRaised
from cs336_harness.adapters.probes import modules
from cs336_harness.judging.cases import Case
from cs336_harness.judging.compare import describe_difference
from cs336_harness.judging.diagnosis.stage_walk import (
    BLOCK_SIZES,
    LM_SIZES,
    Oracle,
    block_stages,
    lm_stages,
)

BLOCK_SUBLAYERS = ("ln1", "attn", "ln2", "ffn")
NOT_LOCATED = "the first difference could not be located"


@contextlib.contextmanager
def reported_on_failure(explain: Callable[[], str]) -> Iterator[None]:
    """Append `explain()` to the message of a test failure raised inside the block."""
    __tracebackhide__ = True
    try:
        yield
    except pytest.fail.Exception as failure:
        # The same exception, its type kept: the diagnosis plugin reads OracleMismatch's.
        failure.msg = f"{failure.msg}\n{explain()}"
        raise


def lm_sublayers(num_layers: int) -> list[str]:
    """The LM's sublayers in forward order, by their SPEC names."""
    blocks = [f"layers.{i}.{name}" for i in range(num_layers) for name in BLOCK_SUBLAYERS]
    return [*blocks, "ln_final", "lm_head"]


@dataclass(frozen=True)
class _Model:
    """What is traced: the sublayers in forward order, the LM's depth (None: a lone block),
    the adapter that builds the module and the one whose output failed."""

    names: list[str]
    num_layers: int | None
    built_by: str
    run_by: str

    def input_source(self, name: str) -> str:
        """What the SPEC feeds sublayer `name`."""
        layer, _, sublayer = name.rpartition(".")
        prefix = f"{layer}." if layer else ""
        if sublayer == "ln1":
            if self.num_layers is None:
                return "the block's input"
            i = int(layer.split(".")[1])
            return "the token embeddings" if i == 0 else f"the output of layers.{i - 1}"
        if sublayer == "ln2":
            return f"{prefix}ln1's input + {prefix}attn's output"
        if sublayer == "ln_final":
            return f"the output of layers.{self.num_layers - 1}"
        return f"the output of {self.names[self.names.index(name) - 1]}"


def _listed(items: list[str]) -> str:
    return ", ".join(items[:4]) + (f" and {len(items) - 4} more" if len(items) > 4 else "")


def _walk(
    model: _Model,
    trace: dict[str, Any],
    oracle: dict[str, tuple[torch.Tensor, torch.Tensor]],
    rtol: float,
    atol: float,
) -> str:
    """The first sublayer, in forward order, whose input or output departs from the oracle."""
    ran, unchecked = trace["sublayers"], []
    previous: str | None = None
    for name in model.names:
        if name in trace["missing"] or name not in ran:
            why = "no such submodule" if name in trace["missing"] else "never ran"
            unchecked.append(f"{name} ({why})")
            continue
        skipped = f" (not checked: {_listed(unchecked)})" if unchecked else ""
        source = model.input_source(name)
        off = describe_difference(ran[name]["input"], oracle[name][0], rtol, atol)
        if off is not None:
            report = f"first difference: the input of {name} ({source}) already differs: {off}"
            if previous is not None and source == f"the output of {previous}":
                report += f"; {previous}'s own output matched, so something else reaches {name}"
            elif previous is not None and not unchecked:
                report += "; every sublayer before it matched, so the residual stream differs"
            return report + skipped
        off = describe_difference(ran[name]["output"], oracle[name][1], rtol, atol)
        if off is not None:
            return f"first difference: {name} (its input matched; its output: {off}){skipped}"
        previous = name
    if unchecked:
        return f"every sublayer checked matches the oracle (not checked: {_listed(unchecked)})"
    return (
        f"every sublayer of {model.built_by}'s model matches the oracle, its output included: "
        f"{model.run_by} computes something other than that model"
    )


def _locate(
    model: _Model,
    case: Case,
    final_output: torch.Tensor | None,
    run_probe: Callable[[], dict[str, Any]],
    walk_stages: Callable[[Oracle], str],
    rtol: float,
    atol: float,
) -> str:
    """The report for `case`: the first difference, or why it cannot be located.
    `final_output`: the last sublayer's output when the fixtures keep it apart from the trace
    (the LM's logits are the case's `expected`). `walk_stages`: the report from upstream's
    adapters alone (`stage_walk`), for a submission whose module adapter is not implemented."""
    tensors = dict(case.tensors)
    if final_output is not None:
        tensors[f"trace.{model.names[-1]}.output"] = final_output
    keys = {name: (f"trace.{name}.input", f"trace.{name}.output") for name in model.names}
    if not all(key in tensors for pair in keys.values() for key in pair):
        return f"{NOT_LOCATED}: these fixtures hold no trace of the oracle's sublayers"
    oracle = {name: (tensors[x], tensors[y]) for name, (x, y) in keys.items()}
    try:
        trace = run_probe()
    except NotImplementedFailure:  # upstream's handout has no get_* adapter: walk the stages
        return walk_stages(oracle)
    except pytest.fail.Exception as failure:  # a crash, a time-out
        return f"{NOT_LOCATED}: {failure.msg}"
    except SubmissionRaised as error:  # under the grader: "ValueError: ..."
        return f"{NOT_LOCATED}: building or running {model.built_by}'s model raised {error}"
    except Exception as error:  # whatever it raised, the test has failed already
        raised = f"{type(error).__name__}: {error}"
        return f"{NOT_LOCATED}: building or running {model.built_by}'s model raised {raised}"
    try:
        if len(trace["missing"]) == len(model.names):
            return (
                f"{NOT_LOCATED}: {model.built_by}'s model has none of the SPEC's submodules "
                f"({_listed(model.names)})"
            )
        report = _walk(model, trace, oracle, rtol, atol)
        if trace["load_error"] is not None:
            report += f" [the weights loaded only non-strictly: {trace['load_error'][:300]}]"
    except (KeyError, TypeError, AttributeError):  # a probe the submission rewrote
        return f"{NOT_LOCATED}: the trace probe's reply is not the one it sends"
    return report


def in_transformer_lm(adapters: Any, case: Case, *, rtol: float, atol: float) -> str:
    """Where the LM of `get_transformer_lm` first departs from the oracle on `case` (a
    `transformer_lm` case), in one line: a sublayer, the input of one, or why it cannot say."""
    num_layers = case.params["num_layers"]
    model = _Model(lm_sublayers(num_layers), num_layers, "get_transformer_lm", "run_transformer_lm")
    sizes = {key: case.params[key] for key in (*LM_SIZES, "rope_theta")}
    return _locate(
        model,
        case,
        case.expected,
        lambda: modules.lm_sublayer_trace(
            adapters,
            sizes=sizes,
            weights=case.weights,
            in_indices=case["in_indices"].cpu(),
            names=model.names,
        ),
        lambda oracle: lm_stages(adapters, case, oracle, rtol=rtol, atol=atol),
        rtol,
        atol,
    )


def in_transformer_block(adapters: Any, case: Case, *, rtol: float, atol: float) -> str:
    """As `in_transformer_lm`, for a `transformer_block` case and `get_transformer_block`."""
    model = _Model(list(BLOCK_SUBLAYERS), None, "get_transformer_block", "run_transformer_block")
    return _locate(
        model,
        case,
        None,
        lambda: modules.block_sublayer_trace(
            adapters,
            sizes={key: case.params[key] for key in BLOCK_SIZES},
            weights=case.weights,
            in_features=case["in_features"].cpu(),
            names=model.names,
        ),
        lambda oracle: block_stages(adapters, case, oracle, rtol=rtol, atol=atol),
        rtol,
        atol,
    )
