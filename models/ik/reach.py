"""What a refined pose misses and why: Miss, the effectors beyond their tolerance, contact
points under the floor, and pins whose targets lie beyond the body's reach of each other."""
from dataclasses import dataclass

import numpy as np

from ..core.kinematics import forward_kinematics
from ..core.skeleton import JOINT_NAMES, NUM_JOINTS, PARENTS
from .effectors import EffectorKind, joint_of, kind_of

# A hard effector counts as held within these (metres, radians); a soft one within its tolerance.
HARD_TOLERANCE = {EffectorKind.POSITION: 1e-3, EffectorKind.ROTATION: np.radians(0.5),
                  EffectorKind.LOOK_AT: np.radians(0.5)}


@dataclass(frozen=True)
class Miss:
    """An effector the pose does not meet: how far it is (metres, or radians for rotations and
    look-ats) against what counts as met; soft, whether it was soft; gave_way, a hard pin that
    gave way to the others (they could not all be held). floor: a contact point (joint: its
    name, RefineOptions.contacts) that far below the floor, which is held like a pin."""

    joint: str
    kind: EffectorKind
    error: float
    tolerance: float
    soft: bool
    gave_way: bool = False
    reason: str = ""
    floor: bool = False

    def describe(self):
        """'left_wrist is 12.3 cm from its target' / 'head is turned 8.0 degrees from its
        target' / 'left heel is 1.4 mm below the floor', and for a pin that gave way ' (it gave
        way to the other pins)', then the reason where one is known (`out_of_reach`)."""
        if self.floor:
            return f"{self.joint} is {self.error * 1000:.1f} mm below the floor"
        if self.kind is EffectorKind.POSITION:
            text = f"{self.joint} is {self.error * 100:.1f} cm from its target"
        else:
            what = "turned" if self.kind is EffectorKind.ROTATION else "looking"
            text = f"{self.joint} is {what} {np.degrees(self.error):.1f} degrees from its target"
        text += " (it gave way to the other pins)" if self.gave_way else ""
        return text + (f": {self.reason}" if self.reason else "")


def effector_misses(effectors, soft_flags, errors, gave_way=(), reasons=None):
    """The effectors not met, largest first; the indices in gave_way are pins (not soft) that
    gave way; reasons {index: text} (`out_of_reach`) go with those effectors' misses."""
    out = []
    reasons = reasons or {}
    for n, (e, soft, error) in enumerate(zip(effectors, soft_flags, errors)):
        kind = kind_of(e)
        tolerance = max(float(getattr(e, "tolerance", 0.0)), HARD_TOLERANCE[kind]) if soft else HARD_TOLERANCE[kind]
        if error > tolerance:
            out.append(Miss(_name(e), kind, float(error), tolerance, soft, gave_way=n in gave_way,
                            reason=reasons.get(n, "")))
    return tuple(sorted(out, key=lambda m: -m.error))


def _name(effector):
    return effector.joint if isinstance(effector.joint, str) else JOINT_NAMES[int(effector.joint)]


def out_of_reach(effectors, rest):
    """Position effectors whose targets lie further apart than the body can stretch between
    their joints (the rest bone lengths along the skeleton's path from one to the other, every
    joint straight): {effector index: reason}, for both of each such pair (the first pair found
    for each). No start or refinement meets such a pair; an empty dict does not promise the
    set is reachable (joint ranges, other kinds of pin)."""
    rest = np.asarray(rest, dtype=np.float64)
    bone = np.zeros(NUM_JOINTS)
    bone[1:] = np.linalg.norm(rest[1:] - rest[list(PARENTS[1:])], axis=1)
    positions = [n for n, e in enumerate(effectors) if kind_of(e) is EffectorKind.POSITION]
    reasons = {}
    for i, a in enumerate(positions):
        for b in positions[i + 1:]:
            ja, jb = joint_of(effectors[a], a), joint_of(effectors[b], b)
            gap = float(np.linalg.norm(np.subtract(effectors[a].target, effectors[b].target, dtype=np.float64)))
            span = _path_length(ja, jb, bone)
            if gap > span + HARD_TOLERANCE[EffectorKind.POSITION]:
                for n, other in ((a, b), (b, a)):
                    reasons.setdefault(n, f"its target is {gap:.2f} m from {_name(effectors[other])}'s, further than "
                                          f"the body reaches between them ({span:.2f} m)")
    return reasons


def _path_length(a, b, bone):
    """The summed bone lengths (24,) on the skeleton's path from joint a to joint b."""
    up = {}
    j, length = a, 0.0
    while True:
        up[j] = length
        if j == 0:
            break
        length += bone[j]
        j = PARENTS[j]
    j, length = b, 0.0
    while j not in up:
        length += bone[j]
        j = PARENTS[j]
    return length + up[j]


def floor_misses(local_rot, trans, rest, options):
    """Misses (Miss.floor) of the contact points (options.contacts) more than HARD_TOLERANCE
    below options.floor in a pose, deepest first; none without a floor."""
    contacts = options.contacts
    if options.floor is None or contacts is None:
        return ()
    heights = contacts.positions(forward_kinematics(local_rot, rest, PARENTS, trans))[:, 1]
    tolerance = HARD_TOLERANCE[EffectorKind.POSITION]
    out = [Miss(contacts.names[k] if len(contacts.names) else JOINT_NAMES[int(contacts.joints[k])],
                EffectorKind.POSITION, float(options.floor - heights[k]), tolerance, soft=False, floor=True)
           for k in np.flatnonzero(heights < options.floor - tolerance)]
    return tuple(sorted(out, key=lambda m: -m.error))
