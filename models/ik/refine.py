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
pose, never NaN.

Joint ranges (`JOINT_LIMITS`, degrees, as intrinsic Euler angles of the joint's local
rotation; the knee's first angle and the elbow's first are the hinge): the knees and elbows,
the joints that otherwise bend the wrong way when a limb is stretched. Flexion and twist follow
the passive adult ranges of motion in clinical tables (AAOS: knee flexion to 140-160 in a deep
squat, up to 15 of hyperextension in lax knees; elbow flexion to 150-160 and up to 15 of
hyperextension; forearm pronation and supination about 80-85 each), and the small off-hinge
angles (knee tilt and axial turn, elbow carrying tilt) hold every pose of the CMU training
clips (knee flexion there reaches 134 and hyperextension 9; elbow flexion 139, forearm twist
54, carrying tilt 30) with room to spare.
"""
from dataclasses import dataclass, field, replace

import numpy as np

from ..core.kinematics import FKResult, ancestor_matrix, forward_kinematics
from ..core.rotations import (axis_angle_to_matrix, euler_to_matrix, matrix_to_axis_angle, matrix_to_euler,
                              nearest_rotation, skew, unit)
from ..core.skeleton import JOINT_INDEX, JOINT_NAMES, NUM_JOINTS, PARENT_OR_SELF, PARENTS
from .cost import FOOT_JOINTS, carrying_feet, convex_hull, default_parts, outside_polygon, pair_depths
from .effectors import KIND_INDEX, Effector, EffectorKind, joint_of, kind_of

# ANCESTOR[j, k]: k is j or one of its ancestors (turning k moves j).
ANCESTOR = ancestor_matrix(tuple(PARENTS))
POSITION, ROTATION, LOOK_AT = (KIND_INDEX[k] for k in (EffectorKind.POSITION, EffectorKind.ROTATION,
                                                         EffectorKind.LOOK_AT))
# A hard effector counts as held within these (metres, radians); a soft one within its tolerance.
HARD_TOLERANCE = {EffectorKind.POSITION: 1e-3, EffectorKind.ROTATION: np.radians(0.5),
                  EffectorKind.LOOK_AT: np.radians(0.5)}
_STOP = 1e-5   # residuals this small are met (0.01 mm)
_SLACK = 1e-4  # how far a step toward a soft target may disturb a met hard level (0.1 mm)
_CREEP = 1e-4  # a soft level gaining less than this a step (0.1 mm), and under 1% of what it
               # still misses, has gone as far as it goes
_GIVE_UP = 1e5   # damping this many times its start with the hard level met: no step helps
_MAX_TURN = 0.5   # the longest step: radians per joint, metres for the root (a trust region)
_SHORTER = 3      # a longer step is solved again with 10x the damping, at most this many times
FLOOR_PASSES = 3  # a step is solved again with the contact points it takes under the floor, at most this often
FLOOR_ON = 1e-6   # metres: a contact point this little under the floor is on it
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


class _Limits:
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
    return _Limits().clamp(np.asarray(local_rot, dtype=np.float64))[0]


@dataclass(frozen=True)
class RefineOptions:
    """joint_limits: keep knees and elbows inside JOINT_LIMITS. plant_feet: when the pose on
    screen is known (`SolveOptions.current_pose`), ankles pinned by position keep its
    foot orientation (`planted_feet`). floor: a height (body frame, metres along Y) that
    `contacts` (AttachedPoints, e.g. BodyModel.foot_contacts) stay above; None for no floor.
    give_way: when the hard pins cannot all be held, let one give way at a time (as soft)
    until the others hold; off, every pin gives a little. balance: when the body stands (a
    foot pinned by position, or on the floor), keep its centre of mass over the feet that
    carry weight (`_SoftTerms`); self_collision: keep the hands and arms out of the trunk and
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


@dataclass(frozen=True)
class Refined:
    """A refined pose: local_rot (24, 3, 3), trans (3,); errors (E,) per effector as given
    (metres, radians); misses, the effectors not met (hard beyond HARD_TOLERANCE, soft beyond
    their tolerance), largest first."""

    local_rot: np.ndarray
    trans: np.ndarray
    errors: np.ndarray
    misses: tuple = field(default_factory=tuple)


