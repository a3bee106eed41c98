"""A fixture directory's cases as NumPy arrays, read without torch (for the grader and the
catalog)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import safetensors

from cs336_harness import bpe_fingerprint
from cs336_harness.judging.case_layout import case_table, case_tensors

# safetensors' dtype names. NumPy has no bfloat16: a bfloat16 tensor is its upper 16 bits of
# float32, so it is widened to float32 exactly (the case's params name the dtype it had).
_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "U16": np.uint16,
    "BOOL": np.bool_,
}


def _array(spec: dict[str, Any]) -> np.ndarray:
    if spec["dtype"] == "BF16":
        upper = np.frombuffer(spec["data"], dtype="<u2").astype(np.uint32)
        return (upper << 16).view(np.float32).reshape(spec["shape"])
    dtype = np.dtype(_DTYPES[spec["dtype"]]).newbyteorder("<")
    return np.frombuffer(spec["data"], dtype=dtype).reshape(spec["shape"]).copy()


# Families whose expected output is not one stored tensor but derived from the case's: BPE
# training's, the fingerprint of the oracle's model (what its test hands the diagnosis).
DERIVED_EXPECTED = {"train_bpe": bpe_fingerprint.stored}


@cache
def _file(path: Path) -> dict[str, np.ndarray]:
    return {name: _array(spec) for name, spec in safetensors.deserialize(path.read_bytes())}


@dataclass(frozen=True)
class NumpyCase:
    """One stored case: scalar `params`, `inputs` (every tensor but the weights, `expected`
    included) and `weights`, read-only NumPy arrays."""

    family: str
    id: str
    params: dict[str, Any]
    inputs: dict[str, np.ndarray] = field(repr=False)
    weights: dict[str, np.ndarray] = field(repr=False)

    @property
    def expected(self) -> np.ndarray:
        return self.inputs["expected"]


def load(directory: Path, family: str, case_id: str) -> NumpyCase:
    """The case `family/case_id` of the fixture directory `directory`."""
    entry = next(e for e in case_table(directory)[family] if e["id"] == case_id)
    params = entry["params"]
    inputs, weights = case_tensors(directory, family, entry, _file)
    if family in DERIVED_EXPECTED:
        inputs["expected"] = DERIVED_EXPECTED[family](inputs)
    # float64 once here, not in every oracle call on the case (an LM case runs a dozen).
    weights = {
        k: v.astype(np.float64) if np.issubdtype(v.dtype, np.floating) else v
        for k, v in weights.items()
    }
    for array in (*inputs.values(), *weights.values()):
        array.flags.writeable = False  # inputs are shared through the cache: never edited
    return NumpyCase(family, case_id, params, inputs, weights)
