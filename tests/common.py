"""The upstream handout's `tests/common.py`: the helpers its tests and many students' adapters
import (`from tests.common import gpt2_bytes_to_unicode`, `from .common import FIXTURES_PATH`).

The helpers live in `cs336_harness.handout_common`, so that the grader can serve them to a
submission that ships no copy of this file; `FIXTURES_PATH` is the `fixtures` folder beside
this file, as upstream's is.
"""

from pathlib import Path

from cs336_harness.handout_common import fixtures_path, gpt2_bytes_to_unicode

FIXTURES_PATH = fixtures_path(Path(__file__).parent)

__all__ = ["FIXTURES_PATH", "gpt2_bytes_to_unicode"]
