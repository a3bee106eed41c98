"""What one judge run grades, and how: the grader writes it as `job.json`, the judge's
recorder reads it (`--grading-job`)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cs336_harness.grading.sandbox.cgroups import Cgroups
from cs336_harness.grading.sandbox.limits import Limits
from cs336_harness.grading.sandbox.tiers import Sandbox
from cs336_harness.rules.policy import DEFAULT as DEFAULT_POLICY
from cs336_harness.rules.policy import Policy


@dataclass(frozen=True)
class Job:
    """What one judge run grades, and how: written by the grader, read by the plugin."""

    results: Path
    submission: Path
    harness: Path
    worker_log: Path
    lane: int
    limits: Limits
    sandbox: Sandbox
    cgroups: Cgroups = field(default_factory=Cgroups)
    # The assignment's rules, for the worker to watch the submission's calls with.
    policy: Policy = DEFAULT_POLICY
    # What the worker's os.cpu_count() says: the lane's CPUs (`cgroups.lane_cpu_count`).
    cpus: int = 1
    # When the judge must have finished, in seconds since the epoch (`cs336-grade
    # --deadline`); None: no deadline but the limits'.
    deadline: float | None = None
    # The user id its workers run as when the grader is root (`sandbox/tiers.py`'s `draw_uid`).
    uid: int = 0

    def to_json(self) -> str:
        return json.dumps(
            {
                "results": str(self.results),
                "submission": str(self.submission),
                "harness": str(self.harness),
                "worker_log": str(self.worker_log),
                "lane": self.lane,
                "limits": self.limits.to_dict(),
                "sandbox": asdict(self.sandbox),
                "cgroups": self.cgroups.to_dict(),
                "policy": self.policy.to_json(),
                "cpus": self.cpus,
                "deadline": self.deadline,
                "uid": self.uid,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        return cls(
            results=Path(data["results"]),
            submission=Path(data["submission"]),
            harness=Path(data["harness"]),
            worker_log=Path(data["worker_log"]),
            lane=int(data["lane"]),
            limits=Limits(**data["limits"]),
            sandbox=Sandbox(
                **{k: tuple(v) if isinstance(v, list) else v for k, v in data["sandbox"].items()}
            ),
            cgroups=Cgroups.from_dict(data.get("cgroups")),
            policy=Policy.from_json(data["policy"]),
            cpus=int(data["cpus"]),
            deadline=data.get("deadline"),
            uid=int(data.get("uid", 0)),
        )