class _Targets:
    """Effectors as arrays: joint (E,), kind (E,), weight (E,), point (E, 3), rotation
    (E, 3, 3) (identity unless a rotation), axis (E, 3) (unit; look-ats)."""

    def __init__(self, effectors):
        n = len(effectors)
        self.joint = np.array([joint_of(e, n) for n, e in enumerate(effectors)], dtype=np.int64)
        kinds = [kind_of(e) for e in effectors]
        self.kind = np.array([KIND_INDEX[k] for k in kinds], dtype=np.int64)
        self.weight = np.array([float(e.weight) for e in effectors])
        self.point = np.zeros((n, 3))
        self.rotation = np.tile(np.eye(3), (n, 1, 1))
        self.axis = np.zeros((n, 3))
        for i, (e, kind) in enumerate(zip(effectors, kinds)):
            if kind is EffectorKind.ROTATION:
                self.rotation[i] = np.asarray(e.target, float)
            else:
                self.point[i] = np.asarray(e.target, float)
            if kind is EffectorKind.LOOK_AT:
                self.axis[i] = unit(np.asarray(e.axis, float))
        self.mask = ANCESTOR[self.joint]                                   # (E, 24)
        self.rotation_rows, self.look_rows = self.kind == ROTATION, self.kind == LOOK_AT
        self.any_rotation, self.any_look = bool(self.rotation_rows.any()), bool(self.look_rows.any())
        self.turn_scale = (self.mask * self.weight[:, None])[..., None, None]   # (E, 24, 1, 1)
        # the root move's rows: the identity for positions (look-ats add theirs per pose)
        self.move = np.where((self.kind == POSITION)[:, None, None], np.eye(3), 0.0) * self.weight[:, None, None]

    def __len__(self):
        return len(self.joint)


def _residuals(t, world, pos, want_jacobian):
    """Weighted residuals (..., 3E) and their Jacobian (..., 3E, 75) over [turns (24x3),
    root move], for poses world (..., 24, 3, 3), pos (..., 24, 3) (a batch of poses shares
    the effectors). Each kind's terms are worked out only where there are effectors of that
    kind (most sets are positions)."""
    batch = pos.shape[:-2]
    if not len(t):
        return np.zeros(batch + (0,)), np.zeros(batch + (0, 3 * NUM_JOINTS + 3))
    p = pos[..., t.joint, :]                                                # (..., E, 3)
    r = p - t.point                                                         # position
    if t.any_rotation:
        w = world[..., t.joint, :, :]                                       # (..., E, 3, 3)
        rot_err = matrix_to_axis_angle(w @ np.swapaxes(t.rotation, -1, -2))
        r = np.where(t.rotation_rows[:, None], rot_err, r)
    if t.any_look:
        u = np.einsum("...eij,ej->...ei", world[..., t.joint, :, :], t.axis)
        to = t.point - p
        dist = np.maximum(np.linalg.norm(to, axis=-1, keepdims=True), 1e-6)
        v = to / dist
        r = np.where(t.look_rows[:, None], u - v, r)
    r = r * t.weight[:, None]
    if not want_jacobian:
        return r.reshape(batch + (-1,)), None
    n = len(t.joint)
    turn = skew(pos[..., None, :, :] - p[..., :, None, :])                 # (..., E, 24, 3, 3): position
    if t.any_rotation:
        turn[..., t.rotation_rows, :, :, :] = np.eye(3)
    move = t.move
    if t.any_look:
        look = t.look_rows
        proj = (np.eye(3) - v[..., look, :, None] * v[..., look, None, :]) / dist[..., look, :, None]   # (..., L, 3, 3)
        turn[..., look, :, :, :] = -skew(u[..., look, :])[..., None, :, :] + proj[..., None, :, :] @ turn[..., look, :, :, :]
        move = np.broadcast_to(move, batch + move.shape).copy()
        move[..., look, :, :] = proj * t.weight[look, None, None]
    turn *= t.turn_scale
    jac = np.concatenate([np.swapaxes(turn, -3, -2).reshape(batch + (n, 3, 3 * NUM_JOINTS)),
                          np.broadcast_to(move, batch + t.move.shape)], axis=-1)
    return r.reshape(batch + (-1,)), jac.reshape(batch + (3 * n, -1))


def _floor_rows(contacts, floor, fk):
    """The contact points' heights above the floor and their Jacobian rows, split in two:
    (residuals, rows) of the points under it (by more than FLOOR_ON), each its height (< 0),
    so the hard level lifts them; and (heights, rows) of those on or above it, which join the
    hard level only where a step would take them below (`_floor_step`): a foot on the floor
    may lift off it."""
    points = contacts.positions(fk)                                         # (K, 3)
    rows = np.zeros((len(points), 3 * NUM_JOINTS + 3))
    # a point's height under joint a's turn w: (w x (p - p_a)) . up = w . ((p - p_a) x up)
    turn = np.cross(points[:, None] - fk.positions, [0.0, 1.0, 0.0]) * ANCESTOR[contacts.joints][..., None]
    rows[:, :3 * NUM_JOINTS] = turn.reshape(len(points), -1)
    rows[:, 3 * NUM_JOINTS + 1] = 1.0
    gap = points[:, 1] - floor
    low = gap < -FLOOR_ON
    return (gap[low], rows[low]), (gap[~low], rows[~low])


