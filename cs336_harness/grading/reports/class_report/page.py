"""`report.html`: the class's findings as one page that opens offline, from a Jinja2 template
that escapes every value it prints; only the figures, the rubric's titles and the catalog's
ids are marked safe, and its Content-Security-Policy runs no script."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from cs336_harness.grading.reports.class_report import figures
from cs336_harness.grading.reports.class_report.costs import Costs
from cs336_harness.grading.reports.class_report.findings import Findings, Group, family_title

TEMPLATES = Path(__file__).parent / "templates"
# Named mistakes in the figure of those made by the most submissions.
TOP = 15
# Up to this many submissions are listed inline; more fold into a <details>.
INLINE = 8
# What the page says about the run, in this order: RunInfo's fields.
RUN_FIELDS = (
    ("class_size", "submissions in the class"),
    ("shard", "shard"),
    ("inputs", "inputs"),
    ("seed", "seed"),
    ("sandbox", "sandbox"),
    ("resources", "resources"),
    ("limits", "limits"),
    ("environment", "environment"),
    ("partial", "credit"),
)
# How the page shows some of their values.
SHOWN = {
    ("seed", None): "none: the stored fixtures",
    ("partial", True): "per case: a family's points in proportion to its tests passed",
    ("partial", False): "per family: all of a family's points, or none",
}


def _size(count: int) -> str:
    return f"{count / 2**20:.0f} MiB" if count else "not measured"


def _environment() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["g"] = lambda x: f"{x:g}"
    environment.filters["size"] = _size
    environment.globals["INLINE"] = INLINE
    return environment


def top_mistakes(findings: Findings) -> list[tuple[str, Group]]:
    """(family, mistake) of the named mistakes made by the most submissions, most first: each
    mistake once, with the family it starts in."""
    ranked = [(f.family, g) for f in findings.mistakes for g in f.named]
    return sorted(ranked, key=lambda fg: (-len(fg[1].refs), fg[1].key))[:TOP]


# The page's sections, in order: (anchor, what the navigation calls it). A section is a block
# of the template of the same anchor.
SECTIONS = (
    ("scores", "Scores"),
    ("families", "Families"),
    ("mistakes", "Mistakes"),
    ("hardening", "Hardening"),
    ("cost", "Cost"),
    ("act", "To act on"),
    ("run", "The run"),
    ("submissions", "Submissions"),
)


def _act(findings: Findings) -> list[tuple[str, str, str, Any]]:
    """(anchor, title, what it means, the submissions listed) of each list staff act on."""
    f = findings
    return [
        ("errors", "Could not be graded: errors", "The adapters could not be imported, or a "
         "test never ran: every test of the family scores 0.", f.errors),
        ("timed-out", "Timed out", "A call ran past its time (--test-timeout), or the "
         "submission's.", f.timed_out),
        ("crashed", "Crashed", "The worker died during a test (a signal, os._exit, an abort).",
         f.crashed),
        ("memory", "Ran out of memory", "A test stopped at the memory limit (--memory-limit).",
         f.out_of_memory),
        ("absent", "Absent modules (stand-ins)", "Modules the submission imports that the "
         "grading environment lacks: the worker stood in for each, and only the tests whose "
         "code used one failed.", f.absent),
        ("forbidden", "Forbidden uses (static reading)", "Uses of what the assignment's rules "
         "forbid, read from the source; the rubric's [rules] penalty decides their cost.",
         f.forbidden),
        ("called", "Forbidden calls (seen at run time)", "Calls the worker saw the submission "
         "make: evidence, not proof (its own process reported them).", f.called),
        ("notes", "Notes", "What the reports say about how a submission was graded (a regrade, "
         "paths left out of the copy).", f.notes),
    ]  # fmt: skip


def render(findings: Findings, costs: Costs) -> str:
    top = top_mistakes(findings)
    readings = [(f"{t.family}: {t.test}", [r.fraction for r in t.readings]) for t in costs.tests]
    drawn = {
        "scores": figures.score_histogram(findings.histogram),
        "families": figures.family_results(findings.families),
        "mistakes": (
            figures.top_mistakes([(g.key, family_title(family), len(g.refs)) for family, g in top])
            if top
            else ""
        ),
        "costs": figures.cost_readings(readings) if readings else "",
    }
    run = [
        (label, SHOWN.get((key, value), value))
        for key, label in RUN_FIELDS
        if (value := findings.run.get(key, "")) != ""
    ]
    template = _environment().get_template("report.html.j2")
    return template.render(
        f=findings,
        costs=costs,
        # matplotlib's own SVG: numbers, the rubric's titles and the catalog's ids, escaped.
        figures={name: Markup(svg) for name, svg in drawn.items()},
        top=top,
        # The families with a section of what went wrong, which the families table links to.
        failing={fm.family for fm in findings.mistakes},
        sections=SECTIONS,
        act=_act(findings),
        run=run,
    )
