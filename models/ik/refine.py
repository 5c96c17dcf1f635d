"""Make effectors exact: damped least-squares (Levenberg-Marquardt) steps on forward
kinematics, starting from a network's pose and staying close to it, with priorities.

Unknowns are a small world-frame rotation at every joint (turning its subtree about it) and
the root translation. Two levels, solved as a prioritised (null-space) least squares each
step: first the hard constraints (hard effectors, joints at their range limits, contact
points at the floor), then the soft effectors, in what freedom the hard ones leave. So a
pose never breaks a hard pin to reach a soft target: the soft one goes as far as it can, and
what it still misses is reported (`Refined.misses`). When the hard pins cannot all be held
(one is out of reach of the others), one pin gives way: it is solved again as soft, so it
goes as far as the other pins allow and they hold, instead of every pin giving a little
(`RefineOptions.give_way`; which pin: `refine_pose`). The damping keeps each step short, so the
pose moves only as far as the effectors ask, and a target out of reach gives a stretched
pose, never NaN. The solver is `solver.py`; joint ranges `limits.py`; balance and
self-collision `soft_terms.py`; what a pose misses and why `reach.py`.
"""
from dataclasses import dataclass, field, replace

import numpy as np

from ..core.kinematics import FKResult, forward_kinematics
from ..core.rotations import nearest_rotation
from ..core.skeleton import FEET, JOINT_INDEX, PARENTS
from .effectors import Effector, EffectorKind, joint_of, kind_of
from .limits import Limits
from .reach import HARD_TOLERANCE, effector_misses, floor_misses, out_of_reach
from .residuals import Targets, effector_errors
from .soft_terms import COLLISION_ALLOWANCE, SoftTerms
from .solver import Problem, descend, descend_many

# times RefineOptions.iterations more steps for a pose with an arm still in the body: it mostly comes out
COLLISION_EXTRA = 2   # (docs/training_log.md, "Extra steps for an arm left in the body")
# metres: an arm this deep still takes those steps; one pushed out settles just past COLLISION_ALLOWANCE
COLLISION_DEEP = 0.01


@dataclass(frozen=True)
class RefineOptions:
    """joint_limits: keep knees and elbows inside JOINT_LIMITS. plant_feet: when the pose on
    screen is known (`SolveOptions.current_pose`), ankles pinned by position keep its
    foot orientation (`planted_feet`). floor: a height (body frame, metres along Y) that
    `contacts` (AttachedPoints, e.g. BodyModel.foot_contacts) stay above; None for no floor.
    give_way: when the hard pins cannot all be held, let one give way at a time (as soft)
    until the others hold; off, every pin gives a little. balance: when the body stands (a
    foot pinned by position, or on the floor), keep its centre of mass over the feet that
    carry weight (`SoftTerms`); self_collision: keep the hands and arms out of the trunk and
    thighs; both are soft goals, under the hard pins. body_parts: the body's
    cost.BodyParts (its masses, capsules and soles), None for the open body's scaled to the
    rest joints. iterations, damping: the least-squares loop's."""

    joint_limits: bool = True
    plant_feet: bool = True
    floor: float = None
    contacts: object = None
    give_way: bool = True
    balance: bool = True
    self_collision: bool = True
    body_parts: object = None
    iterations: int = 30
    damping: float = 1e-3


@dataclass(frozen=True)
class Refined:
    """A refined pose: local_rot (24, 3, 3), trans (3,); errors (E,) per effector as given
    (metres, radians); misses, the effectors not met (hard beyond HARD_TOLERANCE, soft beyond
    their tolerance), largest first."""

    local_rot: np.ndarray
    trans: np.ndarray
    errors: np.ndarray
    misses: tuple = field(default_factory=tuple)


