"""Effectors: Empties that pin one joint of an SMPL-IK body (position, rotation or look-at).

An effector is an ordinary Empty, parented to nothing, carrying `obj.smpl_ik_effector`. It
never owns the body: deleting it only removes its constraint, deleting the body leaves it
orphaned (and ignored) until it is deleted or pointed at another body.
"""
import math

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, PointerProperty
from mathutils import Matrix

from ...models.core.errors import SmplIkError
from ...models.core.kinematics import forward_kinematics
from ...models.core.skeleton import JOINT_INDEX, JOINT_NAMES, PARENTS
from ...models.ik.effectors import Effector, EffectorKind
from ..com import bridge, live
from ..com.blender import object_properties_factory
from ..com.objects import is_body, is_effector

_KIND_HELP = {EffectorKind.POSITION: "Pin where the joint is",
              EffectorKind.ROTATION: "Pin how the joint is turned (the Empty's axes are the bone's)",
              EffectorKind.LOOK_AT: "Make an axis of the joint point at the Empty"}
# Enum items: identifiers are EffectorKind's member names (POSITION, ROTATION, LOOK_AT).
KINDS = tuple((k.name, k.name.replace("_", " ").title(), _KIND_HELP[k]) for k in EffectorKind)
# A distinct look per kind: (empty display type, size in metres).
LOOKS = {"POSITION": ("SPHERE", 0.04), "ROTATION": ("ARROWS", 0.12), "LOOK_AT": ("CONE", 0.05)}
PRIORITIES = (("PIN", "Pin", "Held exactly; never moved to reach a soft effector"),
              ("SOFT", "Soft", ("Met as closely as the pins allow; the body's status says when it ends "
                                "beyond its tolerance")))
DEFAULT_JOINTS = ("pelvis", "head", "left_wrist", "right_wrist", "left_ankle", "right_ankle")
LOOK_DISTANCE = 0.5  # metres from the joint where a new look-at target is placed

_JOINT_ITEMS = [(n, n.replace("_", " ").title(), f"SMPL joint {n}") for n in JOINT_NAMES]
_AXIS_ITEMS = [(k, k.title(), f"The joint's {k.lower()} axis (as the body stands in its rest pose)")
               for k in bridge.LOOK_AXES]


def _enabled_changed(self, context):
    if self.enabled and self.is_effector and is_body(self.body):
        pin(self.body, [self.id_data])


class SmplIkEffectorProperties(bpy.types.PropertyGroup):
    is_effector: BoolProperty(default=False, options={"HIDDEN"})
    body: PointerProperty(name="Body", type=bpy.types.Object, poll=lambda self, obj: is_body(obj),
                          description="The SMPL-IK body (armature) this effector poses")
    joint: EnumProperty(name="Joint", items=_JOINT_ITEMS, description="The joint it pins")
    kind: EnumProperty(name="Kind", items=KINDS, description="What it pins")
    enabled: BoolProperty(name="Enabled", default=True, update=_enabled_changed,
                          description="Take part in solving; enabling snaps the effector to its "
                                      "joint, so the pose does not jump")
    weight: FloatProperty(name="Weight", default=1.0, min=0.01, max=1.0,
                          description="How much this effector matters next to the others")
    axis: EnumProperty(name="Axis", items=_AXIS_ITEMS, default="FORWARD",
                       description="Look-at: the joint's axis that points at the effector")
    priority: EnumProperty(name="Priority", items=PRIORITIES, default="PIN",
                           description="Pin: held exactly. Soft: as close as the pins allow (an "
                                       "effector being dragged is soft while it moves)")
    # No hard min: Blender would clamp a script's negative value silently; solving refuses it instead.
    tolerance: FloatProperty(name="Tolerance (cm)", default=1.0, soft_min=0.0, soft_max=20.0, precision=2,
                             description="When soft or dragged: how far (centimetres) the joint may end "
                                         "from a position effector before the body's status reports it")
    angle_tolerance: FloatProperty(name="Angle Tolerance", default=math.radians(1.0), subtype="ANGLE",
                                   soft_min=0.0, soft_max=math.radians(45.0),
                                   description="When soft or dragged: how far a rotation or look-at may "
                                               "end from its target before the body's status reports it")


def effectors_of(arm, enabled_only=True):
    """The effector objects of a body in the current file (scene-linked or not), by name."""
    return sorted((o for o in bpy.data.objects if is_effector(o) and o.smpl_ik_effector.body == arm
                   and o.users_scene and (o.smpl_ik_effector.enabled or not enabled_only)),
                  key=lambda o: o.name)


