"""Collect test cases and write them as a fixture directory, byte for byte reproducibly."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file

from cs336_harness.judging.cases import CASES_NAME
from cs336_harness.manifest import write_manifest


def _as_tensor(value: np.ndarray | torch.Tensor) -> torch.Tensor:
    """An owned copy: two cases may share one input array, which safetensors refuses to save."""
    if isinstance(value, torch.Tensor):
        return value.clone().contiguous()
    return torch.from_numpy(np.array(value, copy=True, order="C"))


def _json_bytes(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


class FixtureSet:
    """Every case of every family, plus shared files such as the reference model."""

    def __init__(self, seed: int):
        self.seed = seed
        self.cases: dict[str, list[dict[str, Any]]] = {}
        self.tensors: dict[str, dict[str, torch.Tensor]] = {}
        self.shared_json: dict[str, Any] = {}
        self.shared_tensors: dict[str, dict[str, torch.Tensor]] = {}
        # Draws of the reference model rejected for missing an evidence bar.
        self.redraws = 0

    def rng(self, *names: str) -> np.random.Generator:
        """A generator seeded by the global seed and `names` only, so adding a case elsewhere
        leaves every other case's data unchanged (crc32, unlike hash(), is stable)."""
        return np.random.default_rng([self.seed, *(zlib.crc32(n.encode()) for n in names)])

    def add(
        self,
        family: str,
        case_id: str,
        description: str,
        params: dict[str, Any],
        inputs: dict[str, np.ndarray | torch.Tensor],
        expected: np.ndarray | None,
        weights: dict[str, np.ndarray] | None = None,
        hardening: str | None = None,
        trivial: str | None = None,
    ) -> None:
        """Store one case. `expected` is the oracle's float64 result (None for a case judged by
        a property, such as a checkpoint round trip's equality); it is stored as float32,
        which rounds away the last-bit differences between BLAS and libm builds (so the files
        are identical on every machine) at a cost of 2⁻²⁴ relative, far below any tolerance.
        `hardening`: why this case checks behaviour the upstream assignment leaves open (the
        grader reports such cases apart and scores only the contract). `trivial`: how an
        implementation that computes nothing also gives this case's answer (the grader
        credits such a case only beside a case of its family that tells them apart)."""
        entries = self.cases.setdefault(family, [])
        if any(e["id"] == case_id for e in entries):
            raise ValueError(f"duplicate case id {family}/{case_id}")
        entry = {"id": case_id, "description": description, "params": params}
        entry |= {"hardening": hardening} if hardening else {}
        entries.append(entry | ({"trivial": trivial} if trivial else {}))
        store = self.tensors.setdefault(family, {})
        for name, value in inputs.items():
            store[f"{case_id}/{name}"] = _as_tensor(value)
        for name, value in (weights or {}).items():
            store[f"{case_id}/weights.{name}"] = _as_tensor(value)
        if expected is not None:
            store[f"{case_id}/expected"] = _as_tensor(np.asarray(expected, dtype=np.float32))

    def add_shared(self, name: str, content: dict[str, np.ndarray] | dict[str, Any]) -> None:
        if name.endswith(".safetensors"):
            self.shared_tensors[name] = {k: _as_tensor(v) for k, v in content.items()}
        else:
            self.shared_json[name] = content

    def write(self, directory: Path) -> list[Path]:
        """Replace `directory`'s contents with this set and its manifest; return the files."""
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.iterdir():
            if stale.is_file():
                stale.unlink()
        for name, obj in self.shared_json.items():
            (directory / name).write_text(_json_bytes(obj))
        for name, tensors in self.shared_tensors.items():
            save_file(tensors, directory / name)
        for family, tensors in self.tensors.items():
            save_file(tensors, directory / f"{family}.safetensors")
        (directory / CASES_NAME).write_text(_json_bytes(self.cases))
        write_manifest(directory)
        return sorted(directory.iterdir())
