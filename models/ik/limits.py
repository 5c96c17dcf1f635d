"""Joint ranges: the knees' and elbows' limits as Euler angles, kept, checked and clamped.

`JOINT_LIMITS` (degrees, intrinsic Euler angles of the joint's local rotation; the knee's first
angle and the elbow's first are the hinge) holds the knees and elbows, the joints that
otherwise bend the wrong way when a limb is stretched. Flexion and twist follow the passive
adult ranges of motion in clinical tables (AAOS); the small off-hinge angles hold every pose of
the CMU training clips with room to spare (docs/training_log.md, "Joint ranges").
"""
from dataclasses import dataclass

import numpy as np

from ..core.rotations import euler_to_matrix, matrix_to_euler
from ..core.skeleton import JOINT_INDEX, NUM_JOINTS, PARENTS

UNFOLD = 60.0     # degrees of hinge a limb folded against its range restarts from (refine_pose)


@dataclass(frozen=True)
class JointLimit:
    """A joint's range: intrinsic Euler angles in `order` (its local rotation is
    R = R_order[0](a0) R_order[1](a1) R_order[2](a2)) between `low` and `high`, degrees."""

    joint: str
    order: str
    low: tuple
    high: tuple


def _mirrored(limit):
    """The other side's range: mirroring (x -> -x) keeps turns about x and negates those about
    y and z."""
    sign = np.array([1.0 if a == "X" else -1.0 for a in limit.order])
    low, high = sign * np.array(limit.low), sign * np.array(limit.high)
    other = limit.joint.replace("left_", "right_")
    return JointLimit(other, limit.order, tuple(np.minimum(low, high)), tuple(np.maximum(low, high)))


_LEFT_LIMITS = (
    # knee: flexion about x (bending back), axial turn about y (the shin), tilt about z
    JointLimit("left_knee", "XYZ", (-15.0, -30.0, -12.0), (160.0, 30.0, 12.0)),
    # elbow: flexion about y (negative on the left arm, forearm forward), tilt about z,
    # forearm twist about x (the forearm's axis)
    JointLimit("left_elbow", "YZX", (-160.0, -10.0, -85.0), (15.0, 35.0, 85.0)),
)
JOINT_LIMITS = _LEFT_LIMITS + tuple(_mirrored(limit) for limit in _LEFT_LIMITS)


def _nearest_in_range(angles, low, high):
    """Each angle (radians) inside [low, high], moved to the nearer bound around the circle
    (a knee folded to -178 degrees is 182 of flexion: it goes to the 160 bound, not to -15)."""
    wrap = lambda a: (a + np.pi) % (2 * np.pi) - np.pi   # noqa: E731
    outside = (angles < low) | (angles > high)
    nearer_low = np.abs(wrap(angles - low)) < np.abs(wrap(angles - high))
    return np.where(outside, np.where(nearer_low, low, high), angles)


class Limits:
    """JOINT_LIMITS as arrays, radians."""

    def __init__(self, limits=JOINT_LIMITS):
        self.limits = limits
        self.joints = [JOINT_INDEX[lim.joint] for lim in limits]
        self.low = np.radians([lim.low for lim in limits])
        self.high = np.radians([lim.high for lim in limits])
        # the limits sharing an Euler order, converted together: (order, limit numbers, joints)
        orders = dict.fromkeys(lim.order for lim in limits)
        self.groups = [(order, np.array([n for n, lim in enumerate(limits) if lim.order == order]),
                        np.array([j for lim, j in zip(limits, self.joints) if lim.order == order]))
                       for order in orders]

    def clamp(self, local):
        """A copy of local rotations (24, 3, 3) with every limited joint inside its range, and
        the (joint number, component, Euler angles) of the components held at a bound."""
        local = local.copy()
        moved = {}
        for order, numbers, joints in self.groups:
            angles = matrix_to_euler(local[joints], order)
            inside = _nearest_in_range(angles, self.low[numbers], self.high[numbers])
            for g in np.flatnonzero(np.any(inside != angles, axis=-1)):
                local[joints[g]] = euler_to_matrix(inside[g], order)
                moved[int(numbers[g])] = (np.flatnonzero(inside[g] != angles[g]), inside[g])
        held = []
        for n in sorted(moved):
            components, inside = moved[n]
            held += [(n, int(c), inside) for c in components]
        return local, held

    def clamp_many(self, local):
        """clamp for a batch (K, 24, 3, 3), in place, without the held components."""
        for order, numbers, joints in self.groups:
            angles = matrix_to_euler(local[:, joints], order)                 # (K, G, 3)
            inside = _nearest_in_range(angles, self.low[numbers], self.high[numbers])
            moved = np.any(inside != angles, axis=-1)
            if moved.any():
                k, g = np.nonzero(moved)
                local[k, joints[g]] = euler_to_matrix(inside[k, g], order)
        return local

    def unfolded(self, local):
        """A copy of local rotations (24, 3, 3) with each limited joint that has a component at
        a bound of its range put at UNFOLD degrees of its hinge (the way its range bends
        furthest), no tilt or twist; None when no joint is at a bound."""
        out, moved = local.copy(), False
        for n, (lim, j) in enumerate(zip(self.limits, self.joints)):
            angles = matrix_to_euler(local[j], lim.order)
            if np.any(np.isclose(angles, self.low[n], atol=1e-6) | np.isclose(angles, self.high[n], atol=1e-6)):
                bend = np.zeros(3)
                bend[0] = np.radians(UNFOLD) * (1.0 if self.high[n][0] > -self.low[n][0] else -1.0)
                out[j] = euler_to_matrix(bend, lim.order)
                moved = True
        return out if moved else None

    def rows(self, held, fk):
        """Jacobian rows (H, 75) that keep each held Euler component where it is: an Euler
        angle's rate is row c of E^-1 applied to the parent-frame turn, E's columns the axes
        the three angles turn about (e_a, R_a e_b, R_a R_b e_c)."""
        out = np.zeros((len(held), 3 * NUM_JOINTS + 3))
        for r, (n, c, angles) in enumerate(held):
            lim, j = self.limits[n], self.joints[n]
            axes = np.eye(3)[["XYZ".index(a) for a in lim.order]]
            first = euler_to_matrix(angles[:1], lim.order[:1])
            second = euler_to_matrix(angles[:2], lim.order[:2])
            e = np.stack([axes[0], first @ axes[1], second @ axes[2]], axis=1)
            parent = fk.rotations[PARENTS[j]]
            out[r, 3 * j:3 * j + 3] = np.linalg.inv(e)[c] @ parent.T
        return out


def past_range(local_rot, limits=JOINT_LIMITS):
    """What of a pose (local rotations (24, 3, 3)) lies outside the joint ranges: one text per
    joint, 'left_knee 32 degrees past its range (about x)' for its furthest component."""
    out = []
    for lim in limits:
        angles = np.degrees(matrix_to_euler(np.asarray(local_rot)[JOINT_INDEX[lim.joint]], lim.order))
        over = np.maximum(np.array(lim.low) - angles, angles - np.array(lim.high))
        c = int(np.argmax(over))
        if over[c] > 0.5:
            out.append(f"{lim.joint} {over[c]:.0f} degrees past its range (about {lim.order[c].lower()})")
    return out


def clamp_to_limits(local_rot):
    """Local rotations (24, 3, 3) with the knees and elbows moved inside JOINT_LIMITS."""
    return Limits().clamp(np.asarray(local_rot, dtype=np.float64))[0]
