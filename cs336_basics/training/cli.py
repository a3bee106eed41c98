"""Train the bundled :class:`TransformerLM` on a text corpus: ``cs336-train --config FILE``.

The command line: train (or resume) as the config says, then print a sample; or, with
``--sample``, print a sample from the latest checkpoint without training.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from pathlib import Path

from cs336_basics.checkpoint import load_checkpoint
from cs336_basics.training.checkpoint_files import latest_checkpoint
from cs336_basics.training.config import TrainConfig
from cs336_basics.training.loop import build, train
from cs336_basics.training.sampling import sample


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="cs336-train", description=__doc__.splitlines()[0].rstrip(".")
    )
    parser.add_argument("--config", type=Path, required=True, help="TOML training config")
    parser.add_argument("--out", type=Path, help="output directory (overrides out_dir)")
    parser.add_argument("--max-steps", type=int, help="steps to train to (overrides max_steps)")
    parser.add_argument("--device", help="torch device, e.g. cpu or cuda (overrides device)")
    parser.add_argument(
        "--compile",
        nargs="?",
        const=True,
        metavar="BACKEND",
        help="train the model compiled by torch.compile, with the backend its device calls for "
        "or the one named (overrides compile)",
    )
    parser.add_argument("--resume", action="store_true", help="continue from the latest checkpoint")
    parser.add_argument(
        "--sample", metavar="PROMPT", help="no training: print a sample from the latest checkpoint"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    args = parser.parse_args(argv)

    overrides = {
        "out_dir": args.out,
        "max_steps": args.max_steps,
        "device": args.device,
        "compile": args.compile,
    }
    try:
        config = TrainConfig.from_toml(args.config)
        config = dataclasses.replace(
            config, **{k: v for k, v in overrides.items() if v is not None}
        )
    except (OSError, TypeError, ValueError) as error:
        parser.error(str(error))

    try:
        if args.sample is not None:
            found = latest_checkpoint(config.out_dir)
            if found is None:
                parser.error(f"--sample: no checkpoint in {config.out_dir / 'checkpoints'}")
            model, optimizer = build(config)
            load_checkpoint(found, model, optimizer)
            print(sample(model, config, args.sample))
            return 0
        model = train(config, resume=args.resume, quiet=args.quiet)
    except (FileExistsError, FileNotFoundError, ValueError) as error:
        parser.error(str(error))
    print(sample(model, config, config.sample_prompt))
    return 0
