"""The forbidden uses a submission's source shows, found by parsing it, never running it
(docs/grading.md, "The assignment's rules")."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cs336_harness.rules.policy import DEFAULT, Policy

# The submission's own code: what `cs336-grade` takes from it.
SCANNED = ("cs336_basics", "tests/adapters.py")
# Larger files are not parsed (the grader reads them in its own process): a megabyte is
# twenty times the bundled implementation's largest module.
MAX_BYTES = 1 << 20


@dataclass(frozen=True, order=True)
class Finding:
    """`name` (fully qualified) used at `path`:`line`; `path` relative to the submission."""

    path: str
    line: int
    name: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name}"


@dataclass(frozen=True)
class Unscanned:
    """A file that could not be parsed, and why."""

    path: str
    reason: str


def _import_bindings(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
    """(local name, qualified name) of each binding an import statement makes."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:  # `import torch.nn` binds `torch`
                head = alias.name.partition(".")[0]
                yield head, head
    elif node.module and not node.level:  # relative imports are the submission's own
        for alias in node.names:
            if alias.name != "*":
                yield alias.asname or alias.name, f"{node.module}.{alias.name}"


class _Resolver:
    """Qualified names of the expressions of one module, from its bindings."""

    def __init__(self) -> None:
        self.bindings: dict[str, str] = {}

    def qualified(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.bindings.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualified(node.value)
            return None if base is None else f"{base}.{node.attr}"
        if (  # getattr(nn, "Linear")
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            base = self.qualified(node.args[0])
            return None if base is None else f"{base}.{node.args[1].value}"
        return None


def _chain_depth(node: ast.expr) -> int:
    depth = 0
    while isinstance(node, ast.Attribute):
        node, depth = node.value, depth + 1
    return depth


# Attribute chains longer than this are not resolved (resolution recurses along a chain).
MAX_CHAIN = 64


def scan_source(source: bytes, path: str, policy: Policy = DEFAULT) -> list[Finding]:
    """The forbidden uses in one file's `source`; raises SyntaxError, ValueError (a null
    byte) or RecursionError/MemoryError (a parse too deep) for what cannot be parsed."""
    tree = ast.parse(source, filename=path)
    resolver = _Resolver()
    # Bindings first, in source order, so a use anywhere sees every alias of the module.
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            resolver.bindings.update(_import_bindings(node))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and _chain_depth(node.value) <= MAX_CHAIN:
                name = resolver.qualified(node.value)
                if name is not None:
                    resolver.bindings[target.id] = name
    findings: set[Finding] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom | ast.Import):
            names = [q for _, q in _import_bindings(node)]
        elif isinstance(node, ast.Attribute | ast.Call) and _chain_depth(node) <= MAX_CHAIN:
            names = [resolver.qualified(node) or ""]
        else:
            continue
        for name in names:
            # Only the outermost forbidden reference of a chain: `F.silu`, not also `F`.
            if policy.forbids(name):
                findings.add(Finding(path, node.lineno, name))
    return _outermost(findings)


def _outermost(findings: set[Finding]) -> list[Finding]:
    """Drop a finding whose name is a prefix of another's on the same line
    (`torch.nn.utils` inside `torch.nn.utils.clip_grad_norm_`)."""
    kept = [
        f
        for f in findings
        if not any(
            o.line == f.line and o.path == f.path and o.name.startswith(f.name + ".")
            for o in findings
        )
    ]
    return sorted(kept)


def scan_submission(
    root: Path, policy: Policy = DEFAULT, adapters: Path | None = None, whole: bool = False
) -> tuple[list[Finding], list[Unscanned]]:
    """Every forbidden use in the submission's own files (`SCANNED`, under `root`, or with
    `whole` every Python file under it: the grader's copy holds only what the submission's
    adapters can import); `adapters` names the adapters file under test where it is not
    `tests/adapters.py` (`pytest --adapters=tests/evidence/fused.py`)."""
    findings: list[Finding] = []
    unscanned: list[Unscanned] = []
    tops = [root] if whole else [root / part for part in SCANNED]
    if adapters is not None and not whole:
        tops[SCANNED.index("tests/adapters.py")] = adapters
    for top in tops:
        files = [top] if top.suffix == ".py" else sorted(top.rglob("*.py"))
        for file in files:
            if not file.is_file() or file.is_symlink():
                continue
            relative = (file.relative_to(root) if file.is_relative_to(root) else file).as_posix()
            if file.stat().st_size > MAX_BYTES:
                unscanned.append(Unscanned(relative, f"over {MAX_BYTES >> 20} MiB"))
                continue
            try:
                findings += scan_source(file.read_bytes(), relative, policy)
            except (SyntaxError, ValueError, RecursionError, MemoryError, OSError) as error:
                unscanned.append(Unscanned(relative, type(error).__name__))
    return findings, unscanned
