"""Blender objects of an SMPL-IK body: an armature (24 bones named as SMPL's joints) with a
skinned mesh child (a vertex group per joint, an Armature modifier, a shape key per beta).

A body stands on the floor: its armature's origin is placed so that the floor point under the
rest pelvis (BodyModel.rest_floor_point: the lowest rest vertex's height) is where it was put.
Shape changes move the shape keys and the bones' rest positions, and move the armature object
so that this floor point stays where it was in the world (the feet stay on the floor); bone rest
axes never change, so the pose bones' rotations keep meaning the same SMPL pose.
"""
import contextlib
import math
from dataclasses import dataclass

import bpy
import numpy as np
from mathutils import Matrix

from ...models.body.measure import BETA_LIMIT, measure
from ...models.body.model import NUM_BETAS, load_body_model, open_body_name, open_body_path
from ...models.core.errors import SmplIkError
from ...models.core.skeleton import JOINT_NAMES, PARENTS
from ..com import bridge

SHAPE_KEY_PREFIX = "beta_"
SHAPE_KEY_RANGE = BETA_LIMIT   # 10: the range measure.fit_measurements keeps betas in


def body_model_of(arm_obj):
    """The BodyModel of a body: its file, or (no file) the open body of its gender."""
    props = arm_obj.smpl_ik
    return load_body_model(props.body_path or open_body_path(props.gender or "neutral"))


def open_body_name_of(body_path, body):
    """models.body.model.open_body_name of a body's file path (as a body object records it,
    relative paths resolved as Blender resolves them; '' for an open body) with its BodyModel
    `body`: the open body's name, or None for a user's file."""
    return open_body_name(bpy.path.abspath(body_path) if body_path else None, body.gender)


def _world_matrix(arm):
    """(4, 4) the armature's world matrix, current even before the scene is evaluated when
    nothing parents or constrains the object (its own location, rotation and scale)."""
    current = arm.parent is None and not len(arm.constraints)
    return bridge.matrix_array(arm.matrix_basis if current else arm.matrix_world)


def body_floor(arm):
    """(height, tilt) of a body's floor, its Floor Height (world Z, metres): the height along
    SMPL's up axis in the armature's space, and the angle (radians) between the world's up and
    the body's (bridge.floor_in_body). SmplIkError for a floor height that is not a number."""
    height = arm.smpl_ik.floor_height
    if not math.isfinite(height):
        raise SmplIkError(f"{arm.name}: its Floor Height is {height:g}, not a number of metres; set it on the "
                          "Body panel")
    return bridge.floor_in_body(_world_matrix(arm), height)


_measured = {}


def measurements_of(arm_obj):
    """models.body.measure.Measurements (height, weight) of a body's applied shape, remembered
    for the panel, which asks on every redraw."""
    props = arm_obj.smpl_ik
    key = (props.body_path, props.gender, tuple(props.applied_betas))
    if key not in _measured:
        if len(_measured) > 32:
            _measured.clear()
        _measured[key] = measure(body_model_of(arm_obj), np.array(props.applied_betas[:]))
    return _measured[key]


@contextlib.contextmanager
def edit_bones(context, arm_obj):
    """Yield the armature's edit bones, restoring the active object and mode afterwards."""
    view_layer = context.view_layer
    previous_active = view_layer.objects.active
    previous_mode = arm_obj.mode
    if context.mode != "OBJECT" and previous_active is not arm_obj:
        bpy.ops.object.mode_set(mode="OBJECT")
    view_layer.objects.active = arm_obj
    hidden = arm_obj.hide_get(), arm_obj.hide_viewport
    arm_obj.hide_set(False)
    arm_obj.hide_viewport = False
    with context.temp_override(active_object=arm_obj, object=arm_obj):
        bpy.ops.object.mode_set(mode="EDIT")
        try:
            yield arm_obj.data.edit_bones
        finally:
            bpy.ops.object.mode_set(mode=previous_mode if previous_mode != "EDIT" else "OBJECT")
    arm_obj.hide_set(hidden[0])
    arm_obj.hide_viewport = hidden[1]
    view_layer.objects.active = previous_active


def _place_bones(ebones, joints_blender, axes):
    lengths = bridge.bone_lengths(joints_blender, axes)
    for j, name in enumerate(JOINT_NAMES):
        eb = ebones[name]
        m = Matrix.Identity(4)
        for r in range(3):
            for c in range(3):
                m[r][c] = axes[j][r, c]
            m[r][3] = joints_blender[j][r]
        eb.matrix = m
        eb.length = lengths[j]


def floor_offset(body, betas):
    """(3,) Blender frame, armature space, metres: the floor point under the rest pelvis of
    `body` (a BodyModel) with betas (10,), where the body stands."""
    return bridge.to_blender(body.rest_floor_point(betas))


@dataclass(frozen=True)
class BodySpec:
    """What `create_body` makes of a BodyModel.

    body_path: the file to reload the body from; empty for an open body (the object records
    `body.gender`, which picks the open body to reload). name: the armature's name (the mesh is
    "<name> mesh"). location (3,), Blender world frame: where the body stands, its lowest rest
    vertex at that height and its rest pelvis above it (the armature's origin is offset by
    `floor_offset`). betas (10,): its shape (None: zeros). rest_joints (24, 3), SMPL frame:
    place the bones there instead of at the body's joints (a rig's proxy); the armature's
    origin is then at `location` and the caller places the armature and the mesh."""

    body_path: str = ""
    name: str = "SMPL-IK body"
    location: tuple = (0.0, 0.0, 0.0)
    betas: object = None
    rest_joints: object = None


