"""Motion of any mapped humanoid skeleton onto an SMPL body: shape inversion and retargeting.

Steps, all in SMPL's frame (Y up, facing +Z, metres):
1. `source_rig`: the source's reference pose, axes and length unit. The reference is the
   file's zero-rotation (OFFSET) pose when that is a standing rest pose (T-pose, A-pose);
   exports whose bones carry rest orientations (Character Creator, Maya, Daz, game engines)
   have a zero pose that is no human pose, so the motion's own frame nearest a standing rest
   pose is the reference instead. Only joint positions choose it, so a rig with rest
   orientations and the same rig without them find the same reference. Left comes from the
   hips, up from the spine, the unit from the limb lengths (an adult is 1.4-2.1 m).
2. `fit_shape` (SMPL-SI's shape inversion): betas, within +-BETA_BOUND, so the SMPL
   skeleton's limbs and widths have the source's absolute lengths. Joints are linear in
   betas, so it is a small bounded least-squares solve.
3. `retarget`: each SMPL joint's world rotation is the source joint's rotation relative to
   the reference pose, composed with a rest alignment that takes the source's reference
   directions onto SMPL's T-pose (so A-pose and T-pose references both work). The optional
   polish then swings every joint so its segments point exactly where the source's do,
   keeping the source's twist. The root follows the source's hips, in metres.
4. `BodyCheck`: the figures that say whether the body is plausible (height, largest |beta|,
   bone-length residual, torso lean against the source's), with warnings when it is not.
"""
import math
from dataclasses import dataclass

import numpy as np

from ..body.measure import measure
from ..body.model import NUM_BETAS
from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics, world_to_local
from ..core.metrics import angle_deg
from .mapping import JointMapping, build_mapping
from ..core.rotations import axis_angle_to_matrix, kabsch, matrix_to_axis_angle, shortest_arc, unit
from ..core.skeleton import CHILDREN, JOINT_INDEX, JOINT_NAMES, NUM_JOINTS, PARENTS

# Where a leaf joint points in SMPL's T-pose (used to align a source leaf's own direction).
LEAF_DIRECTION = {"head": (0, 1, 0), "left_foot": (0, 0, 1), "right_foot": (0, 0, 1),
                  "left_hand": (1, 0, 0), "right_hand": (-1, 0, 0)}
# Segments whose directions the quality report compares (both ends must be mapped).
LIMBS = (("left_hip", "left_knee"), ("left_knee", "left_ankle"), ("left_ankle", "left_foot"),
         ("right_hip", "right_knee"), ("right_knee", "right_ankle"), ("right_ankle", "right_foot"),
         ("left_shoulder", "left_elbow"), ("left_elbow", "left_wrist"), ("left_wrist", "left_hand"),
         ("right_shoulder", "right_elbow"), ("right_elbow", "right_wrist"), ("right_wrist", "right_hand"),
         ("pelvis", "neck"), ("neck", "head"))
# Metres per file unit. "cmu": CMU's ASF/AMC skeletons, and BVH converted from them as they
# are, measure lengths in 1/0.45 inch (the ASF's `:units length 0.45`).
LENGTH_UNITS = {"m": 1.0, "cm": 0.01, "mm": 0.001, "inch": 0.0254, "cmu": 0.0254 / 0.45}
ADULT_HEIGHT_M = (1.4, 2.1)     # an adult's stature: the unit that puts the source here wins
TYPICAL_HEIGHT_M = 1.7          # ... and, if several do, the one nearest this
BETA_BOUND = 5.0                # |beta| the shape fit may use (+-5 sd of beta 0: 1.23-2.19 m on the neutral body)
AT_BOUND_SD = 0.1               # a beta this close to the bound counts as held there
LENGTH_RESIDUAL_LIMIT = 0.05    # RMS relative bone-length miss above which a body is flagged
REST_POSE_LIMIT_DEG = 120.0     # a zero pose departing further from a standing rest pose
# (summed degrees, rest_pose_departure) is not trusted; SMPL's own T-pose departs 22
LEAN_LIMIT_DEG = 10.0  # torso lean differing from the source's by more is flagged (where a skeleton
# puts its shoulders on the spine moves the figure a few degrees: 7 on the m21 T-pose)
# The limbs whose lengths set the unit: the same bones on every skeleton convention.
UNIT_LIMBS = (("left_hip", "left_knee"), ("left_knee", "left_ankle"), ("right_hip", "right_knee"),
              ("right_knee", "right_ankle"), ("left_shoulder", "left_elbow"), ("left_elbow", "left_wrist"),
              ("right_shoulder", "right_elbow"), ("right_elbow", "right_wrist"))


def parse_unit(text):
    """('name', metres per file unit) from a unit name in LENGTH_UNITS or a positive number
    of metres; raises SmplIkError naming the choices."""
    text = str(text).strip()
    if text in LENGTH_UNITS:
        return text, LENGTH_UNITS[text]
    try:
        metres = float(text)
    except ValueError:
        metres = float("nan")
    if not (math.isfinite(metres) and metres > 0):
        raise SmplIkError(f"unit {text!r}: use one of {', '.join(LENGTH_UNITS)} or metres per file "
                          "unit as a positive number (0.01 for centimetres)")
    return f"{metres:g} m", metres


# --- the source skeleton in SMPL's frame -----------------------------------------------------

