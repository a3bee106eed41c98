"""Where a fixture directory keeps each case, whatever array library reads the files
(docs/maintaining.md, "Fixtures and the oracle")."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

CASES_NAME = "cases.json"
# The kinds of case that are not a forward output, each the name of a param set true: a
# backward case stores gradients (its family's backward test alone runs on it), a cost case
# what an efficiency test measures (its family's efficiency tests alone). A test takes one
# kind with `family(..., cases=KIND)`; every other test takes the forward cases.
BACKWARD, COST = "backward", "cost"
KINDS = (BACKWARD, COST)

# AdamW's accepted readings, each a tensor of an `adamw` case holding the oracle's trajectory
# (`oracle.adamw_trajectory`'s `decay_order`, `eps_added_to`) and how a message names it.
# The handout and torch.optim.AdamW differ in two independent places, and a careful reader
# may take either side of each, so all four combinations are correct; the handout's is the
# case's `expected`.
ADAMW_READINGS: dict[str, tuple[str, str, str]] = {
    "expected": ("after_update", "sqrt_v", "the handout's (decay after the update, ε on √v)"),
    "expected_decay_first_eps_on_v_hat": (
        "first", "sqrt_v_hat", "torch.optim.AdamW's (decay first, ε on √v̂)"
    ),
    "expected_decay_after_eps_on_v_hat": (
        "after_update", "sqrt_v_hat", "decay after the update, ε on √v̂"
    ),
    "expected_decay_first_eps_on_v": ("first", "sqrt_v", "decay first, ε on √v"),
}  # fmt: skip

T = TypeVar("T")


def case_kind(params: Mapping[str, Any]) -> str | None:
    """The kind of the case whose params these are, or None for a forward case."""
    return next((kind for kind in KINDS if params.get(kind, False)), None)


@cache
def case_table(directory: Path) -> dict[str, list[dict[str, Any]]]:
    return json.loads((directory / CASES_NAME).read_text())


def case_tensors(
    directory: Path,
    family: str,
    entry: Mapping[str, Any],
    read: Callable[[Path], Mapping[str, T]],
) -> tuple[dict[str, T], dict[str, T]]:
    """The case `entry` of `family`: its own tensors (inputs and `expected`) and its weights
    by parameter name, from the files `read` opens (a safetensors path → its tensors)."""
    params, prefix = entry["params"], f"{entry['id']}/"
    own = {
        k.removeprefix(prefix): v
        for k, v in read(directory / f"{family}.safetensors").items()
        if k.startswith(prefix)
    }
    tensors = {k: v for k, v in own.items() if not k.startswith("weights.")}
    if "weights_file" in params:
        shared_prefix = params.get("weights_prefix", "")
        weights = {
            k.removeprefix(shared_prefix): v
            for k, v in read(directory / params["weights_file"]).items()
            if k.startswith(shared_prefix)
        }
    else:
        weights = {
            k.removeprefix("weights."): v for k, v in own.items() if k.startswith("weights.")
        }
    return tensors, weights
