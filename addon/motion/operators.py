"""Motion operators: File > Import and File > Export of AMASS-style SMPL motion (`.npz`), and
File > Import of joint files (3D joint positions) solved into SMPL motion."""
import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ...models.core.errors import SmplIkError
from ...models.ik.from_joints import DEFAULT_FPS, GAP_FILL_SECONDS, JointOptions
from ...models.motion import floor
from ...models.motion.joints import LAYOUTS, SUFFIXES
from ...models.motion.units import LENGTH_UNITS
from ..com.blender import progress_bar
from ..com.objects import target_body
from .exporter import ExportOptions, export_motion
from .importer import ImportOptions, JointImportOptions, import_joints, import_motion

UP_AXIS_ITEMS = (
    ("AUTO", "Auto", "Decide from the file: its own word, else where the root orientation sends the body's "
                     "up axis (the report says which)"),
    ("Z", "Z (AMASS)", "The file is Z-up in the world, as AMASS's own files are"),
    ("Y", "Y (SMPL frame)", "The file is in SMPL's Y-up frame, as scripts/retarget.py writes"),
)
EXPORT_UP_ITEMS = UP_AXIS_ITEMS[1:]
FLOOR_ITEMS = (
    ("AUTO", "Auto", "Put the body on the floor unless the file says where its floor is (floor_height): then "
                     "put that floor on the floor, keeping the clip's height above it"),
    ("ON", "Put on Floor", "Move the clip up or down so that its lowest point is on the floor, whatever the file "
                           f"says (not when it is within {100 * floor.ON_FLOOR:g} cm of it, or up to "
                           f"{100 * floor.FAR_ABOVE:g} cm above)"),
    ("OFF", "As in File", "Keep the file's heights; the report says where the lowest point is"),
)


TARGET_ITEMS = (("NEW", "New Body", "A new body of the file's gender at the 3D cursor"),
                ("ACTIVE", "Active Body", "The selected body"))
LAYOUT_ITEMS = (("AUTO", "Auto", "From the joint count (17: COCO when joints 1-4 sit by joint 0 like eyes and ears "
                                 "by the nose, else Human3.6M)"),) + tuple(
    (name.upper(), layout.label, f"{layout.count} joints") for name, layout in LAYOUTS.items())
JOINT_UP_ITEMS = (("AUTO", "Layout's", "The layout's own: Y up; MediaPipe's world landmarks y down, image-style"),
                  ("Y", "Y", "Y up"), ("Z", "Z", "Z up"),
                  ("NEG_Y", "-Y (image)", "Y down and Z away from the camera, as image coordinates"))
UNIT_ITEMS = tuple((name.upper(), name, f"The file's numbers are in {name}") for name in LENGTH_UNITS)


class SMPL_IK_OT_import_motion(bpy.types.Operator, ImportHelper):
    """Import an AMASS-style SMPL motion (.npz) onto a new body or the active one, as one new action"""

    bl_idname = "smpl_ik.import_motion"
    bl_label = "Import SMPL-IK Motion"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".npz"
    filter_glob: StringProperty(default="*.npz", options={"HIDDEN"})
    target: EnumProperty(name="Onto", items=TARGET_ITEMS, default="NEW")
    up_axis: EnumProperty(name="Up Axis", items=UP_AXIS_ITEMS, default="AUTO")
    floor: EnumProperty(name="Floor", items=FLOOR_ITEMS, default="AUTO",
                        description="Put the clip's feet on the floor (the 3D cursor's height for a new body, the "
                                    "body's Floor Height for the active one)")
    source_fps: FloatProperty(name="Source Rate", default=0.0, min=0.0, soft_max=240.0,
                              description="The file's frame rate in frames per second, for a file that states a "
                                          "wrong one (0: the rate the file states)")
    keep_source_rate: BoolProperty(name="Keep Source Rate", default=False,
                                   description="One key per frame of the file instead of keys at the scene's "
                                               "frame rate (the motion then plays faster or slower)")
    set_frame_range: BoolProperty(name="Set Frame Range", default=True,
                                  description="Make the scene's frame range the imported keys'")
    frame_start: IntProperty(name="Start Frame", default=1, description="The first key's frame "
                             "(unless set: the scene's start frame)")

    def execute(self, context):
        options = ImportOptions(filepath=self.filepath, target=self.target, up_axis=self.up_axis, floor=self.floor,
                                source_fps=self.source_fps, keep_source_rate=self.keep_source_rate,
                                set_frame_range=self.set_frame_range,
                                frame_start=(self.frame_start if self.properties.is_property_set("frame_start")
                                             else None))
        try:
            with progress_bar(context) as progress:
                result = import_motion(context, options, progress)
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, result.describe())
        return {"FINISHED"}