def create_body(context, body, spec=BodySpec()):
    """Add an armature + skinned mesh for `body` (a BodyModel) as `spec` (a BodySpec) says and
    return the armature. Everything that can fail (reading the body file) happens before this
    is called, so a failure leaves the scene untouched."""
    body_path, name, location, betas, rest_joints = spec.body_path, spec.name, spec.location, spec.betas, \
        spec.rest_joints
    betas = np.zeros(NUM_BETAS) if betas is None else np.asarray(betas, dtype=np.float64)
    joints = bridge.to_blender(body.rest_joints(betas) if rest_joints is None else rest_joints)
    axes = bridge.choose_bone_axes(joints)

    arm_data = bpy.data.armatures.new(name)
    arm_data.display_type = "OCTAHEDRAL"
    arm_obj = bpy.data.objects.new(name, arm_data)
    origin = np.asarray(location, dtype=np.float64)
    arm_obj.location = origin - floor_offset(body, betas) if rest_joints is None else origin
    arm_obj.show_in_front = True
    context.collection.objects.link(arm_obj)
    with edit_bones(context, arm_obj) as ebones:
        for name_j in JOINT_NAMES:
            ebones.new(name_j).use_deform = True
        for j, name_j in enumerate(JOINT_NAMES):
            if PARENTS[j] >= 0:
                ebones[name_j].parent = ebones[JOINT_NAMES[PARENTS[j]]]
        _place_bones(ebones, joints, axes)
    for pb in arm_obj.pose.bones:
        pb.rotation_mode = "QUATERNION"

    mesh = bpy.data.meshes.new(f"{name} mesh")
    mesh.from_pydata(bridge.to_blender(body.v_template).tolist(), [], body.faces.tolist())
    mesh.shade_smooth()
    mesh_obj = bpy.data.objects.new(f"{name} mesh", mesh)
    context.collection.objects.link(mesh_obj)
    mesh_obj.parent = arm_obj
    bridge.set_vertex_weights(mesh_obj, body.weights)
    mesh_obj.shape_key_add(name="Basis", from_mix=False)
    for k in range(NUM_BETAS):
        key = mesh_obj.shape_key_add(name=f"{SHAPE_KEY_PREFIX}{k:02d}", from_mix=False)
        key.slider_min, key.slider_max = -SHAPE_KEY_RANGE, SHAPE_KEY_RANGE
        bridge.set_shape_key_coords(key, bridge.to_blender(body.v_template + body.shapedirs[:, :, k]))
    modifier = mesh_obj.modifiers.new("Armature", "ARMATURE")
    modifier.object = arm_obj

    for k, value in enumerate(betas):
        mesh_obj.data.shape_keys.key_blocks[f"{SHAPE_KEY_PREFIX}{k:02d}"].value = value
    props = arm_obj.smpl_ik
    props.is_body = True
    props.body_path = body_path
    props.gender = body.gender   # with no file, picks the open body of that gender
    props.mesh = mesh_obj
    props.applied_betas = betas.tolist()
    props.betas = betas.tolist()  # equal to applied_betas: no update runs
    return arm_obj


def apply_shape(context, arm_obj):
    """Move the mesh (shape keys) and the bones' rest positions to `arm_obj.smpl_ik.betas`,
    and the armature object so that the floor point under the rest pelvis stays where it was
    in the world (along the object's own axes, so a turned or scaled body keeps it too); the
    pose, in armature space, is kept.

    Non-finite or out-of-range betas are refused: the previous shape is restored and
    SmplIkError raised with a message for the artist.
    """
    props = arm_obj.smpl_ik
    betas = np.array(props.betas[:], dtype=np.float64)
    if props.rig is not None:
        props.betas = props.applied_betas[:]
        raise SmplIkError(f"{arm_obj.name} is the proxy of rig {props.rig.name!r} and takes its shape "
                          "from it; change the rig and fit it again")
    bad = np.nonzero(~np.isfinite(betas) | (np.abs(betas) > SHAPE_KEY_RANGE))[0]
    if len(bad):
        props.betas = props.applied_betas[:]  # the update this triggers sees good values
        raise SmplIkError(
            f"beta {bad[0]} must be a number between -{SHAPE_KEY_RANGE:g} and {SHAPE_KEY_RANGE:g} "
            f"(got {betas[bad[0]]}); the shape was left as it was")
    body = body_model_of(arm_obj)
    mesh_obj = props.mesh
    if mesh_obj is not None and mesh_obj.data.shape_keys is not None:
        blocks = mesh_obj.data.shape_keys.key_blocks
        for k, value in enumerate(betas):
            block = blocks.get(f"{SHAPE_KEY_PREFIX}{k:02d}")
            if block is not None:
                block.value = value
    joints = bridge.to_blender(body.rest_joints(betas))
    axes = bridge.bone_axes(arm_obj)
    with edit_bones(context, arm_obj) as ebones:
        _place_bones(ebones, joints, axes)
    step = floor_offset(body, betas) - floor_offset(body, np.array(props.applied_betas[:]))
    basis = np.array(arm_obj.matrix_basis)   # loc, rot, scale (deltas included), always current
    arm_obj.location = np.array(arm_obj.location) - basis[:3, :3] @ step
    props.applied_betas = betas.tolist()
