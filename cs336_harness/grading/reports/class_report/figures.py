"""The class report's figures, drawn by matplotlib as SVG text to put inline in the page: each
on a `Figure` of its own, the same bytes every time, its labels drawn with mathtext off (a
`$` in a title is a dollar sign)."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

import matplotlib
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

from cs336_harness.grading.reports.class_report.findings import FamilyStats, Histogram
from cs336_harness.grading.results import HARDENING

STYLE = {
    "svg.fonttype": "none",
    "svg.hashsalt": "cs336-class-report",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
# Colour-blind-safe (Okabe and Ito): passed, in part, not at all.
GREEN, AMBER, RED, BLUE = "#009E73", "#E69F00", "#D55E00", "#0072B2"
WIDTH = 6.4
# The cost figure's range, as a multiple of a limit: readings beyond are drawn at its edge.
LOWEST, HIGHEST = 0.01, 100.0
LABEL_CHARS = 36
# Where the SVG's prologue ends: the page inlines the <svg> element itself.
SVG_START = re.compile(r"<svg\b")


def _label(family: str, title: str) -> str:
    """A family's label on an axis: its title, short (the table beside has it whole)."""
    if family == HARDENING:
        return "Hardening"
    return title if len(title) <= LABEL_CHARS else title[: LABEL_CHARS - 1] + "…"


def _svg(figure: Figure) -> str:
    buffer = io.StringIO()
    FigureCanvasSVG(figure).print_svg(buffer, metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    return text[SVG_START.search(text).start() :]


def score_histogram(histogram: Histogram) -> str:
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(WIDTH, 2.4), layout="constrained")
        ax = figure.add_subplot()
        lefts = histogram.edges[:-1]
        ax.bar(lefts, histogram.counts, width=100 / len(histogram.counts), align="edge",
               color=BLUE, edgecolor="white")  # fmt: skip
        ax.set_xlim(0, 100)
        ax.set_xticks(histogram.edges)
        ax.set_xlabel("score, % of the maximum")
        ax.set_ylabel("submissions")
        ax.yaxis.get_major_locator().set_params(integer=True)
        return _svg(figure)


def family_results(stats: Sequence[FamilyStats]) -> str:
    """Per family, the share of submissions that passed all its tests, some, or none."""
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(WIDTH, 0.8 + 0.24 * len(stats)), layout="constrained")
        ax = figure.add_subplot()
        rows = list(reversed(stats))  # the first family on top
        y = range(len(rows))
        shares = [
            [(getattr(s, part) / s.graded if s.graded else 0.0) for s in rows]
            for part in ("passed", "some", "none")
        ]
        left = [0.0] * len(rows)
        for values, colour, label in zip(
            shares, (GREEN, AMBER, RED), ("all tests passed", "some", "none"), strict=True
        ):
            ax.barh(y, values, left=left, color=colour, label=label, height=0.7)
            left = [a + b for a, b in zip(left, values, strict=True)]
        ax.set_yticks(list(y), [_label(s.family, s.title) for s in rows], parse_math=False)
        ax.set_xlim(0, 1)
        ax.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
        ax.set_xlabel("share of the class")
        figure.legend(loc="outside upper center", ncols=3, frameon=False)
        return _svg(figure)


def top_mistakes(counts: Sequence[tuple[str, str, int]]) -> str:
    """The named mistakes made by the most submissions: (mistake id, the title of the family
    it starts in, submissions), each labelled with both, the family on a line of its own."""
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(WIDTH, 0.8 + 0.4 * len(counts)), layout="constrained")
        ax = figure.add_subplot()
        rows = list(reversed(counts))
        ax.barh(range(len(rows)), [n for _, _, n in rows], color=RED, height=0.7)
        labels = [f"{name}\n({_label('', title)})" for name, title, _ in rows]
        ax.set_yticks(range(len(rows)), labels, parse_math=False)
        ax.set_xlabel("submissions")
        ax.xaxis.get_major_locator().set_params(integer=True)
        return _svg(figure)


def cost_readings(tests: Sequence[tuple[str, Sequence[float]]]) -> str:
    """Each efficiency test's readings across the class, a dot per submission, as a multiple
    of the test's limit (a log scale; the limit's line at 1): (label, readings)."""
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(WIDTH, 0.9 + 0.45 * len(tests)), layout="constrained")
        ax = figure.add_subplot()
        rows = list(reversed(tests))
        for y, (_, values) in enumerate(rows):
            shown = [min(max(v, LOWEST), HIGHEST) for v in values]
            colours = [RED if v > 1 else GREEN for v in values]
            # A fixed jitter per position, so that equal readings stay visible and one class
            # draws the same bytes every time.
            jitter = [y + 0.25 * (((i * 7) % 11) / 10 - 0.5) for i in range(len(shown))]
            ax.scatter(shown, jitter, c=colours, s=14, alpha=0.8, linewidths=0)
        ax.axvline(1.0, color="#444", linewidth=1, linestyle="--")
        ax.text(1.0, len(rows) - 0.5, " limit", va="bottom", ha="left", parse_math=False)
        ax.set_xscale("log")
        ax.set_xlim(LOWEST, HIGHEST)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.set_yticks(range(len(rows)), [label for label, _ in rows], parse_math=False)
        ax.set_xlabel("cost, as a multiple of the test's limit (log scale)")
        return _svg(figure)
