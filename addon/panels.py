"""The sidebar tab "SMPL-IK" in the 3D viewport, and the pose-mode shortcut for effectors."""
import bpy

from .body_object import body_of
from .effectors import is_effector, effectors_of


class SMPL_IK_PT_body(bpy.types.Panel):
    bl_label = "Body"
    bl_idname = "SMPL_IK_PT_body"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "SMPL-IK"

    def draw(self, context):
        layout = self.layout
        layout.operator_menu_enum("smpl_ik.add_body", "body", text="Add Body", icon="ARMATURE_DATA")
        arm = body_of(context.active_object)
        if arm is None:
            layout.label(text="Select an SMPL-IK body to shape it")
            return
        props = arm.smpl_ik
        box = layout.box()
        box.label(text=arm.name, icon="OUTLINER_OB_ARMATURE")
        col = box.column(align=True)
        for k in range(len(props.betas)):
            col.prop(props, "betas", index=k, text=f"Beta {k}", slider=True)
        box.operator("smpl_ik.reset_shape", icon="LOOP_BACK")
        if props.status:
            box.label(text=props.status, icon="ERROR")


class SMPL_IK_PT_pose(bpy.types.Panel):
    bl_label = "Pose"
    bl_idname = "SMPL_IK_PT_pose"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "SMPL-IK"

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        if is_effector(obj):
            props = obj.smpl_ik_effector
            box = layout.box()
            box.label(text=obj.name, icon="EMPTY_AXIS")
            box.prop(props, "body")
            if body_of(props.body) is None:
                box.label(text="Its body was deleted: choose another or delete it", icon="ERROR")
            box.prop(props, "joint")
            box.prop(props, "kind")
            if props.kind == "LOOK_AT":
                box.prop(props, "axis")
            row = box.row()
            row.prop(props, "enabled")
            row.prop(props, "weight", slider=True)
        arm = body_of(obj) or (body_of(obj.smpl_ik_effector.body) if is_effector(obj) else None)
        if arm is None:
            layout.label(text="Select a body or an effector to pose it")
            return
        row = layout.row(align=True)
        row.operator("smpl_ik.add_effector", icon="EMPTY_AXIS")
        row.operator("smpl_ik.add_default_effectors", text="Defaults")
        layout.label(text=f"{len(effectors_of(arm))} enabled effector(s)")
        row = layout.row()
        row.prop(arm.smpl_ik, "live")
        row.prop(arm.smpl_ik, "refine")
        row = layout.row(align=True)
        row.operator("smpl_ik.solve", icon="PLAY")
        row.operator("smpl_ik.mirror_pose", icon="MOD_MIRROR", text="Mirror")
        row.operator("smpl_ik.reset_pose", icon="LOOP_BACK", text="Reset")
        row = layout.row(align=True)
        row.operator("smpl_ik.keyframe_pose", icon="KEY_HLT", text="Key Pose")
        op = row.operator("smpl_ik.bake", icon="RENDER_ANIMATION", text="Bake")
        op.frame_start, op.frame_end = context.scene.frame_start, context.scene.frame_end


classes = (SMPL_IK_PT_body, SMPL_IK_PT_pose)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)
_keymaps = []


def register():
    _register_classes()
    keyconfig = bpy.context.window_manager.keyconfigs.addon
    if keyconfig is not None:  # None when Blender runs without a window manager's key configs
        keymap = keyconfig.keymaps.new(name="Pose", space_type="EMPTY")
        item = keymap.keymap_items.new("smpl_ik.add_effector", "E", "PRESS", shift=True, ctrl=True)
        _keymaps.append((keymap, item))


def unregister():
    for keymap, item in _keymaps:
        keymap.keymap_items.remove(item)
    _keymaps.clear()
    _unregister_classes()
