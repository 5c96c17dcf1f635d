"""The one bridge between Blender data and numpy arrays.

It owns the axis change (SMPL: Y up, facing +Z; Blender: Z up, facing -Y), the quaternion
order (Blender's w, x, y, z) and the bones' rest axes, and moves data in bulk with
foreach_get / foreach_set. Nothing else in the add-on converts.
"""
import numpy as np

from ...models.core.rotations import matrix_to_quat_wxyz, nearest_rotation, quat_wxyz_multiply, quat_wxyz_to_matrix
from ...models.core.skeleton import JOINT_NAMES, LEAF_DIRECTION, NUM_JOINTS, PARENTS

# Blender from SMPL: +90 degrees about X (SMPL's up Y becomes Z, its front +Z becomes -Y).
BLENDER_FROM_SMPL = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])

# The child each bone points at (a bone's tail) and the length of leaf bones, in metres.
_TAIL_CHILD = {0: 3, 9: 12}
_LEAF_LENGTH = {"head": 0.2, "left_foot": 0.06, "right_foot": 0.06,
                "left_hand": 0.08, "right_hand": 0.08}


def to_blender(points):
    """(..., 3) SMPL-frame points or directions to Blender's frame."""
    return np.asarray(points) @ BLENDER_FROM_SMPL.T


def from_blender(points):
    """(..., 3) Blender-frame points or directions to SMPL's frame."""
    return np.asarray(points) @ BLENDER_FROM_SMPL


def up_extent(points):
    """(lowest, highest) of (N, 3) SMPL-frame points along SMPL's up axis (Y), metres."""
    heights = np.asarray(points)[:, 1]
    return float(heights.min()), float(heights.max())


# A body tilted more than this from upright has no level floor in its own frame: solving's
# floor refuses it and the motion import keeps such a body's heights as in the file.
FLOOR_TILT = np.radians(0.5)


def floor_in_body(arm_world, height):
    """A level floor at world height `height` (Blender Z, metres) seen from a body: (its height
    along SMPL's up axis Y in the body's frame, i.e. armature space in the body's metres; the
    angle in radians between the world's Z and the body's up axis). arm_world: (4, 4) the
    armature's world matrix. The floor is a level plane in the body's frame only when that
    angle is 0; the height is the plane's, on the body's up axis through its origin."""
    arm_world = np.asarray(arm_world, dtype=np.float64)
    linear, origin = arm_world[:3, :3], arm_world[:3, 3]
    up = to_blender((0.0, 1.0, 0.0))                      # the body's up, in armature space
    world_up = linear @ up                                # that axis in the world (scaled)
    tilt = float(np.arccos(np.clip(world_up[2] / max(np.linalg.norm(world_up), 1e-12), -1.0, 1.0)))
    along = (height - origin[2]) / world_up[2] if abs(world_up[2]) > 1e-12 else np.inf
    return float(from_blender(up * along)[1]), tilt


def object_matrix(axes, origin):
    """(4, 4) Blender matrix of an object whose axes (3, 3), columns, and origin (3,) are
    given in SMPL's frame (an object with the identity axes lies in SMPL's XY plane, facing
    the body's front)."""
    m = np.eye(4)
    m[:3, :3] = BLENDER_FROM_SMPL @ np.asarray(axes)
    m[:3, 3] = to_blender(origin)
    return m


def frame_to_blender(to_smpl):
    """(3, 3) the map taking offsets in some frame to Blender's axes, from `to_smpl`, the map
    taking them to SMPL's frame."""
    return BLENDER_FROM_SMPL @ np.asarray(to_smpl)


def _child(j):
    if j in _TAIL_CHILD:
        return _TAIL_CHILD[j]
    kids = [k for k in range(NUM_JOINTS) if PARENTS[k] == j]
    return kids[0] if kids else None


def _snap(direction):
    axis = np.zeros(3)
    k = int(np.argmax(np.abs(direction)))
    axis[k] = np.sign(direction[k])
    return axis


def choose_bone_axes(rest_joints_blender):
    """Rest axes (24, 3, 3) of the bones, columns = bone X, Y, Z axes in armature space.

    Each bone points (Y) along the world axis nearest to its child, so axes do not change
    with body shape and a pose stays the same pose when betas change.
    """
    axes = np.zeros((NUM_JOINTS, 3, 3))
    for j, name in enumerate(JOINT_NAMES):
        child = _child(j)
        if child is None:
            y = to_blender(np.array(LEAF_DIRECTION[name], dtype=float))
        else:
            y = _snap(rest_joints_blender[child] - rest_joints_blender[j])
        z = np.array([0.0, -1.0, 0.0]) if abs(y[1]) < 0.5 else np.array([0.0, 0.0, 1.0])
        x = np.cross(y, z)
        axes[j] = np.stack([x, y, np.cross(x, y)], axis=1)
    return axes