BALANCE_MARGIN = 0.01        # metres: how far inside the support polygon balance puts the centre of mass
# metres: a start whose centre of mass is further outside is left so (_SoftTerms). 0.15, not
# 0.05: with both ankles pinned, natural solves kept over their feet rose from 0.91 to 0.95 (m21
# on the male body) and 0.94 to 0.96 (held-out CMU, male), six-point refined MPJPE the same on
# CMU and the varied clips and 0.2-0.3 mm (1%) higher on m21
BALANCE_REACH = 0.15
BALANCE_WEIGHT = 1.0         # the balance row's weight (a soft position effector's is its weight, per metre)
COLLISION_ALLOWANCE = 0.005  # metres of capsule overlap left alone: a hand resting on a hip presses in a little
COLLISION_WEIGHT = 10.0      # a collision row's weight: a hand stops at the body, not half way into it
# a pose with an arm still in the body after RefineOptions.iterations goes on for this many
# times as many more (while the descent still gains): on 100 held-out varied protocol frames,
# natural poses with an arm more than 1 cm inside where the pins do not put it went from 5% to 0;
# on 400, started once the hard level is exact again, from 3.3% (started where the soft descent
# stopped) to 1.3%; they run too where a pin holds the arm in and the trunk or thigh moves off it
COLLISION_EXTRA = 2
# how deep an arm must still be for those extra steps: one the term has pushed out settles
# just past COLLISION_ALLOWANCE (5-6 mm), and the figure above counts an arm 1 cm in
COLLISION_DEEP = 0.01
TERM_GATE = 0.01             # metres (radians): the terms join once every hard residual is within this


class _TermBody:
    """What _SoftTerms needs of a body on one skeleton, worked out once per rest pose: its
    cost.BodyParts and the arrays its rows use."""

    def __init__(self, parts):
        self.parts = parts
        seg = parts.segments
        self.mass = seg.mass / seg.mass.sum()                                 # (24,) fractions
        self.mass_centre = self.mass[:, None] * seg.centre
        self.subtree_mass = ANCESTOR.T @ self.mass                            # (24,) below each joint
        self.sole_ancestors = ANCESTOR[parts.soles.joints]                    # (K, 24)
        feet = [np.flatnonzero(parts.sole_foot == f) for f in (0, 1)]
        self.soles = {(True, False): feet[0], (False, True): feet[1], (True, True): np.concatenate(feet)}
        self.left, self.right = feet
        caps = parts.capsules
        self.pair_ancestors = (ANCESTOR[caps.joint[caps.pairs[:, 0]]], ANCESTOR[caps.joint[caps.pairs[:, 1]]])
        # a pair is checked closely only where the spheres around its capsules overlap
        reach = np.linalg.norm(caps.stop - caps.start, axis=1) / 2 + caps.radius
        self.pair_reach2 = 4 * (reach[caps.pairs[:, 0]] + reach[caps.pairs[:, 1]]) ** 2   # (twice the gap)^2
        self.hull = None   # the last support polygon (_SoftTerms._support)


_TERM_BODIES = {}


def _term_body(body_parts, rest):
    """The _TermBody of these BodyParts (None: the open body's) on rest joints (24, 3), remembered
    for the last few skeletons (a drag asks on every step)."""
    key = (id(body_parts), rest.tobytes())
    if key not in _TERM_BODIES:
        if len(_TERM_BODIES) >= 8:
            _TERM_BODIES.pop(next(iter(_TERM_BODIES)))
        parts = body_parts.scaled_to(rest) if body_parts is not None else default_parts(rest)
        _TERM_BODIES[key] = (body_parts, _TermBody(parts))   # holds body_parts so its id stays its own
    return _TERM_BODIES[key][1]