@dataclass(frozen=True)
class SourceRig:
    """A mapped source skeleton: how to bring its joints into SMPL's frame and metres.

    `reference` is the motion frame whose pose is the reference, or -1 for the file's own
    zero-rotation pose; `ref_positions` (Js, 3) are that pose's joints (SMPL frame, metres).
    `unit_given`: the unit came from the caller, not from the skeleton's size."""

    mapping: JointMapping
    to_smpl: np.ndarray      # (3, 3) rotation: SMPL frame from the file's frame
    unit: float              # metres per file unit
    unit_name: str
    ref_positions: np.ndarray
    reference: int = -1
    unit_given: bool = False

    @property
    def reference_note(self):
        if self.reference < 0:
            return ""
        return (f"the file's zero-rotation pose is not a standing rest pose (its bones carry rest "
                f"orientations): frame {self.reference} is the reference pose")


def _fk_offsets(parents, offsets):
    pos = np.zeros_like(offsets, dtype=float)
    for j, p in enumerate(parents):
        pos[j] = offsets[j] if p < 0 else pos[p] + offsets[j]
    return pos


def _nearest_axis(v):
    """The signed coordinate axis nearest the direction v (3,)."""
    axis = np.zeros(3)
    k = int(np.argmax(np.abs(v)))
    axis[k] = np.sign(v[k])
    return axis


def _snap_to_axes(rot, tolerance_deg=20.0):
    """The nearest signed axis permutation, when within tolerance (files are axis-aligned)."""
    snapped = np.stack([_nearest_axis(row) for row in rot])
    if abs(np.linalg.det(snapped) - 1) > 1e-6:
        return rot
    angle = np.degrees(np.arccos(np.clip((np.trace(snapped.T @ rot) - 1) / 2, -1, 1)))
    return snapped if angle < tolerance_deg else rot


def _torso(p):
    """(mid-hips, up from the hips to the shoulders or neck, left) of SMPL-joint positions
    (..., 24, 3); NaN where unmapped."""
    at = lambda name: p[..., JOINT_INDEX[name], :]  # noqa: E731
    hips = 0.5 * (at("left_hip") + at("right_hip"))
    shoulders = 0.5 * (at("left_shoulder") + at("right_shoulder"))
    top = np.where(np.isnan(shoulders), at("neck"), shoulders)
    left = at("left_hip") - at("right_hip") + at("left_shoulder") - at("right_shoulder")
    return hips, top - hips, left


def rest_pose_departure(p):
    """How far poses are from a standing rest pose (T-pose, A-pose or arms down), in summed
    degrees (...,): legs straight and along the spine's downward direction, knees and elbows
    straight, arms in the body's frontal plane, hips across the spine. p: (..., 24, 3) SMPL
    joint positions in any frame and unit (NaN where unmapped: those terms count 0)."""
    at = lambda name: p[..., JOINT_INDEX[name], :]  # noqa: E731
    _, up, left = _torso(p)
    forward = np.cross(left, up)
    terms = [np.abs(90.0 - angle_deg(at("left_hip") - at("right_hip"), up))]
    for s in ("left", "right"):
        hip, knee, ankle = at(f"{s}_hip"), at(f"{s}_knee"), at(f"{s}_ankle")
        shoulder, elbow, wrist = at(f"{s}_shoulder"), at(f"{s}_elbow"), at(f"{s}_wrist")
        terms += [angle_deg(ankle - hip, -up), angle_deg(knee - hip, ankle - knee),
                  angle_deg(elbow - shoulder, wrist - elbow),
                  np.abs(90.0 - angle_deg(elbow - shoulder, forward))]
    return np.nansum(np.stack(terms), axis=0)


def _world_up(p):
    """The file's up axis (3,) from poses (T, 24, 3): the coordinate axis nearest the median
    direction from the hips to the shoulders (the actor stands most of the time)."""
    _, up, _ = _torso(p)
    up = up / np.linalg.norm(up, axis=-1, keepdims=True)
    return _nearest_axis(np.nanmedian(up.reshape(-1, 3), axis=0))


def _limb_lengths(p):
    """UNIT_LIMBS lengths (n,) of SMPL-joint positions p (24, 3), NaN where unmapped."""
    return np.array([np.linalg.norm(p[JOINT_INDEX[b]] - p[JOINT_INDEX[a]]) for a, b in UNIT_LIMBS])


def infer_unit(ref_smpl, body):
    """('name', metres per unit) of a skeleton from its limb lengths: the LENGTH_UNITS entry
    that makes it an adult's size (ADULT_HEIGHT_M; nearest TYPICAL_HEIGHT_M among several).
    ref_smpl: (24, 3) reference joints at SMPL joints in file units (NaN where unmapped).
    The size compares the limbs with `body`'s mean shape, whose height is known."""
    src = _limb_lengths(ref_smpl)
    template = _limb_lengths(body.rest_joints(np.zeros(NUM_BETAS)))
    ok = np.isfinite(src) & (src > 0)
    if not ok.any():
        raise SmplIkError("the skeleton's arms and legs have zero length")
    per_metre = float(np.median(src[ok] / template[ok]))   # file units per metre of the mean body
    mean_height = measure(body, np.zeros(NUM_BETAS)).height

    def badness(name):
        height = LENGTH_UNITS[name] * per_metre * mean_height
        low, high = ADULT_HEIGHT_M
        outside = max(math.log(low / height), math.log(height / high), 0.0)
        return outside, abs(math.log(height / TYPICAL_HEIGHT_M))

    name = min(LENGTH_UNITS, key=badness)
    return name, LENGTH_UNITS[name]


