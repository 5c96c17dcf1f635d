"""The sidebar tab "SMPL-IK" in the 3D viewport."""
import bpy

from .body_object import body_of


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


classes = (SMPL_IK_PT_body,)
register, unregister = bpy.utils.register_classes_factory(classes)