class _SoftTerms:
    """Balance and self-collision as residual rows of the soft level (RefineOptions.balance,
    self_collision), only while they are active: none when the pose is balanced and no arm is
    in the body.

    Balance: the body stands when a foot (its ankle or foot joint) is pinned hard by position,
    or a floor is set and a foot is on it (cost.stands; with neither, nothing says the body is
    on the ground, and balance does not apply); the feet that carry weight are
    cost.carrying_feet's (near the lowest foot or the floor, or pinned and not lifted over
    cost.LIFTED). Its row is the centre of mass's horizontal distance outside the support
    polygon (the convex hull of those soles) less BALANCE_MARGIN, so it ends that far inside.
    A start whose centre of mass is more than BALANCE_REACH outside is left so: its pins hold
    a body in motion there (a long stride, a run, a jump), and pulling it over its feet would
    bend the free joints out of shape; from a start nearer, balance holds all the way,
    however far the pins then pull.
    Self-collision: a row for every arm capsule inside a trunk or thigh capsule by more than
    COLLISION_ALLOWANCE, its depth beyond that, moving both: where a pin holds the arm inside
    (a wrist pinned in the chest), the trunk or thigh moves off it as far as its own pins let
    it, and the arm swings about the pin."""

    def __init__(self, options, hard, rest):
        self.body = _term_body(options.body_parts, rest)
        self.balance, self.collision, self.floor = options.balance, options.self_collision, options.floor
        position = hard.joint[hard.kind == POSITION]
        self.pinned = tuple(bool(np.isin(position, pair).any()) for pair in FOOT_JOINTS)
        self.started = None   # whether balance applies from the start (BALANCE_REACH); None before it

    def rows(self, fk, pinned=True):
        """Residuals (R,) and Jacobian rows (R, 75) of the active terms at a pose (fk); none
        while not `pinned` (the hard level is still far off: pulled aside before the pins hold,
        a pose can settle where they no longer all can). The first pose asked about is the
        start (where balance may be left off, BALANCE_REACH)."""
        if not pinned:
            if self.balance and self.started is None:
                self._balance_rows(fk)   # the start decides whether balance applies
            return np.zeros(0), np.zeros((0, 3 * NUM_JOINTS + 3))
        parts_r, parts_j = [], []
        if self.balance:
            r, j = self._balance_rows(fk)
            parts_r.append(r), parts_j.append(j)
        if self.collision:
            r, j = self._collision_rows(fk)
            parts_r.append(r), parts_j.append(j)
        if not parts_r:
            return np.zeros(0), np.zeros((0, 3 * NUM_JOINTS + 3))
        return np.concatenate(parts_r), np.concatenate(parts_j)

    def arm_inside(self, fk, depth=COLLISION_ALLOWANCE):
        """Whether self-collision is on and an arm capsule is more than `depth` (metres, at
        least COLLISION_ALLOWANCE) in the body at a pose (fk)."""
        rows = self._collision_rows(fk)[0] if self.collision else ()
        return bool(np.any(np.asarray(rows) > COLLISION_WEIGHT * (depth - COLLISION_ALLOWANCE)))

    def _support(self, points, which):
        """The support polygon of sole points (S, 2): its corners (indices into points), each
        corner's point and edge's outward normal. Found again only when the feet that carry
        weight change or move by over a millimetre (pinned feet stay put, from solve to solve)."""
        hull = self.body.hull
        if hull is None or hull[0] is not which or np.abs(points - hull[1]).max() > 1e-3:
            corners = convex_hull(points)
            edge = points[np.roll(corners, -1)] - points[corners]
            outward = np.stack([edge[:, 1], -edge[:, 0]], 1) / np.maximum(np.linalg.norm(edge, axis=1), 1e-12)[:, None]
            hull = self.body.hull = (which, points, corners, outward)
        return hull[2], hull[3]

    def _balance_rows(self, fk):
        none = np.zeros(0), np.zeros((0, 3 * NUM_JOINTS + 3))
        if self.started is False:
            return none   # the start was far off balance: left as the pins hold it
        body = self.body
        soles = body.parts.soles.positions(fk)                                # (K, 3)
        carry = carrying_feet((float(soles[body.left, 1].min()), float(soles[body.right, 1].min())),
                              self.pinned, self.floor, on_lowest=False)
        if not any(carry):
            return none
        which = body.soles[carry]
        points = soles[which][:, [0, 2]]
        corners, outward = self._support(points, which)
        com = (body.mass @ fk.positions + np.einsum("jab,jb->a", fk.rotations, body.mass_centre))[[0, 2]]
        if len(corners) >= 3 and (((com - points[corners]) * outward).sum(1) <= -BALANCE_MARGIN).all():
            self.started = True if self.started is None else self.started
            return none   # well inside (inside a convex polygon, on the inner side of every edge)
        out = outside_polygon(com, corners, points)
        if self.started is None:
            self.started = out.distance <= BALANCE_REACH
        if not self.started or out.distance <= -BALANCE_MARGIN:
            return none
        # the centre of mass under joint k's turn w: w x (sum over k's subtree of m (c - p_k))
        seg_com = fk.positions + np.einsum("jab,jb->ja", fk.rotations, body.parts.segments.centre)
        moment = ANCESTOR.T @ (body.mass[:, None] * seg_com) - body.subtree_mass[:, None] * fk.positions   # (24, 3)
        normal = np.array([out.normal[0], 0.0, out.normal[1]])
        row = np.zeros(3 * NUM_JOINTS + 3)
        # d(n . x) for x moved by w about p: n . (w x (x - p)) = w . ((x - p) x n)
        turn = np.cross(moment, normal)
        for k, weight in ((which[out.a], 1.0 - out.t), (which[out.b], out.t)):
            if weight:
                turn -= weight * np.cross(soles[k] - fk.positions, normal) * body.sole_ancestors[k][:, None]
        row[:3 * NUM_JOINTS] = turn.ravel()
        return np.array([BALANCE_WEIGHT * (out.distance + BALANCE_MARGIN)]), BALANCE_WEIGHT * row[None]

    def _collision_rows(self, fk):
        none = np.zeros(0), np.zeros((0, 3 * NUM_JOINTS + 3))
        body = self.body
        caps = body.parts.capsules
        ends = caps.ends(fk)                                                  # (C, 2, 3)
        middle = ends.sum(1)                                                  # twice the middles
        gap = middle[caps.pairs[:, 0]] - middle[caps.pairs[:, 1]]
        near = np.flatnonzero((gap * gap).sum(1) < body.pair_reach2)
        if not len(near):
            return none
        depth, pa, pb = pair_depths(ends, caps.radius, caps.pairs[near])
        keep = depth > COLLISION_ALLOWANCE
        if not keep.any():
            return none
        deep, depth, pa, pb = near[keep], depth[keep], pa[keep], pb[keep]
        normal = unit(pa - pb)                                                # (A, 3) from the trunk to the arm
        # the depth falls as the arm's point moves along the normal and the trunk's against it
        arm = np.cross(pa[:, None] - fk.positions, normal[:, None]) * body.pair_ancestors[0][deep][..., None]
        trunk = np.cross(pb[:, None] - fk.positions, normal[:, None]) * body.pair_ancestors[1][deep][..., None]
        rows = np.zeros((len(deep), 3 * NUM_JOINTS + 3))
        rows[:, :3 * NUM_JOINTS] = (trunk - arm).reshape(len(deep), -1)
        return COLLISION_WEIGHT * (depth - COLLISION_ALLOWANCE), COLLISION_WEIGHT * rows


