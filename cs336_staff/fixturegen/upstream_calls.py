"""Why a case is hardening when its call is one upstream's tests never make.

Upstream's calls are the contract (docs/contract.md, "What upstream's tests pass"): every
family's contract cases call its adapters with the argument types and shapes upstream's
tests (2025 and 2026) pass. A case that calls with another type or shape a reasonable
caller might use (more or fewer axes, another dtype, a broadcast mask, a generator, a file
object) still checks behaviour this project chose, and is marked hardening with the reason
this module writes, so that every such reason reads alike in the reports.
"""

from __future__ import annotations


def upstream_passes(what: str, this: str) -> str:
    """`upstream's tests pass <what>; <this> is a call they never make`."""
    return f"upstream's tests pass {what}; {this} is a call they never make"
