"""Batched forward kinematics and linear blend skinning, as pure numpy functions.

Frames: `local_rot[j]` rotates joint j's children in its parent's frame; with SMPL's rest
orientation (identity for every joint) the rest pose is `local_rot = I`. Positions in metres,
in the body's frame (SMPL: Y up, facing +Z).
"""
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .rotations import kabsch, shortest_arc
from .skeleton import CHILDREN, MIRROR, MULTI, NUM_JOINTS, PARENT_OR_SELF, PARENTS, SINGLE


@dataclass(frozen=True)
class FKResult:
    """Forward-kinematics output: world rotations (..., J, 3, 3), joint positions (..., J, 3)."""

    rotations: np.ndarray
    positions: np.ndarray


@lru_cache(maxsize=8)
def depth_levels(parents):
    """Joints grouped by depth below the root: [(joints, their parents), ...] as index arrays."""
    depth = [0] * len(parents)
    for j in range(1, len(parents)):
        if not 0 <= parents[j] < j:
            raise ValueError(f"parents[{j}] = {parents[j]}: every joint's parent must come before it")
        depth[j] = depth[parents[j]] + 1
    return [(np.array([j for j in range(len(parents)) if depth[j] == d]),
             np.array([parents[j] for j in range(len(parents)) if depth[j] == d]))
            for d in range(1, max(depth) + 1)]


@lru_cache(maxsize=8)
def ancestor_matrix(parents):
    """(J, J) read-only matrix of a skeleton (parents: a tuple, as forward_kinematics takes):
    [j, k] is 1 where k is j or one of its ancestors (turning k moves j), else 0."""
    chain = np.zeros((len(parents), len(parents)))
    for j in range(len(parents)):
        k = j
        while k >= 0:
            chain[j, k] = 1.0
            k = parents[k]
    chain.flags.writeable = False
    return chain


@lru_cache(maxsize=8)
def _parent_or_self(parents):
    """Each joint's parent, the root its own."""
    return np.array([max(p, 0) for p in parents])


def forward_kinematics(local_rot, rest_joints, parents, root_trans=None):
    """Pose a skeleton.

    local_rot: (..., J, 3, 3) local joint rotations; rest_joints: (..., J, 3) rest positions;
    parents: length-J sequence with parents[j] < j and -1 for the root;
    root_trans: optional (..., 3) added to every joint (SMPL's `trans`).
    Returns FKResult with world rotations and posed joint positions.
    """
    local_rot = np.asarray(local_rot)
    rest_joints = np.asarray(rest_joints)
    batch = np.broadcast_shapes(local_rot.shape[:-3], rest_joints.shape[:-2])
    local_rot = np.broadcast_to(local_rot, batch + local_rot.shape[-3:])
    rest_joints = np.broadcast_to(rest_joints, batch + rest_joints.shape[-2:])
    parents = tuple(parents)
    n = len(parents)
    rots = np.empty(batch + (n, 3, 3), dtype=np.result_type(local_rot, rest_joints))
    rots[..., 0, :, :] = local_rot[..., 0, :, :]
    for joints, their_parents in depth_levels(parents):  # all joints of one depth at once
        rots[..., joints, :, :] = rots[..., their_parents, :, :] @ local_rot[..., joints, :, :]
    # each joint's bone turned by its parent, summed down the chain (one product, not a level at a time)
    parent = _parent_or_self(parents)
    bone = np.einsum("...jab,...jb->...ja", rots[..., parent, :, :], rest_joints - rest_joints[..., parent, :])
    bone[..., 0, :] = rest_joints[..., 0, :]
    pos = ancestor_matrix(parents).astype(rots.dtype, copy=False) @ bone
    if root_trans is not None:
        pos = pos + np.asarray(root_trans)[..., None, :]
    return FKResult(rotations=rots, positions=pos)


def skinning_transforms(fk, rest_joints):
    """Per-joint rigid transforms that take rest-pose points to posed points.

    Returns (rotations (..., J, 3, 3), translations (..., J, 3)) with
    posed = R_j @ rest + t_j, i.e. t_j = p_j - R_j @ rest_j.
    """
    t = fk.positions - np.einsum("...jab,...jb->...ja", fk.rotations, np.asarray(rest_joints))
    return fk.rotations, t


