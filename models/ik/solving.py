"""SMPL-IK's solve strategy: which start a solve refines from (the network's answer, the natural
pose, the pose on screen, a kept pose carried along), the fallbacks and restarts when it stalls
short of a pin, and why a pin is missed; mixed into SmplIk."""
from dataclasses import replace

import numpy as np

from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics
from ..core.rotations import axis_angle_to_matrix
from ..core.skeleton import PARENTS
from .effectors import encode_effectors
from .flow import DIMS
from .limits import past_range
from .options import SolveOptions, checked
from .refine import RefineOptions, planted_feet, refine_pose
from .residuals import effector_errors
from .solution import (CARRY_MET, IkSolution, kept_missed, miss_total, no_nearer, pins_met, pose_arrays, stretched,
                       with_reason)

# iterations at most for a drag step going on out of reach (docs/training_log.md, "Creeping drag")
CREEP_ITERATIONS = 5
ROOT_TURNS = tuple(sign * np.radians(60.0) * axis for sign in (1.0, -1.0) for axis in np.eye(3))   # axis-angle
WARM_MARGIN = 0.01   # metres (or radians) less miss that make a drag take another start than its first
FALLBACK_ITERATIONS = 8   # for the network's guess as a fallback start: a reachable problem's guess is near its answer
FALLBACK_PIN_ERROR = 0.05   # metres (radians): a guess breaking a pin by more is not near an answer
FALLBACK_SOFT_ERROR = 0.01  # a warm start this far from its soft targets (1 cm) asks the network


def root_turned(start, refine, first=None):
    """A pose that meets every pin, refined (`refine`, a function of a start (local_rot, trans))
    from `start` with the root turned by each of ROOT_TURNS (ROOT_TURNS[first] first), and that
    turn's index; (None, None) when none does. The network's starts can all lie in one basin
    where a pin gives way; a root turned 60 degrees lets the refinement leave it
    (docs/training_log.md, "Root turns")."""
    local, trans = start
    order = list(range(len(ROOT_TURNS)))
    if first is not None:
        order.insert(0, order.pop(first))
    for n in order:
        turned = np.array(local, dtype=np.float64)
        turned[0] = axis_angle_to_matrix(ROOT_TURNS[n]) @ turned[0]
        again = refine((turned, trans))
        if pins_met(again):
            return again, n
    return None, None


def turnable(refined, options):
    """Whether a refined pose (Refined or IkSolution) is one the root turns may mend: it misses
    a pin that is not out of reach of another (`stretched`), and its pins may give way
    (options.give_way; pins that may not are a fit to disagreeing targets, each giving a
    little, and are not expected to hold)."""
    return options.give_way and not pins_met(refined) and not stretched(refined)


