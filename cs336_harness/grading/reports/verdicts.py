"""What every report says, in the same words on every platform: of one test, its verdict, a
line (`verdict`), then the failure's details (`described`); of a submission, the line that
opens its output when every test failed alike (`same_failure`), and what the assignment's
rules found (`rules_lines`)."""

from __future__ import annotations

from cs336_harness.grading.results import GradedTest, Status, called_lines
from cs336_harness.grading.scoring import FamilyScore, Score


def verdict(test: GradedTest, family: FamilyScore) -> str:
    """One line: "passed", why a pass earns nothing, or the failure's message under its
    verdict ("failed: ...", "not implemented: run_rope")."""
    if test.status == Status.PASSED:
        if not family.counts(test):
            return (
                f"passed, for no points: an implementation that computes nothing passes it too "
                f"({test.trivial}); it earns once a {test.family} test that tells them apart "
                "passes"
            )
        if family.points == 0 and family.max_points > 0:
            return "passed (the family earns its points only when all its tests pass)"
        return "passed"
    # "not implemented: run_rope" says its verdict already.
    said = test.message.startswith(str(test.status))
    return test.message if said else f"{test.status}: {test.message}"


def details(test: GradedTest) -> str:
    """A failure's details without the message they open with (the verdict says it); ""
    for none."""
    text = test.details
    if test.message and text.startswith(test.message):
        text = text[len(test.message) :].lstrip("\n")
    return text if text.strip() else ""


def described(test: GradedTest, family: FamilyScore) -> str:
    """The verdict, then the details, a blank line apart."""
    more = details(test) if test.status != Status.PASSED else ""
    line = verdict(test, family)
    return f"{line}\n\n{more}" if more else line


def same_failure(result: Score) -> str:
    """The one message every test failed with (a syntax error, an import that fails), as
    the output's opening line; "" when the failures differ, or some test passed."""
    messages = {t.message for t in result.submission.tests if t.status != Status.PASSED}
    tests = result.submission.tests
    if len(messages) != 1 or any(t.status == Status.PASSED for t in tests) or len(tests) < 2:
        return ""
    return f"Every test failed the same way: {messages.pop()}"


def rules_lines(result: Score) -> list[str]:
    """The assignment's rules: what a reading of the source found, any penalty, and what
    the worker saw called. A use changes no test's verdict (a penalty, if the rubric sets
    one, comes off the score; the static reading's uses alone decide it)."""
    submission = result.submission
    lines = [f"forbidden: {f}" for f in submission.forbidden]
    lines += [f"not read: {u}" for u in submission.unread]
    if submission.forbidden_count > len(submission.forbidden):
        lines.append(f"... {submission.forbidden_count} forbidden uses in all")
    if result.penalty:
        lines.append(f"{result.penalty:g} points taken off the score (the rubric's [rules])")
    heading = "assignment rules (static reading of the source): " + (
        f"{submission.forbidden_count} forbidden use(s)"
        if submission.forbidden_count
        else "no forbidden use of torch.nn, torch.nn.functional or torch.optim found"
    )
    return [heading, *lines, *called_lines(submission)]