def source_rig(skeleton, mapping, body, positions=None, length_unit=None):
    """Find a mapped skeleton's reference pose, axes and units.

    positions: (T, Js, 3) the motion's joint positions (file frame and units), or None for a
    skeleton whose OFFSET pose is its true rest (an armature's bone heads). With a motion, a
    zero pose that departs from a standing rest pose by more than REST_POSE_LIMIT_DEG is not
    trusted; the frame that departs least is the reference. length_unit: a name or number for
    `parse_unit`, or None to infer it with `infer_unit`.
    """
    ref = _fk_offsets(skeleton.parents, skeleton.offsets)
    reference = -1
    if positions is not None and len(positions):
        zero_pose = smpl_positions(ref, mapping, {})
        if not rest_pose_departure(zero_pose) <= REST_POSE_LIMIT_DEG:
            frames = smpl_positions(positions, mapping, {})
            reference = int(np.argmin(rest_pose_departure(frames)))
            ref = positions[reference]
    p = smpl_positions(ref, mapping, {})
    _, up, left = _torso(p)
    if not (np.isfinite(left).all() and np.linalg.norm(left) > 1e-9):
        raise SmplIkError("the skeleton's hips and shoulders do not span a body (zero width)")
    if not (np.isfinite(up).all() and np.linalg.norm(up) > 1e-9):
        raise SmplIkError("the skeleton's spine has zero length")
    if reference < 0:
        x = unit(left)
        y = unit(up - (up @ x) * x)
        frame = _snap_to_axes(np.stack([x, y, np.cross(x, y)]))  # rows: where the file's axes go
    else:
        # a motion frame faces anywhere: keep the file's up axis and turn only by quarter turns
        y = _world_up(frames)
        x = _nearest_axis(left - (left @ y) * y)
        frame = np.stack([x, y, np.cross(x, y)])
    if length_unit is None:
        name, metres = infer_unit(p, body)
    else:
        name, metres = parse_unit(length_unit)
    return SourceRig(mapping=mapping, to_smpl=frame, unit=metres, unit_name=name,
                     ref_positions=metres * ref @ frame.T, reference=reference,
                     unit_given=length_unit is not None)


def _chain_fractions(rest_joints, mapped):
    """Placements {joint: (mapped ancestor, mapped descendant, fraction)} of unmapped joints
    on the chain between mapped ones, at SMPL's rest proportions. Joints with no mapped
    descendant get none and follow their parent."""
    out = {}
    for j in range(NUM_JOINTS):
        if mapped[j]:
            continue
        a = PARENTS[j]
        while a >= 0 and not mapped[a]:
            a = PARENTS[a]
        path = [j]  # down the first-child chain to a mapped joint
        while CHILDREN[path[-1]] and not mapped[path[-1]]:
            path.append(CHILDREN[path[-1]][0])
        if a < 0 or not mapped[path[-1]]:
            continue
        between, k = [], PARENTS[j]
        while k != a:
            between.append(k)
            k = PARENTS[k]
        chain = [a] + between[::-1] + path
        lengths = np.linalg.norm(np.diff(rest_joints[chain], axis=0), axis=1)
        out[j] = (a, path[-1], float(lengths[:chain.index(j)].sum() / max(lengths.sum(), 1e-9)))
    return out


TRUNK = ("pelvis", "spine1", "spine2", "spine3", "neck")


def _trunk_path(skeleton, mapping):
    """Source joints on the tree path from the joint mapped to SMPL's pelvis to the one mapped
    to its neck (both ends included), or None when either is unmapped."""
    a, b = (mapping.source[JOINT_INDEX[n]] for n in (TRUNK[0], TRUNK[-1]))
    if a is None or b is None:
        return None

    def up(k):
        out = [k]
        while skeleton.parents[out[-1]] >= 0:
            out.append(skeleton.parents[out[-1]])
        return out
    ua, ub = up(a), up(b)
    common = next(k for k in ua if k in ub)
    return ua[:ua.index(common) + 1] + ub[:ub.index(common)][::-1]


def _resample_trunk(points, positions, path, rest_joints):
    """Place SMPL's spine joints in `points` (..., 24, 3) on the source's trunk polyline
    (positions (..., Js, 3) of the joints `path`) at SMPL's rest arc-length fractions."""
    idx = [JOINT_INDEX[n] for n in TRUNK]
    lengths = np.linalg.norm(np.diff(rest_joints[idx], axis=0), axis=1)
    fractions = np.cumsum(lengths)[:-1] / lengths.sum()
    poly = positions[..., path, :]
    seg = np.linalg.norm(np.diff(poly, axis=-2), axis=-1)                   # (..., n-1)
    cum = np.concatenate([np.zeros(seg.shape[:-1] + (1,)), np.cumsum(seg, axis=-1)], axis=-1)
    out = points.copy()
    for j, f in zip(idx[1:-1], fractions):
        target = f * cum[..., -1:]                                              # (..., 1)
        k = np.clip((cum < target).sum(-1) - 1, 0, len(path) - 2)             # segment index
        k1 = k[..., None, None]
        p0 = np.take_along_axis(poly, k1, axis=-2)[..., 0, :]
        p1 = np.take_along_axis(poly, k1 + 1, axis=-2)[..., 0, :]
        c0 = np.take_along_axis(cum, k[..., None], axis=-1)
        t = np.clip((target - c0) / np.maximum(np.take_along_axis(seg, k[..., None], axis=-1), 1e-9), 0, 1)
        out[..., j, :] = p0 + t * (p1 - p0)
    return out


