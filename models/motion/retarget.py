"""Motion of any mapped humanoid skeleton onto an SMPL body: shape inversion and retargeting.

Steps, all in SMPL's frame (Y up, facing +Z, metres):
1. `SourceRig`: the source's axes and units are found from its reference pose (the pose its
   OFFSETs describe): left from the hips, up along the spine, units from the leg length.
2. `fit_shape` (SMPL-SI's shape inversion): betas and a uniform scale so the SMPL skeleton's
   segments have the source's lengths. Joints are linear in betas, so it is one regularised
   least-squares solve.
3. `retarget`: each SMPL joint's world rotation is the source joint's rotation relative to
   the reference pose, composed with a rest alignment that takes the source's reference
   directions onto SMPL's T-pose (so A-pose and T-pose rests both work). The optional polish
   then swings every joint so its segments point exactly where the source's do, keeping the
   source's twist. The root translation is scaled to the new body.
"""
from dataclasses import dataclass

import numpy as np

from ..body.model import NUM_BETAS
from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics, world_to_local
from .mapping import JointMapping, build_mapping
from ..core.rotations import kabsch, matrix_to_axis_angle, shortest_arc, unit
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
UNIT_CANDIDATES = {"m": 1.0, "cm": 0.01, "mm": 0.001, "inch": 0.0254}
TYPICAL_LEG_M = 0.85  # hip to ankle of an adult, to recognise the file's units


# --- the source skeleton in SMPL's frame -----------------------------------------------------

@dataclass(frozen=True)
class SourceRig:
    """A mapped source skeleton: how to bring its joints into SMPL's frame and metres."""

    mapping: JointMapping
    to_smpl: np.ndarray      # (3, 3) rotation: SMPL frame from the file's frame
    unit: float              # metres per file unit
    unit_name: str
    ref_positions: np.ndarray  # (Js, 3) reference-pose joint positions, SMPL frame, metres


def _fk_offsets(parents, offsets):
    pos = np.zeros_like(offsets, dtype=float)
    for j, p in enumerate(parents):
        pos[j] = offsets[j] if p < 0 else pos[p] + offsets[j]
    return pos


def _snap_to_axes(rot, tolerance_deg=20.0):
    """The nearest signed axis permutation, when within tolerance (files are axis-aligned)."""
    snapped = np.zeros((3, 3))
    for r in range(3):
        k = int(np.argmax(np.abs(rot[r])))
        snapped[r, k] = np.sign(rot[r, k])
    if abs(np.linalg.det(snapped) - 1) > 1e-6:
        return rot
    angle = np.degrees(np.arccos(np.clip((np.trace(snapped.T @ rot) - 1) / 2, -1, 1)))
    return snapped if angle < tolerance_deg else rot


