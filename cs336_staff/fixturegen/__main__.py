"""Rebuild every fixture from the oracle: `python -m cs336_staff.fixturegen` (`make fixtures`).

The output is a pure function of the seed: running it twice, or on another machine, writes
the same bytes, which `MANIFEST.sha256` records.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from cs336_harness.families import BY_NAME
from cs336_harness.judging.pytest_plugin import DEFAULT_FIXTURES
from cs336_staff.fixturegen import evidence
from cs336_staff.fixturegen.core_cases import add_core
from cs336_staff.fixturegen.cost_cases import add_cost
from cs336_staff.fixturegen.reference_model import REFERENCE_CONFIG, evidence_ids
from cs336_staff.fixturegen.tokenizer_cases import add_tokenizer
from cs336_staff.fixturegen.training_cases import add_training
from cs336_staff.fixturegen.variant_cases import add_variants
from cs336_staff.fixturegen.writer import FixtureSet

DEFAULT_SEED = 336


def build(seed: int) -> tuple[FixtureSet, dict[str, np.ndarray]]:
    fs = FixtureSet(seed)
    model = add_core(fs)
    add_variants(fs)
    add_training(fs, model)
    add_tokenizer(fs)
    add_cost(fs)
    # The registry and the cases agree: no test family without cases, no cases of a family
    # that nothing grades (cs336_harness/families.py).
    unknown, missing = sorted(set(fs.cases) - set(BY_NAME)), sorted(set(BY_NAME) - set(fs.cases))
    if unknown or missing:
        raise SystemExit(
            f"cases of unregistered families {unknown}; registered without cases {missing}"
        )
    return fs, model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_FIXTURES, help="fixture directory")
    parser.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help="the seed every weight and input is drawn from",
    )
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    args = parser.parse_args(argv)
    fs, model = build(args.seed)
    files = fs.write(args.out)
    if args.quiet:
        return
    cases = sum(len(entries) for entries in fs.cases.values())
    print(f"wrote {len(files)} files, {cases} cases in {len(fs.cases)} families to {args.out}")
    print(f"reference model: draw {fs.redraws + 1} of seed {args.seed} clears every bar")
    print("\n".join(evidence.report(model, REFERENCE_CONFIG, evidence_ids(fs))))


if __name__ == "__main__":
    main()