def smpl_positions(positions, mapping, placements):
    """(..., Js, 3) source positions to (..., 24, 3) positions at SMPL joints (NaN: none)."""
    out = np.full(positions.shape[:-2] + (NUM_JOINTS, 3), np.nan)
    for j, s in enumerate(mapping.source):
        if s is not None:
            out[..., j, :] = positions[..., s, :]
    for j, (a, d, f) in placements.items():
        out[..., j, :] = (1 - f) * out[..., a, :] + f * out[..., d, :]
    return out


# --- shape inversion ---------------------------------------------------------------------------

# Body measurements the shape fit matches: anatomically comparable across skeleton
# conventions (feet, hands, neck and spine joints sit differently from rig to rig). Each is a
# chain of points (a joint, or weights over joints); its length is the sum of the distances
# between consecutive points the source has (unmapped joints drop out of the chain on both
# skeletons), so a chain made of whole bones measures the same in every pose: the torso goes
# up the spine to the neck instead of straight to the shoulders, the shoulder width over
# the collars.
MID_HIPS = {"left_hip": 0.5, "right_hip": 0.5}
MEASUREMENTS = {
    "left thigh": ("left_hip", "left_knee"), "right thigh": ("right_hip", "right_knee"),
    "left shin": ("left_knee", "left_ankle"), "right shin": ("right_knee", "right_ankle"),
    "left upper arm": ("left_shoulder", "left_elbow"), "right upper arm": ("right_shoulder", "right_elbow"),
    "left forearm": ("left_elbow", "left_wrist"), "right forearm": ("right_elbow", "right_wrist"),
    "hip width": ("right_hip", "left_hip"),
    "shoulder width": ("right_shoulder", "right_collar", "left_collar", "left_shoulder"),
    "torso": (MID_HIPS, "pelvis", "spine1", "spine2", "spine3", "neck"),
}

BONES = tuple(n for n in MEASUREMENTS if n.split()[-1] in ("thigh", "shin", "arm", "forearm"))


def _point_weights(point):
    """(24,) weights over SMPL joints of a MEASUREMENTS point."""
    w = np.zeros(NUM_JOINTS)
    for name, k in (point.items() if isinstance(point, dict) else ((point, 1.0),)):
        w[JOINT_INDEX[name]] = k
    return w


@dataclass(frozen=True)
class ShapeFit:
    """Shape inversion result: SMPL joints(betas) ~ source joints, absolute lengths (metres)."""

    betas: np.ndarray          # (10,), each within +-BETA_BOUND
    names: tuple               # the measurements fitted
    residual_mm: np.ndarray    # per measurement, |fitted - source| in mm
    length_ratio: np.ndarray   # per measurement, fitted SMPL length / source length
    source_m: np.ndarray       # per measurement, the source's length in metres

    @property
    def at_bound(self):
        """Indices of the betas at +-BETA_BOUND (within AT_BOUND_SD: the prior keeps a beta that
        wants to go further a hair inside)."""
        return tuple(int(k) for k in np.flatnonzero(np.abs(self.betas) >= BETA_BOUND - AT_BOUND_SD))

    @property
    def length_residual(self):
        """RMS of |fitted - source| / source (a fraction) over the bones: the thighs, shins,
        upper arms and forearms, whose ends every convention puts at the same joints (where
        rigs put the pelvis, neck and collars differs, so widths and torso are left out)."""
        bones = [k for k, n in enumerate(self.names) if n in BONES]
        error = 1e-3 * self.residual_mm[bones] / self.source_m[bones]
        return float(np.sqrt(np.mean(error ** 2))) if bones else float("nan")

    def report(self):
        return {"betas": np.round(self.betas, 3).tolist(),
                "length_residual_pct": round(100 * self.length_residual, 2),
                "measurements": {n: {"source_m": round(float(m), 4), "length_ratio": round(float(q), 3),
                                     "residual_mm": round(float(r), 1)}
                                 for n, m, q, r in zip(self.names, self.source_m, self.length_ratio,
                                                      self.residual_mm)}}


def _bounded_lstsq(a_mat, b_vec, bound):
    """argmin |A x - b| with |x| <= bound: least squares on the free variables, the ones that
    overshoot held at their bound, until none does (an active-set loop; at most n solves)."""
    n = a_mat.shape[1]
    x = np.zeros(n)
    held = np.zeros(n, bool)
    for _ in range(n + 1):
        free = ~held
        x[free] = np.linalg.lstsq(a_mat[:, free], b_vec - a_mat[:, held] @ x[held], rcond=None)[0]
        over = free & (np.abs(x) > bound)
        if not over.any():
            break
        worst = np.flatnonzero(over)[np.argmax(np.abs(x[over]))]
        x[worst] = np.sign(x[worst]) * bound
        held[worst] = True
    return x