def posed_joints(arm):
    """(world rotations (24, 3, 3), positions (24, 3)) of the body's current pose, SMPL frame,
    armature space (metres of the body)."""
    axes = bridge.bone_axes(arm)
    local, trans = bridge.read_pose(arm, axes)
    fk = forward_kinematics(local, bridge.rest_joints(arm), PARENTS, trans)
    return fk.rotations, fk.positions


def tolerance_of(obj):
    """An effector object's tolerance in the core's units (metres for positions, radians for
    rotations and look-ats). SmplIkError naming the effector for NaN or a negative value."""
    props = obj.smpl_ik_effector
    if props.kind == "POSITION":
        value, unit, scale = props.tolerance, "cm", 0.01
    else:
        value, unit, scale = math.degrees(props.angle_tolerance), "degrees", math.radians(1.0)
    if not (value >= 0):   # also NaN
        raise SmplIkError(f"effector {obj.name!r}: its tolerance must be a number of 0 {unit} or more, "
                          f"got {value:g} {unit}; the pose was left as it was")
    return value * scale


def core_effectors(arm, objs, dragged=(), give_way=()):
    """models.ik.effectors.Effector list (SMPL frame, armature space) for effector objects.
    The add-on's kind identifiers are EffectorKind's member names. Soft: the effectors set
    to Soft and those named in `dragged` (being moved now), with their tolerance. Those named
    in `give_way` give way first when the pins cannot all be held (Effector.give_way_first).
    SmplIkError for a bad tolerance."""
    to_arm = bridge.matrix_array(arm.matrix_world.inverted_safe())
    axes = bridge.bone_axes(arm)
    out = []
    for obj in objs:
        props = obj.smpl_ik_effector
        j = JOINT_INDEX[props.joint]
        target = bridge.effector_target(props.kind, to_arm @ bridge.matrix_array(obj.matrix_world), axes[j])
        soft = props.priority == "SOFT" or obj.name in dragged
        out.append(Effector(props.joint, EffectorKind[props.kind], tuple(map(tuple, target)) if target.ndim == 2
                            else tuple(target), axis=bridge.LOOK_AXES[props.axis], weight=props.weight,
                            soft=soft, tolerance=tolerance_of(obj), give_way_first=obj.name in give_way))
    return out


def _snapped_matrix(arm_world, props, world_rot, positions, axes, current):
    j = JOINT_INDEX[props.joint]
    m = bridge.joint_matrix(world_rot[j], positions[j], axes[j])
    if props.kind == "LOOK_AT":  # keep the target's distance, along the joint's posed axis
        to_arm = np.linalg.inv(arm_world)
        distance = np.linalg.norm((to_arm @ current)[:3, 3] - m[:3, 3]) if current is not None else 0.0
        direction = bridge.to_blender(world_rot[j] @ np.array(bridge.LOOK_AXES[props.axis]))
        m[:3, 3] += direction * (distance if distance > 0.05 else LOOK_DISTANCE)
        m[:3, :3] = np.eye(3)
    if props.kind == "POSITION":
        m[:3, :3] = np.eye(3)
    return arm_world @ m


def pin(arm, objs, fresh=False):
    """Snap effector objects onto their joints in the body's current pose (keeping scale;
    look-ats keep their distance unless `fresh`), and remember the result as solved so that
    no solve follows."""
    world_rot, positions = posed_joints(arm)
    axes = bridge.bone_axes(arm)
    arm_world = bridge.matrix_array(arm.matrix_world)
    for obj in objs:
        scale = obj.matrix_world.to_scale()
        m = _snapped_matrix(arm_world, obj.smpl_ik_effector, world_rot, positions, axes,
                            None if fresh else bridge.matrix_array(obj.matrix_world))
        obj.matrix_world = Matrix(m.tolist()) @ Matrix.Diagonal((*scale, 1.0))
    live.mark_solved(arm, effectors_of(arm))


def create_effector(context, arm, joint, kind):
    """An Empty on `joint` of the body, in the active collection; returns it."""
    display, size = LOOKS[kind]
    obj = bpy.data.objects.new(f"{arm.name} {joint} {kind.lower().replace('_', '-')}", None)
    obj.empty_display_type = display
    obj.empty_display_size = size
    obj.show_in_front = True
    context.collection.objects.link(obj)
    props = obj.smpl_ik_effector
    props.is_effector = True
    props.body = arm
    props.joint = joint
    props.kind = kind
    pin(arm, [obj], fresh=True)
    return obj


classes = (SmplIkEffectorProperties,)
register, unregister = object_properties_factory(classes, "smpl_ik_effector", SmplIkEffectorProperties)
