"""The cost J of a pose: what "natural" means when several poses meet the same effectors.

    J = prior + effort / EFFORT_UNIT + LIMIT_WEIGHT * sum(excess^2)
        + balance / BALANCE_UNIT + collision / COLLISION_UNIT

- prior: how unusual the pose is, 0.5 * sum(((a - mean) / std)^2) over the 23 non-root joints'
  local axis-angle components, with the mean and spread of the training poses (mirrored
  copies included), stored in the flow's weights file.
- effort: the static effort of holding the limbs against gravity, in newton-metres: at every
  joint below the pelvis, the torque of the mass it carries (its own segment and everything
  beyond it) about it, summed. A hanging arm costs nothing; an arm held out sideways costs
  about 15 N m at the shoulder. Segment masses come from the body's volume (`Segments`).
- excess: how far (radians) each knee and elbow Euler angle is beyond its range
  (limits.JOINT_LIMITS); refined poses have none.
- balance: how far (metres) the whole body's centre of mass is, in the floor plane (the body
  frame's X-Z), outside the support polygon: the convex hull of the soles (`BodyParts.soles`,
  each foot's outline on the rest mesh) of the feet that carry weight (`carrying_feet`: near
  the lowest foot or the floor, or pinned and not lifted as in a kick). 1 cm outside costs a
  unit (BALANCE_UNIT); a foot's length outside, a fall, about 25.
- collision: how deep (metres, summed) the arms' capsules (upper arm, forearm, palm, fingers)
  are inside the trunk's and thighs' (`Capsules`: fitted to the rest mesh per segment, from
  the skinning weights, and scaled with the body). An upper arm against the ribs or the chest
  is no collision. 5 mm costs a unit (COLLISION_UNIT).

The refinement keeps balance and collision as soft goals under the pins
(refine.RefineOptions.balance, self_collision). The torch twin the flow trains with
(training.flow.TorchCost) has the prior and the effort only.
"""
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ..body.measure import DENSITY, mesh_volume   # DENSITY kg / m^3: a body weighs its volume times this
from ..body.model import load_body_model
from ..core.errors import SmplIkError
from ..core.kinematics import AttachedPoints, forward_kinematics
from ..core.rotations import matrix_to_axis_angle, matrix_to_euler
from ..core.skeleton import CHILDREN, FEET, JOINT_INDEX, JOINT_NAMES, PARENTS, indices
from .geometry import convex_hull, outside_polygon, pair_depths
from .limits import JOINT_LIMITS

GRAVITY = 9.81       # m / s^2, along the body frame's -Y
EFFORT_UNIT = 10.0   # N m of holding torque that cost as much as one unit of the prior
LIMIT_WEIGHT = 100.0  # cost of a squared radian past a joint range (LIMIT_WEIGHT * sum(excess^2))
BALANCE_UNIT = 0.01     # metres of the centre of mass outside the support polygon that cost one unit
COLLISION_UNIT = 0.005  # metres of an arm inside the trunk or a thigh that cost one unit