def source_rig(skeleton, mapping):
    """Find a mapped skeleton's axes and units from its reference (OFFSET) pose."""
    ref = _fk_offsets(skeleton.parents, skeleton.offsets)
    src = mapping.source
    at = lambda name: ref[src[JOINT_INDEX[name]]]  # noqa: E731
    left = at("left_hip") - at("right_hip") + at("left_shoulder") - at("right_shoulder")
    top = [ref[src[JOINT_INDEX[n]]] for n in ("neck", "head", "spine3", "spine2") if src[JOINT_INDEX[n]] is not None]
    top = top[0] if top else 0.5 * (at("left_shoulder") + at("right_shoulder"))
    up = top - 0.5 * (at("left_hip") + at("right_hip"))
    x = unit(left)
    y = unit(up - (up @ x) * x)
    if not (np.isfinite(x).all() and np.isfinite(y).all()) or np.linalg.norm(left) < 1e-9:
        raise SmplIkError("the skeleton's hips and shoulders do not span a body (zero width)")
    frame = np.stack([x, y, np.cross(x, y)])  # rows: where the file's axes go
    frame = _snap_to_axes(frame)
    leg = 0.5 * sum(np.linalg.norm(at(f"{s}_hip") - at(f"{s}_knee")) + np.linalg.norm(at(f"{s}_knee") - at(f"{s}_ankle"))
                    for s in ("left", "right"))
    if leg <= 0:
        raise SmplIkError("the skeleton's legs have zero length")
    name = min(UNIT_CANDIDATES, key=lambda u: abs(np.log(leg * UNIT_CANDIDATES[u] / TYPICAL_LEG_M)))
    metres = UNIT_CANDIDATES[name]
    return SourceRig(mapping=mapping, to_smpl=frame, unit=metres, unit_name=name,
                     ref_positions=metres * ref @ frame.T)


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
# conventions (feet, hands, neck and spine joints sit differently from rig to rig).
MEASUREMENTS = {
    "left thigh": {"left_knee": 1, "left_hip": -1}, "right thigh": {"right_knee": 1, "right_hip": -1},
    "left shin": {"left_ankle": 1, "left_knee": -1}, "right shin": {"right_ankle": 1, "right_knee": -1},
    "left upper arm": {"left_elbow": 1, "left_shoulder": -1},
    "right upper arm": {"right_elbow": 1, "right_shoulder": -1},
    "left forearm": {"left_wrist": 1, "left_elbow": -1}, "right forearm": {"right_wrist": 1, "right_elbow": -1},
    "hip width": {"left_hip": 1, "right_hip": -1},
    "shoulder width": {"left_shoulder": 1, "right_shoulder": -1},
    "torso": {"left_shoulder": 0.5, "right_shoulder": 0.5, "left_hip": -0.5, "right_hip": -0.5},
}


@dataclass(frozen=True)
class ShapeFit:
    """Shape inversion result: SMPL joints(betas) ~ scale * source (metres)."""

    betas: np.ndarray          # (10,)
    scale: float
    names: tuple               # the measurements fitted
    residual_mm: np.ndarray    # per measurement, |fitted - target| in mm
    length_ratio: np.ndarray   # per measurement, fitted SMPL length / scaled source length
    source_m: np.ndarray       # per measurement, the scaled source length in metres

    def report(self):
        return {"betas": np.round(self.betas, 3).tolist(), "scale": round(self.scale, 4),
                "measurements": {n: {"source_m": round(float(m), 4), "length_ratio": round(float(q), 3),
                                     "residual_mm": round(float(r), 1)}
                                 for n, m, q, r in zip(self.names, self.source_m, self.length_ratio,
                                                      self.residual_mm)}}


def fit_shape(body, ref_smpl, beta_prior=3e-5, scale_prior=3e-3):
    """Fit betas and a uniform scale to the source's limb lengths and body widths.

    ref_smpl: (24, 3) source reference positions at SMPL joints (metres, SMPL frame; NaN
    where unmapped). Each measurement is linear in the joints, hence in the betas; the
    source's is turned onto the SMPL template's direction first, so the fit sees lengths,
    not the pose the file was drawn in. Small priors keep betas near 0 and scale near 1.
    """
    j0 = body.rest_joints(np.zeros(NUM_BETAS))
    jd = np.stack([body.rest_joints(np.eye(NUM_BETAS)[k]) - j0 for k in range(NUM_BETAS)], axis=-1)
    rows_a, rows_b, names, targets = [], [], [], []
    for name, coef in MEASUREMENTS.items():
        idx = [JOINT_INDEX[j] for j in coef]
        w = np.array(list(coef.values()), float)
        v = w @ ref_smpl[idx]
        if not np.all(np.isfinite(v)) or np.linalg.norm(v) < 1e-3:
            continue
        template = w @ j0[idx]
        target = shortest_arc(v, template) @ v
        rows_a.append(np.concatenate([np.einsum("k,kcb->cb", w, jd[idx]), -target[:, None]], axis=1))
        rows_b.append(-template)
        names.append(name)
        targets.append(target)
    if len(names) < 6:
        raise SmplIkError("too few limbs mapped to fit a body shape")
    eye = np.eye(NUM_BETAS + 1)
    a_mat = np.concatenate(rows_a + [np.sqrt(beta_prior) * eye[:NUM_BETAS], np.sqrt(scale_prior) * eye[NUM_BETAS:]])
    b_vec = np.concatenate(rows_b + [np.zeros(NUM_BETAS), [np.sqrt(scale_prior)]])
    x = np.linalg.lstsq(a_mat, b_vec, rcond=None)[0]
    betas, scale = x[:NUM_BETAS], float(x[NUM_BETAS])
    joints = body.rest_joints(betas)
    fitted = np.array([np.array(list(MEASUREMENTS[n].values()), float) @ joints[[JOINT_INDEX[j] for j in MEASUREMENTS[n]]]
                       for n in names])
    targets = scale * np.array(targets)
    src_len = np.linalg.norm(targets, axis=1)
    return ShapeFit(betas=betas, scale=scale, names=tuple(names),
                    residual_mm=1e3 * np.linalg.norm(fitted - targets, axis=1),
                    length_ratio=np.linalg.norm(fitted, axis=1) / src_len, source_m=src_len)


