"""Upstream's own test files (stanford-cs336/assignment1-basics) run on the bundled
implementation: the yardstick of `make bench`'s suite row.

Nothing of upstream's is kept in this repository. `CS336_UPSTREAM` names a copy of it:
a checkout (`git clone https://github.com/stanford-cs336/assignment1-basics`), or a git
directory (a bare clone, or a snapshot whose largest files are missing). Its `tests/` and
`pyproject.toml` (upstream's pytest settings) are copied into a scratch folder, its
`tests/adapters.py` replaced by this repository's, which calls `cs336_basics`; pytest then
runs there as upstream's README says, `pytest` from the folder.

Where the copy lacks a file, what stands in is said in the row:
- tiktoken's GPT-2 encoding, which the tokenizer tests fetch from the network, is put in a
  tiktoken cache of the run's own from upstream's `gpt2_vocab.json` and `gpt2_merges.txt`
  (the same bytes, `#version: 0.2` first; tiktoken checks its own SHA-256 of both);
- `tinystories_sample_5M.txt` (5 MB; two memory tests encode it): `tinystories_sample.txt`
  repeated to 5,000,000 bytes, as the real sample is the same kind of text;
- `ts_tests/model.pt` (the weights of the model tests' snapshots): no stand-in can match a
  snapshot, so the tests that take `ts_state_dict` are left out, and the row says so.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ENV_VAR = "CS336_UPSTREAM"
URL = "https://github.com/stanford-cs336/assignment1-basics"
TIKTOKEN_GPT2 = "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/"
SAMPLE_5M = "tinystories_sample_5M.txt"
SAMPLE_5M_BYTES = 5_000_000
WEIGHTS = "ts_tests/model.pt"


@dataclass
class UpstreamSuite:
    """Upstream's tests laid out in ``root``, ready to run; what stands in for what."""

    root: Path
    env: dict[str, str]
    deselect: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def command(self, python: str) -> list[str]:
        return [
            python,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            *(f"--deselect={node}" for node in self.deselect),
        ]


def _git_files(git_dir: Path, dest: Path) -> list[str]:
    """Write HEAD's `tests/` and `pyproject.toml` from a git directory; the paths missing."""
    listing = (
        subprocess.run(
            [
                "git",
                f"--git-dir={git_dir}",
                "ls-tree",
                "-r",
                "-z",
                "HEAD",
                "tests",
                "pyproject.toml",
            ],
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    missing = []
    for entry in filter(None, listing):
        meta, path = entry.split("\t", 1)
        _, kind, sha = meta.split()
        if kind != "blob":
            continue
        blob = subprocess.run(
            ["git", f"--git-dir={git_dir}", "cat-file", "blob", sha], capture_output=True
        )
        if blob.returncode != 0:
            missing.append(path)
            continue
        (dest / path).parent.mkdir(parents=True, exist_ok=True)
        (dest / path).write_bytes(blob.stdout)
    return missing


def _copy(source: Path, dest: Path) -> list[str]:
    if (source / "tests").is_dir():
        shutil.copytree(source / "tests", dest / "tests")
        shutil.copyfile(source / "pyproject.toml", dest / "pyproject.toml")
        return []
    if (source / "HEAD").is_file() and (source / "objects").is_dir():
        return _git_files(source, dest)
    if (source / ".git").is_dir():
        return _git_files(source / ".git", dest)
    raise FileNotFoundError(f"{ENV_VAR}={source}: neither a checkout nor a git directory")


def _tiktoken_cache(fixtures: Path, cache: Path) -> None:
    cache.mkdir()
    contents = {
        "encoder.json": (fixtures / "gpt2_vocab.json").read_bytes(),
        "vocab.bpe": b"#version: 0.2\n" + (fixtures / "gpt2_merges.txt").read_bytes(),
    }
    for name, data in contents.items():
        # tiktoken's cache key: the SHA-1 of the URL it would download.
        (cache / hashlib.sha1((TIKTOKEN_GPT2 + name).encode()).hexdigest()).write_bytes(data)


def _tests_taking(tests: Path, fixture: str) -> list[str]:
    """Node ids of upstream's test functions that take `fixture` as an argument."""
    found = []
    for module in sorted(tests.glob("test_*.py")):
        for node in ast.parse(module.read_text()).body:
            takes = isinstance(node, ast.FunctionDef) and fixture in {a.arg for a in node.args.args}
            if takes and node.name.startswith("test_"):
                found.append(f"tests/{module.name}::{node.name}")
    return found


def prepare(source: Path, dest: Path, adapters: Path) -> UpstreamSuite:
    """Lay out upstream's tests from `source` in `dest`, on the adapters file `adapters`."""
    missing = set(_copy(source, dest))
    for name in (SAMPLE_5M, WEIGHTS):
        if not (dest / "tests" / "fixtures" / name).is_file():
            missing.add(f"tests/fixtures/{name}")
    shutil.copyfile(adapters, dest / "tests" / "adapters.py")
    fixtures = dest / "tests" / "fixtures"
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    cache = dest / "tiktoken-cache"
    _tiktoken_cache(fixtures, cache)
    env["TIKTOKEN_CACHE_DIR"] = str(cache)
    suite = UpstreamSuite(dest, env)
    if f"tests/fixtures/{SAMPLE_5M}" in missing:
        text = (fixtures / "tinystories_sample.txt").read_bytes()
        repeated = text * (SAMPLE_5M_BYTES // len(text) + 1)
        (fixtures / SAMPLE_5M).write_bytes(repeated[:SAMPLE_5M_BYTES])
        suite.notes.append(f"{SAMPLE_5M}: tinystories_sample.txt repeated")
    if f"tests/fixtures/{WEIGHTS}" in missing:
        suite.deselect = _tests_taking(dest / "tests", "ts_state_dict")
        suite.notes.append(f"{WEIGHTS} absent: its {len(suite.deselect)} tests left out")
    others = sorted(missing - {f"tests/fixtures/{SAMPLE_5M}", f"tests/fixtures/{WEIGHTS}"})
    if others:
        suite.notes.append(f"also absent: {', '.join(others)}")
    return suite


def source_from_env() -> Path | None:
    value = os.environ.get(ENV_VAR)
    return Path(value).expanduser() if value else None