@dataclass(frozen=True)
class Segments:
    """Each joint's body segment: mass (24,) kilograms and centre of mass (24, 3) as an offset
    from the joint in the rest pose (metres)."""

    mass: np.ndarray
    centre: np.ndarray

    @classmethod
    def from_body(cls, body, betas=None):
        """Split the rest mesh's volume among the joints: every triangle goes to the joint
        whose skinning weight is largest on it, and spans a tetrahedron with the nearest point
        of that joint's bone (from the joint to its children's mean; the joint itself for the
        head, hands and feet). Limbs and trunk are nearly star-shaped about their bones, so
        the tetrahedra fill each segment without reaching into the next; they miss the
        concave folds (about a fifth of the volume on the open body), so the masses are scaled
        to the whole mesh's volume (measure.mesh_volume) times DENSITY."""
        betas = np.zeros(10) if betas is None else np.asarray(betas, dtype=np.float64)
        v = body.shaped_vertices(betas)
        rest = body.rest_joints(betas)
        tri = v[body.faces]                                            # (F, 3, 3)
        owner = body.weights[body.faces].mean(1).argmax(1)             # (F,)
        ends = np.array([rest[list(CHILDREN[j])].mean(0) if CHILDREN[j] else rest[j] for j in range(len(rest))])
        start, stop = rest[owner], ends[owner]
        bone = stop - start
        middle = tri.mean(1)
        along = np.einsum("fc,fc->f", middle - start, bone) / np.maximum(np.einsum("fc,fc->f", bone, bone), 1e-12)
        apex = start + np.clip(along, 0.0, 1.0)[:, None] * bone
        a, b, c = (tri[:, i] - apex for i in range(3))
        vol = np.einsum("fi,fi->f", a, np.cross(b, c)) / 6.0
        centre = apex + (a + b + c) / 4.0
        n = len(rest)
        mass = np.bincount(owner, vol, n) * DENSITY
        moment = np.stack([np.bincount(owner, vol * centre[:, k], n) for k in range(3)], 1) * DENSITY
        whole = mesh_volume(v, body.faces) * DENSITY
        mass, moment = (x * whole / max(mass.sum(), 1e-9) for x in (mass, moment))
        com = np.where(np.abs(mass)[:, None] > 1e-9, moment / np.where(np.abs(mass) > 1e-9, mass, 1.0)[:, None], rest)
        return cls(mass=np.maximum(mass, 0.0), centre=com - rest)

    def scaled_to(self, rest, reference_rest):
        """The same segments on a skeleton of another size: offsets scale with the height
        span of the rest joints, masses with its cube."""
        span = lambda r: np.ptp(np.asarray(r)[..., 1], axis=-1)   # noqa: E731
        s = span(rest) / span(reference_rest)
        return Segments(mass=self.mass * s ** 3, centre=self.centre * s)


def _subtree_order():
    order = [0]
    for j in order:
        order += list(CHILDREN[j])
    return order[::-1]   # leaves first


_LEAVES_FIRST = _subtree_order()


def effort(local_rot, trans, rest, segments):
    """Holding torque summed over the joints below the pelvis, N m, for poses (..., 24, 3, 3)."""
    fk = forward_kinematics(local_rot, rest, PARENTS, trans)
    com = fk.positions + np.einsum("...jab,jb->...ja", fk.rotations, segments.centre)
    carried = np.broadcast_to(segments.mass, com.shape[:-1]).copy()           # (..., 24)
    moment = com * segments.mass[:, None]                                    # (..., 24, 3)
    for j in _LEAVES_FIRST:
        p = PARENTS[j]
        if p >= 0:
            carried[..., p] += carried[..., j]
            moment[..., p, :] += moment[..., j, :]
    lever = moment - carried[..., None] * fk.positions                       # (..., 24, 3)
    horizontal = np.linalg.norm(lever[..., [0, 2]], axis=-1) * GRAVITY
    return horizontal[..., 1:].sum(-1)


def prior_cost(local_rot, mean, std):
    a = matrix_to_axis_angle(local_rot[..., 1:, :, :]).reshape(local_rot.shape[:-3] + (-1,))
    return 0.5 * (((a - mean) / std) ** 2).sum(-1)


def limit_excess(local_rot):
    """Sum of squared radians by which knees and elbows are beyond JOINT_LIMITS, (...,)."""
    total = np.zeros(local_rot.shape[:-3])
    for lim in JOINT_LIMITS:
        angles = matrix_to_euler(local_rot[..., JOINT_INDEX[lim.joint], :, :], lim.order)
        low, high = np.radians(lim.low), np.radians(lim.high)
        total += (np.maximum(low - angles, 0) ** 2 + np.maximum(angles - high, 0) ** 2).sum(-1)
    return total


@dataclass(frozen=True)
class CostOptions:
    """What pose_cost weighs a pose with: the body's Segments; the prior's mean and std (69,)
    (the flow's `prior_mean`, `prior_std`); parts, the body's BodyParts for balance and
    self-collision (None: the open body's scaled to rest, `default_parts`); pinned (left,
    right) and floor: which feet are pinned and the floor's height, for which feet carry
    weight (`carrying_feet`; by default the body stands on its lowest feet)."""

    segments: Segments
    mean: np.ndarray
    std: np.ndarray
    parts: object = None
    pinned: tuple = (False, False)
    floor: float = None


