"""The course's submission policies on Gradescope (the rubric's `[policy]`, off by default): a
cap on the submissions that count in a rolling window and a late penalty, applied to a run's
results.json, whose `extra_data.policy` (`RECORD`) carries the ledger of counted submissions
to the next run (docs/grading.md, "On Gradescope")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from cs336_harness.grading.gradescope.metadata import (
    MetadataError,
    Previous,
    SubmissionMetadata,
    parse_time,
)
from cs336_harness.grading.reports.gradescope import document, render
from cs336_harness.grading.scoring import LATE_UNITS, OUTPUT_FORMATS, Gradescope, SubmissionPolicy

# extra_data's key for what the policies did.
RECORD = "policy"
# Why a run counted or not, as its record says.
COUNTED, OVER_THE_CAP, NOT_GRADED = "counted", "over the cap", "not graded"


def _hours(hours: float) -> str:
    return f"{hours:g} hour" + ("" if hours == 1 else "s")


def _percent(fraction: float) -> str:
    return f"{round(fraction * 100, 4):g}%"


def _minutes_up(delta: timedelta) -> int:
    return max(0, math.ceil(delta.total_seconds() / 60))


def duration(delta: timedelta) -> str:
    """`delta` rounded up to the minute, as "1 d 3 h 5 min" (never shorter than it is)."""
    days, minutes = divmod(_minutes_up(delta), 24 * 60)
    hours, minutes = divmod(minutes, 60)
    parts = [f"{days} d"] if days else []
    parts += [f"{hours} h"] if hours else []
    return " ".join([*parts, f"{minutes} min"])


def when(time: datetime, now: datetime) -> str:
    """`time` in UTC and how long after `now` it is, both rounded up to the minute: a
    student who waits until then is never early."""
    shown = time.replace(second=0, microsecond=0)
    shown += timedelta(minutes=1) if shown < time else timedelta(0)
    return f"{shown.astimezone(UTC):%Y-%m-%d %H:%M} UTC, in {duration(time - now)}"


def _utc(time: datetime) -> str:
    return f"{time.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def _record(results: dict[str, Any] | None) -> dict[str, Any] | None:
    """The policy record of an earlier run's results, where it has a well-formed one."""
    extra = results.get("extra_data") if results else None
    record = extra.get(RECORD) if isinstance(extra, dict) else None
    return record if isinstance(record, dict) and isinstance(record.get("counted"), bool) else None


def _ledger(record: dict[str, Any]) -> list[datetime] | None:
    times = record.get("counted_at")
    if not isinstance(times, list):
        return None
    try:
        return [parse_time(t, "counted_at") for t in times]
    except MetadataError:
        return None


def counted_before(metadata: SubmissionMetadata) -> list[datetime]:
    """When the earlier submissions that count toward the cap were made, oldest first.

    Up to the latest earlier run whose record carries a ledger, the ledger says; after it
    (runs whose results Gradescope no longer gives) each counts unless Gradescope marks it
    errored (no score, `autograder_error`) or its results say it did not count."""
    previous = metadata.previous
    start, times = 0, []
    for i in range(len(previous) - 1, -1, -1):
        record = _record(previous[i].results)
        ledger = _ledger(record) if record else None
        if ledger is not None:
            start, times = i + 1, ledger
            break
    for entry in previous[start:]:
        record = _record(entry.results)
        if not entry.errored and (record is None or record["counted"]):
            times.append(entry.submitted_at)
    return sorted(t for t in times if t < metadata.created_at)


def frees_at(counted: list[datetime], policy: SubmissionPolicy) -> datetime | None:
    """When a submission next counts, given the times of those that count in the window
    (oldest first); None: one counts now."""
    excess = len(counted) - policy.max_submissions
    return None if excess < 0 else counted[excess] + policy.window


@dataclass(frozen=True)
class Lateness:
    late_by: timedelta
    # Started days or hours late (1 for a penalty taken once).
    units: int
    fraction: float


