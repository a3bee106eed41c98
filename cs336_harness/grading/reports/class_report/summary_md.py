"""`report.md`: the class report in brief, for a CI job's summary page: the scores, the pass
rates, the mistakes made most and how many submissions need staff. It names no submission
and quotes nothing one wrote (everyone who sees the repository's runs reads it), and escapes
its text for Markdown."""

from __future__ import annotations

import re

from cs336_harness.grading.reports.class_report.costs import Costs
from cs336_harness.grading.reports.class_report.findings import Findings
from cs336_harness.grading.reports.class_report.page import top_mistakes

# The punctuation that starts inline markup (emphasis, code, links, a table's cells,
# strike-through), escaped with a backslash as CommonMark allows; every line here starts
# with text of its own, so the block markers (#, -, 1.) cannot begin one. <, > and & as
# HTML's references, since GitHub reads inline HTML. Hand-written: Markdown's libraries
# parse and render, none escapes.
MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
HTML_SPECIAL = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape(text: str) -> str:
    text = "".join(HTML_SPECIAL.get(c, c) for c in text)
    return MARKDOWN_SPECIAL.sub(r"\\\1", text).replace("\n", " ")


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def render(findings: Findings, costs: Costs) -> str:
    f = findings
    summary = f.score_summary
    lines = [
        f"## Class report: {len(f.submissions)} submissions",
        "",
        ", ".join(f"{escape(k)}: {escape(v)}" for k, v in summary.items() if k != "submissions"),
        "",
        f"Inputs: {escape(str(f.run.get('inputs', 'not recorded')))}. Who and why: `report.html`.",
        "",
        "### Families",
        "",
        _row("family", "points", "all tests passed", "mean points"),
        _row("---", "---:", "---:", "---:"),
    ]
    lines += [
        _row(
            escape(s.title),
            f"{s.max_points:g}",
            f"{s.passed} ({100 * s.pass_rate:.0f} %)",
            f"{s.mean_points:.3g}",
        )
        for s in f.families
    ]
    top = top_mistakes(f)
    lines += ["", "### Named mistakes made most", ""]
    if top:
        lines += [
            _row("mistake", "starts in", "submissions", "breaks", "the fix"),
            _row("---", "---", "---:", "---", "---"),
        ]
        lines += [
            _row(
                escape(g.key),
                escape(family),
                len(g.refs),
                escape(", ".join(f for f, _, _ in g.breaks)),
                escape(g.words.fix if g.words else ""),
            )
            for family, g in top
        ]
    else:
        lines.append("No failure matched a known mistake.")
    lines += ["", "### What the code costs", ""]
    if costs.causes:
        lines += [
            _row("cause", "family", "submissions", "the fix"),
            _row("---", "---", "---:", "---"),
        ]
        lines += [
            _row(escape(g.cause.id), escape(g.family), len(g.refs), escape(g.cause.fix))
            for g in costs.causes
        ]
    else:
        lines.append("No efficiency test failed." if costs.tests else "No efficiency test ran.")
    attention = [
        ("could not be graded (errors)", f.errors),
        ("timed out", f.timed_out),
        ("crashed", f.crashed),
        ("ran out of memory", f.out_of_memory),
        ("absent modules", f.absent),
        ("forbidden uses", f.forbidden),
        ("forbidden calls seen", f.called),
        ("hardening failures", f.hardening),
    ]
    lines += ["", "### To act on (submissions)", ""]
    lines += [f"- {what}: {len({item.ref for item in items})}" for what, items in attention]
    return "\n".join(lines) + "\n"