def apply_step(local_rot, trans, fk, step):
    """Turn every joint k's subtree by the world-frame rotation step[3k:3k+3] (axis-angle,
    about the joint) and move the root by step[-3:]; fk is the pose's forward kinematics.
    Poses may carry leading batch dimensions (step (..., 75))."""
    turn = axis_angle_to_matrix(step[..., :-3].reshape(step.shape[:-1] + (NUM_JOINTS, 3)))
    wp = fk.rotations[..., list(PARENT_OR_SELF), :, :]      # a joint turns in its parent's frame
    wp[..., 0, :, :] = np.eye(3)
    return np.swapaxes(wp, -1, -2) @ turn @ wp @ local_rot, trans + step[..., -3:]


@dataclass(frozen=True)
class _State:
    """A pose in the descent and its two levels there: local (24, 3, 3), trans (3,), the held
    range components (joint limit number, component, Euler angles), its forward kinematics,
    the hard level's residuals rh (H,) and rows jh (H, 75) (effectors, held limits, floor),
    the soft level's rs (S,) and js (S, 75), and `above`: the heights and rows of the contact
    points above the floor (`_floor_rows`)."""

    local: np.ndarray
    trans: np.ndarray
    held: list
    fk: object
    rh: np.ndarray
    jh: np.ndarray
    rs: np.ndarray
    js: np.ndarray
    above: tuple = (np.zeros(0), np.zeros((0, 3 * NUM_JOINTS + 3)))   # contact points above the floor


class _Problem:
    """The two levels at one pose: hard residuals and rows (effectors, held limits, floor), soft ones."""

    def __init__(self, hard, soft, limits, options, rest):
        self.hard, self.soft, self.limits, self.options, self.rest = hard, soft, limits, options, rest
        self.terms = _SoftTerms(options, hard, rest) if options.balance or options.self_collision else None

    def evaluate(self, local, trans, held):
        """The _State of the pose (local, trans) with these range components held."""
        fk = forward_kinematics(local, self.rest, PARENTS, trans)
        rh, jh = _residuals(self.hard, fk.rotations, fk.positions, True)
        parts_r, parts_j = [rh], [jh]
        if held:
            parts_r.append(np.zeros(len(held)))
            parts_j.append(self.limits.rows(held, fk))
        above = _State.above
        if self.options.floor is not None and self.options.contacts is not None:
            (fr, fj), above = _floor_rows(self.options.contacts, self.options.floor, fk)
            parts_r.append(fr)
            parts_j.append(fj)
        rh, jh = np.concatenate(parts_r), np.concatenate(parts_j)
        rs, js = _residuals(self.soft, fk.rotations, fk.positions, True)
        if self.terms is not None:   # balance and self-collision: soft, after the soft effectors
            tr, tj = self.terms.rows(fk, not len(rh) or np.abs(rh).max() < TERM_GATE)
            if len(tr):
                rs, js = np.concatenate([rs, tr]), np.concatenate([js, tj])
        return _State(local, trans, held, fk, rh, jh, rs, js, above)