def lateness(policy: SubmissionPolicy, metadata: SubmissionMetadata) -> Lateness | None:
    """How late the submission is and what it costs; None when it is on time, or there is
    no due date or penalty."""
    if policy.late_penalty <= 0 or metadata.due is None or metadata.created_at <= metadata.due:
        return None
    late_by = metadata.created_at - metadata.due
    unit = LATE_UNITS[policy.late_penalty_per]
    units = 1 if unit is None else math.ceil(late_by / unit)
    return Lateness(late_by, units, round(min(1.0, units * policy.late_penalty), 6))


def _prepend(report: dict[str, Any], lines: list[str], record: dict[str, Any]) -> None:
    """`lines` as a block of their own before the report's output; the record keeps the
    block's length, so that a later run can take the output without it."""
    fmt = report.get("output_format")
    block = render("\n".join(lines), fmt if fmt in OUTPUT_FORMATS else "text")
    output = report.get("output") or ""
    report["output"] = f"{block}\n\n{output}" if output else block
    record["prefix"] = len(report["output"]) - len(output)


def _own_output(results: dict[str, Any]) -> str:
    """An earlier run's output without the block its policies put first."""
    output = results.get("output")
    if not isinstance(output, str):
        return ""
    prefix = (_record(results) or {}).get("prefix")
    if isinstance(prefix, int) and not isinstance(prefix, bool) and 0 <= prefix <= len(output):
        return output[prefix:]
    return output


