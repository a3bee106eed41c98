"""What the reports keep of a submission's rules: the forbidden uses its source shows and the
forbidden calls its worker saw, cleaned and bounded."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from itertools import groupby
from pathlib import Path
from typing import Any

from cs336_harness.rules.called import Called
from cs336_harness.rules.policy import Policy
from cs336_harness.rules.static_scan import scan_submission
from cs336_harness.untrusted import PATH_CHARS, clean

# Forbidden uses and unread files kept per submission (the count is always exact).
RULES_KEPT = 50


def read_rules(submission: Path, policy: Policy) -> dict[str, Any]:
    """The assignment's rules read from the copy's source, here in the trusted process (it
    is parsed, never run); file names and strings in it are the submission's, so cleaned."""
    findings, unscanned = scan_submission(submission, policy, whole=True)
    return {
        "forbidden_count": len(findings),
        "forbidden": tuple(clean(str(f), PATH_CHARS) for f in findings[:RULES_KEPT]),
        "unread": tuple(
            clean(f"{u.path} ({u.reason})", PATH_CHARS) for u in unscanned[:RULES_KEPT]
        ),
    }


# Forbidden call sites kept per family (the count is of all that the judge recorded): every
# family a submission breaks the rules in stays in the reports, however many its neighbours.
CALLED_KEPT = 8


def _kept(sites: list[Called]) -> list[Called]:
    """The first CALLED_KEPT of one family's sites (in order), each name's first site
    before any name's second: the reports name every forbidden definition they can."""
    first: dict[str, Called] = {}
    for site in sites:
        first.setdefault(site.name, site)
    firsts = list(first.values())[:CALLED_KEPT]
    others = [site for site in sites if site not in firsts]
    return sorted(firsts + others[: CALLED_KEPT - len(firsts)])


def called_findings(sites: Iterable[Called], at_least: int = 0) -> dict[str, Any]:
    """The forbidden calls the worker reported, one per (family, path, line, name) with
    their counts summed, some of each family (`_kept`), and how many there are
    (`at_least`: sites already counted, perhaps no longer listed). The record's text is
    cleaned already."""
    counts: Counter[Called] = Counter()
    for site in sites:
        counts[replace(site, count=0)] += site.count
    merged = sorted(replace(site, count=count) for site, count in counts.items())
    kept = [k for _, family in groupby(merged, lambda s: s.family) for k in _kept(list(family))]
    return {"called_count": max(len(merged), at_least), "called": tuple(kept)}