def pose_cost(local_rot, trans, rest, options):
    """J and its terms for poses (..., 24, 3, 3), trans (..., 3), rest (..., 24, 3), weighed
    as `options` (a CostOptions) says: {"cost", "prior", "effort_nm", "limit_excess",
    "balance_m", "collision_m"}, each (...,)."""
    segments, mean, std = options.segments, options.mean, options.std
    parts, pinned, floor = options.parts, options.pinned, options.floor
    local_rot = np.asarray(local_rot, dtype=np.float64)
    rest = np.asarray(rest, dtype=np.float64)
    prior = prior_cost(local_rot, mean, std)
    held = effort(local_rot, trans, rest, segments)
    excess = limit_excess(local_rot)
    if parts is None:
        parts = default_parts(rest.reshape(-1, rest.shape[-2], 3)[0])
    outside = balance_distance(local_rot, trans, rest, parts, pinned, floor)
    inside = collision_depth(local_rot, trans, rest, parts).sum(-1)
    return {"cost": (prior + held / EFFORT_UNIT + LIMIT_WEIGHT * excess + outside / BALANCE_UNIT
                     + inside / COLLISION_UNIT),
            "prior": prior, "effort_nm": held, "limit_excess": excess, "balance_m": outside, "collision_m": inside}


# --- balance and self-collision -------------------------------------------------------------

SOLE_DEPTH = 0.02         # metres: the rest mesh's vertices this near a foot's lowest make its sole
SOLE_DIRECTIONS = 8       # a sole's outline: its extreme points in this many directions
SUPPORT_HEIGHT = 0.05     # metres: a foot whose sole is this near the lowest foot (or the floor) carries weight
LIFTED = 0.25             # metres: a pinned foot lifted more than this above the lowest carries none (a kick)
FEET_INDICES = tuple(indices(pair) for pair in FEET)   # per side, (ankle, foot) joint indices


@dataclass(frozen=True)
class Capsules:
    """Capsules that stand in for the limbs and the trunk in self-collision: capsule c follows
    joint[c] (C,) rigidly, its axis from start[c] to stop[c] (C, 3), offsets from that joint in
    the rest pose (metres, body frame), radius (C,) metres; names (C,) the joints' names.
    `pairs` (P, 2) the capsule indices that may collide (an arm capsule, a trunk or thigh
    capsule)."""

    joint: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    radius: np.ndarray
    names: tuple
    pairs: np.ndarray

    @classmethod
    def from_body(cls, body, betas=None):
        """Fit each capsule of CAPSULE_AXES to the rest mesh's vertices that follow its joint most
        (largest skinning weight): the axis through their centroid along the capsule's
        direction (the bone to the joint's child; past the joint along its parent's bone for the
        hands; left-right for the trunk), the radius their median distance from it (so the
        capsule lies about on the skin, inside it where the limb is not round), the ends where
        the vertices' 2nd and 98th percentiles along the axis are, less the radius."""
        betas = np.zeros(10) if betas is None else np.asarray(betas, dtype=np.float64)
        v = body.shaped_vertices(betas)
        rest = body.rest_joints(betas)
        owner = body.weights.argmax(1)
        joint, start, stop, radius, names = [], [], [], [], []
        for name, axis in CAPSULE_AXES.items():
            j = JOINT_INDEX[name]
            own = v[owner == j]
            if len(own) < 8:
                continue   # a file whose skinning gives this joint (almost) no skin: no capsule
            if axis == "across":
                d = np.array([1.0, 0.0, 0.0])
            elif axis == "bone":
                d = rest[list(CHILDREN[j])].mean(0) - rest[j]
            else:
                d = rest[j] - rest[PARENTS[j]]
            d = d / np.linalg.norm(d)
            origin = own.mean(0)
            along = (own - origin) @ d
            r = float(np.median(np.linalg.norm(own - origin - along[:, None] * d, axis=1)))
            lo, hi = np.percentile(along, [2, 98])
            a, b = (lo + r, hi - r) if hi - lo > 2 * r else ((lo + hi) / 2,) * 2
            joint.append(j), names.append(name), radius.append(r)
            start.append(origin + a * d - rest[j]), stop.append(origin + b * d - rest[j])
        index = {n: c for c, n in enumerate(names)}
        pairs = [(index[a], index[b]) for a in ARM_CAPSULES for b in TRUNK_CAPSULES
                 if a in index and b in index and (a, b) not in NOT_COLLIDING]
        return cls(joint=np.array(joint, dtype=np.int64), start=np.array(start), stop=np.array(stop),
                   radius=np.array(radius), names=tuple(names), pairs=np.array(pairs, dtype=np.int64).reshape(-1, 2))

    def scaled(self, s):
        """The same capsules s times as large."""
        return replace(self, start=self.start * s, stop=self.stop * s, radius=self.radius * s)

    def ends(self, fk):
        """The capsules' axis ends (..., C, 2, 3), start then stop, in a pose with forward
        kinematics fk."""
        return fk.positions[..., self.joint, None, :] + np.einsum(
            "...cab,ceb->...cea", fk.rotations[..., self.joint, :, :], np.stack([self.start, self.stop], 1))


