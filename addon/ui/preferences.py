"""Add-on preferences: where the user's own SMPL / SMPL-H / SMPL-X files live."""
from pathlib import Path

import bpy
from bpy.props import StringProperty

from ..com.blender import PACKAGE, user_body_files


class SmplIkPreferences(bpy.types.AddonPreferences):
    bl_idname = PACKAGE

    body_folder: StringProperty(
        name="SMPL body folder", subtype="DIR_PATH",
        description="Folder with your own SMPL, SMPL-H or SMPL-X model files (.npz or .pkl). "
                    "They are licensed separately and never shipped with this extension")

    def draw(self, context):
        layout = self.layout
        layout.prop(self, "body_folder")
        folder = bpy.path.abspath(self.body_folder) if self.body_folder else ""
        if folder and not Path(folder).is_dir():
            layout.label(text=f"Folder not found: {folder}", icon="ERROR")
        elif folder:
            files = user_body_files(context)
            layout.label(text=f"{len(files)} body file(s) found", icon="INFO")


classes = (SmplIkPreferences,)
register, unregister = bpy.utils.register_classes_factory(classes)