def _chain_lengths(chains, joints):
    """Lengths (M,) of chains (lists of (24,) segment weights) on rest joints (24, 3) and
    their derivatives (M, 3 * 24) by the joints."""
    lengths, grads = [], []
    for steps in chains:
        g = np.zeros((NUM_JOINTS, 3))
        total = 0.0
        for d in steps:
            seg = d @ joints
            n = np.linalg.norm(seg)
            total += n
            g += np.outer(d, seg / max(n, 1e-12))
        lengths.append(total)
        grads.append(g.ravel())
    return np.array(lengths), np.array(grads)


def fit_shape(body, joints, beta_prior=3e-5, iterations=4, measurements=None, least=6):
    """Fit betas to the source's limb lengths and body widths, at their absolute size.

    joints: (..., 24, 3) source positions at SMPL joints, one pose or many (metres; NaN where
    unmapped, or missing from a pose). measurements: {name: chain of points} as MEASUREMENTS
    (the default) has them; a source whose joints are SMPL's own (a joint file of SMPL's 24)
    can give every bone. Each chain's source length is the sum over its segments of their
    median length over the poses that show both its ends, so the fit sees lengths, not the
    pose the file was drawn in. Joints are linear in betas and a chain's length nearly so: a few Gauss-Newton
    steps of bounded least squares (betas within +-BETA_BOUND), with a small prior keeping
    betas near 0 (units: m^2 per beta^2). SmplIkError when fewer than `least` chains are
    measured.
    """
    joints = np.asarray(joints, dtype=np.float64).reshape(-1, NUM_JOINTS, 3)
    j0 = body.rest_joints(np.zeros(NUM_BETAS))
    jd = np.stack([body.rest_joints(np.eye(NUM_BETAS)[k]) - j0 for k in range(NUM_BETAS)], axis=-1)
    names, chains, targets = [], [], []
    for name, points in (MEASUREMENTS if measurements is None else measurements).items():
        weights = [_point_weights(p) for p in points]
        have = [w for w in weights if np.isfinite(joints[:, w != 0]).all(axis=(1, 2)).any()]
        steps = [b - a for a, b in zip(have[:-1], have[1:])]   # (24,) weights per segment
        # NaN in the frames that miss an end (a joint file's gaps); a segment no frame shows drops the chain
        seen = [np.linalg.norm(np.einsum("j,tjc->tc", d[d != 0], joints[:, d != 0]), axis=-1) for d in steps]
        if not all(np.isfinite(s).any() for s in seen):
            continue
        length = sum(np.nanmedian(s) for s in seen)
        if steps and length >= 1e-3:
            names.append(name)
            chains.append(steps)
            targets.append(length)
    if len(names) < least:
        raise SmplIkError(f"too few limbs mapped to fit a body shape ({len(names)} lengths"
                          + (f": {', '.join(names)}" if names else "") + f"; {least} needed)")
    targets = np.array(targets)
    betas = np.zeros(NUM_BETAS)
    prior = np.sqrt(beta_prior) * np.eye(NUM_BETAS)
    for _ in range(iterations):
        lengths, grads = _chain_lengths(chains, j0 + jd @ betas)
        jac = grads @ jd.reshape(3 * NUM_JOINTS, NUM_BETAS)       # (M, 10)
        a_mat = np.concatenate([jac, prior])
        b_vec = np.concatenate([targets - lengths + jac @ betas, np.zeros(NUM_BETAS)])
        betas = _bounded_lstsq(a_mat, b_vec, BETA_BOUND)
    fitted, _ = _chain_lengths(chains, body.rest_joints(betas))
    return ShapeFit(betas=betas, names=tuple(names), residual_mm=1e3 * np.abs(fitted - targets),
                    length_ratio=fitted / targets, source_m=targets)


def invert_shape(skeleton, body, mapping=None, length_unit=None):
    """Shape inversion for a skeleton whose OFFSET pose is its rest: (ShapeFit, SourceRig).
    For a motion file, whose zero pose may not be a rest pose, `retarget` finds the reference
    in the motion itself."""
    mapping = mapping or build_mapping(skeleton.names)
    rig = source_rig(skeleton, mapping, body, length_unit=length_unit)
    return fit_shape(body, smpl_positions(rig.ref_positions, mapping, {})), rig


# --- how plausible the body is ---------------------------------------------------------------

def torso_lean_deg(joints):
    """Mean angle (degrees) over frames between the torso (mid-hips to mid-shoulders) and
    SMPL's up axis (+Y); joints (T, 24, 3) in SMPL's frame. NaN when unmapped."""
    _, up, _ = _torso(joints)
    return float(np.nanmean(angle_deg(up, np.array([0.0, 1.0, 0.0]))))


@dataclass(frozen=True)
class BodyCheck:
    """Whether a fitted body is plausible: its rest height, largest |beta|, RMS bone-length
    residual and torso lean against the source's, and a warning for each figure out of range."""

    height_m: float
    max_abs_beta: float
    length_residual_pct: float
    lean_source_deg: float
    lean_body_deg: float
    warnings: tuple

    def report(self):
        """A JSON-ready dict (None for a lean that cannot be measured)."""
        def num(x, digits):
            return round(float(x), digits) if math.isfinite(x) else None
        return {"height_m": num(self.height_m, 3), "max_abs_beta": num(self.max_abs_beta, 2),
                "length_residual_pct": num(self.length_residual_pct, 2),
                "torso_lean_deg": {"source": num(self.lean_source_deg, 1), "body": num(self.lean_body_deg, 1)},
                "warnings": list(self.warnings)}