# Which capsules there are and how each one's axis runs (Capsules.from_body).
CAPSULE_AXES = {
    "pelvis": "across", "spine1": "across", "spine2": "across", "spine3": "across",
    "left_hip": "bone", "right_hip": "bone",
    **{f"{side}_{part}": "bone" for side in ("left", "right") for part in ("shoulder", "elbow", "wrist")},
    "left_hand": "beyond", "right_hand": "beyond",
}
# The arms (upper arm, forearm, palm, fingers) must stay out of the trunk and the thighs. An
# upper arm lies against the ribs when it hangs and meets the chest at the shoulder: that is
# no collision (it may still not go into the belly or a thigh).
ARM_CAPSULES = tuple(f"{side}_{part}" for side in ("left", "right") for part in ("shoulder", "elbow", "wrist", "hand"))
TRUNK_CAPSULES = ("pelvis", "spine1", "spine2", "spine3", "left_hip", "right_hip")
NOT_COLLIDING = {(f"{side}_shoulder", spine) for side in ("left", "right") for spine in ("spine1", "spine2", "spine3")}
# what the self-collision figure counts: a hand or forearm inside the trunk or a thigh
HAND_AND_FOREARM = tuple(f"{side}_{part}" for side in ("left", "right") for part in ("elbow", "wrist", "hand"))


def _sole_outline(body, betas):
    """Each foot's sole as AttachedPoints (its outline's points, following the ankle or the
    foot joint, whichever the vertex follows most) and the foot (K,) 0 left, 1 right."""
    v = body.shaped_vertices(betas)
    rest = body.rest_joints(betas)
    owner = body.weights.argmax(1)
    angles = np.arange(SOLE_DIRECTIONS) * 2 * np.pi / SOLE_DIRECTIONS
    directions = np.stack([np.cos(angles), np.sin(angles)], 1)                 # (D, 2) in (x, z)
    joints, offsets, feet = [], [], []
    for foot, pair in enumerate(FEET_INDICES):
        mine = np.flatnonzero(np.isin(owner, pair))
        if not len(mine):
            raise SmplIkError(f"{body.path}: no vertices follow the {JOINT_NAMES[pair[0]]}; cannot find its sole")
        sole = mine[v[mine, 1] < v[mine, 1].min() + SOLE_DEPTH]
        extreme = np.unique(sole[np.argmax(v[sole][:, [0, 2]] @ directions.T, axis=0)])
        joints += list(owner[extreme])
        offsets += list(v[extreme] - rest[owner[extreme]])
        feet += [foot] * len(extreme)
    return AttachedPoints(np.array(joints, dtype=np.int64), np.array(offsets)), np.array(feet, dtype=np.int64)


