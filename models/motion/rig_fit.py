"""Bring a custom humanoid rig into SMPL space: map its joints, invert its shape, and build
the skeleton of an SMPL proxy that stands where the rig stands.

The proxy's rest pose is SMPL's T-pose (the networks assume it), with the rig's own segment
lengths, so its joints can be made to coincide with the rig's. `rig_pose` is the SMPL pose
that puts the proxy into the rig's rest pose (an A-pose rig gives lowered arms); driving the
rig from the proxy is then "the rig's rest, turned as the proxy turned away from rig_pose".

Frames: the rig's joints come in its own world frame and units; everything returned is in
SMPL's frame (Y up, facing +Z), metres, relative to the rig's origin.
"""
from dataclasses import dataclass

import numpy as np

from .bvh import Skeleton
from ..core.errors import SmplIkError
from ..core.kinematics import analytic_rotations, forward_kinematics
from ..core.rotations import nearest_rotation
from .mapping import JointMapping, build_mapping
from .shape_fit import ShapeFit, fit_shape
from .skeleton_shape import SkeletonShape
from .source_rig import chain_fractions, smpl_positions, source_rig
from ..core.skeleton import JOINT_NAMES, NUM_JOINTS, PARENTS


@dataclass(frozen=True)
class RigFit:
    """A rig mapped and fitted. `proxy_rest` (24, 3): T-pose rest joints with the rig's
    segment lengths; `rig_pose` (24, 3, 3): local rotations taking the proxy onto the rig's
    rest joints `rig_joints` (24, 3); `to_smpl` (3, 3) and `unit` (metres per rig unit) take
    a rig-frame offset d to SMPL's frame as unit * to_smpl @ d. `mesh_scale`: the uniform scale
    taking the fitted body's limbs to the rig's (1 where the shape space reaches the rig's size;
    a child-sized or giant character needs more)."""

    mapping: JointMapping
    names: tuple
    shape: ShapeFit
    to_smpl: np.ndarray
    unit: float
    unit_name: str
    rig_joints: np.ndarray
    proxy_rest: np.ndarray
    rig_pose: np.ndarray
    mesh_scale: float = 1.0
    between: tuple = ()   # (bone name, SMPL joint): see `bones_between`

    @property
    def betas(self):
        return self.shape.betas

    def bone_for(self, joint):
        """The rig bone name mapped to an SMPL joint, or None."""
        s = self.mapping.source[JOINT_NAMES.index(joint)]
        return None if s is None else self.names[s]


def bones_between(parents, source):
    """Unmapped bones on the chain between two mapped ones (twist halves and helpers such as
    Rigify's `DEF-upper_arm.L.001`, Daz's `lShldrTwist`, `abdomenLower`): each belongs to the
    segment of the nearest mapped bone above it, so it should turn rigidly with that joint.

    parents (J,): bone parents (-1 for roots); source (24,): the bone at each SMPL joint or
    None. Returns ((bone index, SMPL joint index), ...), each bone once, parents first.
    Bones above the top mapped bone (a rig's `root`) and leaves (UE5's twist bones beside
    the chain) are not between: they follow as they are.
    """
    joint_of = {s: j for j, s in enumerate(source) if s is not None}
    found = {}
    for s in joint_of:
        chain, p = [], parents[s]
        while p >= 0 and p not in joint_of:
            chain.append(p)
            p = parents[p]
        if p >= 0:
            for b in chain:
                found[b] = joint_of[p]
    return tuple(sorted(found.items()))


