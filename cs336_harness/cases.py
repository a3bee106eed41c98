"""Test cases as stored in a fixture directory.

`cases.json` maps each test family to its cases: an id, the scalar arguments (`params`) and
a one-line description. `<family>.safetensors` holds each case's tensors under
`<case id>/<name>`: the inputs, `expected` (the oracle's output) and, for modules,
`weights.<parameter name>`. A case whose params name `weights_file` takes its weights from
that shared file instead (the reference model), optionally under `weights_prefix`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

CASES_NAME = "cases.json"


@dataclass(frozen=True)
class Case:
    family: str
    id: str
    description: str
    params: dict[str, Any]
    tensors: dict[str, torch.Tensor] = field(repr=False)
    weights: dict[str, torch.Tensor] = field(repr=False)

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.tensors[name]

    @property
    def expected(self) -> torch.Tensor:
        return self.tensors["expected"]


@cache
def _tensors(path: Path) -> dict[str, torch.Tensor]:
    return load_file(path)


@cache
def case_table(directory: Path) -> dict[str, list[dict[str, Any]]]:
    return json.loads((directory / CASES_NAME).read_text())


def load_case(directory: Path, family: str, entry: dict[str, Any]) -> Case:
    params = entry["params"]
    prefix = f"{entry['id']}/"
    own = {
        k.removeprefix(prefix): v
        for k, v in _tensors(directory / f"{family}.safetensors").items()
        if k.startswith(prefix)
    }
    tensors = {k: v for k, v in own.items() if not k.startswith("weights.")}
    if "weights_file" in params:
        shared_prefix = params.get("weights_prefix", "")
        weights = {
            k.removeprefix(shared_prefix): v
            for k, v in _tensors(directory / params["weights_file"]).items()
            if k.startswith(shared_prefix)
        }
    else:
        weights = {
            k.removeprefix("weights."): v for k, v in own.items() if k.startswith("weights.")
        }
    # Fresh copies: an implementation that writes into its inputs must not corrupt later tests.
    return Case(
        family,
        entry["id"],
        entry.get("description", ""),
        params,
        {k: v.clone() for k, v in tensors.items()},
        {k: v.clone() for k, v in weights.items()},
    )
