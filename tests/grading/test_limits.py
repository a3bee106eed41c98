"""Sizes on the command line, and the limits a test process gets."""

import resource

import pytest

from cs336_harness.grading.sandbox.limits import Limits, format_size, parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [("4G", 4 << 30), ("512M", 512 << 20), ("2GiB", 2 << 30), ("1.5k", 1536), ("0", 0)],
)
def test_sizes_parse_in_binary_units(text: str, size: int):
    assert parse_size(text) == size


def test_a_bad_size_is_refused():
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")


def test_rlimits_cap_data_files_cpu_and_processes_and_forbid_core_dumps():
    limits = Limits(memory=1 << 30, output=1 << 20, submission_timeout=100, processes=32)
    own, shared = dict(limits.rlimits(own_user=True)), dict(limits.rlimits(own_user=False))
    assert own[resource.RLIMIT_DATA] == 1 << 30
    assert own[resource.RLIMIT_FSIZE] == 1 << 20
    assert own[resource.RLIMIT_CPU] == 101
    assert own[resource.RLIMIT_CORE] == 0
    # A process limit counts every process of the user: only with a user of its own.
    assert own[resource.RLIMIT_NPROC] == 32 and resource.RLIMIT_NPROC not in shared
    assert resource.RLIMIT_DATA not in dict(Limits(memory=0).rlimits(own_user=True))
    assert format_size(4 << 30) == "4 GiB"