class RunPolicy:
    """The policies applied to one run: what its submission_metadata.json says, against
    the rubric's `[policy]`."""

    def __init__(self, policy: SubmissionPolicy, metadata: SubmissionMetadata) -> None:
        self.policy, self.metadata = policy, metadata
        self.now = metadata.created_at
        earlier = counted_before(metadata) if policy.capped else []
        # The earlier counted submissions in the window that ends with this one.
        self.in_window = [t for t in earlier if t > self.now - policy.window]

    @property
    def over_the_cap(self) -> bool:
        return self.policy.capped and len(self.in_window) >= self.policy.max_submissions

    def _cap_record(self, counted: bool, reason: str) -> dict[str, Any]:
        record: dict[str, Any] = {"counted": counted, "reason": reason}
        if not self.policy.capped:
            return record
        ledger = [*self.in_window, *([self.now] if counted else [])]
        frees = frees_at(ledger, self.policy)
        return record | {
            "counted_at": [t.isoformat() for t in ledger],
            "submissions": {
                "max": self.policy.max_submissions,
                "window_hours": self.policy.window_hours,
                "counted": len(ledger),
                "left": max(0, self.policy.max_submissions - len(ledger)),
                "next_counts_at": frees.isoformat() if frees else None,
            },
        }

    def _left_line(self, record: dict[str, Any], counted: bool) -> str:
        counts = record["submissions"]
        most = self.policy.max_submissions
        which = "this one counted" if counted else "this upload was not graded and did not count"
        line = (
            f"Submissions: {counts['left']} of {most} left ({most} count in any "
            f"{_hours(self.policy.window_hours)}; {which})"
        )
        if counts["left"]:
            return line + "."
        frees = frees_at([*self.in_window, *([self.now] if counted else [])], self.policy)
        return (
            f"{line}: your next submission counts from {when(frees, self.now)}; one made "
            "before then is not graded and keeps this grade."
        )

    def _late(self, report: dict[str, Any], record: dict[str, Any]) -> list[str]:
        """The late penalty taken off `report`'s score: the lines that say so."""
        late = lateness(self.policy, self.metadata)
        if late is None:
            return []
        before = report.get("score", 0.0)
        after = round(max(0.0, before * (1 - late.fraction)), 6)
        report["score"] = after
        for entry in report.get("leaderboard", []):
            if entry.get("name") == "Score":
                entry["value"] = after
        per = self.policy.late_penalty_per
        rate = _percent(self.policy.late_penalty)
        how = (
            f"{late.units} started {per}{'s' if late.units > 1 else ''} at {rate} each"
            if per != "once"
            else "the course's late penalty"
        )
        line = (
            f"Late: submitted {duration(late.late_by)} after the due date "
            f"({_utc(self.metadata.due)}): {_percent(late.fraction)} off the score ({how}), "
            f"{before:g} -> {after:g} points."
        )
        late_due = self.metadata.late_due
        if late_due is not None and self.now > late_due:
            line += (
                f" It came after the late due date ({_utc(late_due)}), when Gradescope takes "
                "uploads from staff only."
            )
        record["late"] = {
            "due_date": self.metadata.due.isoformat(),
            "late_due_date": late_due.isoformat() if late_due else None,
            "late_by_seconds": round(late.late_by.total_seconds(), 3),
            "units": late.units,
            "per": per,
            "fraction": late.fraction,
            "score_before": before,
            "points_off": round(before - after, 6),
            "reason": line,
        }
        return [line]

    def graded(self, report: dict[str, Any]) -> dict[str, Any]:
        """A graded run's results: the late penalty taken, what is left of the cap said."""
        record = self._cap_record(True, COUNTED)
        lines = self._late(report, record)
        if self.policy.capped:
            lines.append(self._left_line(record, counted=True))
        return self._marked(report, lines, record)

    def not_graded(self, report: dict[str, Any]) -> dict[str, Any]:
        """The results of an upload in which no submission was found: it does not count."""
        record = self._cap_record(False, NOT_GRADED)
        lines = [self._left_line(record, counted=False)] if self.policy.capped else []
        return self._marked(report, lines, record)

    def _marked(
        self, report: dict[str, Any], lines: list[str], record: dict[str, Any]
    ) -> dict[str, Any]:
        if lines:
            _prepend(report, lines, record)
        extra = report.get("extra_data")
        report["extra_data"] = (extra if isinstance(extra, dict) else {}) | {RECORD: record}
        return report

    def _kept(self) -> tuple[Previous, datetime] | None:
        """The latest earlier submission whose grade stands, and when the grade was made:
        a counted run's, or an over-the-cap run's, which carries the grade it kept."""
        for entry in reversed(self.metadata.previous):
            record = _record(entry.results)
            if entry.errored or (record and record.get("reason") == NOT_GRADED):
                continue
            if record and record.get("reason") == OVER_THE_CAP:
                try:
                    return entry, parse_time(record.get("kept_from"), "kept_from")
                except MetadataError:
                    return entry, entry.submitted_at
            return entry, entry.submitted_at
        return None

    def capped(self, settings: Gradescope) -> dict[str, Any]:
        """The results of a run over the cap: not graded; the last counted grade stands,
        with its tests where Gradescope gave its results, marked as kept."""
        most, hours = self.policy.max_submissions, _hours(self.policy.window_hours)
        lines = [
            f"Not graded: {len(self.in_window)} of your submissions in the last {hours} count "
            f"already, the most the course allows ({most} in any {hours}). Your next "
            f"submission counts from {when(frees_at(self.in_window, self.policy), self.now)}."
        ]
        kept = self._kept()
        record = self._cap_record(False, OVER_THE_CAP)
        if kept is None:
            lines.append("You have no graded submission yet: this one scores 0.")
            return self._marked(document(0.0, "", settings), lines, record)
        entry, graded_at = kept
        record["kept_from"] = graded_at.isoformat()
        report = document(entry.score, "", settings)
        results = entry.results or {}
        tests = results.get("tests")
        if isinstance(tests, list) and all(isinstance(t, dict) for t in tests) and tests:
            lines.append(
                f"Your grade stays that of your submission of {_utc(graded_at)}: "
                f"{entry.score:g} points, its results below."
            )
            report["output"] = _own_output(results)
            report["tests"] = [self._kept_test(t, graded_at) for t in tests]
        else:
            lines.append(
                f"Your grade stays that of your submission of {_utc(graded_at)}: "
                f"{entry.score:g} points (its results are on that submission's page)."
            )
        late = (_record(results) or {}).get("late")
        if isinstance(late, dict) and isinstance(late.get("reason"), str):
            lines.append(late["reason"])  # the penalty within the grade that stands
            record["late"] = late
        if isinstance(results.get("max_score"), int | float):
            report["max_score"] = results["max_score"]
        if isinstance(results.get("extra_data"), dict):
            report["extra_data"] = results["extra_data"]
        return self._marked(report, lines, record)

    @staticmethod
    def _kept_test(test: dict[str, Any], graded_at: datetime) -> dict[str, Any]:
        extra = test.get("extra_data")
        kept = {"kept_from": graded_at.isoformat()}
        return test | {"extra_data": (extra if isinstance(extra, dict) else {}) | kept}
