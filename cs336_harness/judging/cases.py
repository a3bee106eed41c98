"""Test cases as torch tensors, read from a fixture directory (layout: `case_layout`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from cs336_harness.judging.case_layout import CASES_NAME, case_table, case_tensors

__all__ = ["CASES_NAME", "Case", "case_table", "load_case"]

# The oracle's values among a case's tensors, by name: outputs (`expected`, AdamW's other
# readings), gradients (`expected_grad.<name>`) and a model's sublayers (`trace.<name>.*`).
ORACLE_PREFIXES = ("expected", "trace.")


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

    def to(self, device: torch.device) -> Case:
        """This case with its inputs and weights on `device`. The oracle's values
        (`ORACLE_PREFIXES`) stay on the CPU, where every comparison is made; a tensor already
        on `device` is kept, not copied (so on the CPU the case is unchanged)."""
        return replace(
            self,
            tensors={
                name: t if name.startswith(ORACLE_PREFIXES) else t.to(device)
                for name, t in self.tensors.items()
            },
            weights={name: t.to(device) for name, t in self.weights.items()},
        )


@cache
def _tensors(path: Path) -> dict[str, torch.Tensor]:
    return load_file(path)


def load_case(directory: Path, family: str, entry: dict[str, Any]) -> Case:
    tensors, weights = case_tensors(directory, family, entry, _tensors)
    # Fresh copies: an implementation that writes into its inputs must not corrupt later tests.
    return Case(
        family,
        entry["id"],
        entry.get("description", ""),
        entry["params"],
        {k: v.clone() for k, v in tensors.items()},
        {k: v.clone() for k, v in weights.items()},
    )