def _prioritised_step(rh, jh, rs, js, lam):
    """The hard level's damped least-squares step, plus the soft level's within the hard
    level's null space (J_s N)^+ (-r_s - J_s dx_h)."""
    step = np.zeros(js.shape[1] if len(rs) else jh.shape[1])
    null = None
    if len(rh):
        gram = jh @ jh.T
        step = -jh.T @ np.linalg.solve(gram + lam * np.eye(len(rh)), rh)
        scale = max(np.trace(gram) / len(rh), 1e-12)
        null = np.eye(jh.shape[1]) - jh.T @ np.linalg.solve(gram + 1e-9 * scale * np.eye(len(rh)), jh)
    if len(rs):
        a = js if null is None else js @ null
        step = step - a.T @ np.linalg.solve(a @ a.T + lam * np.eye(len(rs)), rs + js @ step)
    return step


def _floor_step(state, soft, lam):
    """The prioritised step from a _State (soft: the soft level's (rs, js), or none), with
    every contact point above the floor that the step would take below it joining the hard
    level, landing on the floor, and the step solved again, until it takes none below (at most
    FLOOR_PASSES times). Without this the points would cross the floor, the hard level (the
    floor rows they then get) would refuse the step, and the soft level would stall far from
    what it can reach (a pelvis and head drawn down 10 cm, their pins soft, stopped 24-130 mm
    short)."""
    step = _prioritised_step(state.rh, state.jh, *soft, lam)
    gap, rows = state.above
    joined = np.zeros(len(gap), bool)
    for _ in range(FLOOR_PASSES if len(gap) else 0):
        crossing = ~joined & (gap + rows @ step < 0.0)
        if not crossing.any():
            break
        joined |= crossing
        step = _prioritised_step(np.concatenate([state.rh, gap[joined]]), np.concatenate([state.jh, rows[joined]]),
                                 *soft, lam)
    return step


def _better(new_rh, new_rs, rh, rs):
    """Lexicographic acceptance with slack: while the hard level is off by more than _SLACK,
    only a step that improves it; once within, a step that improves the soft level without
    taking the hard one beyond _SLACK, or improves the hard one without worsening the soft.
    The slack counts the rows of either pose: a step can bring rows of its own (contact points
    it takes under the floor), and with none before, no slack would let them be put back."""
    h, s = float(rh @ rh), float(rs @ rs)
    new_h, new_s = float(new_rh @ new_rh), float(new_rs @ new_rs)
    slack = max(len(rh), len(new_rh)) * _SLACK ** 2
    if h > slack:
        return new_h < h
    return (new_s < s and new_h <= slack) or (new_h < h and new_s <= s * (1 + 1e-9))


def effector_errors(effectors, local_rot, trans, rest):
    """Per effector, unweighted: metres (position), radians (rotation: the geodesic angle;
    look-at: the angle between the joint's axis and the direction to the target)."""
    fk = forward_kinematics(local_rot, rest, PARENTS, trans)
    return posed_effector_errors(effectors, fk.rotations, fk.positions)


