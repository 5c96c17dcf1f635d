"""A solved pose (IkSolution), the flow's Condition it was solved under, and the verdicts on
refined poses that the solve strategy decides by (pins met, misses alike, total miss)."""
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics
from ..core.skeleton import NUM_JOINTS, PARENTS

CARRY_MET = 1e-3   # metres (radians): a kept solution this close to every effector is carried (SolveOptions.keep)
CREEP_MARGIN = 1e-3   # metres (radians): a creeping drag step no nearer than the last by this stays creeping
SAME_MISS = 1e-3   # metres (radians): two solves missing an effector this alike miss it the same


class _FoundOnFirstUse:
    """A dataclass field that may be given as a function of no arguments: it is called the
    first time the field is read, and its value kept. A solution's latent costs a pass of the
    flow backwards that most solves never need (only keeping a pose for its fallback does)."""

    def __set_name__(self, owner, name):
        self.slot = "_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            return None   # the field's default
        value = obj.__dict__.get(self.slot)
        if callable(value):
            value = obj.__dict__[self.slot] = value()
        return value

    def __set__(self, obj, value):
        obj.__dict__[self.slot] = value


@dataclass(frozen=True)
class IkSolution:
    """A solved pose: local rotations (24, 3, 3) and root translation (3,) for a body with
    rest joints (24, 3); `positions` (24, 3) are computed on first use. After refinement,
    `errors` (E,) per effector (metres, radians) and `misses`, the effectors not met
    (reach.Miss, largest first; empty when all hold). `latent` (72,): the pose's latent in
    the flow under its effectors, when the flow solved it, found on first use (given as an
    array or a function of no arguments; `dataclasses.replace` without a new latent reads
    it). `condition`: the Condition of its effectors when the flow solved it, which
    `SolveOptions.keep` carries the pose from."""

    local_rot: np.ndarray
    trans: np.ndarray
    rest: np.ndarray
    errors: np.ndarray = None
    misses: tuple = ()
    latent: np.ndarray = _FoundOnFirstUse()
    condition: object = None

    @cached_property
    def positions(self):
        return forward_kinematics(self.local_rot, self.rest, PARENTS, self.trans).positions


@dataclass(frozen=True)
class Condition:
    """What the flow decodes under, for B effector sets (`SmplIk.condition`): the deterministic
    network's pose, local rotations (B, 24, 3, 3) and trans (B, 3), the flow's context
    (B, C) from the network's last hidden layer, and that layer (B, width) and the network
    input (B, 504), which the hypotheses head reads."""

    local_rot: np.ndarray
    trans: np.ndarray
    context: np.ndarray
    hidden: np.ndarray = None
    inputs: np.ndarray = None


def pose_arrays(pose, name):
    """(local_rot (24, 3, 3), trans (3,)) (or an IkSolution's) as float64 arrays, or a clear
    error naming `name`."""
    if isinstance(pose, IkSolution):
        pose = pose.local_rot, pose.trans
    try:
        local, trans = (np.asarray(x, dtype=np.float64) for x in pose)
    except (TypeError, ValueError):
        raise SmplIkError(f"{name} must be (local rotations (24, 3, 3), translation (3,)); "
                          f"got {type(pose).__name__}") from None
    if local.shape != (NUM_JOINTS, 3, 3) or trans.shape != (3,):
        raise SmplIkError(f"{name} must be local rotations (24, 3, 3) and a translation (3,); "
                          f"got {local.shape} and {trans.shape}")
    if not (np.all(np.isfinite(local)) and np.all(np.isfinite(trans))):
        raise SmplIkError(f"{name} holds NaN or infinite numbers")
    return local, trans


def same_misses(a, b):
    """Whether two solves' misses (reach.Miss) name the same effectors, each as far from its
    target to within SAME_MISS."""
    key = lambda m: (m.joint, m.kind)   # noqa: E731
    a, b = sorted(a, key=key), sorted(b, key=key)
    return [key(m) for m in a] == [key(m) for m in b] and all(abs(m.error - n.error) < SAME_MISS for m, n in zip(a, b))


def with_reason(refined, reason):
    """A refined pose (Refined or IkSolution) with `reason` given to each hard pin it misses
    that has none yet (not to a contact point under the floor)."""
    if not reason:
        return refined
    misses = tuple(m if m.soft or m.reason or m.floor else replace(m, reason=reason) for m in refined.misses)
    return replace(refined, misses=misses)


def stretched(refined):
    """Whether a pin's miss already has its reason: from the refinement, a target out of the
    body's reach of another (`reach.out_of_reach`), which no start meets."""
    return any(m.reason and not m.soft for m in refined.misses)


def pins_met(refined):
    """Whether a refined pose (or IkSolution) misses no hard effector."""
    return not any(not m.soft for m in refined.misses)


def kept_missed(solution):
    """Whether a kept solution missed an effector by more than CARRY_MET (False without errors)."""
    return isinstance(solution, IkSolution) and solution.errors is not None and \
        np.max(solution.errors, initial=0.0) > CARRY_MET


def no_nearer(solution, kept):
    """Whether a solution, every hard pin held, is no nearer its worst-missed effector than the
    kept solution was to its own (within CREEP_MARGIN): the drag stays as far out of reach."""
    return not any(not m.soft and not m.gave_way for m in solution.misses) and \
        np.max(solution.errors, initial=0.0) >= np.max(kept.errors, initial=0.0) - CREEP_MARGIN


def miss_total(refined):
    """A refined pose's misses as one number: hard ones first (a metre of hard miss outweighs
    any soft one), then soft."""
    return sum(m.error * (1.0 if m.soft else 1e3) for m in refined.misses)
