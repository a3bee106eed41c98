"""`make sweep SEEDS=50`: every fresh draw is as fair and as sharp as the stored one.

For each seed it draws a fixture directory with the generator, then runs on it
- the meta-test (`pytest -m meta`): every module in `tests/evidence/wrong/` is caught by
  exactly the families it names, and the bundled and fused implementations pass everything;
- the upstream-style implementation (`tests/evidence/upstream_style/`, einops, a table-free
  RoPE, special tokens at the top ids) on the contract tests of the core families and BPE
  training: all pass.

One row per seed; exit 1 when any seed fails. Seeds run `--jobs` at a time.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console

from cs336_harness.families import FAMILIES, Part
from cs336_harness.paths import REPO_ROOT

# The families the upstream-style implementation implements: the model's, as the course has
# them, and BPE training with the special tokens at the top ids (a layout the contract allows).
CORE_FAMILIES = tuple(f for f in FAMILIES if f.part is Part.MODEL or f.name == "train_bpe")
UPSTREAM_STYLE = REPO_ROOT / "tests" / "evidence" / "upstream_style" / "tests" / "adapters.py"


def _pytest(args: list[str], fixtures: Path) -> list[str]:
    """Run pytest on `fixtures`; the ids of what failed (empty: all passed)."""
    env = os.environ | {"CS336_FIXTURES": str(fixtures)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", *args]
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    failed = re.findall(r"^FAILED (\S+)", done.stdout, re.MULTILINE)
    if done.returncode != 0 and not failed:
        failed = [f"pytest exited {done.returncode}: {done.stdout[-300:]}"]
    return failed


def check_seed(seed: int, select: str | None = None) -> list[str]:
    """Everything that went wrong on the draw for `seed`; `select` (a pytest -k expression)
    keeps the meta-test's modules whose names match it."""
    with tempfile.TemporaryDirectory(prefix=f"sweep-{seed}-") as tmp:
        fixtures = Path(tmp) / "fixtures"
        generator = [sys.executable, "-m", "cs336_staff.fixturegen", "--quiet"]
        subprocess.run(
            [*generator, "--seed", str(seed), "--out", str(fixtures)],
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
        )
        meta = ["tests/meta", "-m", "meta", *(["-k", select] if select else [])]
        problems = _pytest(meta, fixtures)
        files = sorted({family.test_file for family in CORE_FAMILIES})
        upstream = [f"--adapters={UPSTREAM_STYLE}", "-m", "not hardening", *files]
        problems += [f"upstream_style: {p}" for p in _pytest(upstream, fixtures)]
        return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50, help="how many seeds")
    parser.add_argument("--first", type=int, default=1, help="the first seed")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="seeds checked at once")
    parser.add_argument(
        "-k",
        dest="select",
        metavar="EXPRESSION",
        help="only the meta-test's modules matching this pytest -k expression (e.g. "
        '"adamw or correct_module"); the correct modules run every family either way',
    )
    args = parser.parse_args(argv)
    console = Console()
    seeds = range(args.first, args.first + args.seeds)
    started = time.monotonic()
    failed = 0
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        checked = pool.map(lambda seed: check_seed(seed, args.select), seeds)
        for seed, problems in zip(seeds, checked, strict=True):
            failed += bool(problems)
            verdict = "ok" if not problems else f"{len(problems)} problem(s)"
            console.print(f"seed {seed}: {verdict}", markup=False)
            for problem in problems:
                console.print(f"    {problem}", markup=False)
    minutes = (time.monotonic() - started) / 60
    console.print(
        f"{len(seeds) - failed} of {len(seeds)} seeds clean ({minutes:.1f} min)", markup=False
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
