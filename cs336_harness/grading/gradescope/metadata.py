"""Gradescope's `submission_metadata.json` (this submission's time, the assignment's dates and
each user's own, the earlier submissions) read into a typed object: Gradescope writes it, but
a field read here that is missing or of the wrong type is still a `MetadataError` naming it."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cs336_harness.grading.inputs.student_inputs import Student

# Its name in Gradescope's /autograder.
METADATA = "submission_metadata.json"
# Larger than any metadata Gradescope writes (its one embedded results.json included).
MAX_BYTES = 64 << 20


class MetadataError(ValueError):
    """submission_metadata.json is missing or malformed: what is wrong, in one line."""


@dataclass(frozen=True)
class Previous:
    """An earlier submission of the same student or group, as Gradescope lists it."""

    submitted_at: datetime
    # None: the run gave no score (the autograder failed).
    score: float | None
    # Gradescope's flag for a run that failed at no fault of the student.
    autograder_error: bool
    # That run's results.json; Gradescope gives it for the latest earlier submission only.
    results: dict[str, Any] | None

    @property
    def errored(self) -> bool:
        return self.autograder_error or self.score is None


@dataclass(frozen=True)
class SubmissionMetadata:
    created_at: datetime
    # The dates that apply to this submission: each user's own, where Gradescope gives one
    # (an extension), over the assignment's; for a group, the latest of its members'.
    due: datetime | None
    late_due: datetime | None
    # Gradescope's user ids of who submitted it, ascending (several for a group).
    user_ids: tuple[int, ...]
    # The earlier submissions, oldest first: those made before this one only (a regrade
    # may list later ones).
    previous: tuple[Previous, ...]


def parse_time(value: object, where: str) -> datetime:
    """An ISO 8601 date with its time zone, as Gradescope writes them."""
    if not isinstance(value, str):
        raise MetadataError(f"{where} is not a date: {value!r:.80}")
    try:
        time = datetime.fromisoformat(value)
    except ValueError:
        raise MetadataError(f"{where} is not an ISO 8601 date: {value!r:.80}") from None
    if time.tzinfo is None:
        raise MetadataError(f"{where} has no time zone: {value!r:.80}")
    return time


def _optional_time(table: dict[str, Any], key: str, where: str) -> datetime | None:
    value = table.get(key)
    return None if value is None else parse_time(value, f"{where}.{key}")


def _table(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MetadataError(f"{where} is not an object")
    return value


def _score(value: object, where: str) -> float | None:
    """A number, or one written as a string (Gradescope writes total_points so)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise MetadataError(f"{where} is not a number: {value!r:.80}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise MetadataError(f"{where} is not a number: {value!r:.80}")
    return float(value)


def _previous(value: object, index: int) -> Previous:
    where = f"previous_submissions[{index}]"
    entry = _table(value, where)
    results = entry.get("results")
    flag = entry.get("autograder_error", False)
    if not isinstance(flag, bool):
        raise MetadataError(f"{where}.autograder_error is not true or false")
    return Previous(
        submitted_at=parse_time(entry.get("submission_time"), f"{where}.submission_time"),
        score=_score(entry.get("score"), f"{where}.score"),
        autograder_error=flag,
        # Anything but an object (absent, null, {} for an older submission) holds no results.
        results=results if isinstance(results, dict) and results else None,
    )


def _submitted(entry: Previous) -> datetime:
    return entry.submitted_at


def _latest(times: list[datetime | None]) -> datetime | None:
    known = [t for t in times if t is not None]
    return max(known) if known else None


def parse(data: object) -> SubmissionMetadata:
    """The metadata in `data` (the file's JSON)."""
    top = _table(data, "the metadata")
    created_at = parse_time(top.get("created_at"), "created_at")
    assignment = _table(top.get("assignment"), "assignment")
    users = top.get("users")
    if not isinstance(users, list) or not users:
        raise MetadataError("users is not a list of the submission's users")
    ids, dues, late_dues = [], [], []
    for i, value in enumerate(users):
        user = _table(value, f"users[{i}]")
        user_id = user.get("id")
        if isinstance(user_id, bool) or not isinstance(user_id, int):
            raise MetadataError(f"users[{i}].id is not an integer: {user_id!r:.80}")
        ids.append(user_id)
        # A user's own dates (an extension), where given, over the assignment's.
        own = _table(user.get("assignment") or {}, f"users[{i}].assignment")
        for key, dates in (("due_date", dues), ("late_due_date", late_dues)):
            if key in own:
                dates.append(_optional_time(own, key, f"users[{i}].assignment"))
            else:
                dates.append(_optional_time(assignment, key, "assignment"))
    entries = top.get("previous_submissions", [])
    if not isinstance(entries, list):
        raise MetadataError("previous_submissions is not a list")
    previous = [_previous(entry, i) for i, entry in enumerate(entries)]
    earlier = sorted((p for p in previous if p.submitted_at < created_at), key=_submitted)
    return SubmissionMetadata(
        created_at=created_at,
        due=_latest(dues),
        late_due=_latest(late_dues),
        user_ids=tuple(sorted(ids)),
        previous=tuple(earlier),
    )


def read(path: Path) -> SubmissionMetadata:
    """The metadata at `path`; a MetadataError that says why where it cannot be read."""
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_BYTES + 1)
    except OSError as error:
        raise MetadataError(f"cannot read {path}: {error.strerror or error}") from None
    if len(raw) > MAX_BYTES:
        raise MetadataError(f"{path} is larger than {MAX_BYTES >> 20} MiB")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise MetadataError(f"{path} is not JSON: {error}") from None
    return parse(data)


def gradescope_student(metadata: Path) -> Student:
    """The student, or the group, of a Gradescope submission, from its
    `submission_metadata.json`: the users' ids, sorted, so that a group's every member and
    every resubmission get the same key. A `MetadataError` (a ValueError) says what is
    wrong."""
    ids = [str(i) for i in read(metadata).user_ids]
    who = "user" if len(ids) == 1 else "group of users"
    return Student(f"gradescope:{','.join(ids)}", f"Gradescope {who} {', '.join(ids)}")
