"""The class report: what a graded class got wrong, for course staff.

`report.html` is one page that opens offline (styles and figures inline, no script): the
score distribution, each family's pass rate and points, per family the named mistakes
ranked by how many submissions made them (with the catalog's cause and fix) and the other
failures grouped by error shape, what else staff act on, the run, and a section per
submission. `report.md` is its summary for a CI job's page. Every class run writes both,
and so does `cs336-grade report DIR` from a finished run's `grading.json`.

- `failure_text`: the line the report quotes of a failure, which never holds an expected
  output, and the catalog's words;
- `findings`: the class's findings, as data;
- `figures`: matplotlib's SVG of them;
- `page` and `summary_md`: the two files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cs336_harness.grading.reports.checked import write_utf8
from cs336_harness.grading.scoring import Score

HTML, MARKDOWN = "report.html", "report.md"


def write_class_report(results: list[Score], out: Path, run: dict[str, Any]) -> list[str]:
    """Write report.html and report.md of `results` (in class order) into `out`; return
    their names. `run`: how the run was made (`RunInfo.to_dict`)."""
    # Imported here: matplotlib and Jinja2 cost the runs that write no class report nothing.
    from cs336_harness.grading.reports.class_report import page, summary_md
    from cs336_harness.grading.reports.class_report.findings import find

    findings = find(results, run)
    write_utf8(out / HTML, page.render(findings))
    write_utf8(out / MARKDOWN, summary_md.render(findings))
    return [HTML, MARKDOWN]