class SMPL_IK_OT_import_joints(bpy.types.Operator, ImportHelper):
    """Import 3D joint positions (.npy, .npz, .csv, .json: SMPL-24, Human3.6M-17, COCO-17, MediaPipe-33 or
    BODY_25) solved into SMPL motion, onto a new body or the active one, as one new action"""

    bl_idname = "smpl_ik.import_joints"
    bl_label = "Import Joint Positions"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".npy"
    filter_glob: StringProperty(default=";".join("*" + s for s in SUFFIXES), options={"HIDDEN"})
    layout: EnumProperty(name="Layout", items=LAYOUT_ITEMS, default="AUTO")
    target: EnumProperty(name="Onto", items=TARGET_ITEMS, default="NEW")
    units: EnumProperty(name="Units", items=UNIT_ITEMS, default="M", description="The file's length unit")
    up_axis: EnumProperty(name="Up Axis", items=JOINT_UP_ITEMS, default="AUTO")
    fps: FloatProperty(name="Frame Rate", default=DEFAULT_FPS, min=0.001,
                       description="Frames per second of a file that does not say")
    smooth: FloatProperty(name="Smoothing", default=0.0, min=0.0, max=30.0,
                          description="Gaussian smoothing of the solved motion over time, sigma in frames (0: none)")
    fill_gaps: FloatProperty(name="Fill Gaps", default=GAP_FILL_SECONDS, min=0.0, max=10.0, unit="TIME_ABSOLUTE",
                             description="A joint missing (NaN) for at most this long between frames that show it is "
                                         "pinned lightly on a curve through them; longer gaps, or 0, leave it "
                                         "to SMPL-IK")
    floor: EnumProperty(name="Floor", items=FLOOR_ITEMS, default="AUTO",
                        description="Put the clip's feet on the floor (the 3D cursor's height for a new body, the "
                                    "body's Floor Height for the active one)")
    keep_source_rate: BoolProperty(name="Keep Source Rate", default=False,
                                   description="One key per frame of the file instead of keys at the scene's rate")
    set_frame_range: BoolProperty(name="Set Frame Range", default=True,
                                  description="Make the scene's frame range the imported keys'")
    frame_start: IntProperty(name="Start Frame", default=1, description="The first key's frame "
                             "(unless set: the scene's start frame)")

    def execute(self, context):
        joints = JointOptions(layout=self.layout.lower(), units=self.units.lower(),
                              up_axis=None if self.up_axis == "AUTO" else self.up_axis.replace("NEG_", "-"),
                              fps=self.fps, smooth=self.smooth, fill_gaps=self.fill_gaps)
        keys = ImportOptions(filepath=self.filepath, target=self.target, floor=self.floor,
                             keep_source_rate=self.keep_source_rate, set_frame_range=self.set_frame_range,
                             frame_start=self.frame_start if self.properties.is_property_set("frame_start") else None)
        try:
            with progress_bar(context) as progress:
                result = import_joints(context, JointImportOptions(self.filepath, joints, keys), progress)
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, result.describe())
        return {"FINISHED"}


class SMPL_IK_OT_export_motion(bpy.types.Operator, ExportHelper):
    """Export the selected body's animation (or its pose) as an AMASS-style SMPL motion (.npz)"""

    bl_idname = "smpl_ik.export_motion"
    bl_label = "Export SMPL-IK Motion"
    bl_options = {"REGISTER"}

    filename_ext = ".npz"
    filter_glob: StringProperty(default="*.npz", options={"HIDDEN"})
    frame_start: IntProperty(name="Start", default=1, description="First frame (unless set: the scene's)")
    frame_end: IntProperty(name="End", default=250, description="Last frame (unless set: the scene's)")
    up_axis: EnumProperty(name="Up Axis", items=EXPORT_UP_ITEMS, default="Z")

    def invoke(self, context, event):
        if not self.properties.is_property_set("frame_start"):
            self.frame_start = context.scene.frame_start
        if not self.properties.is_property_set("frame_end"):
            self.frame_end = context.scene.frame_end
        return ExportHelper.invoke(self, context, event)

    def execute(self, context):
        is_set = self.properties.is_property_set
        options = ExportOptions(filepath=self.filepath,
                                frame_start=self.frame_start if is_set("frame_start") else None,
                                frame_end=self.frame_end if is_set("frame_end") else None, up_axis=self.up_axis)
        try:
            arm = target_body(context)
            with progress_bar(context) as progress:
                result = export_motion(context, arm, options, progress)
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, result.describe())
        return {"FINISHED"}


def _menu_import(self, context):
    self.layout.operator(SMPL_IK_OT_import_motion.bl_idname, text="SMPL-IK motion (.npz)")


def _menu_import_joints(self, context):
    self.layout.operator(SMPL_IK_OT_import_joints.bl_idname, text="SMPL-IK joint positions (.npy, .csv, .json)")


def _menu_export(self, context):
    self.layout.operator(SMPL_IK_OT_export_motion.bl_idname, text="SMPL-IK motion (.npz)")


classes = (SMPL_IK_OT_import_motion, SMPL_IK_OT_import_joints, SMPL_IK_OT_export_motion)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.TOPBAR_MT_file_import.append(_menu_import)
    bpy.types.TOPBAR_MT_file_import.append(_menu_import_joints)
    bpy.types.TOPBAR_MT_file_export.append(_menu_export)


def unregister():
    bpy.types.TOPBAR_MT_file_export.remove(_menu_export)
    bpy.types.TOPBAR_MT_file_import.remove(_menu_import_joints)
    bpy.types.TOPBAR_MT_file_import.remove(_menu_import)
    _unregister_classes()
