"""A custom rig's mapping: which of its bones sits at each SMPL joint (guessed from the bone
names, then editable in a list stored on the rig), and its skeleton as the fit reads it."""
import bpy
import numpy as np
from bpy.props import BoolProperty, CollectionProperty, IntProperty, PointerProperty, StringProperty

from ...models.core.skeleton import JOINT_NAMES, parents_first
from ...models.motion.mapping import build_mapping
from ...models.motion.skeleton_shape import SkeletonShape
from ..com import bridge
from ..com.blender import object_properties_factory

class SmplIkRigJoint(bpy.types.PropertyGroup):
    joint: StringProperty(name="SMPL joint", options={"HIDDEN"})
    bone: StringProperty(name="Bone", description="The rig's bone at this SMPL joint (empty: none)")


class SmplIkRigProperties(bpy.types.PropertyGroup):
    mapping: CollectionProperty(type=SmplIkRigJoint)
    active_index: IntProperty(options={"HIDDEN"})
    proxy: PointerProperty(name="Proxy", type=bpy.types.Object,
                           description="The SMPL-IK body that drives this rig")
    rigify: BoolProperty(name="Rigify Controls", options={"HIDDEN"},
                         description="The proxy drives this generated Rigify rig's FK controls")


def rig_joints(rig):
    """(names, parents, heads (J, 3) in world units relative to the rig's origin, Blender axes,
    deform (J,) whether each bone deforms)."""
    bones = list(rig.data.bones)
    names = [b.name for b in bones]
    index = {n: i for i, n in enumerate(names)}
    world = bridge.matrix_array(rig.matrix_world)
    heads = np.array([b.head_local[:] for b in bones]).reshape(-1, 3) @ world[:3, :3].T
    # parents before children: Blender lists bones in hierarchy order, but do not rely on it
    order = parents_first([index[b.parent.name] if b.parent else -1 for b in bones])
    new = {old: k for k, old in enumerate(order)}
    parents = [new[index[bones[i].parent.name]] if bones[i].parent else -1 for i in order]
    return [names[i] for i in order], parents, heads[order], [bones[i].use_deform for i in order]


def mapping_overrides(rig):
    """The rig's mapping list as overrides {joint: bone or None}, or None when empty."""
    items = rig.smpl_ik_rig.mapping
    if not len(items):
        return None
    return {it.joint: (it.bone or None) for it in items}


def fill_mapping(rig, bones):
    """Write {smpl_joint: bone name} into the rig's list (all 24 joints, '' where none)."""
    items = rig.smpl_ik_rig.mapping
    items.clear()
    for joint in JOINT_NAMES:
        it = items.add()
        it.joint = joint
        it.bone = bones.get(joint) or ""


def auto_map(rig):
    """Fill the rig's mapping list from its skeleton's structure (its bone names as hints).
    Returns (the joints left unmapped, the joints mapped with confidence under a half).
    Raises SmplIkError saying why a rig is no humanoid (the list is left as it was)."""
    names, parents, heads, deform = rig_joints(rig)
    mapping = build_mapping(names, f"rig {rig.name!r}", shape=SkeletonShape.of_rig(parents, heads, deform),
                            hint="Fill the mapping in the SMPL-IK Rig panel by hand (each SMPL joint's bone)")
    fill_mapping(rig, {joint: names[s] for joint, s in zip(JOINT_NAMES, mapping.source) if s is not None})
    unsure = [r.joint for r in mapping.report if r.source and r.confidence < 0.5]
    return [j for j, s in zip(JOINT_NAMES, mapping.source) if s is None], unsure


classes = (SmplIkRigJoint, SmplIkRigProperties)
register, unregister = object_properties_factory(classes, "smpl_ik_rig", SmplIkRigProperties)
