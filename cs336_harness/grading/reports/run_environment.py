"""What a grading run ran on, in words for the reports: the grader's Python and packages,
and the limits every submission was graded under."""

from __future__ import annotations

import platform
from importlib import metadata

from cs336_harness.grading.sandbox.limits import Limits, format_size

# The packages a submission's results depend on, by their distribution names.
PACKAGES = ("torch", "numpy", "pytest")


def environment() -> str:
    """ "Python 3.12.8 (Linux x86_64), torch 2.15.0, numpy 2.3.1, pytest 9.0.2": read from the
    packages' metadata, without importing them (torch's import costs seconds)."""
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} absent")
    system = f"{platform.system()} {platform.machine()}"
    return ", ".join([f"Python {platform.python_version()} ({system})", *versions])


def describe_limits(limits: Limits) -> str:
    memory = format_size(limits.memory) if limits.memory else "no limit"
    return (
        f"{limits.test_timeout:g} s of CPU a call, {limits.submission_timeout:g} s a "
        f"submission; memory {memory}; output {format_size(limits.output)}"
    )