def invert_shape(skeleton, body, mapping=None):
    """Shape inversion for a skeleton (its OFFSET pose): returns (ShapeFit, SourceRig)."""
    mapping = mapping or build_mapping(skeleton.names)
    rig = source_rig(skeleton, mapping)
    return fit_shape(body, smpl_positions(rig.ref_positions, mapping, {})), rig


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

    @property
    def mean_limb_error_deg(self):
        values = [v for v in self.limb_error_deg.values() if np.isfinite(v)]
        return float(np.mean(values)) if values else float("nan")


def _leaf_alignment(skeleton, src_joint, rig, name):
    """Alignment of a leaf from the source's own child direction (an End Site, a toe tip)."""
    kids = [k for k, p in enumerate(skeleton.parents) if p == src_joint]
    for k in kids:
        v = rig.ref_positions[k] - rig.ref_positions[src_joint]
        if np.linalg.norm(v) > 1e-3:
            return shortest_arc(v, np.array(LEAF_DIRECTION[name], float))
    return None


def retarget(motion, body, mapping=None, betas=None, polish=True):
    """Retarget a BVH Motion onto `body`; betas default to the shape inversion's."""
    sk = motion.skeleton
    mapping = mapping or build_mapping(sk.names, motion.path)
    shape, rig = invert_shape(sk, body, mapping)
    if betas is None:
        betas = shape.betas
    rest = body.rest_joints(betas)
    mapped = np.array(mapping.mapped)
    placements = _chain_fractions(rest, mapped)

    fk = motion.forward()
    c = rig.to_smpl
    glob = c @ fk.rotations @ c.T                          # (T, Js, 3, 3)
    pos = rig.unit * fk.positions @ c.T                    # (T, Js, 3)
    e = smpl_positions(pos, mapping, placements)           # (T, 24, 3)
    e_ref = smpl_positions(rig.ref_positions, mapping, placements)
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
            align[j] = leaf if leaf is not None else (align[p] if p >= 0 else np.eye(3))
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

    local = world_to_local(world)
    # root: the SMPL hips' midpoint follows the source's, scaled to the new body
    lh, rh = JOINT_INDEX["left_hip"], JOINT_INDEX["right_hip"]
    mid_rest = 0.5 * (rest[lh] + rest[rh]) - rest[0]
    trans = shape.scale * 0.5 * (e[:, lh] + e[:, rh]) - rest[0] - np.einsum("tab,b->ta", world[:, 0], mid_rest)

    posed = forward_kinematics(local, rest, PARENTS, trans).positions
    errors = limb_direction_errors(posed, e)
    return Retarget(poses=matrix_to_axis_angle(local), trans=trans, betas=np.asarray(betas, float),
                    fps=motion.fps, shape=shape, rig=rig, limb_error_deg=errors)


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
        cos = np.sum(unit(ours[ok]) * unit(src[ok]), -1)
        out[f"{a}->{b}"] = float(np.degrees(np.arccos(np.clip(cos, -1, 1))).mean())
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