def linear_blend_skinning(vertices, weights, rotations, translations):
    """Blend per-joint rigid transforms over vertices.

    vertices: (..., V, 3) rest (shaped) vertices; weights: (V, J), rows sum to 1;
    rotations: (..., J, 3, 3); translations: (..., J, 3). Returns (..., V, 3).
    """
    blended_r = np.einsum("vj,...jab->...vab", weights, rotations)
    blended_t = np.einsum("vj,...ja->...va", weights, translations)
    return np.einsum("...vab,...vb->...va", blended_r, vertices) + blended_t


def world_to_local(world, parents=PARENT_OR_SELF):
    """World rotations (..., J, 3, 3) to local ones: each joint's relative to its parent's,
    the root's as it is. parents: each joint's parent index, the root's any index (its
    result is replaced)."""
    local = np.swapaxes(world[..., list(parents), :, :], -1, -2) @ world
    local[..., 0, :, :] = world[..., 0, :, :]
    return local


_FLIP_X = np.diag([-1.0, 1.0, 1.0])


def mirror_pose(local_rot, trans, rest_pelvis):
    """The pose with its left and right sides swapped, reflected in the body's own YZ plane
    (x -> -x): local rotations (..., 24, 3, 3) each joint's mirror joint's, conjugated by the
    reflection, and the root translation (..., 3) moved so the pelvis, at rest `rest_pelvis`
    (3,), lands at its reflection. For a body whose rest joints are symmetric, forward
    kinematics of the result is the reflection of the pose's, each joint where its mirror joint
    was; twice gives the pose back."""
    local = _FLIP_X @ np.asarray(local_rot)[..., list(MIRROR), :, :] @ _FLIP_X
    pelvis = np.asarray(rest_pelvis, dtype=np.float64)
    return local, (pelvis + np.asarray(trans)) @ _FLIP_X - pelvis


def root_rotation(positions, rest):
    """(..., 3, 3) the pelvis's rotation: the rigid fit of its children's offsets at rest onto
    their offsets in `positions` (both (..., 24, 3))."""
    kids = list(CHILDREN[0])
    return kabsch(rest[..., kids, :] - rest[..., :1, :], positions[..., kids, :] - positions[..., :1, :])


def analytic_rotations(positions, rest):
    """Swing-only SMPL local rotations (..., 24, 3, 3) from joint positions and rest joints
    (..., 24, 3): each bone's shortest arc in its parent's frame, zero twist, identity leaves;
    the pelvis and spine3 take the rigid fit of their children (the classical answer)."""
    positions, rest = np.asarray(positions, float), np.asarray(rest, float)
    local = np.zeros(positions.shape[:-2] + (NUM_JOINTS, 3, 3))
    world = np.zeros_like(local)
    world[..., 0, :, :] = local[..., 0, :, :] = root_rotation(positions, rest)
    for j in range(1, NUM_JOINTS):
        rp = world[..., PARENTS[j], :, :]
        if j in MULTI:
            kids = list(CHILDREN[j])
            r = kabsch(rest[..., kids, :] - rest[..., j:j + 1, :], positions[..., kids, :] - positions[..., j:j + 1, :])
            local[..., j, :, :] = np.swapaxes(rp, -1, -2) @ r
        elif j in SINGLE:
            c = CHILDREN[j][0]
            b = np.einsum("...ba,...b->...a", rp, positions[..., c, :] - positions[..., j, :])
            local[..., j, :, :] = shortest_arc(rest[..., c, :] - rest[..., j, :], b)
        else:
            local[..., j, :, :] = np.eye(3)
        world[..., j, :, :] = rp @ local[..., j, :, :]
    return local


@dataclass(frozen=True)
class AttachedPoints:
    """Points that move rigidly with joints (a foot's heel and toe, say): joints (K,) int,
    offsets (K, 3) from each joint in the rest pose (body frame, metres); names (K,) what a
    report calls each point (empty: its joint's name)."""

    joints: np.ndarray
    offsets: np.ndarray
    names: tuple = ()

    def positions(self, fk):
        """(..., K, 3) where the points are in a pose with forward kinematics `fk`."""
        return fk.positions[..., self.joints, :] + np.einsum("...kab,kb->...ka", fk.rotations[..., self.joints, :, :],
                                                              self.offsets)
