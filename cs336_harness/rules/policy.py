"""Which of PyTorch's definitions a submission may use, written in full
(`torch.nn.functional.silu`)."""

from __future__ import annotations

import json
from dataclasses import dataclass

FORBIDDEN = ("torch.nn", "torch.nn.functional", "torch.optim")
ALLOWED = (
    "torch.nn.Parameter",
    "torch.nn.parameter.Parameter",
    "torch.nn.Buffer",
    "torch.nn.Module",
    "torch.nn.modules.module.Module",
    "torch.nn.modules.container",
    "torch.nn.ModuleList",
    "torch.nn.ModuleDict",
    "torch.nn.Sequential",
    "torch.nn.ParameterList",
    "torch.nn.ParameterDict",
    "torch.nn.init",
    "torch.optim.Optimizer",
)


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@dataclass(frozen=True)
class Policy:
    """`forbidden`: namespaces whose members may not be used (the namespaces themselves may
    be imported); `allowed`: names, and everything inside them, exempted from that."""

    forbidden: tuple[str, ...] = FORBIDDEN
    allowed: tuple[str, ...] = ALLOWED

    def forbids(self, name: str) -> bool:
        """Whether using the fully qualified `name` breaks the rules."""
        if name in self.forbidden or any(_within(name, a) for a in self.allowed):
            return False
        return any(name.startswith(namespace + ".") for namespace in self.forbidden)

    def to_json(self) -> str:
        return json.dumps({"forbidden": list(self.forbidden), "allowed": list(self.allowed)})

    @classmethod
    def from_json(cls, text: str) -> Policy:
        data = json.loads(text)
        return cls(tuple(map(str, data["forbidden"])), tuple(map(str, data["allowed"])))


DEFAULT = Policy()
