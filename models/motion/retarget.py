"""Motion of any mapped humanoid skeleton onto an SMPL body (`retarget`), in SMPL's frame (Y
up, facing +Z, metres).

Each SMPL joint's world rotation is the source joint's rotation relative to the reference pose
(`source_rig`), composed with a rest alignment that takes the source's reference directions
onto SMPL's T-pose (so A-pose and T-pose references both work). The optional polish then swings
every joint so its segments point exactly where the source's do, keeping the source's twist.
The root follows the source's hips, in metres. The body's betas default to the shape
inversion's (`shape_fit`), and its plausibility is checked (`check_body`).
"""
from dataclasses import dataclass

import numpy as np

from ..core.kinematics import forward_kinematics, world_to_local
from ..core.metrics import angle_deg
from ..core.rotations import axis_angle_to_matrix, kabsch, matrix_to_axis_angle, shortest_arc, unit
from ..core.skeleton import CHILDREN, JOINT_INDEX, JOINT_NAMES, LEAF_DIRECTION, NUM_JOINTS, PARENTS
from .mapping import build_mapping
from .skeleton_shape import SkeletonShape
from .shape_fit import BodyCheck, ShapeFit, check_body, fit_shape, torso_lean_deg
from .source_rig import (SourceRig, chain_fractions, resample_trunk, smpl_positions, source_rig,
                         trunk_path)

# Segments whose directions the quality report compares (both ends must be mapped).
LIMBS = (("left_hip", "left_knee"), ("left_knee", "left_ankle"), ("left_ankle", "left_foot"),
         ("right_hip", "right_knee"), ("right_knee", "right_ankle"), ("right_ankle", "right_foot"),
         ("left_shoulder", "left_elbow"), ("left_elbow", "left_wrist"), ("left_wrist", "left_hand"),
         ("right_shoulder", "right_elbow"), ("right_elbow", "right_wrist"), ("right_wrist", "right_hand"),
         ("pelvis", "neck"), ("neck", "head"))


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
    """Retarget a BVH Motion onto `body` (a BodyModel): a Retarget, poses (T, 24, 3) axis-angle
    and trans (T, 3) metres in SMPL's frame. mapping: a JointMapping (default: built from the
    skeleton's names); betas (10,): the body's shape (default: the shape inversion's); polish:
    swing every joint onto the source's segment directions; length_unit: the file's unit (a
    `units.parse_unit` name or number), or None to infer it. SmplIkError when the skeleton
    cannot be mapped or its shape fitted."""
    sk = motion.skeleton
    mapping = mapping or build_mapping(sk.names, motion.path, shape=SkeletonShape.of_motion(motion), names_first=True)
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
    placements = chain_fractions(rest, mapped)

    glob = c @ fk.rotations @ c.T                          # (T, Js, 3, 3)
    if rig.reference >= 0:  # rotations relative to the reference frame, not to the zero pose
        glob = glob @ np.swapaxes(glob[rig.reference], -1, -2)
    e = smpl_positions(pos, mapping, placements)           # (T, 24, 3)
    e_ref = smpl_positions(rig.ref_positions, mapping, placements)
    path = trunk_path(sk, mapping)
    if path is not None:   # the spine's joints where SMPL has them along the source's trunk
        e = resample_trunk(e, pos, path, rest)
        e_ref = resample_trunk(e_ref, rig.ref_positions, path, rest)
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
