"""The notes the worker adds to a submission's error where the environment explains it
(`cs336_harness/grading/worker/error_context.py`)."""

from __future__ import annotations

import errno
import sys
import types
from pathlib import Path

import pytest

from cs336_harness.grading.worker.error_context import NO_NETWORK, WRITABLE, note


def test_a_read_only_file_system_is_the_sandbox():
    assert note(OSError(errno.EROFS, "Read-only file system")) == f" ({WRITABLE})"
    denied = PermissionError(errno.EACCES, "Permission denied", "/usr/lib/x")
    assert note(denied) == f" ({WRITABLE})"
    assert note(FileNotFoundError(errno.ENOENT, "No such file")) == ""


def test_a_socket_refused_is_the_sandbox_s_missing_network():
    """The user tier's filter refuses a socket with EACCES, which names no file."""
    assert note(PermissionError(errno.EACCES, "Permission denied")) == f" ({NO_NETWORK})"


def test_a_syntax_error_names_the_python():
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert note(SyntaxError("invalid syntax")) == f" (the grader runs Python {version})"


def test_an_adapter_whose_parameters_were_renamed_says_whose_names_count():
    renamed = TypeError("run_get_batch() got an unexpected keyword argument 'dataset'")
    assert note(renamed) == (
        " (upstream's tests call run_get_batch with dataset=...: an adapter keeps the "
        "parameter names of upstream's tests/adapters.py)"
    )
    assert note(TypeError("forward() got an unexpected keyword argument 'x'")) == ""


def test_an_import_from_torch_names_its_version():
    error = ImportError("cannot import name 'FILE_LIKE'", name="torch.serialization")
    assert note(error).startswith(" (graded on torch 2.")
    assert note(ImportError("cannot import name 'x'", name="numpy")) == ""


def test_a_module_whose_name_differs_in_case_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (tmp_path / "Rope.py").write_text("")
    package = types.ModuleType("pkg")
    package.__path__ = [str(tmp_path)]
    monkeypatch.setitem(sys.modules, "pkg", package)
    error = ModuleNotFoundError("No module named 'pkg.RoPE'", name="pkg.RoPE")
    assert note(error) == " (the folder holds Rope.py: names of files are case-sensitive here)"
    other = ModuleNotFoundError("No module named 'pkg.attention'", name="pkg.attention")
    assert note(other) == ""
