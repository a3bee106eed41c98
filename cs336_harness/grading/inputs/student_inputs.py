"""Inputs per student: each student's seed, HMAC-SHA256 of who they are under the assignment's
secret, the same for every resubmission and another for every student (docs/grading.md,
"On Gradescope", "Inputs per student")."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

# Bits of a student's seed: as wide as the seeds `--seed` takes by default, short enough to
# type in a regrade.
SEED_BITS = 31
# Bits of a secret drawn here: far past any search over secrets that one student's seed
# could narrow down.
SECRET_BITS = 128


def new_secret() -> str:
    return secrets.token_hex(SECRET_BITS // 8)


def student_seed(secret: str, key: str) -> int:
    """The seed of the inputs of the student (or group) `key`, under `secret`."""
    digest = hmac.new(secret.encode(), key.encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") % (1 << SEED_BITS)


@dataclass(frozen=True)
class Student:
    """Whom a submission is graded for: `key` names the student (or group) in the seed,
    `description` in the reports."""

    key: str
    description: str


def named_student(name: str) -> Student:
    """A student known by a name: the submission's folder, or a key the course gives."""
    return Student(f"name:{name}", f"student {name!r}")
