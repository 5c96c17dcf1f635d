"""A mapped source skeleton in SMPL's frame (Y up, facing +Z, metres): its reference pose,
axes and length unit (`source_rig`), and its joints placed at SMPL's joints (`smpl_positions`).

The reference is the file's zero-rotation (OFFSET) pose when that is a standing rest pose
(T-pose, A-pose); exports whose bones carry rest orientations (Character Creator, Maya, Daz,
game engines) have a zero pose that is no human pose, so the motion's own frame nearest a
standing rest pose is the reference instead. Only joint positions choose it, so a rig with rest
orientations and the same rig without them find the same reference. Left comes from the hips,
up from the spine, the unit from the limb lengths (`units`).
"""
from dataclasses import dataclass

import numpy as np

from ..core.errors import SmplIkError
from ..core.metrics import angle_deg
from ..core.rotations import unit
from ..core.skeleton import CHILDREN, JOINT_INDEX, NUM_JOINTS, PARENTS
from .mapping import JointMapping
from .units import infer_unit, parse_unit

# Summed degrees (rest_pose_departure) past which a zero pose is no standing rest pose.
REST_POSE_LIMIT_DEG = 120.0   # (docs/training_log.md, "Retargeting limits")


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


def zero_pose_positions(parents, offsets):
    """(J, 3) joint positions of a skeleton in its zero-rotation (OFFSET) pose, in its own
    frame and units: parents (J,) each joint's parent index (-1 for a root, parents first),
    offsets (J, 3) each joint's OFFSET."""
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


def torso_axes(p):
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
    _, up, left = torso_axes(p)
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
    _, up, _ = torso_axes(p)
    up = up / np.linalg.norm(up, axis=-1, keepdims=True)
    return _nearest_axis(np.nanmedian(up.reshape(-1, 3), axis=0))



def source_rig(skeleton, mapping, body, positions=None, length_unit=None):
    """Find a mapped skeleton's reference pose, axes and units.

    positions: (T, Js, 3) the motion's joint positions (file frame and units), or None for a
    skeleton whose OFFSET pose is its true rest (an armature's bone heads). With a motion, a
    zero pose that departs from a standing rest pose by more than REST_POSE_LIMIT_DEG is not
    trusted; the frame that departs least is the reference. length_unit: a name or number for
    `parse_unit`, or None to infer it with `infer_unit`.
    """
    ref = zero_pose_positions(skeleton.parents, skeleton.offsets)
    reference = -1
    if positions is not None and len(positions):
        zero_pose = smpl_positions(ref, mapping, {})
        if not rest_pose_departure(zero_pose) <= REST_POSE_LIMIT_DEG:
            frames = smpl_positions(positions, mapping, {})
            reference = int(np.argmin(rest_pose_departure(frames)))
            ref = positions[reference]
    p = smpl_positions(ref, mapping, {})
    _, up, left = torso_axes(p)
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


def chain_fractions(rest_joints, mapped):
    """Placements {joint: (mapped ancestor, mapped descendant, fraction)} of unmapped joints
    on the chain between mapped ones, at SMPL's rest proportions: rest_joints (24, 3) SMPL's
    rest joints, mapped (24,) bool. Joints with no mapped descendant get none and follow their
    parent. The placements are what `smpl_positions` takes."""
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


TRUNK = ("pelvis", "spine1", "spine2", "spine3", "neck")   # SMPL's trunk, bottom to top


def trunk_path(skeleton, mapping):
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


def resample_trunk(points, positions, path, rest_joints):
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
    """(..., Js, 3) source positions to (..., 24, 3) positions at SMPL joints (NaN: none):
    each mapped joint's source joint, then each of `placements` (`chain_fractions`) between
    its two mapped ends."""
    out = np.full(positions.shape[:-2] + (NUM_JOINTS, 3), np.nan)
    for j, s in enumerate(mapping.source):
        if s is not None:
            out[..., j, :] = positions[..., s, :]
    for j, (a, d, f) in placements.items():
        out[..., j, :] = (1 - f) * out[..., a, :] + f * out[..., d, :]
    return out
