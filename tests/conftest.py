import os
from pathlib import Path

import pytest

from cs336_harness.adapter_loader import DEFAULT_ADAPTERS, resolve_spec

# pytester runs the suite inside the suite, for the meta-test (tests/test_meta.py).
pytest_plugins = ["cs336_harness.pytest_plugin", "pytester"]

# Tests of the bundled package itself (its error messages, parameter counts, variants, the
# training command, the tokenizer's streaming): they import `cs336_basics` directly, so they
# only mean something, and only import, when the implementation under test is the bundled one.
BUNDLED_PACKAGE_TESTS = (
    "test_input_validation.py",
    "test_model_facts.py",
    "test_training_run.py",
    "test_tokenizer_streaming.py",
)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.name not in BUNDLED_PACKAGE_TESTS:
        return None
    spec = resolve_spec(config.getoption("--adapters"), os.environ)
    return True if spec != str(DEFAULT_ADAPTERS) else None
