"""PrairieLearn's results.json, checked as PrairieLearn reads it: `problems` lists every way
a document departs from what its docs (docs/externalGrading.md, "Grading results") and its
code (apps/grader-host/src/index.ts, apps/prairielearn/src/lib/externalGraderCommon.ts's
makeGradingResult, elements/pl-external-grader-results) accept. PrairieLearn publishes no
JSON Schema for the file; these are its rules, written from those sources.

`python -m tests.platforms.prairielearn_results FILE` prints the problems, or the score and
the tests' points, and exits 1 on a problem."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

# The grader host reads no results.json over 1 MB (index.ts: "Cap output at 1MB").
MAX_BYTES = 1024 * 1024
NUMBER = (int, float)


def _is_number(value: object) -> bool:
    return isinstance(value, NUMBER) and not isinstance(value, bool) and math.isfinite(value)


def _strings(value: object) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    )


def _images(value: object, where: str) -> list[str]:
    """`images`: data URLs, each an object with a `url` (and a `label`) or a string."""
    if not isinstance(value, list):
        return [f"{where}.images is not an array"]
    problems = []
    for i, image in enumerate(value):
        ok = isinstance(image, str) or (
            isinstance(image, dict) and isinstance(image.get("url"), str)
            and isinstance(image.get("label", ""), str)
        )  # fmt: skip
        if not ok:
            problems.append(f"{where}.images[{i}] is neither a URL nor {{url, label}}")
    return problems


def _test_problems(test: object, where: str) -> list[str]:
    if not isinstance(test, dict):
        return [f"{where} is not an object"]
    problems = []
    for key in ("name", "description", "message", "output"):
        if key in test and not isinstance(test[key], str):
            problems.append(f"{where}.{key} is not a string")
    # The element shows per-test points only when every test has both (the docs).
    for key in ("points", "max_points"):
        if not _is_number(test.get(key)):
            problems.append(f"{where}.{key} is missing or not a finite number")
    if "images" in test:
        problems += _images(test["images"], where)
    return problems


def problems(data: bytes) -> list[str]:
    """Every way the bytes of a results.json depart from what PrairieLearn accepts."""
    if len(data) > MAX_BYTES:
        return [f"{len(data)} bytes: over PrairieLearn's 1 MB"]
    try:
        document: Any = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        return [f"not JSON PrairieLearn can parse: {error}"]
    if not isinstance(document, dict):
        return ["not a JSON object"]
    found = []
    gradable = document.get("gradable", True)
    if not isinstance(gradable, bool):
        found.append("gradable is not true or false")
    score = document.get("score")
    if gradable is True:
        if not _is_number(score) or not 0 <= score <= 1:
            found.append(f"score {score!r} is not a number from 0 to 1")
    elif score is not None and not _is_number(score):
        found.append(f"score {score!r} is not a number")
    if "format_errors" in document and not _strings(document["format_errors"]):
        found.append("format_errors is neither a string nor an array of strings")
    for key in ("message", "output"):
        if key in document and not isinstance(document[key], str):
            found.append(f"{key} is not a string")
    if "images" in document:
        found += _images(document["images"], "results")
    tests = document.get("tests", [])
    if not isinstance(tests, list):
        found.append("tests is not an array")
        tests = []
    for i, test in enumerate(tests):
        found += _test_problems(test, f"tests[{i}]")
    return found


def summary(document: dict[str, Any]) -> str:
    """The score, and the points the element adds up from the tests."""
    if document.get("gradable") is False:
        return f"not gradable: {document.get('message', '')}"
    tests = document.get("tests", [])
    points = sum(t["points"] for t in tests)
    most = sum(t["max_points"] for t in tests)
    return f"score {document['score']:g}; tests {points:g} / {most:g} points ({len(tests)} tests)"


def main(argv: list[str]) -> int:
    data = Path(argv[0]).read_bytes()
    found = problems(data)
    if found:
        print("PrairieLearn would refuse or misread it:\n  " + "\n  ".join(found))
        return 1
    print(f"accepted as PrairieLearn reads results.json; {summary(json.loads(data))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
