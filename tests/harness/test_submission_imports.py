"""A checkout's adapters are graded on the checkout's own code, whenever they import it
(`cs336_harness.adapters.submission_imports`): in this process, where this repository's
`cs336_basics` and `tests` package are importable and `tests` is imported already."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from cs336_harness.adapters.loader import Adapters
from cs336_harness.paths import REPO_ROOT
from tests.grading.real_world import write_wrong_package

pytestmark = pytest.mark.usefixtures("checkout_imports_undone")


@pytest.mark.parametrize("imports", ["lazy", "top"])
def test_the_adapters_run_the_checkouts_package_and_modules(tmp_path: Path, imports: str):
    adapters = Adapters(str(write_wrong_package(tmp_path, imports)))  # type: ignore[arg-type]
    x = torch.randn(3, 4)
    # This repository's softmax is right: zeros are the checkout's deliberate mistake.
    assert torch.equal(adapters.run_softmax(x, -1), torch.zeros(3, 4))
    torch.testing.assert_close(adapters.run_silu(x), x * torch.sigmoid(x), rtol=0, atol=0)
    common = adapters.module.gpt2_bytes_to_unicode.__module__
    assert common == ("cs336_harness.handout_common" if imports == "lazy" else "tests.common")
    assert (tmp_path / "tests" / "fixtures").resolve() == adapters.module.FIXTURES_PATH


def test_names_the_checkout_holds_but_does_not_own_are_found_past_it(tmp_path: Path):
    write_wrong_package(tmp_path, "lazy")
    (tmp_path / "regex.py").write_text("raise RuntimeError('notes, not the regex package')\n")
    adapters = Adapters(str(tmp_path / "tests" / "adapters.py"))
    finder = adapters._imports
    assert finder is not None and sys.path[0] == str(tmp_path.resolve())
    # Its cs336_staff (a trap) and regex.py would come first on sys.path; the harness's and the
    # environment's are found instead.
    staff = finder.find_spec("cs336_staff")
    assert staff is not None and Path(staff.origin).is_relative_to(REPO_ROOT)
    regex = finder.find_spec("regex")
    assert regex is not None and "site-packages" in Path(regex.origin).parts


def test_the_checkouts_package_is_found_even_once_something_moved_it_back(tmp_path: Path):
    adapters = Adapters(str(write_wrong_package(tmp_path, "lazy")))
    # What pytest does as it collects: this repository's root first again.
    sys.path.insert(0, str(REPO_ROOT))
    sys.modules.pop("cs336_basics", None)
    assert importlib.util.find_spec("cs336_basics").origin == str(
        (tmp_path / "cs336_basics" / "__init__.py").resolve()
    )
    assert torch.equal(adapters.run_softmax(torch.ones(2), 0), torch.zeros(2))
    assert sys.path[0] == str(tmp_path.resolve())


def test_a_namespace_package_in_the_checkout_is_forgotten_cleanly(tmp_path: Path):
    # Students' packages hold folders without an __init__.py (namespace packages), whose
    # folders Python computes again from their parent's, after the parent has gone.
    write_wrong_package(tmp_path, "lazy")
    (tmp_path / "cs336_basics" / "layers").mkdir()
    (tmp_path / "cs336_basics" / "layers" / "norms.py").write_text("SCALE = 2\n")
    adapters = tmp_path / "tests" / "adapters.py"
    adapters.write_text(adapters.read_text() + "from cs336_basics.layers import norms\n")
    assert Adapters(str(adapters)).module.norms.SCALE == 2
    other = write_wrong_package(tmp_path / "other", "top")
    assert Adapters(str(other)).module.softmax.__module__ == "cs336_basics"
    assert "cs336_basics.layers" not in sys.modules