def fit_rig(names, parents, heads, body, overrides=None, label="the rig", deform=None):
    """Fit an SMPL proxy to a rig.

    names (J,), parents (J,) (parents[j] < j, -1 for roots), heads (J, 3): the rig's joints
    at rest, in its world frame and units, relative to its origin. overrides: {smpl_joint:
    rig bone name or None} over the automatic mapping (found from the rig's structure);
    deform (J,): its deforming bones, the skeleton that mapping reads (None: every bone).
    Raises SmplIkError naming what is missing when the rig is not a humanoid this can map.
    """
    names = tuple(names)
    heads = np.asarray(heads, dtype=np.float64)
    if heads.shape != (len(names), 3) or not np.all(np.isfinite(heads)):
        raise SmplIkError(f"{label}: joint positions must be finite, one per bone")
    if len(names) < 2:
        raise SmplIkError(f"{label}: has {len(names)} bone(s); a humanoid needs legs, a spine and arms")
    parents = tuple(int(p) for p in parents)
    mapping = build_mapping(names, label, overrides, overrides_source="the rig's mapping" if overrides else "",
                            hint="Fix the mapping in the SMPL-IK Rig panel (each SMPL joint's bone)",
                            shape=SkeletonShape.of_rig(parents, heads, deform))
    seen = {}
    for joint, s in zip(JOINT_NAMES, mapping.source):
        if s is not None and s in seen:
            raise SmplIkError(f"{label}: bone {names[s]!r} is mapped to both {seen[s]} and {joint}; "
                              "each SMPL joint needs its own bone")
        seen.setdefault(s, joint)
    offsets = np.array([heads[j] - (heads[p] if p >= 0 else 0.0) for j, p in enumerate(parents)])
    skeleton = Skeleton(names=names, parents=parents, offsets=offsets,
                        channels=((),) * len(names), end_site=(False,) * len(names))
    rig = source_rig(skeleton, mapping, body)
    shape = fit_shape(body, smpl_positions(rig.ref_positions, mapping, {}))
    fitted = shape.length_ratio * shape.source_m
    mesh_scale = float(fitted @ shape.source_m / (fitted @ fitted))
    body_rest = body.rest_joints(shape.betas)
    placements = chain_fractions(body_rest, np.array(mapping.mapped))
    rig_joints = smpl_positions(rig.ref_positions, mapping, placements)
    for j in range(1, NUM_JOINTS):  # joints the rig lacks below its last mapped one: SMPL's offsets
        if np.isnan(rig_joints[j]).any():
            rig_joints[j] = rig_joints[PARENTS[j]] + (body_rest[j] - body_rest[PARENTS[j]]) * mesh_scale
    t_pose = np.zeros((NUM_JOINTS, 3))  # SMPL's T-pose directions, the rig's segment lengths
    t_pose[0] = rig_joints[0]
    for j in range(1, NUM_JOINTS):
        p = PARENTS[j]
        direction = body_rest[j] - body_rest[p]
        length = np.linalg.norm(rig_joints[j] - rig_joints[p])
        t_pose[j] = t_pose[p] + direction / max(np.linalg.norm(direction), 1e-9) * length
    rig_pose = analytic_rotations(rig_joints, t_pose)
    # Un-pose the rig's joints through rig_pose: the proxy's rest is then the T-pose up to what
    # a rotation cannot fix (e.g. where the rig's hips sit), and rig_pose lands on the rig exactly.
    world = forward_kinematics(rig_pose, t_pose, PARENTS).rotations
    proxy = np.zeros((NUM_JOINTS, 3))
    proxy[0] = rig_joints[0]
    for j in range(1, NUM_JOINTS):
        p = PARENTS[j]
        proxy[j] = proxy[p] + world[p].T @ (rig_joints[j] - rig_joints[p])
    between = tuple((names[b], JOINT_NAMES[j]) for b, j in bones_between(parents, mapping.source))
    return RigFit(mapping=mapping, names=names, shape=shape, to_smpl=rig.to_smpl, unit=rig.unit,
                  unit_name=rig.unit_name, rig_joints=rig_joints, proxy_rest=proxy,
                  rig_pose=rig_pose, mesh_scale=mesh_scale, between=between)


def helper_rest(joint_rest, joint_at_rig_pose, bone_rest):
    """(4, 4) the rest matrix of a helper bone that drives a rig bone from an SMPL proxy: with
    the proxy in the rig's rest pose (its joint at `joint_at_rig_pose`, (4, 4), where it rests
    at `joint_rest`, (4, 4)) the helper, parented to the joint, lies exactly on the rig's bone
    `bone_rest` (4, 4). All three in one frame (the proxy armature's); the bone's rotation is
    taken without scale or shear (a rig in centimetres, or scaled, still gives a rotation)."""
    bone = np.array(bone_rest, dtype=np.float64)
    bone[:3, :3] = nearest_rotation(bone[:3, :3])
    return joint_rest @ np.linalg.inv(joint_at_rig_pose) @ bone