def refine_pose(local_rot, trans, rest, effectors, options=RefineOptions()):
    """Refine a pose (local_rot (24, 3, 3), trans (3,), on rest joints (24, 3)) so that the
    hard effectors hold and the soft ones come as close as they can. Returns Refined.

    Each iteration takes the prioritised step and keeps the knees and elbows inside their
    ranges (a component a step pushed past its bound is put on the bound and held there as a
    hard row for the next step; released when a step turns it back inside); it
    stops once every residual is below 1e-5 (0.01 mm), or when the soft level stops
    improving with the hard level met.

    A pin missed with a knee or elbow at a bound of its range (folded shut, or straight and
    bent the wrong way round: a local minimum the pins are reachable beyond) is refined again
    from where it stopped with those limbs bent UNFOLD degrees, no tilt or twist; kept when
    it misses fewer pins. Only then may a pin give way.

    When the hard pins cannot all be held (options.give_way), the pin that gives way is one
    the pose misses: an effector with `give_way_first` before any other, then the one
    furthest from its target (against HARD_TOLERANCE). The pose is refined again with that pin
    soft, from the start and from where the last solve left it (the better of the two), and so
    on while another still misses (never the last pin); a
    pin that gave way before the last one is held again where the others then still hold.
    The pins that gave way are reported as such (Miss.gave_way).
    """
    local = np.array(local_rot, dtype=np.float64)
    trans = np.array(trans, dtype=np.float64)
    rest = np.asarray(rest, dtype=np.float64)
    effectors = list(effectors)
    soft_flags = [bool(getattr(e, "soft", False)) for e in effectors]

    def solve(gave_way, *starts):
        """The best pose from these starts with these pins given way: the fewest other pins
        missed (a contact point under the floor counts as one), then the given-way pins
        nearest their targets."""
        flags = [soft or n in gave_way for n, soft in enumerate(soft_flags)]
        best = None
        for start in starts:
            local_rot, trans_out = refine_levels(*start, rest, effectors, flags, options)
            pose = (nearest_rotation(local_rot), trans_out)   # many steps wear the rotations a little
            errors = effector_errors(effectors, *pose, rest)
            rank = (len(_missed_pins(effectors, soft_flags, gave_way, errors))
                    + len(floor_misses(*pose, rest, options)),
                    sum(errors[n] / HARD_TOLERANCE[kind_of(effectors[n])] for n in gave_way))
            if best is None or rank < best[0]:
                best = (rank, pose, errors)
        return best[1], best[2]

    # a pin giving way is solved again from the first start and from where all the pins pulling
    # together left it: from the first it can settle far off in another valley, from the second
    # it may stop short of where it could reach
    gave_way = []
    pose, errors = solve(gave_way, (local, trans))
    missed = _missed_pins(effectors, soft_flags, gave_way, errors)
    unfolded = Limits().unfolded(pose[0]) if missed and options.joint_limits else None
    if unfolded is not None:
        # a limb held against its range (bent the wrong way round, or folded shut) stops the
        # pins it carries short: they are reachable once it bends the way its range allows
        trial, trial_errors = solve(gave_way, (unfolded, pose[1]))
        if len(_missed_pins(effectors, soft_flags, gave_way, trial_errors)) < len(missed):
            pose, errors = trial, trial_errors
    while options.give_way:
        pin = _giving_way(effectors, soft_flags, gave_way, errors)
        if pin is None:
            break
        gave_way.append(pin)
        pose, errors = solve(gave_way, (local, trans), pose)
    for pin in gave_way[:-1]:   # given way before the one that could not be met: maybe not needed
        fewer = [n for n in gave_way if n != pin]
        trial, trial_errors = solve(fewer, pose)
        if not _missed_pins(effectors, soft_flags, fewer, trial_errors):
            gave_way, pose, errors = fewer, trial, trial_errors
    misses = effector_misses(effectors, soft_flags, errors, gave_way)
    if misses:
        misses = effector_misses(effectors, soft_flags, errors, gave_way, out_of_reach(effectors, rest))
    misses = tuple(sorted(misses + floor_misses(*pose, rest, options), key=lambda m: -m.error))
    return Refined(local_rot=pose[0], trans=pose[1], errors=errors, misses=misses)


