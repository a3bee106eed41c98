"""`make handout DEST=dir`: write the student copy of this repository.

Its `cs336_basics` and `tests/adapters.py` are stubs (`stubs`), the withheld folders
(`bundle.WITHHELD`) are left out, and its Makefile and README are written for students
(docs/architecture.md, "The autograder and the handout")."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from cs336_harness.families import FAMILIES, Part, markdown_table
from cs336_harness.grading.inputs.bundle import copy_tree
from cs336_harness.grading.packaging.stubs import (
    stub_source,
    with_docstring,
    without_private_functions,
)
from cs336_harness.judging.diagnosis.diagnose import SHIPPED_TABLE, write_table
from cs336_harness.paths import REPO_ROOT

# Files and directories of the repository that the handout copies (as filtered by
# `inputs/bundle.py`'s `copy_tree`); the Makefile and README are written anew.
COPIED = (
    "pyproject.toml",
    "uv.lock",
    ".python-version",
    ".gitignore",
    "rubric.toml",
    "cs336_basics",
    "cs336_harness",
    "tests",
    "docs/contract.md",
)
STUBBED = ("cs336_basics", "tests/adapters.py")

MAKEFILE = """\
# Every target runs through uv, so the locked environment is the one used.
UV ?= uv

.PHONY: help check test typecheck lint format

help:  ## list the targets
\t@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z]+):.*## /  make \\1\\t/'

check:  ## grade your implementation: a table of components, tests passed and points
\t$(UV) run cs336-grade

test:  ## run the component tests
\t$(UV) run pytest

typecheck:  ## the component tests, each call into cs336_basics checked against its shapes
\t$(UV) run pytest --typecheck

lint:  ## ruff lint and format check
\t$(UV) run ruff check .
\t$(UV) run ruff format --check .

format:  ## apply ruff's formatting and safe fixes
\t$(UV) run ruff format .
\t$(UV) run ruff check --fix .
"""

README = """\
# CS336 assignment 1: a Transformer language model from scratch

    uv run cs336-grade          # a table: each component, its tests passed, points, status
    uv run pytest               # the component tests (`-k rope` for one component)
    uv run pytest --typecheck   # the same, each call into cs336_basics shape-checked

Implement the components in `cs336_basics/` (every function there raises
`NotImplementedError` for now) and wire them up in `tests/adapters.py`, whose `run_*`
and `get_*` functions the tests call. `docs/contract.md` states what each component must
compute, its parameters' names and shapes, and every adapter's signature. Until a
component is done its tests fail with the one line `not implemented: run_<component>`,
which once the adapter calls into your package also names the function, file and line
still raising `NotImplementedError`. `rubric.toml` lists the points per component.

**One component at a time.** Each component has its own test file, named for it:

    uv run pytest tests/families/test_rope.py          # one component's tests
    uv run pytest -k "rope or softmax"                 # every test whose name matches
    uv run pytest tests/families/test_rope.py -x -q    # stop at the first failure, terse

**What the assignment asks for** (the course's points): {model}; the training half,
{training}; and the tokenizer, {tokenizer}.

**Beyond it** (optional unless your course says otherwise): {beyond}. These are your model
as an `nn.Module` (through `get_transformer_lm` and `get_transformer_block`, adapters the
original harness lacks), decoding (`run_sample_next_token`, `run_generate`) and the
architecture variants (the seed systems' choices and the usual ablations, in
`docs/contract.md`). The default rubric gives them no points; the grader reports them apart
where you implement them, and says nothing of them where you do not.

A failing comparison opens with the likely mistake when its output matches a known one
(`likely cause: ...`), or else with the shape of its error (`error shape: ...`: a constant
factor, entries out of order, only some rows wrong, ...). `test_<component>_backward`
checks that gradients flow through your module; a failing Transformer block or LM names the
first sublayer whose output differs.
With `--typecheck`, a call whose tensors contradict the jaxtyping shapes in your annotations
fails at that call, naming the annotation it broke.

Some tests check behaviour the assignment leaves open (a fully masked attention row gives
zeros, not NaN; a sequence longer than the context is refused), or call your adapters in
ways upstream's tests never do (more axes, half-precision inputs, a generator of
parameters; `docs/contract.md` lists what upstream's tests pass). They are *hardening*: a
failing one says so on its first line, and they are scored apart from the components'
points. `uv run pytest -m "not hardening"` runs the assignment's contract alone. A
component's points are shared among its contract tests: each one you pass earns its share.

## What each component's tests catch

{table}
"""


ADAPTERS_DOCSTRING = """The functions the tests call: connect each to your code in ``cs336_basics``.

Every ``run_*`` function builds one component from its arguments, loads the weights it is
handed, runs it on the input and returns the output tensor with autograd on (the backward
tests differentiate it); every ``get_*`` function returns the object the tests drive. The
names, parameters and shapes are the contract's (``docs/contract.md``). Until a function is
written it raises ``NotImplementedError``, and its tests fail with the one line
``not implemented: run_<component>``.
"""


def readme() -> str:
    """The handout's README, naming every registered family under its part."""

    def names(part: Part) -> str:
        return ", ".join(f"`{f.name}`" for f in FAMILIES if f.part is part)

    parts = {"model": Part.MODEL, "training": Part.TRAINING, "tokenizer": Part.TOKENIZER}
    return README.format(
        beyond=names(Part.BEYOND),
        table=markdown_table(),
        **{k: names(p) for k, p in parts.items()},
    )


def _stub_tree(path: Path) -> None:
    for file in [path] if path.is_file() else sorted(path.rglob("*.py")):
        file.write_bytes(stub_source(file.read_bytes()))


def export(dest: Path, repo: Path = REPO_ROOT) -> None:
    """Write the handout to `dest`, which must not exist or be empty."""
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        source = repo / name
        if source.is_dir():
            copy_tree(source, dest / name, repo)
        else:
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest / name)
    for name in STUBBED:
        _stub_tree(dest / name)
    # The adapters are the student's to write: the reference's private helpers go, and the
    # docstring speaks to them.
    adapters = dest / "tests" / "adapters.py"
    source = without_private_functions(adapters.read_bytes())
    adapters.write_bytes(with_docstring(source, ADAPTERS_DOCSTRING))
    # The catalog of known mistakes stays here (it holds the oracle); its outputs on the
    # stored fixtures go along as data, so that a student's failure names its likely cause.
    write_table(repo / "tests" / "fixtures", dest / SHIPPED_TABLE)
    (dest / "Makefile").write_text(MAKEFILE)
    (dest / "README.md").write_text(readme())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="handout", description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="directory to write (absent or empty)")
    args = parser.parse_args(argv)
    try:
        export(args.dest)
    except OSError as error:
        print(f"handout: {error}", file=sys.stderr)
        return 2
    print(f"wrote the student handout to {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
