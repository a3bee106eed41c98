"""Float64 NumPy reference math: the ground truth that expected test outputs are computed with.

NumPy only, no torch, so the oracle shares no code and no rounding with the implementations it
checks. Every function converts its inputs to float64 and returns float64 arrays. Each
differentiable function has its hand-written ``*_backward`` beside it in its module
(conventions and the finite-difference check: `gradients`).

The package re-exports each module's ``__all__``, so a function added to a module and to its
``__all__`` is ``oracle.<name>`` with no edit here.
"""

from cs336_staff.oracle import attention, functional, gradients, model, training
from cs336_staff.oracle.attention import *  # noqa: F403
from cs336_staff.oracle.functional import *  # noqa: F403
from cs336_staff.oracle.gradients import *  # noqa: F403
from cs336_staff.oracle.model import *  # noqa: F403
from cs336_staff.oracle.training import *  # noqa: F403

__all__ = [
    *functional.__all__,
    *attention.__all__,
    *model.__all__,
    *training.__all__,
    *gradients.__all__,
]