def check_body(body, shape, rig, lean_source, lean_body):
    """The BodyCheck of a ShapeFit on `body` for SourceRig `rig` (leans in degrees)."""
    height = measure(body, shape.betas).height
    warnings = []
    low, high = ADULT_HEIGHT_M
    if not rig.unit_given and not low <= height <= high:
        warnings.append(f"body {height:.2f} m tall, outside {low}-{high} m for an adult: is the file's "
                        f"unit ({rig.unit_name}) right? Give it with --unit")
    if shape.at_bound:
        warnings.append(f"betas {', '.join(map(str, shape.at_bound))} at their bound +-{BETA_BOUND:g}: "
                        "the source's proportions are outside this body's shape space")
    if shape.length_residual > LENGTH_RESIDUAL_LIMIT:
        worst = max((k for k, n in enumerate(shape.names) if n in BONES),
                    key=lambda k: abs(shape.length_ratio[k] - 1))
        warnings.append(f"bone lengths miss the source's by {100 * shape.length_residual:.1f}% (RMS; worst "
                        f"{shape.names[worst]} {100 * (shape.length_ratio[worst] - 1):+.0f}%)")
    if abs(lean_body - lean_source) > LEAN_LIMIT_DEG:
        warnings.append(f"torso leans {lean_body:.1f} deg where the source leans {lean_source:.1f} deg")
    return BodyCheck(height_m=height, max_abs_beta=float(np.abs(shape.betas).max()),
                     length_residual_pct=100 * shape.length_residual, lean_source_deg=lean_source,
                     lean_body_deg=lean_body, warnings=tuple(warnings))


# --- retargeting ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Retarget:
    """SMPL motion: poses (T, 24, 3) axis-angle, root first; trans (T, 3) metres."""

    poses: np.ndarray
    trans: np.ndarray
    betas: np.ndarray
    fps: float
    shape: ShapeFit
    rig: SourceRig
    limb_error_deg: dict      # limb "a->b": mean direction error (degrees)
    check: BodyCheck

    @property
    def mean_limb_error_deg(self):
        values = [v for v in self.limb_error_deg.values() if np.isfinite(v)]
        return float(np.mean(values)) if values else float("nan")

    @property
    def notes(self):
        """What the reader should know: the mapping's notes, the reference pose."""
        return tuple(self.rig.mapping.notes) + ((self.rig.reference_note,) if self.rig.reference_note else ())


LEAF_AGREEMENT_DEG = 30.0   # a leaf's children must point within this of their mean direction


def _leaf_alignment(skeleton, src_joint, rig, name):
    """Alignment of a leaf from the source's own child direction (an End Site, a toe tip), or
    None when it has none: no child away from it, or children that do not agree on one
    direction (a toe base with five toes spread across the foot, which would turn SMPL's toes
    sideways). Then the leaf keeps its reference-pose relation to its parent."""
    kids = [k for k, p in enumerate(skeleton.parents) if p == src_joint]
    v = np.array([rig.ref_positions[k] - rig.ref_positions[src_joint] for k in kids]).reshape(-1, 3)
    v = v[np.linalg.norm(v, axis=1) > 1e-3]
    if not len(v):
        return None
    d = v / np.linalg.norm(v, axis=1, keepdims=True)
    mean = d.sum(0)
    if np.linalg.norm(mean) < 1e-6 or angle_deg(d, mean).max() > LEAF_AGREEMENT_DEG:
        return None
    return shortest_arc(mean, np.array(LEAF_DIRECTION[name], float))


# Knees and elbows are hinges: (joint above, hinge, the axis in SMPL's T-pose about which the
# hinge flexes by a positive angle: the shin back, the forearm forward).
HINGES = (("left_hip", "left_knee", (1.0, 0.0, 0.0)), ("right_hip", "right_knee", (1.0, 0.0, 0.0)),
          ("left_shoulder", "left_elbow", (0.0, -1.0, 0.0)), ("right_shoulder", "right_elbow", (0.0, 1.0, 0.0)))
HINGE_CONTRAST = 0.1   # the best twist must leave this share of the worst one's spread, or less
_TWISTS = np.linspace(-np.pi, np.pi, 3600, endpoint=False)   # candidate twists, 0.1 degree apart


def _twist(bone, angle):
    """(3, 3) rotation by `angle` radians about the unit axis `bone` (3,)."""
    return axis_angle_to_matrix(angle * bone)