def posed_effector_errors(effectors, world, positions):
    """effector_errors of poses given as world rotations (..., 24, 3, 3) and joint positions
    (..., 24, 3): (..., E)."""
    t = _Targets(effectors)
    batch = np.shape(positions)[:-2]
    if not len(t):
        return np.zeros(batch + (0,))
    r = _residuals(t, world, positions, False)[0].reshape(batch + (len(t), 3))
    r = np.linalg.norm(r, axis=-1) / t.weight
    chord = t.kind == LOOK_AT                            # |u - v| of unit vectors is 2 sin(angle / 2)
    r[..., chord] = 2 * np.arcsin(np.clip(r[..., chord] / 2, 0.0, 1.0))
    return r


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
            local_rot, trans_out = _refine_levels(*start, rest, effectors, flags, options)
            pose = (nearest_rotation(local_rot), trans_out)   # many steps wear the rotations a little
            errors = effector_errors(effectors, *pose, rest)
            rank = (len(_missed_pins(effectors, soft_flags, gave_way, errors)) + len(floor_misses(*pose, rest, options)),
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
    unfolded = _Limits().unfolded(pose[0]) if missed and options.joint_limits else None
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
    misses = _misses(effectors, soft_flags, errors, gave_way)
    if misses:
        misses = _misses(effectors, soft_flags, errors, gave_way, out_of_reach(effectors, rest))
    misses = tuple(sorted(misses + floor_misses(*pose, rest, options), key=lambda m: -m.error))
    return Refined(local_rot=pose[0], trans=pose[1], errors=errors, misses=misses)


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


def _refine_levels(local, trans, rest, effectors, soft_flags, options):
    """refine_pose's two levels from (local, trans) with these soft flags: (local, trans)."""
    hard = _Targets([e for e, s in zip(effectors, soft_flags) if not s])
    soft = _Targets([e for e, s in zip(effectors, soft_flags) if s])
    limits = _Limits() if options.joint_limits else None
    held = []
    if limits is not None:
        local, held = limits.clamp(local)
    problem = _Problem(hard, soft, limits, options, rest)
    state = problem.evaluate(local, trans, held)
    settle = max(options.iterations // 3, 2)   # hard-only steps that make the pins exact again
    state = _descend(problem, limits, state, options.iterations, options.damping, use_soft=True)
    # the soft level has gone as far as it can: make the hard one exact again if a step left it off
    state = _descend(problem, limits, state, settle, options.damping, use_soft=False)
    if problem.terms is not None and problem.terms.arm_inside(state.fk, COLLISION_DEEP):
        # an arm still inside when the budget ran out comes out in a few more steps, more often
        # than not: only such poses pay for them. They start from the hard level made exact: where
        # the soft descent stopped, a pin is often off by more than _SLACK, and _better then takes
        # only the steps that bring it back, none that bring the arm out
        state = _descend(problem, limits, state, COLLISION_EXTRA * options.iterations, options.damping,
                         use_soft=True)
        state = _descend(problem, limits, state, settle, options.damping, use_soft=False)
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
    targets = _Targets(effectors)
    limits = _Limits() if options.joint_limits else None
    if limits is not None:
        limits.clamp_many(local)
    lam = np.full(len(local), options.damping)
    fk = forward_kinematics(local, rest, PARENTS, trans)
    r, jac = _residuals(targets, fk.rotations, fk.positions, True)
    eye = np.eye(r.shape[-1])
    for _ in range(options.iterations):
        active = np.abs(r).max(-1) >= _STOP
        if not active.any():
            break
        a = np.flatnonzero(active)
        jt = np.swapaxes(jac[a], -1, -2)
        gram = jac[a] @ jt
        step = -(jt @ np.linalg.solve(gram + lam[a, None, None] * eye, r[a][..., None]))[..., 0]
        for _ in range(_SHORTER):   # too long: a damped step, not a cut near-singular one (as _descend)
            long = np.flatnonzero(np.abs(step).max(-1) > _MAX_TURN)
            if not len(long):
                break
            lam[a[long]] *= 10.0
            step[long] = -(jt[long] @ np.linalg.solve(gram[long] + lam[a[long], None, None] * eye,
                                                      r[a[long]][..., None]))[..., 0]
        longest = np.abs(step).max(-1, keepdims=True)
        step *= np.minimum(1.0, _MAX_TURN / np.maximum(longest, 1e-12))
        sub = forward_kinematics(local[a], rest, PARENTS, trans[a])
        new, new_trans = apply_step(local[a], trans[a], sub, step)
        new = _orthonormal(new)
        if limits is not None:
            limits.clamp_many(new)
        new_fk = forward_kinematics(new, rest, PARENTS, new_trans)
        new_r, new_jac = _residuals(targets, new_fk.rotations, new_fk.positions, True)
        better = (new_r * new_r).sum(-1) < (r[a] * r[a]).sum(-1)
        take = a[better]
        local[take], trans[take], r[take], jac[take] = new[better], new_trans[better], new_r[better], new_jac[better]
        lam[take] = np.maximum(lam[take] * 0.3, 1e-7)
        lam[a[~better]] *= 10.0
    out = []
    terms = _SoftTerms(options, targets, rest) if options.balance or options.self_collision else None
    fk = forward_kinematics(local, rest, PARENTS, trans) if terms is not None else None
    for k in range(len(local)):
        errors = effector_errors(effectors, local[k], trans[k], rest)
        misses = _misses(effectors, soft_flags, errors)
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
    hard = _Targets([e for e in effectors if not getattr(e, "soft", False)])
    terms = _SoftTerms(replace(options, balance=False), hard, rest)
    return terms.arm_inside(forward_kinematics(np.asarray(local_rot, dtype=np.float64), rest, PARENTS,
                                               np.asarray(trans, dtype=np.float64)), depth)


def _descend(problem, limits, state, iterations, damping, use_soft):
    """Damped prioritised steps from a _State to the _State they stop at; with use_soft False
    only the hard level moves and only its cost decides."""
    lam = damping
    none = np.zeros(0), np.zeros((0, state.jh.shape[1]))
    for _ in range(iterations):
        hard_met = not len(state.rh) or np.abs(state.rh).max() < _STOP
        if hard_met and (not use_soft or not len(state.rs) or np.abs(state.rs).max() < _STOP):
            break
        soft = (state.rs, state.js) if use_soft else none
        if state.held:   # release the held range components that this step would turn back inside
            held, rh, jh = _release(problem, state.held, state.rh, state.jh, soft, lam)
            state = replace(state, held=held, rh=rh, jh=jh)
        step = _floor_step(state, soft, lam)
        longest = np.abs(step).max()
        if not np.isfinite(longest):
            lam *= 10.0
            continue
        for _ in range(_SHORTER):   # too long: a damped step, not a cut near-singular one
            if longest <= _MAX_TURN:
                break
            lam *= 10.0
            step = _floor_step(state, soft, lam)
            longest = np.abs(step).max()
        if longest > _MAX_TURN:
            step *= _MAX_TURN / longest
        moved = _stepped(problem, limits, state, step)
        accept = (_better(moved.rh, moved.rs, state.rh, state.rs) if use_soft
                  else float(moved.rh @ moved.rh) < float(state.rh @ state.rh))
        slack = max(len(state.rh), len(moved.rh)) * _SLACK ** 2
        if (not accept and use_soft and float(state.rh @ state.rh) <= slack < float(moved.rh @ moved.rh)
                and float(moved.rs @ moved.rs) < float(state.rs @ state.rs)):
            # the soft level gained but the hard one drifted past the slack (the step keeps it
            # only to first order): one hard step from there puts it back, then judge again
            again = _stepped(problem, limits, moved, _floor_step(moved, none, damping))
            if _better(again.rh, again.rs, state.rh, state.rs):
                moved, accept = again, True
        if accept:
            # settled: the hard level is met and the soft one gains less than _CREEP a step (out
            # of reach, the last millimetres come a hair at a time; they are not worth the time)
            gain = np.sqrt(float(state.rs @ state.rs)) - np.sqrt(float(moved.rs @ moved.rs))
            settled = (use_soft and len(state.rs)
                       and abs(gain) < min(_CREEP, 0.01 * np.sqrt(float(moved.rs @ moved.rs)))
                       and (not len(moved.rh) or np.abs(moved.rh).max() < _STOP))
            state = moved
            lam = max(lam * 0.3, 1e-7)
            if settled:
                break     # the soft level no longer moves: as close as it gets
        else:
            lam *= 10.0
            if lam > 1e8 or (lam > _GIVE_UP * damping and float(state.rh @ state.rh) <= len(state.rh) * _SLACK ** 2):
                break     # even short steps do not help: as close as it gets from here
    return state


def _stepped(problem, limits, state, step):
    """The _State a step (75,) from a _State reaches: turned (apply_step), its rotations kept
    orthonormal, the knees and elbows put back in range (the components pushed past a bound
    held there)."""
    new, new_trans = apply_step(state.local, state.trans, state.fk, step)
    new = _orthonormal(new)
    held = state.held
    if limits is not None:
        new, pushed = limits.clamp(new)
        held = _merge_held(state.held, pushed)
    return problem.evaluate(new, new_trans, held)


def _orthonormal(m):
    """Nearly orthonormal matrices (..., 3, 3) one Newton step nearer their rotations. A step
    turns a joint by R_p^T T R_p with R_p its parent's world rotation, a product along the
    chain: the error of a rotation not quite orthonormal (a network's float32 answer) would
    grow with every step, several times over down the arm."""
    return 1.5 * m - 0.5 * m @ np.swapaxes(m, -1, -2) @ m


def _release(problem, held, rh, jh, soft, lam):
    """Held range components (an active set) minus those the step taken without them would
    move away from their bound, with their rows dropped from the hard level's (rh, jh)."""
    first = 3 * len(problem.hard)
    rows = np.arange(first, first + len(held))
    free = np.setdiff1d(np.arange(len(rh)), rows)
    rates = jh[rows] @ _prioritised_step(rh[free], jh[free], *soft, lam)
    keep = []
    for (n, c, angles), rate in zip(held, rates):
        at_low = angles[c] <= problem.limits.low[n][c] + 1e-9
        keep.append(not ((at_low and rate > 0) or (not at_low and rate < 0)))
    if all(keep):
        return held, rh, jh
    mask = np.ones(len(rh), bool)
    mask[rows[~np.array(keep)]] = False
    return [h for h, k in zip(held, keep) if k], rh[mask], jh[mask]


def _merge_held(held, pushed):
    """Held limit components, updated with the ones a step pushed to their bound."""
    merged = {(n, c): angles for n, c, angles in held}
    for n, c, angles in pushed:
        merged[(n, c)] = angles
    return [(n, c, angles) for (n, c), angles in merged.items()]


def _misses(effectors, soft_flags, errors, gave_way=(), reasons=None):
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


def planted_feet(effectors, world_rotations):
    """Extra hard effectors that keep each foot as it is: for an ankle pinned by position and
    not by rotation, the ankle's and the foot joint's world rotations (24, 3, 3) of the pose
    on screen. The toes then stay where they were while the rest of the body moves."""
    kinds = {(joint_of(e, n), kind_of(e)) for n, e in enumerate(effectors)}
    extra = []
    for ankle, foot in (("left_ankle", "left_foot"), ("right_ankle", "right_foot")):
        a, f = JOINT_INDEX[ankle], JOINT_INDEX[foot]
        if (a, EffectorKind.POSITION) in kinds and (a, EffectorKind.ROTATION) not in kinds:
            extra.append(Effector(ankle, EffectorKind.ROTATION, np.asarray(world_rotations[a])))
            if (f, EffectorKind.ROTATION) not in kinds:
                extra.append(Effector(foot, EffectorKind.ROTATION, np.asarray(world_rotations[f])))
    return extra