def bone_lengths(rest_joints_blender, axes):
    """Length of each bone along its Y axis: to its child's joint, or a fixed leaf length."""
    out = np.zeros(NUM_JOINTS)
    for j, name in enumerate(JOINT_NAMES):
        child = _child(j)
        if child is None:
            out[j] = _LEAF_LENGTH[name]
        else:
            out[j] = max(float((rest_joints_blender[child] - rest_joints_blender[j]) @ axes[j][:, 1]), 0.01)
    return out


def smpl_pose_to_bone_quats(local_rot, axes):
    """SMPL local rotations (..., 24, 3, 3) to pose-bone quaternions (..., 24, 4) w first.

    A pose bone's rotation acts in its rest axes B: Q = B^T C R C^T B, with C the axis change.
    """
    c = BLENDER_FROM_SMPL
    q = np.swapaxes(axes, -1, -2) @ (c @ local_rot @ c.T) @ axes
    return matrix_to_quat_wxyz(q)


def bone_quats_to_smpl_pose(quats, axes):
    """Pose-bone quaternions (..., 24, 4) w first to SMPL local rotations (..., 24, 3, 3)."""
    c = BLENDER_FROM_SMPL
    return c.T @ axes @ quat_wxyz_to_matrix(quats) @ np.swapaxes(axes, -1, -2) @ c


def _smpl_from_bone_quats(axes):
    """(24, 4) quaternions of C^T B: SMPL's frame from each bone's rest axes."""
    return matrix_to_quat_wxyz(BLENDER_FROM_SMPL.T @ np.asarray(axes))


def smpl_quats_to_bone_quats(quats, axes):
    """SMPL local rotations as quaternions (..., 24, 4) to pose-bone quaternions (..., 24, 4),
    both w first: smpl_pose_to_bone_quats in quaternion algebra (no matrices; for long
    motions). The signs are not normalised."""
    m = _smpl_from_bone_quats(axes)
    return quat_wxyz_multiply(m * [1.0, -1.0, -1.0, -1.0], quat_wxyz_multiply(quats, m))


def bone_quats_to_smpl_quats(quats, axes):
    """Pose-bone quaternions (..., 24, 4) (normalised here) to SMPL local rotations as
    quaternions (..., 24, 4), both w first: the inverse of smpl_quats_to_bone_quats."""
    quats = np.asarray(quats, dtype=np.float64)
    quats = quats / np.linalg.norm(quats, axis=-1, keepdims=True)
    m = _smpl_from_bone_quats(axes)
    return quat_wxyz_multiply(m, quat_wxyz_multiply(quats, m * [1.0, -1.0, -1.0, -1.0]))


def pose_matrices_to_smpl(matrices, axes):
    """Evaluated pose-bone matrices (..., 24, 4, 4) (armature space, what Blender shows,
    constraints included) to (world rotations (..., 24, 3, 3), joint positions (..., 24, 3)),
    both in SMPL's body frame. axes: (24, 3, 3) the bones' rest axes. Bone scale is dropped."""
    c = BLENDER_FROM_SMPL
    rot = np.asarray(matrices, dtype=np.float64)[..., :3, :3]
    rot = rot / np.linalg.norm(rot, axis=-2, keepdims=True)
    return c.T @ rot @ np.swapaxes(axes, -1, -2) @ c, from_blender(np.asarray(matrices)[..., :3, 3])


def root_location_from_trans(trans, axes):
    """SMPL translation (..., 3) to the root pose bone's location (in its rest frame)."""
    return to_blender(trans) @ axes[0]


def trans_from_root_location(location, axes):
    """The root pose bone's location (..., 3) to SMPL's translation."""
    return from_blender(np.asarray(location) @ axes[0].T)


# --- bulk access ---------------------------------------------------------------------------

def read_pose(arm_obj, axes):
    """(local_rot (24, 3, 3), trans (3,)) of an SMPL-IK armature's current pose."""
    pbones = [arm_obj.pose.bones[name] for name in JOINT_NAMES]
    quats = np.array([pb.rotation_quaternion[:] for pb in pbones])
    return bone_quats_to_smpl_pose(quats, axes), trans_from_root_location(pbones[0].location[:], axes)


def write_pose(arm_obj, local_rot, trans, axes):
    """Set an SMPL-IK armature's pose bones from SMPL local rotations and translation."""
    write_channels(arm_obj, *pose_channels(local_rot, trans, axes))


