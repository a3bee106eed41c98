"""The files a course puts on the platforms, read by the platforms' own rules:
`python -m tests.platforms.platform_files WORKFLOW INFO_JSON SCHEMA` reads the Classroom
workflow as YAML and prints its reporter step's runners, and validates the question's
info.json against PrairieLearn's JSON Schema for it (its infoQuestion.json). PyYAML and
jsonschema are not this project's dependencies: `uv run --with pyyaml --with jsonschema`
brings them for the one run (tests/platforms/test_platforms.py does)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import yaml


def main(argv: list[str]) -> int:
    workflow, info, schema = map(Path, argv)
    flow = yaml.safe_load(workflow.read_text())
    steps = flow["jobs"]["run-autograding-tests"]["steps"]
    report = next(s for s in steps if "autograding-grading-reporter" in s.get("uses", ""))
    jsonschema.validate(json.loads(info.read_text()), json.loads(schema.read_text()))
    print(json.dumps({"runners": report["with"]["runners"], "env": sorted(report["env"])}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