@dataclass(frozen=True)
class BodyParts:
    """What balance and self-collision know of a body: its segments (`Segments`), capsules
    (`Capsules`), and soles (AttachedPoints, each foot's outline on the floor) with sole_foot
    (K,) 0 for the left foot's points, 1 for the right's. `rest` (24, 3): the rest joints they
    were fitted on."""

    segments: Segments
    capsules: Capsules
    soles: AttachedPoints
    sole_foot: np.ndarray
    rest: np.ndarray

    @classmethod
    def from_body(cls, body, betas=None):
        betas = np.zeros(10) if betas is None else np.asarray(betas, dtype=np.float64)
        soles, foot = _sole_outline(body, betas)
        return cls(segments=Segments.from_body(body, betas), capsules=Capsules.from_body(body, betas),
                   soles=soles, sole_foot=foot, rest=body.rest_joints(betas))

    def scaled_to(self, rest):
        """The same parts on a skeleton of another size (rest joints (24, 3)): lengths scale with
        the height span of the rest joints, masses with its cube (as Segments.scaled_to)."""
        s = _span(rest) / _span(self.rest)
        return BodyParts(segments=self.segments.scaled_to(rest, self.rest),
                         capsules=self.capsules.scaled(s),
                         soles=AttachedPoints(self.soles.joints, self.soles.offsets * s), sole_foot=self.sole_foot,
                         rest=np.asarray(rest, dtype=np.float64))


def _span(rest):
    return float(np.ptp(np.asarray(rest)[..., 1], axis=-1))


@lru_cache(maxsize=1)
def _open_body_parts():
    return BodyParts.from_body(load_body_model())


def default_parts(rest):
    """The open (neutral) body's BodyParts scaled to rest joints (24, 3): what the refinement
    uses when it is told no body (RefineOptions.body_parts)."""
    return _open_body_parts().scaled_to(rest)


def centre_of_mass(fk, segments):
    """The whole body's centre of mass (..., 3), body frame, metres, in a pose with forward
    kinematics fk."""
    com = fk.positions + np.einsum("...jab,jb->...ja", fk.rotations, segments.centre)
    return np.einsum("...ja,j->...a", com, segments.mass) / segments.mass.sum()


def carrying_feet(lowest, pinned=(False, False), floor=None, on_lowest=True):
    """Which feet carry weight, (left, right) bools, from each foot's lowest sole point's
    height (left, right) (body frame, metres along Y) and whether each is pinned (its ankle or
    foot joint pinned by position): a foot within SUPPORT_HEIGHT of the lowest foot (of the
    floor, when one is given), and a pinned foot not lifted more than LIFTED above it. None
    does when the body does not stand (`stands`, which on_lowest is passed to)."""
    if not stands(lowest, pinned, floor, on_lowest):
        return False, False
    ground = min(lowest) if floor is None else float(floor)
    return tuple(bool(h - ground < SUPPORT_HEIGHT or (p and h - ground < LIFTED)) for h, p in zip(lowest, pinned))


def stands(lowest, pinned=(False, False), floor=None, on_lowest=True):
    """Whether balance applies: a foot is pinned, or one is on the floor (its lowest sole point
    within SUPPORT_HEIGHT of it). With neither, on_lowest says: pose_cost takes a body to stand
    on its lowest foot; the refinement does not (RefineOptions: pins alone that hold no foot
    may hang the body from a hand, or hold it in the air)."""
    if any(pinned):
        return True
    return on_lowest if floor is None else min(lowest) - float(floor) < SUPPORT_HEIGHT