def pose_channels(local_rot, trans, axes):
    """(quaternions (24, 4) w first, root location (3,)): the pose bones' channels for an SMPL
    pose, rounded to float32 as Blender stores them (so they compare equal to `read_channels`
    after `write_channels`)."""
    quats = smpl_pose_to_bone_quats(local_rot, axes)
    location = root_location_from_trans(trans, axes)
    return (np.asarray(quats, dtype=np.float32).astype(np.float64),
            np.asarray(location, dtype=np.float32).astype(np.float64))


def read_channels(arm_obj):
    """(quaternions (24, 4) w first, root location (3,)) exactly as the pose bones hold them."""
    pbones = [arm_obj.pose.bones[name] for name in JOINT_NAMES]
    return np.array([pb.rotation_quaternion[:] for pb in pbones]), np.array(pbones[0].location[:])


def write_channels(arm_obj, quats, location):
    """Set the pose bones' quaternions (24, 4) w first and the root's location (3,) as given:
    `read_channels` gives the same numbers back, bit for bit."""
    for name, q in zip(JOINT_NAMES, quats):
        pb = arm_obj.pose.bones[name]
        pb.rotation_mode = "QUATERNION"
        pb.rotation_quaternion = q
    arm_obj.pose.bones[JOINT_NAMES[0]].location = location


def mesh_vertices(mesh):
    """(V, 3) float64 vertex coordinates of a mesh datablock (its local frame)."""
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    return co.reshape(-1, 3).astype(np.float64)


def set_shape_key_coords(key_block, coords):
    """Write (V, 3) coordinates into a shape key in one call."""
    key_block.data.foreach_set("co", np.asarray(coords, dtype=np.float32).ravel())


def bone_heads(arm_obj):
    """(24, 3) rest bone heads in armature space, Blender frame."""
    return np.array([arm_obj.data.bones[name].head_local[:] for name in JOINT_NAMES])


def rest_joints(arm_obj):
    """(24, 3) an SMPL-IK body's rest joints in SMPL's frame (its bones' heads), metres."""
    return from_blender(bone_heads(arm_obj))


def bone_axes(arm_obj):
    """(24, 3, 3) the bones' actual rest axes (columns X, Y, Z) in armature space."""
    return np.array([np.array(arm_obj.data.bones[name].matrix_local)[:3, :3] for name in JOINT_NAMES])


def set_vertex_weights(mesh_obj, weights):
    """One vertex group per SMPL joint, filled from (V, 24) skinning weights."""
    for j, name in enumerate(JOINT_NAMES):
        group = mesh_obj.vertex_groups.new(name=name)
        column = weights[:, j]
        used = np.nonzero(column > 1e-6)[0]
        # vertices sharing a weight go in one call; weights are rounded to float32 anyway
        values, inverse = np.unique(column[used].astype(np.float32), return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(len(values) + 1))
        for k, w in enumerate(values):
            group.add(used[order[bounds[k]:bounds[k + 1]]].tolist(), float(w), "REPLACE")


# --- effectors -------------------------------------------------------------------------------

# Look-at axes, in a joint's own frame (= the body's frame in SMPL's rest pose).
LOOK_AXES = {"FORWARD": (0.0, 0.0, 1.0), "BACK": (0.0, 0.0, -1.0), "UP": (0.0, 1.0, 0.0),
             "DOWN": (0.0, -1.0, 0.0), "LEFT": (1.0, 0.0, 0.0), "RIGHT": (-1.0, 0.0, 0.0)}


def matrix_array(matrix):
    """A mathutils Matrix as a float64 numpy array."""
    return np.array(matrix, dtype=np.float64)


def effector_target(kind, matrix, axes):
    """What an effector object asks for, in SMPL's body frame.

    matrix: (4, 4) the effector in armature space; axes: (3, 3) its joint's bone rest axes.
    ROTATION -> (3, 3) world rotation of the joint (the empty's axes are the posed bone's axes);
    POSITION and LOOK_AT -> (3,) point.
    """
    if kind == "ROTATION":
        return BLENDER_FROM_SMPL.T @ nearest_rotation(matrix[:3, :3]) @ axes.T @ BLENDER_FROM_SMPL
    return from_blender(matrix[:3, 3])


def joint_matrix(world_rot, position, axes):
    """(4, 4) armature-space matrix of a posed joint: the posed bone's axes at its head.

    world_rot (3, 3) and position (3,) in SMPL's body frame; axes: the bone's rest axes."""
    m = np.eye(4)
    m[:3, :3] = BLENDER_FROM_SMPL @ world_rot @ BLENDER_FROM_SMPL.T @ axes
    m[:3, 3] = to_blender(position)
    return m
