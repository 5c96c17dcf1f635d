"""Custom-rig operators (`smpl_ik.map_rig`, `fit_rig`, `transfer_to_rig`)."""
import bpy
from bpy.props import BoolProperty, IntProperty

from ...models.core.errors import SmplIkError
from ..com.blender import object_mode, select_only
from ..com.objects import is_custom_rig, rig_of
from ..com.operators import BodyOperator
from .drive import fit_and_drive
from .mapping import auto_map
from .transfer import transfer_to_rig


class RigOperator(BodyOperator):
    """Mixin: `run(context, rig)` on the active armature (a proxy stands for its rig)."""

    def target(self, context):
        obj = rig_of(context.active_object)
        object_mode(context)
        return obj


class SMPL_IK_OT_map_rig(RigOperator, bpy.types.Operator):
    """Guess which bone of the active armature sits at each SMPL joint (edit the list after)"""

    bl_idname = "smpl_ik.map_rig"
    bl_label = "Map Bones"

    def run(self, context, obj):
        if not is_custom_rig(obj):
            raise SmplIkError("select a humanoid armature (not an SMPL-IK body) to map")
        missing, unsure = auto_map(obj)
        return (f"Mapped {24 - len(missing)} of 24 joints" + (f"; none for {', '.join(missing)}" if missing else "")
                + (f"; check {', '.join(unsure)}" if unsure else ""))


class SMPL_IK_OT_fit_rig(RigOperator, bpy.types.Operator):
    """Fit an SMPL proxy body to the active humanoid armature and drive the armature from it"""

    bl_idname = "smpl_ik.fit_rig"
    bl_label = "Fit Rig"

    def run(self, context, obj):
        proxy, fit = fit_and_drive(context, obj)
        select_only(context, proxy)
        return (f"Fitted {proxy.name}: {sum(fit.mapping.mapped)} joints mapped, rig in {fit.unit_name}, "
                f"mesh scale {fit.mesh_scale:.3f}"
                + ("; driving the Rigify rig's FK controls, limbs switched to FK" if obj.smpl_ik_rig.rigify else ""))


class SMPL_IK_OT_transfer_to_rig(RigOperator, bpy.types.Operator):
    """Key the rig's own bones with the proxy's motion over a frame range, into a new action"""

    bl_idname = "smpl_ik.transfer_to_rig"
    bl_label = "Transfer to Rig"

    frame_start: IntProperty(name="Start", default=1)
    frame_end: IntProperty(name="End", default=250)
    remove_drive: BoolProperty(name="Remove Drive", default=False,
                               description="Remove the proxy's constraints from the rig afterwards")

    def run(self, context, obj):
        n = transfer_to_rig(context, obj, self.frame_start, self.frame_end, self.remove_drive)
        return f"Keyed {n} frame(s) on {obj.name} into the new action {obj.animation_data.action.name!r}"

classes = (SMPL_IK_OT_map_rig, SMPL_IK_OT_fit_rig, SMPL_IK_OT_transfer_to_rig)
register, unregister = bpy.utils.register_classes_factory(classes)