def balance_distance(local_rot, trans, rest, parts, pinned=(False, False), floor=None):
    """How far (metres, (...,)) the centre of mass is, horizontally (the body frame's X-Z
    plane), outside the support polygon: the convex hull of the soles of the feet that carry
    weight (carrying_feet); 0 inside it and where the body does not stand (`stands`), for poses
    (..., 24, 3, 3), trans (..., 3), rest (..., 24, 3) and BodyParts for this rest."""
    fk = forward_kinematics(np.asarray(local_rot, dtype=np.float64), rest, PARENTS, trans)
    com = centre_of_mass(fk, parts.segments)[..., [0, 2]]
    soles = parts.soles.positions(fk)                                          # (..., K, 3)
    lowest = np.stack([soles[..., parts.sole_foot == f, 1].min(-1) for f in (0, 1)], -1)
    out = np.zeros(com.shape[:-1])
    for i in np.ndindex(out.shape):
        carry = np.array(carrying_feet(tuple(lowest[i]), pinned, floor))
        if carry.any():
            points = soles[i][carry[parts.sole_foot]][:, [0, 2]]
            out[i] = max(outside_polygon(com[i], convex_hull(points), points).distance, 0.0)
    return out


def capsule_penetration(fk, capsules):
    """pair_depths of every pair that may collide (capsules.pairs) in a pose with forward
    kinematics fk."""
    return pair_depths(capsules.ends(fk), capsules.radius, capsules.pairs)


@dataclass(frozen=True)
class PinnedJoints:
    """What pins hold: positions, joint index -> (3,) pinned position (body frame, metres);
    turns, joint index -> (3, 3) pinned world rotation (None: none)."""

    positions: dict
    turns: dict = None


def pinned_depth(local_rot, trans, rest, parts, pinned, joints=None):
    """How deep (metres, (P,)) the pins alone put each arm capsule inside its trunk or thigh
    capsule (the pairs of collision_depth) in one pose (24, 3, 3), trans (3,), rest (24, 3),
    with what `pinned` (PinnedJoints) holds; joints: only the pairs whose arm capsule follows
    one of these joint names. An arm capsule follows its joint: with the joint's rotation pinned and the
    joint or its child pinned in place, the capsule is wholly fixed; else with the joint and
    its child both pinned it lies along the bone between them; else a pinned joint at either
    end is inside at least by its overlap (the radii about the pinned point). 0 where
    nothing of it is pinned. A collision this deep is the pins', not the pose's."""
    pins, turns = pinned.positions, pinned.turns
    fk = forward_kinematics(np.asarray(local_rot, dtype=np.float64), rest, PARENTS, trans)
    caps = parts.capsules
    ends = caps.ends(fk)
    turns = {} if turns is None else turns
    keep = np.array([joints is None or caps.names[a] in joints for a in caps.pairs[:, 0]], bool)
    out = np.zeros(len(caps.pairs))
    for n in np.flatnonzero(keep):
        a, b = caps.pairs[n]
        j = int(caps.joint[a])
        ends_held = None
        if j in turns:
            turn = np.asarray(turns[j], dtype=np.float64)
            anchor = np.asarray(pins[j], dtype=np.float64) if j in pins else next(
                (np.asarray(pins[c], dtype=np.float64) - turn @ (rest[c] - rest[j])
                 for c in CHILDREN[j] if c in pins), None)
            if anchor is not None:
                ends_held = anchor + np.stack([caps.start[a], caps.stop[a]]) @ turn.T
        if ends_held is None:
            held = [np.asarray(pins[k], dtype=np.float64) for k in (j, *CHILDREN[j]) if k in pins]
            if not held:
                continue
            ends_held = np.stack([held[0], held[-1]])
        out[n] = pair_depths(np.stack([ends_held, ends[b]]), np.array([caps.radius[a], caps.radius[b]]),
                             np.array([[0, 1]]))[0][0]
    return out[keep]


def collision_depth(local_rot, trans, rest, parts, joints=None):
    """Self-collision, (..., P) metres: how deep each arm capsule is inside a trunk or thigh
    capsule (BodyParts.capsules.pairs), for poses (..., 24, 3, 3), trans (..., 3), rest
    (..., 24, 3); joints: only the pairs whose arm capsule follows one of these joint names."""
    fk = forward_kinematics(np.asarray(local_rot, dtype=np.float64), rest, PARENTS, trans)
    depth = capsule_penetration(fk, parts.capsules)[0]
    if joints is not None:
        keep = np.array([parts.capsules.names[a] in joints for a in parts.capsules.pairs[:, 0]], bool)
        depth = depth[..., keep]
    return depth
