"""GitHub Classroom's autograding reporter, its own JavaScript run with Node on the runners'
results the grader writes, as its GitHub Action runs it: `INPUT_RUNNERS` names the runners,
`<RUNNER>_RESULTS` holds each one's base64 JSON.

The reporter is not on npm and its code is not this project's to copy, so it is read from
a copy fetched from GitHub: CLASSROOM_REPORTER names a git clone of
classroom-resources/autograding-grading-reporter (its `v1` tag's dist/main.js, the bundle
`uses: ...@v1` runs) or that main.js itself; by default, this machine's fetched copy.

`python -m tests.platforms.classroom_reporter DIR` runs it on DIR/classroom.json (a
cs336-grade report folder) and prints its output, then the points it gave and the grader's."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

FETCHED = Path("/work/.mirror/classroom-resources+autograding-grading-reporter/repo")
RELEASE = "v1"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
NOTICE = re.compile(r"^::notice title=Autograding report::(.*)$", re.MULTILINE)
ROW = re.compile(r"^│ (.+?)\s*│ (\S+)\s*│ (\S+)\s*│$")


def reporter_source() -> str | None:
    """The reporter's bundled JavaScript, or None where no copy and no Node are here."""
    if shutil.which("node") is None:
        return None
    where = Path(os.environ.get("CLASSROOM_REPORTER", FETCHED))
    if where.is_file():
        return where.read_text()
    if not where.exists():
        return None
    shown = subprocess.run(
        ["git", "-C", str(where), "show", f"{RELEASE}:dist/main.js"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return shown.stdout if shown.returncode == 0 else None


@dataclass(frozen=True)
class Reported:
    """What the reporter printed: its output (colours removed), the points its annotation
    hands GitHub Classroom, and its table's rows (runner name as shown, score, max)."""

    output: str
    returncode: int
    total: float
    most: float
    rows: list[tuple[str, float, float]]


def run_reporter(runners: dict[str, dict], source: str) -> Reported:
    """Run the reporter's `source` on `runners` (runner → its result), as its Action does."""
    env = {"PATH": os.environ["PATH"], "INPUT_RUNNERS": ",".join(runners)}
    for name, result in runners.items():
        data = json.dumps(result, ensure_ascii=False).encode()
        env[f"{name.upper()}_RESULTS"] = base64.b64encode(data).decode()
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "main.js"
        script.write_text(source)
        done = subprocess.run(["node", str(script)], env=env, capture_output=True, text=True)
    output = ANSI.sub("", done.stdout + done.stderr)
    notice = NOTICE.search(output)
    points = json.loads(notice[1]) if notice else {"totalPoints": None, "maxPoints": None}
    rows = [(m[1], float(m[2]), float(m[3])) for m in map(ROW.match, output.splitlines()) if m]
    return Reported(output, done.returncode, points["totalPoints"], points["maxPoints"], rows)


def main(argv: list[str]) -> int:
    folder = Path(argv[0])
    source = reporter_source()
    if source is None:
        print("no reporter here: set CLASSROOM_REPORTER to a clone of "
              "classroom-resources/autograding-grading-reporter, and install Node")  # fmt: skip
        return 2
    reported = run_reporter(json.loads((folder / "classroom.json").read_text()), source)
    grader = json.loads((folder / "results.json").read_text())
    print(reported.output)
    print(f"the reporter: {reported.total:g} / {reported.most:g} points; cs336-grade: "
          f"{grader['score']:g} / {grader['max_score']:g}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
