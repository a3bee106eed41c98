"""The model configuration: sizes and architecture options, with JSON load/save."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cs336_basics._checks import check_dropout_rate, check_positive_int
from cs336_basics.builders import FFNS, NORM_POSITIONS, NORMS
from cs336_basics.gelu import GELU_APPROXIMATIONS
from cs336_basics.rope import ROPE_PAIRINGS

_OWNER = "ModelConfig"

POSITIONS = ("rope", "learned", "none")
# Each option's values, as the module that implements the option defines them.
_CHOICES: dict[str, tuple[str, ...]] = {
    "norm": NORMS,
    "norm_position": NORM_POSITIONS,
    "positions": POSITIONS,
    "rope_pairing": ROPE_PAIRINGS,
    "ffn": FFNS,
    "gelu_approximate": GELU_APPROXIMATIONS,
}
_SIZES = ("vocab_size", "context_length", "d_model", "num_layers", "num_heads", "d_ff")
_DROPOUTS = ("attn_dropout", "residual_dropout", "embedding_dropout")

# The upstream model_config.json ablation flags. Each flag value (false, true, or an ffn_type
# string; ffn_type null says nothing) implies a value for one of our keys and is consistent
# with the listed values of that key: remove_rope=true drops RoPE but allows learned positions,
# and false is a statement too ("RoPE is used"), so it contradicts positions="learned".
_UPSTREAM_FLAGS: dict[str, tuple[str, dict[Any, tuple[str, tuple[str, ...]]]]] = {
    "remove_rmsnorm": (
        "norm",
        {True: ("none", ("none",)), False: ("rmsnorm", ("rmsnorm", "layernorm"))},
    ),
    "use_post_norm": ("norm_position", {True: ("post", ("post",)), False: ("pre", ("pre",))}),
    "remove_rope": (
        "positions",
        {True: ("none", ("none", "learned")), False: ("rope", ("rope",))},
    ),
    "ffn_type": ("ffn", {"swiglu": ("swiglu", ("swiglu",)), "silu": ("silu", ("silu",))}),
}


def _check_number(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{_OWNER}: {name} must be a number, got {name}={value!r}")


@dataclass(frozen=True)
class ModelConfig:
    """Every size and architecture option of :class:`~cs336_basics.TransformerLM`.

    The defaults are the SPEC's LLaMA-style pre-norm decoder; see "Architecture variants" in
    docs/model.md for the meaning of each option. Construction validates everything: a wrong
    type raises TypeError, a bad value or a contradictory combination ValueError, each naming
    the key. An option that only matters under another one (``rope_pairing="half"`` without
    RoPE, ``gelu_approximate="tanh"`` without a GELU FFN) is rejected when it would have no
    effect, since such a config does not describe the model its author meant. ``rope_theta`` and
    ``norm_eps`` are exempt: upstream configs carry them whether or not they are used.
    """

    vocab_size: int
    context_length: int
    d_model: int
    num_layers: int
    num_heads: int
    d_ff: int
    rope_theta: float = 10000.0
    norm: Literal["rmsnorm", "layernorm", "none"] = "rmsnorm"
    norm_eps: float = 1e-5
    norm_position: Literal["pre", "post"] = "pre"
    positions: Literal["rope", "learned", "none"] = "rope"
    rope_pairing: Literal["interleaved", "half"] = "interleaved"
    ffn: Literal["swiglu", "silu", "gelu"] = "swiglu"
    gelu_approximate: Literal["none", "tanh"] = "none"
    bias: bool = False
    tie_embeddings: bool = False
    attn_dropout: float = 0.0
    residual_dropout: float = 0.0
    embedding_dropout: float = 0.0

    def __post_init__(self) -> None:
        for name in _SIZES:
            check_positive_int(_OWNER, name, getattr(self, name))
        _check_number("rope_theta", self.rope_theta)
        if not self.rope_theta > 0:
            raise ValueError(f"{_OWNER}: rope_theta must be positive, got {self.rope_theta}")
        _check_number("norm_eps", self.norm_eps)
        if not self.norm_eps >= 0:
            raise ValueError(f"{_OWNER}: norm_eps must be >= 0, got {self.norm_eps}")
        for name, allowed in _CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"{_OWNER}: {name} must be one of {allowed}, got {value!r}")
        for name in ("bias", "tie_embeddings"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise TypeError(f"{_OWNER}: {name} must be true or false, got {name}={value!r}")
        for name in _DROPOUTS:
            check_dropout_rate(_OWNER, name, getattr(self, name))
        self._check_combinations()

    def _check_combinations(self) -> None:
        if self.d_model % self.num_heads != 0:
            raise ValueError(
                f"{_OWNER}: d_model must be divisible by num_heads, "
                f"got d_model={self.d_model}, num_heads={self.num_heads}"
            )
        if self.positions == "rope" and self.head_dim % 2 != 0:
            raise ValueError(
                f"{_OWNER}: positions='rope' rotates pairs, so the head dim d_model/num_heads "
                f"must be even, got d_model={self.d_model}, num_heads={self.num_heads} "
                f"(head dim {self.head_dim})"
            )
        if self.rope_pairing != "interleaved" and self.positions != "rope":
            raise ValueError(
                f"{_OWNER}: rope_pairing={self.rope_pairing!r} has no effect with "
                f"positions={self.positions!r}; drop rope_pairing or use positions='rope'"
            )
        if self.gelu_approximate != "none" and self.ffn != "gelu":
            raise ValueError(
                f"{_OWNER}: gelu_approximate={self.gelu_approximate!r} has no effect with "
                f"ffn={self.ffn!r}; drop gelu_approximate or use ffn='gelu'"
            )

    @property
    def head_dim(self) -> int:
        """``d_model / num_heads``, the size of each head's queries, keys and values."""
        return self.d_model // self.num_heads

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> ModelConfig:
        """Build from JSON-style keys: the fields above plus the upstream ablation flags.

        ``remove_rmsnorm``, ``use_post_norm``, ``remove_rope`` and ``ffn_type`` (upstream
        ``model_config.json``) set ``norm``, ``norm_position``, ``positions`` and ``ffn``; a
        flag that disagrees with an explicit value of that key is an error naming both.
        """
        values = dict(values)
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields - set(_UPSTREAM_FLAGS))
        if unknown:
            raise ValueError(
                f"{_OWNER}: unknown key(s) {unknown}; known keys are {sorted(fields)} and the "
                f"upstream flags {sorted(_UPSTREAM_FLAGS)}"
            )
        for flag, (key, meanings) in _UPSTREAM_FLAGS.items():
            setting = values.pop(flag, None)
            if setting is None:
                continue
            # Compared with the type, so that 1 does not pass for true.
            known = [v for v in meanings if type(v) is type(setting) and v == setting]
            if not known:
                raise ValueError(
                    f"{_OWNER}: {flag} must be one of {list(meanings)}, got {flag}={setting!r}"
                )
            implied, agrees_with = meanings[known[0]]
            if key in values and values[key] not in agrees_with:
                raise ValueError(
                    f"{_OWNER}: {flag}={setting!r} contradicts {key}={values[key]!r}; "
                    f"remove one of the two keys"
                )
            values.setdefault(key, implied)
        missing = [name for name in _SIZES if name not in values]
        if missing:
            raise ValueError(f"{_OWNER}: missing required key(s) {missing}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """Every field under its own name (never the upstream flags): ``from_dict`` inverts it."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, path: str | Path) -> ModelConfig:
        """Read a JSON object of config keys (an upstream ``model_config.json`` works as is)."""
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_json(self, path: str | Path) -> None:
        """Write :meth:`to_dict` as indented JSON."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")