def _twist_from_hinges(world, rest):
    """Set the twist of hips, knees, shoulders and elbows so the knees and elbows are hinges.

    A reference frame taken from the motion holds the actor's own twists, not a rest pose's.
    A hinge's local rotation turns about one axis, which it shares with the joint above; so
    the hinge is turned about its bone until that axis, seen from the joint above, stays put
    over the clip, and the joint above about its bone until the axis is SMPL's (HINGES).
    world: (T, 24, 3, 3) world rotations (returned changed); rest: (24, 3) rest joints. A limb
    that never bends enough to tell (HINGE_CONTRAST) keeps the reference frame's twist.
    """
    world = world.copy()
    for upper, hinge, axis in HINGES:
        j, k = JOINT_INDEX[upper], JOINT_INDEX[hinge]
        axis = np.asarray(axis)
        relative = np.swapaxes(world[:, j], -1, -2) @ world[:, k]     # (T, 3, 3): the hinge's turn
        bone = unit(rest[CHILDREN[k][0]] - rest[k])
        # the axis twisted by theta about the bone: parallel + cos * p + sin * q
        par = (axis @ bone) * bone
        p = axis - par
        q = np.cross(bone, p)
        seen = np.stack([relative @ par, relative @ p, relative @ q], axis=1)   # (T, 3, 3)
        seen = seen - seen.mean(axis=0)
        gram = np.einsum("tic,tjc->ij", seen, seen)                   # spread = w^T gram w
        w = np.stack([np.ones_like(_TWISTS), np.cos(_TWISTS), np.sin(_TWISTS)])
        spread = np.einsum("in,ij,jn->n", w, gram, w)
        if spread.min() > HINGE_CONTRAST * spread.max():
            continue
        theta = _TWISTS[np.argmin(spread)]
        up_bone = unit(rest[k] - rest[j])
        for turn in (0.0, np.pi):   # theta and theta + pi both make a hinge: one flexes, one bends back
            hinged_k = world[:, k] @ _twist(bone, theta + turn)
            shared = np.mean(np.swapaxes(world[:, j], -1, -2) @ hinged_k @ axis, axis=0)
            hinged_j = world[:, j] @ _twist(up_bone, _twist_about(up_bone, axis, shared))
            flexion = matrix_to_axis_angle(np.swapaxes(hinged_j, -1, -2) @ hinged_k) @ axis
            if np.mean(flexion) >= 0:
                break
        world[:, j], world[:, k] = hinged_j, hinged_k
    return world


def _twist_about(bone, v, target):
    """The angle (radians) about the unit axis `bone` (3,) that turns v (3,) towards target
    (3,), both taken perpendicular to the axis."""
    v = v - (v @ bone) * bone
    target = target - (target @ bone) * bone
    return float(np.arctan2(np.cross(v, target) @ bone, v @ target))


def retarget(motion, body, mapping=None, betas=None, polish=True, length_unit=None):
    """Retarget a BVH Motion onto `body`; betas default to the shape inversion's.
    length_unit: the file's unit (a `parse_unit` name or number), or None to infer it."""
    sk = motion.skeleton
    mapping = mapping or build_mapping(sk.names, motion.path)
    fk = motion.forward()
    rig = source_rig(sk, mapping, body, fk.positions, length_unit)
    c = rig.to_smpl
    pos = rig.unit * fk.positions @ c.T                    # (T, Js, 3)
    # the body from every frame's joints: the same for any rest orientation or reference
    shape = fit_shape(body, smpl_positions(pos, mapping, {}))
    if betas is None:
        betas = shape.betas
    rest = body.rest_joints(betas)
    mapped = np.array(mapping.mapped)
    placements = _chain_fractions(rest, mapped)

    glob = c @ fk.rotations @ c.T                          # (T, Js, 3, 3)
    if rig.reference >= 0:  # rotations relative to the reference frame, not to the zero pose
        glob = glob @ np.swapaxes(glob[rig.reference], -1, -2)
    e = smpl_positions(pos, mapping, placements)           # (T, 24, 3)
    e_ref = smpl_positions(rig.ref_positions, mapping, placements)
    path = _trunk_path(sk, mapping)
    if path is not None:   # the spine's joints where SMPL has them along the source's trunk
        e = _resample_trunk(e, pos, path, rest)
        e_ref = _resample_trunk(e_ref, rig.ref_positions, path, rest)
    has = ~np.isnan(e_ref[:, 0])
    t = motion.num_frames

    align = np.zeros((NUM_JOINTS, 3, 3))
    world = np.zeros((t, NUM_JOINTS, 3, 3))
    for j in range(NUM_JOINTS):
        p = PARENTS[j]
        kids = [k for k in CHILDREN[j] if has[k] and has[j]
                and np.linalg.norm(e_ref[k] - e_ref[j]) > 1e-3]
        if mapping.source[j] is None:
            # an interpolated joint only knows its chain: side branches (collars sitting on
            # the spine below it, say) would tilt it
            kids = kids[:1]
        v_ref = np.array([e_ref[k] - e_ref[j] for k in kids]).reshape(-1, 3)
        d_rest = np.array([rest[k] - rest[j] for k in kids]).reshape(-1, 3)
        if len(kids) >= 2:
            align[j] = kabsch(v_ref, d_rest)
        elif len(kids) == 1:
            align[j] = shortest_arc(v_ref[0], d_rest[0])
        else:
            leaf = (_leaf_alignment(sk, mapping.source[j], rig, JOINT_NAMES[j])
                    if mapping.source[j] is not None and JOINT_NAMES[j] in LEAF_DIRECTION else None)
            if leaf is None:
                # no direction of its own. In a trusted rest pose (the file's zero pose) a mapped
                # leaf faces as SMPL's rest does, whatever its parent's bone was turned by; in a
                # motion frame taken as the reference, or unmapped, it keeps its parent's relation
                rest_leaf = mapping.source[j] is not None and rig.reference < 0
                leaf = np.eye(3) if rest_leaf or p < 0 else align[p]
            align[j] = leaf
        # Q: the joint's rotation relative to the source's reference pose
        if mapping.source[j] is not None:
            q = glob[:, mapping.source[j]]
        else:
            q = world[:, p] @ align[p] if p >= 0 else np.broadcast_to(np.eye(3), (t, 3, 3))
        if kids and (polish or mapping.source[j] is None):
            v_now = np.stack([e[:, k] - e[:, j] for k in kids], axis=1)   # (T, n, 3)
            if len(kids) >= 2:
                q = kabsch(np.broadcast_to(v_ref, v_now.shape), v_now)
            else:
                q = shortest_arc(np.einsum("tab,b->ta", q, v_ref[0]), v_now[:, 0]) @ q
        world[:, j] = q @ align[j].T

    if rig.reference >= 0:   # a motion frame's twists are the actor's: set them by the hinges
        world = _twist_from_hinges(world, rest)
    local = world_to_local(world)
    # root: the SMPL hips' midpoint follows the source's
    lh, rh = JOINT_INDEX["left_hip"], JOINT_INDEX["right_hip"]
    mid_rest = 0.5 * (rest[lh] + rest[rh]) - rest[0]
    trans = 0.5 * (e[:, lh] + e[:, rh]) - rest[0] - np.einsum("tab,b->ta", world[:, 0], mid_rest)

    posed = forward_kinematics(local, rest, PARENTS, trans).positions
    check = check_body(body, shape, rig, torso_lean_deg(e), torso_lean_deg(posed))
    return Retarget(poses=matrix_to_axis_angle(local), trans=trans, betas=np.asarray(betas, float),
                    fps=motion.fps, shape=shape, rig=rig, limb_error_deg=limb_direction_errors(posed, e),
                    check=check)


