"""JUnit XML, which CI systems display: one <testsuite> per submission, one <testcase> per test
with its verdict, family, kind and points, written from the grader's merged verdicts
(pytest's own --junitxml would lose the tests of a process that crashed)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.results import Status, called_lines
from cs336_harness.grading.scoring import Score

ERRORS = {Status.CRASHED, Status.ERROR}


def _suite(result: Score, run: dict[str, object]) -> ET.Element:
    tests = result.submission.tests
    suite = ET.Element(
        "testsuite",
        name=result.submission.name,
        tests=str(len(tests)),
        failures=str(sum(t.status not in ERRORS | {Status.PASSED} for t in tests)),
        errors=str(sum(t.status in ERRORS for t in tests)),
        time=f"{result.submission.wall_time:.3f}",
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("score", result.points),
        ("max_score", result.max_points),
        ("forbidden_uses", result.submission.forbidden_count),
        ("forbidden_call_sites", result.submission.called_count),
        ("rules_penalty", result.penalty),
    ):
        ET.SubElement(properties, "property", name=name, value=f"{value:g}")
    for name, value in run.items():
        ET.SubElement(properties, "property", name=name, value="" if value is None else str(value))
    for family in (*result.families, *result.beyond):
        for test in family.tests:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{result.submission.name}.{test.family}",
                name=test.name,
                time=f"{test.duration:.3f}",
            )
            earned, share = family.test_points(test)
            props = ET.SubElement(case, "properties")
            for name, value in (
                ("status", str(test.status)),
                ("family", test.family),
                ("kind", test.kind),
                ("score", f"{earned:g}"),
                ("max_score", f"{share:g}"),
            ):
                ET.SubElement(props, "property", name=name, value=value)
            if test.status != Status.PASSED:
                tag = "error" if test.status in ERRORS else "failure"
                element = ET.SubElement(case, tag, message=f"{test.status}: {test.message}")
                element.text = test.details or test.message
    # The assignment's rules: what a reading of the source found, and what the worker saw,
    # beside the tests' verdicts (not a test: a use changes no test's verdict, and counts only
    # through the rubric).
    rules = [f"forbidden: {f}" for f in result.submission.forbidden]
    rules += [f"not read: {u}" for u in result.submission.unread]
    ET.SubElement(suite, "system-out").text = "\n".join(
        [
            "assignment rules (static reading):",
            *(rules or ["no forbidden use found"]),
            *called_lines(result.submission),
        ]
    )
    return suite


def _own_inputs(result: Score) -> dict[str, object]:
    """A submission graded on inputs of its own (`--per-student`): its suite says which."""
    submission = result.submission
    return {"inputs": submission.inputs, "seed": submission.seed} if submission.inputs else {}


def write_junit(results: list[Score], path: Path, run: dict[str, object]) -> None:
    """Written only once a strict parser reads it back: ElementTree writes whatever text it
    is given (an ESC raw, a lone surrogate as `&#56575;`), which no XML reader accepts, and
    one such test in the class would make the whole file unreadable."""
    root = ET.Element("testsuites", name="cs336-grade")
    root.extend(_suite(r, run | _own_inputs(r)) for r in results)
    ET.indent(root)
    document = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    try:
        ET.fromstring(document)
    except ET.ParseError as error:
        raise GraderError(f"cannot write {path}: not well-formed XML ({error})") from None
    path.write_bytes(document)
