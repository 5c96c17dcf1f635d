"""Operators (`smpl_ik.*`): thin wrappers that read options, call one function, report."""
from pathlib import Path

import bpy
from bpy.props import EnumProperty, StringProperty

from ..models.body_model import NUM_BETAS, load_body_model
from ..models.errors import SmplIkError
from .body_object import body_of, create_body
from .preferences import user_body_files

OPEN_BODY = "OPEN"
_enum_cache = []  # Blender needs enum item strings kept alive by Python


def _body_items(self, context):
    items = [(OPEN_BODY, "Open body (neutral)", "The shipped open SMPL-layout body (CC0 data)")]
    for path in user_body_files(context):
        items.append((str(path), path.name, f"Your body file {path}"))
    _enum_cache[:] = items
    return _enum_cache


class SMPL_IK_OT_add_body(bpy.types.Operator):
    """Add an SMPL-layout body (armature and skinned mesh) at the 3D cursor"""

    bl_idname = "smpl_ik.add_body"
    bl_label = "Add SMPL-IK Body"
    bl_options = {"REGISTER", "UNDO"}

    body: EnumProperty(name="Body", items=_body_items,
                       description="The open body, or one of your files from the preferences' folder")
    filepath: StringProperty(name="File", subtype="FILE_PATH",
                             description="An SMPL-family file to use instead of the choice above")

    def execute(self, context):
        path = self.filepath or ("" if self.body == OPEN_BODY else self.body)
        try:
            body = load_body_model(bpy.path.abspath(path) if path else None)
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if context.mode != "OBJECT" and context.view_layer.objects.active is not None:
            bpy.ops.object.mode_set(mode="OBJECT")
        name = "SMPL-IK body" if not path else f"SMPL-IK {Path(path).stem}"
        arm = create_body(context, body, body_path=path, name=name,
                          location=context.scene.cursor.location.copy())
        for obj in context.selected_objects:
            obj.select_set(False)
        arm.select_set(True)
        context.view_layer.objects.active = arm
        self.report({"INFO"}, f"Added {body.label}")
        return {"FINISHED"}


class SMPL_IK_OT_reset_shape(bpy.types.Operator):
    """Return the active body to the average shape (all betas zero), keeping its pose"""

    bl_idname = "smpl_ik.reset_shape"
    bl_label = "Reset Shape"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return body_of(context.active_object) is not None

    def execute(self, context):
        arm = body_of(context.active_object)
        arm.smpl_ik.betas = [0.0] * NUM_BETAS
        if arm.smpl_ik.status:
            self.report({"ERROR"}, arm.smpl_ik.status)
            return {"CANCELLED"}
        return {"FINISHED"}


classes = (SMPL_IK_OT_add_body, SMPL_IK_OT_reset_shape)
register, unregister = bpy.utils.register_classes_factory(classes)