def limb_direction_errors(smpl_joints, source_joints):
    """Mean angle (degrees) between SMPL and source segment directions, per limb."""
    out = {}
    for a, b in LIMBS:
        ia, ib = JOINT_INDEX[a], JOINT_INDEX[b]
        src = source_joints[:, ib] - source_joints[:, ia]
        if np.isnan(src).any():
            continue
        ok = np.linalg.norm(src, axis=-1) > 1e-4
        if not ok.any():
            continue
        ours = smpl_joints[:, ib] - smpl_joints[:, ia]
        out[f"{a}->{b}"] = float(angle_deg(ours[ok], src[ok]).mean())
    return out


# --- SMPL skeleton as BVH -------------------------------------------------------------------

SMPL_BVH_UNIT = 100.0  # centimetres, as most BVH tools expect
_END_SITE_LENGTH_M = 0.1


def smpl_bvh_skeleton(rest_joints):
    """A BVH Skeleton of SMPL's 24 joints (centimetres) with End Sites on the leaves."""
    from .bvh import END_SITE_SUFFIX, Skeleton

    names, parents, offsets, end_site = [], [], [], []
    index = {}
    for j in range(NUM_JOINTS):  # parents precede children in SMPL's order
        p = PARENTS[j]
        index[j] = len(names)
        names.append(JOINT_NAMES[j])
        parents.append(index[p] if p >= 0 else -1)
        offsets.append(rest_joints[j] - (rest_joints[p] if p >= 0 else 0.0))
        end_site.append(False)
    for j in range(NUM_JOINTS):
        if not CHILDREN[j]:
            names.append(JOINT_NAMES[j] + END_SITE_SUFFIX)
            parents.append(index[j])
            offsets.append(_END_SITE_LENGTH_M * np.array(LEAF_DIRECTION[JOINT_NAMES[j]], float))
            end_site.append(True)
    # BVH wants each joint's children right after it: reorder depth-first
    order, stack = [], [0]
    while stack:
        k = stack.pop()
        order.append(k)
        stack.extend(reversed([c for c, p in enumerate(parents) if p == k]))
    remap = {old: new for new, old in enumerate(order)}
    chans = ("Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation")
    return Skeleton(
        names=tuple(names[k] for k in order),
        parents=tuple(remap[parents[k]] if parents[k] >= 0 else -1 for k in order),
        offsets=SMPL_BVH_UNIT * np.array([offsets[k] for k in order]),
        channels=tuple(() if end_site[k] else (chans if parents[k] < 0 else chans[3:]) for k in order),
        end_site=tuple(end_site[k] for k in order),
    ), [order.index(j) for j in range(NUM_JOINTS)]


def write_smpl_bvh(path, local_rot, trans, rest_joints, fps):
    """Write SMPL motion as a BVH of SMPL's skeleton (centimetres, Y up).

    local_rot: (T, 24, 3, 3); trans: (T, 3) metres; rest_joints: (24, 3) for the body's betas.
    The root's position channels carry the posed pelvis position (rest + trans).
    """
    from .bvh import write_bvh

    skeleton, where = smpl_bvh_skeleton(rest_joints)
    rot = np.broadcast_to(np.eye(3), (len(local_rot), len(skeleton.names), 3, 3)).copy()
    rot[:, where] = local_rot
    root = SMPL_BVH_UNIT * (rest_joints[0] + trans)
    write_bvh(path, skeleton, rot, root, 1.0 / fps)
