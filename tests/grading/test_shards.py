"""`--shard i/n` and `merge`: a class graded in shares equals the class graded at once,
whether its members are folders or the archives students hand in."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from cs336_harness.grading.shards import parse_shard, shard_positions
from tests.grading import handed_in, synthetic
from tests.grading.conftest import grade

CLASS = {
    "alice": synthetic.CORRECT,
    "bob": synthetic.WRONG_SOFTMAX,
    "carol": synthetic.NOT_IMPLEMENTED,
    "erin": synthetic.IMPORT_ERROR,
}
SHARDS = 3
# Members handed in as archives of their folders (the others as folders), named without
# the suffix.
ARCHIVED = {"bob": ("bob.zip", handed_in.zipped), "erin": ("erin.tar.gz", handed_in.tarball)}


def test_shards_split_the_class_evenly_and_exactly_once():
    shares = [shard_positions(20, i, 4) for i in range(1, 5)]
    assert sorted(p for share in shares for p in share) == list(range(20))
    assert {len(s) for s in shares} == {5}
    assert [len(shard_positions(5, i, 3)) for i in (1, 2, 3)] == [2, 2, 1]
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "two/4", "2"):
        with pytest.raises(ValueError, match="not a shard"):
            parse_shard(bad)


def _summary(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(f)]


def _results(path: Path) -> dict:
    data = json.loads(path.read_text())
    data.pop("execution_time")
    data["output"] = data["output"].splitlines()[:2]  # how the run was made, not its logs
    return data


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("class")
    for name, submission in CLASS.items():
        if name in ARCHIVED:
            folder = synthetic.write_submission(root / "folders" / name, submission)
            archive, write = ARCHIVED[name]
            write(folder, root / "submissions" / archive)
        else:
            synthetic.write_submission(root / "submissions" / name, submission)
    # Every shard must grade on the same inputs: one seed for the whole class.
    whole = grade(root / "submissions", "-j2", "--seed=5", out=root / "whole")
    assert whole.returncode == 0, whole.stderr
    for i in range(1, SHARDS + 1):
        shard = f"--shard={i}/{SHARDS}"
        run = grade(root / "submissions", "-j2", "--seed=5", shard, out=root / f"shard{i}")
        assert run.returncode == 0, run.stderr
    return root


def test_merged_shards_equal_grading_all_at_once(graded: Path):
    shards = [graded / f"shard{i}" for i in range(1, SHARDS + 1)]
    merged = grade("merge", *shards, out=graded / "merged")
    assert merged.returncode == 0, merged.stderr
    assert _summary(graded / "merged" / "summary.csv") == _summary(graded / "whole" / "summary.csv")
    for name in CLASS:
        assert _results(graded / "merged" / name / "results.json") == _results(
            graded / "whole" / name / "results.json"
        )
    assert [row["submission"] for row in _summary(graded / "merged" / "summary.csv")] == sorted(
        CLASS
    )


def test_a_merge_with_a_shard_missing_is_refused(graded: Path):
    merged = grade("merge", graded / "shard1", graded / "shard3", out=graded / "partial")
    assert merged.returncode == 2
    assert "shards missing: 2/3" in merged.stderr


def _mistakes_section(page: Path) -> str:
    """What the class report says the class got wrong: no timing in it (what the code costs,
    the next section, is measured afresh by each grading)."""
    text = page.read_text()
    return text[text.index('<h2 id="mistakes">') : text.index('<h2 id="cost">')]


def test_merged_shards_write_the_class_report_of_grading_all_at_once(graded: Path, tmp_path):
    shards = [graded / f"shard{i}" for i in range(1, SHARDS + 1)]
    assert grade("merge", *shards, out=tmp_path / "merged").returncode == 0
    merged, whole = tmp_path / "merged" / "report.html", graded / "whole" / "report.html"
    assert _mistakes_section(merged) == _mistakes_section(whole)
    assert 'data-key="softmax_without_max_shift"' in _mistakes_section(merged)
    # Rebuilt from the merged grading.json alone, it is the same page.
    again = grade("report", tmp_path / "merged", out=tmp_path / "again")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "report.html").read_bytes() == merged.read_bytes()