class Solving:
    """SmplIk's `solve` and `refine_from` (needs `condition`, `network_pose`, `decoded_pose`,
    `encode` and `natural_start`)."""

    def solve(self, effectors, rest_joints, options=SolveOptions()):
        """Pose for a list of Effectors on a body with rest joints (24, 3), as `options` (a
        SolveOptions) asks: from the network's answer or the natural pose (mode), the pose on
        screen (warm_start) or a kept pose (keep), refined or not. With the flow, the solution
        carries its `condition` and its `latent` (found on first use) for the next step.
        A fresh solve (neither warm_start nor keep) that still misses a pin is refined again
        with the root turned (ROOT_TURNS), unless its pins may not give way (refine.give_way
        False: a fit to targets that disagree); a miss no turn mends says why where the joint
        ranges are the cause (`range_reason`)."""
        options = checked(options, SolveOptions)
        refine, current_pose, keep = options.refine, options.current_pose, options.keep
        natural = options.mode == "natural"
        rest = np.asarray(rest_joints, dtype=np.float64)[None]
        encoded = encode_effectors(effectors)
        generative = natural or keep is not None
        condition = self.condition(encoded, rest) if generative else None
        guess = ((lambda: (condition.local_rot[0], condition.trans[0])) if generative   # the network ran already
                 else (lambda: self.network_pose(encoded, rest)))
        fallback = carried = None
        if keep is not None:
            pose, kept_latent = self._kept(keep, condition)
            if refine is None:   # nothing refines the kept pose: its latent's pose under these effectors
                local, trans = self.decoded_pose(condition, kept_latent())[0], pose[1]
                return IkSolution(local_rot=local, trans=trans, rest=rest[0], latent=kept_latent, condition=condition)
            carried = self._carried(keep, condition, rest[0])
            local, trans = pose if carried is None else carried
            if getattr(keep, "condition", None) is None and getattr(keep, "latent", None) is None:
                # a pose's own latent under these effectors decodes to the pose itself: the
                # natural pose is the other start
                fallback = lambda: self.decoded_pose(condition, np.zeros(DIMS))   # noqa: E731
            else:
                fallback = lambda: (self.decoded_pose(condition, kept_latent())[0], trans)   # noqa: E731
        elif options.warm_start and refine is not None and current_pose is not None:
            local, trans = pose_arrays(current_pose, "current_pose")
            fallback = (lambda: self.decoded_pose(condition, np.zeros(DIMS))) if natural else guess
        elif natural:
            local, trans = self.natural_start(condition, effectors, rest[0]) if refine is not None \
                else self.decoded_pose(condition, np.zeros(DIMS))
        else:
            local, trans = guess()
        if refine is None:
            return self._solution(local, trans, rest[0], condition)
        # the drag's last step, where it missed: a kept pose, or the solution on screen a warm start refines
        last = keep if keep is not None else current_pose if options.warm_start else None
        creeping = kept_missed(last)
        first = replace(refine, iterations=min(refine.iterations, CREEP_ITERATIONS)) if creeping else refine
        # a pose out of reach creeps on without the fallback start: while the drag stays as
        # far out of reach, a limb straight toward its target stays straight
        solution = self.refine_from(effectors, (local, trans), rest[0], first, current_pose,
                                    None if creeping else fallback)
        if creeping and kept_missed(solution) and not no_nearer(solution, last):
            # the target came nearer than the kept pose got (back within reach, or a jump): the
            # refinement goes on as long as a solve's
            solution = self.refine_from(effectors, (solution.local_rot, solution.trans), rest[0], refine,
                                        current_pose, fallback)
        if carried is not None and solution.misses:
            # turned with the network's answer, the pose can stall short of a target that small
            # steps from the kept pose itself reach (a floor in the way): take those when they
            # meet every effector or clearly miss less. Only where the drag starts to miss: a
            # kept pose that missed is not carried, it is the start
            plain = self.refine_from(effectors, pose, rest[0], refine, current_pose, fallback)
            if not plain.misses or miss_total(plain) < miss_total(solution) - WARM_MARGIN:
                solution = plain
        if generative and not pins_met(solution) and not stretched(solution):
            # the refinement stalled short of a pin (a limb folded against its range): the
            # network's own guess may reach it
            again = self.refine_from(effectors, guess(), rest[0], refine, current_pose)
            if miss_total(again) < miss_total(solution):
                solution = again
        if keep is None and not options.warm_start and options.restarts and turnable(solution, refine):
            # every start fell in the same basin (the root turned the wrong way): a fresh solve
            # tries the root turned (ROOT_TURNS). Drags do not: a pose on screen should not jump
            strict = replace(refine, give_way=False)   # a turn is kept only when every pin holds
            turned = root_turned((local, trans),
                                 lambda s: self.refine_from(effectors, s, rest[0], strict, current_pose))[0]
            if turned is not None:
                solution = turned
            else:
                reason = self.range_reason(effectors, solution, rest[0], refine, current_pose)
                solution = with_reason(solution, reason)
        return self._solution(solution.local_rot, solution.trans, rest[0], condition, solution)

    def range_reason(self, effectors, solution, rest, options, current_pose=None):
        """Why a pose that every start left short of a pin misses it, where the joint ranges
        are why: refined from it with the ranges off, every pin is met, and these joints go
        past their ranges ('' when that is not so, or the ranges are off already)."""
        if not options.joint_limits:
            return ""
        free = self.refine_from(effectors, (solution.local_rot, solution.trans), rest,
                                replace(options, joint_limits=False, give_way=False), current_pose)
        past = past_range(free.local_rot) if pins_met(free) else []
        return "the pins meet only with " + ", ".join(past) if past else ""

    def refine_from(self, effectors, start, rest_joints, options=RefineOptions(), current_pose=None, fallback=None):
        """Refine a pose for a list of Effectors: start (local_rot (24, 3, 3), trans (3,)) on rest
        joints (24, 3), with `options` (a RefineOptions). current_pose: (local_rot, trans) of the pose
        on screen, whose feet options.plant_feet keeps (extra hard effectors). fallback: a function of
        no arguments giving another start (local_rot, trans), also tried when this one misses the
        soft targets by over FALLBACK_SOFT_ERROR. Returns an IkSolution (no latent) whose errors
        (E,) are the given effectors' and whose misses include the planted feet's."""
        rest = np.asarray(rest_joints, dtype=np.float64)
        local, trans = pose_arrays(start, "start")
        given = list(effectors)
        effectors = given + self.planted_effectors(given, rest, options, current_pose)
        refined = refine_pose(local, trans, rest, effectors, options)
        soft = np.array([bool(e.soft) for e in effectors])
        if fallback is not None and soft.any() and refined.errors[soft].sum() > FALLBACK_SOFT_ERROR:
            # small steps cannot bend a limb that is straight on screen: the network's guess may
            # get there. Refine it only when it nearly holds the pins and is nearer the soft
            # targets; take it when it then meets them, or misses clearly less (a drag out of
            # reach should not flicker between the two)
            guess = fallback()
            errors = effector_errors(effectors, *guess, rest)
            if (not (~soft).any() or errors[~soft].max() < FALLBACK_PIN_ERROR) and \
                    errors[soft].sum() < refined.errors[soft].sum():
                guessed = refine_pose(*guess, rest, effectors, replace(options, iterations=FALLBACK_ITERATIONS))
                if not guessed.misses or miss_total(guessed) < miss_total(refined) - WARM_MARGIN:
                    refined = guessed
        return IkSolution(local_rot=refined.local_rot, trans=refined.trans, rest=rest,
                          errors=refined.errors[:len(given)], misses=refined.misses)

    @staticmethod
    def planted_effectors(effectors, rest, options, current_pose):
        """The planted-feet effectors (refine.planted_feet) of the pose on screen, if any."""
        if not (options.plant_feet and current_pose is not None):
            return []
        on_screen = pose_arrays(current_pose, "current_pose")
        return planted_feet(effectors, forward_kinematics(on_screen[0], rest, PARENTS, on_screen[1]).rotations)

    def _kept(self, keep, condition):
        """A kept pose (SolveOptions.keep) as arrays (local_rot, trans), and a function giving
        its latent (72,) (the solution's own, else the pose's under `condition`), found once
        and only when asked for."""
        pose = pose_arrays((keep.local_rot, keep.trans) if isinstance(keep, IkSolution) else keep, "keep")
        found = []

        def latent():
            if not found:
                own = keep.latent if isinstance(keep, IkSolution) else None
                value = self.encode(condition, pose[0][None])[0] if own is None else np.asarray(own, dtype=np.float64)
                if value.shape != (DIMS,) or not np.all(np.isfinite(value)):
                    raise SmplIkError(f"keep's latent must be {DIMS} finite numbers; got shape {value.shape}")
                found.append(value)
            return found[0]
        return pose, latent

    @staticmethod
    def _carried(keep, condition, rest):
        """The kept solution turned at every joint as the network's answer turned from its
        Condition to `condition` (its local rotations R -> G' G^T R, G and G' the answers'),
        its root moved as the answer's moved; None unless keep is an IkSolution on these rest
        joints that carries its Condition and met every effector within CARRY_MET (a pose
        stretched toward a target out of reach goes on from where it is instead: turned with
        the answer it would stretch again from further away)."""
        if not (isinstance(keep, IkSolution) and keep.condition is not None and keep.errors is not None
                and np.array_equal(keep.rest, rest) and np.max(keep.errors, initial=0.0) < CARRY_MET):
            return None
        before, now = keep.condition, condition
        turn = now.local_rot[0] @ np.swapaxes(before.local_rot[0], -1, -2)
        return turn @ np.asarray(keep.local_rot, dtype=np.float64), \
            np.asarray(keep.trans, dtype=np.float64) + now.trans[0] - before.trans[0]

    def _solution(self, local, trans, rest, condition, refined=None):
        """An IkSolution of the pose (with `refined`'s errors and misses); under a Condition,
        with it and its latent (found on first use)."""
        errors, misses = (None, ()) if refined is None else (refined.errors, refined.misses)
        if condition is None:
            return IkSolution(local_rot=local, trans=trans, rest=rest, errors=errors, misses=misses)
        return IkSolution(local_rot=local, trans=trans, rest=rest, errors=errors, misses=misses,
                          latent=lambda: self.encode(condition, local[None])[0], condition=condition)