def refine_levels(local, trans, rest, effectors, soft_flags, options):
    """refine_pose's two levels from (local, trans) with these soft flags: (local, trans)."""
    hard = Targets([e for e, s in zip(effectors, soft_flags) if not s])
    soft = Targets([e for e, s in zip(effectors, soft_flags) if s])
    limits = Limits() if options.joint_limits else None
    held = []
    if limits is not None:
        local, held = limits.clamp(local)
    problem = Problem(hard, soft, limits, options, rest)
    state = problem.evaluate(local, trans, held)
    settle = max(options.iterations // 3, 2)   # hard-only steps that make the pins exact again
    state = descend(problem, limits, state, options.iterations, options.damping, use_soft=True)
    # the soft level has gone as far as it can: make the hard one exact again if a step left it off
    state = descend(problem, limits, state, settle, options.damping, use_soft=False)
    if problem.terms is not None and problem.terms.arm_inside(state.fk, COLLISION_DEEP):
        # an arm still inside when the budget ran out comes out in a few more steps, more often
        # than not: only such poses pay for them. They start from the hard level made exact: where
        # the soft descent stopped, a pin is often off by more than _SLACK, and _better then takes
        # only the steps that bring it back, none that bring the arm out
        state = descend(problem, limits, state, COLLISION_EXTRA * options.iterations, options.damping,
                         use_soft=True)
        state = descend(problem, limits, state, settle, options.damping, use_soft=False)
    return state.local, state.trans


def _missed_pins(effectors, soft_flags, gave_way, errors):
    """Indices of the hard pins (not soft, not in gave_way) beyond HARD_TOLERANCE."""
    return [n for n, soft in enumerate(soft_flags)
            if not soft and n not in gave_way and errors[n] > HARD_TOLERANCE[kind_of(effectors[n])]]


def _giving_way(effectors, soft_flags, gave_way, errors):
    """The index of the next hard pin to give way (refine_pose), or None when every pin holds
    or only one is left."""
    missed = _missed_pins(effectors, soft_flags, gave_way, errors)
    if not missed or soft_flags.count(False) - len(gave_way) < 2:
        return None
    return max(missed, key=lambda n: (bool(getattr(effectors[n], "give_way_first", False)),
                                      errors[n] / HARD_TOLERANCE[kind_of(effectors[n])]))


def refine_many(local_rot, trans, rest, effectors, options=RefineOptions()):
    """Refine K poses (local_rot (K, 24, 3, 3), trans (K, 3)) for the same effectors at once:
    damped least-squares steps on all K together (one batched linear solve a step), knees
    and elbows put back inside their ranges after each. Any pose this leaves short of an
    effector or off balance or with an arm in the body (options.balance, self_collision), and
    every pose when some effector is soft or a floor is set (they need the prioritised solve),
    goes through refine_pose. Returns a list of Refined, as refine_pose."""
    local = np.array(local_rot, dtype=np.float64)
    trans = np.array(trans, dtype=np.float64)
    rest = np.asarray(rest, dtype=np.float64)
    effectors = list(effectors)
    soft_flags = [bool(getattr(e, "soft", False)) for e in effectors]
    if any(soft_flags) or options.floor is not None or not effectors:
        return [refine_pose(local[k], trans[k], rest, effectors, options) for k in range(len(local))]
    targets = Targets(effectors)
    limits = Limits() if options.joint_limits else None
    if limits is not None:
        limits.clamp_many(local)
    descend_many(targets, limits, local, trans, rest, options)
    out = []
    terms = SoftTerms(options, targets, rest) if options.balance or options.self_collision else None
    fk = forward_kinematics(local, rest, PARENTS, trans) if terms is not None else None
    for k in range(len(local)):
        errors = effector_errors(effectors, local[k], trans[k], rest)
        misses = effector_misses(effectors, soft_flags, errors)
        # a pose off balance or with an arm in the body takes the soft level too
        active = terms is not None and len(terms.rows(FKResult(fk.rotations[k], fk.positions[k]))[0])
        out.append(refine_pose(local[k], trans[k], rest, effectors, options) if misses or active else
                   Refined(local_rot=local[k], trans=trans[k], errors=errors, misses=misses))
    return out


def arm_in_body(local_rot, trans, rest, effectors, options=RefineOptions(), depth=COLLISION_ALLOWANCE):
    """Whether, with options.self_collision on, a pose (local_rot (24, 3, 3), trans (3,)) has an
    arm capsule more than `depth` metres (at least COLLISION_ALLOWANCE) in the trunk or a thigh."""
    if not options.self_collision:
        return False
    rest = np.asarray(rest, dtype=np.float64)
    hard = Targets([e for e in effectors if not getattr(e, "soft", False)])
    terms = SoftTerms(replace(options, balance=False), hard, rest)
    return terms.arm_inside(forward_kinematics(np.asarray(local_rot, dtype=np.float64), rest, PARENTS,
                                               np.asarray(trans, dtype=np.float64)), depth)


def planted_feet(effectors, world_rotations):
    """Extra hard effectors that keep each foot as it is: for an ankle pinned by position and
    not by rotation, the ankle's and the foot joint's world rotations (24, 3, 3) of the pose
    on screen. The toes then stay where they were while the rest of the body moves."""
    kinds = {(joint_of(e, n), kind_of(e)) for n, e in enumerate(effectors)}
    extra = []
    for ankle, foot in FEET:
        a, f = JOINT_INDEX[ankle], JOINT_INDEX[foot]
        if (a, EffectorKind.POSITION) in kinds and (a, EffectorKind.ROTATION) not in kinds:
            extra.append(Effector(ankle, EffectorKind.ROTATION, np.asarray(world_rotations[a])))
            if (f, EffectorKind.ROTATION) not in kinds:
                extra.append(Effector(foot, EffectorKind.ROTATION, np.asarray(world_rotations[f])))
    return extra
