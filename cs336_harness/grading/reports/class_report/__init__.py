"""The class report, for course staff: `report.html`, one page that opens offline, and its
summary `report.md`, written by every class run and by `cs336-grade report DIR`. Its parts:
`findings` and `costs` (the data), `failure_text` (what is quoted of a failure), `figures`,
`page` and `summary_md` (docs/grading.md, "The class report")."""

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
    from cs336_harness.grading.reports.class_report import costs, page, summary_md
    from cs336_harness.grading.reports.class_report.findings import find

    findings, spent = find(results, run), costs.find(results)
    write_utf8(out / HTML, page.render(findings, spent))
    write_utf8(out / MARKDOWN, summary_md.render(findings, spent))
    return [HTML, MARKDOWN]
