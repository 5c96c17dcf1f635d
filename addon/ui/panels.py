"""The sidebar tab "SMPL-IK" in the 3D viewport, and the pose-mode shortcut for effectors."""
import textwrap

import bpy

from ...models.core.errors import SmplIkError
from ..body.build import measurements_of
from ..com import live
from ..com.objects import body_of, is_custom_rig, is_effector, rig_of
from ..photo.image import detector_problem
from ..pose.effectors import effectors_of


SIDEBAR_PX = 300      # the sidebar's width where no region says (a panel drawn outside the viewport)
CHAR_PX = 7.0         # a label character's mean width at UI scale 1 (Blender's default font, 11 pt)


def status_lines(text, width_px, scale=1.0):
    """A status message as lines that fit a panel `width_px` wide at UI scale `scale` (a label
    shows one line and cuts the rest off)."""
    chars = max(20, int((width_px - 40 * scale) / (CHAR_PX * scale)))   # less the icon and margins
    return textwrap.wrap(text, chars) or [text]


def status_label(layout, text, context):
    """`text` in red under an error icon, wrapped to the panel's width."""
    col = layout.column(align=True)
    col.alert = True
    region = getattr(context, "region", None)
    width = region.width if region is not None and region.width > 1 else SIDEBAR_PX
    preferences = getattr(context, "preferences", None)
    scale = preferences.system.ui_scale if preferences is not None else 0.0
    scale = scale if scale > 0 else 1.0   # 0 without a window (Blender in the background)
    for n, line in enumerate(status_lines(text, width, scale)):
        col.label(text=line, icon="ERROR" if n == 0 else "BLANK1")


class SidebarPanel:
    """Mixin: a panel in the 3D viewport's sidebar, tab SMPL-IK."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "SMPL-IK"


class SMPL_IK_PT_body(SidebarPanel, bpy.types.Panel):
    bl_label = "Body"
    bl_idname = "SMPL_IK_PT_body"

    def draw(self, context):
        layout = self.layout
        row = layout.row(align=True)
        row.operator_menu_enum("smpl_ik.add_body", "body", text="Add Body", icon="ARMATURE_DATA")
        row.operator("smpl_ik.pose_from_image", icon="IMAGE_DATA")
        row.operator("smpl_ik.pose_from_video", text="Video", icon="FILE_MOVIE")
        if not _has_detector():
            layout.label(text="Pose from Photo and Video need this extension's platform build", icon="INFO")
        arm = body_of(context.active_object)
        row = layout.row(align=True)   # AMASS-style motion in and out (addon/motion)
        row.operator("smpl_ik.import_motion", text="Import Motion", icon="IMPORT")
        sub = row.row(align=True)
        sub.enabled = arm is not None
        sub.operator("smpl_ik.export_motion", text="Export Motion", icon="EXPORT")
        layout.operator("smpl_ik.import_joints", text="Import Joint Positions", icon="IMPORT")
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
        try:
            now = measurements_of(arm)
            box.label(text=f"{now.height:.3f} m, {now.weight:.1f} kg ({props.gender})")
        except SmplIkError as exc:
            box.label(text=str(exc), icon="ERROR")
        row = box.row(align=True)
        row.prop(props, "target_height")
        row.prop(props, "target_weight")
        op = box.operator("smpl_ik.set_measurements", icon="FULLSCREEN_ENTER")
        op.height, op.weight = props.target_height, props.target_weight
        if props.status:
            status_label(box, props.status, context)


class SMPL_IK_PT_pose(SidebarPanel, bpy.types.Panel):
    bl_label = "Pose"
    bl_idname = "SMPL_IK_PT_pose"

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
            row = box.row()
            row.prop(props, "priority", expand=True)
            # the tolerance counts for soft effectors and for any effector while it is dragged
            row.prop(props, "tolerance" if props.kind == "POSITION" else "angle_tolerance")
        arm = body_of(obj) or (body_of(obj.smpl_ik_effector.body) if is_effector(obj) else None)
        if arm is None:
            layout.label(text="Select a body or an effector to pose it")
            return
        row = layout.row(align=True)
        row.operator("smpl_ik.add_effector", icon="EMPTY_AXIS")
        row.operator("smpl_ik.add_default_effectors", text="Defaults")
        effectors = effectors_of(arm, enabled_only=False)
        col = layout.column(align=True)
        for eff in effectors:   # one row each: on/off, what it pins, pin or soft, weight
            props = eff.smpl_ik_effector
            row = col.row(align=True)
            row.prop(props, "enabled", text="")
            row.label(text=f"{props.joint} ({props.kind.lower().replace('_', '-')})",
                      icon="RADIOBUT_ON" if eff.select_get() else "RADIOBUT_OFF")
            row.prop(props, "priority", text="")
            row.prop(props, "weight", text="", slider=True)
        if not effectors:
            col.label(text="No effectors yet")
        body = arm.smpl_ik
        if body.status:   # what the last solve did not meet, or why it refused
            status_label(layout, body.status, context)
        row = layout.row()
        row.prop(body, "live")
        row.prop(body, "refine")
        row.prop(body, "keep_pose", text="Keep Pose")
        row = layout.row()
        row.prop(body, "plant_feet")
        row.prop(body, "use_floor")
        sub = row.row()
        sub.active = body.use_floor
        sub.prop(body, "floor_height", text="")
        row = layout.row(align=True)
        row.operator("smpl_ik.solve", icon="PLAY")
        row.operator("smpl_ik.mirror_pose", icon="MOD_MIRROR", text="Mirror")
        row.operator("smpl_ik.reset_pose", icon="LOOP_BACK", text="Reset")
        row = layout.row(align=True)   # the generative model: the natural pose and alternatives to it
        row.operator("smpl_ik.natural_pose", icon="OUTLINER_OB_ARMATURE", text="Natural")
        row.operator("smpl_ik.alternative", icon="TRIA_LEFT", text="").direction = "PREVIOUS"
        row.operator("smpl_ik.alternative", icon="TRIA_RIGHT", text="").direction = "NEXT"
        row.label(text=_alternative_label(arm))
        row = layout.row(align=True)
        row.prop(body, "alternatives_count", text="K")
        row.prop(body, "variation")
        row = layout.row(align=True)
        row.operator("smpl_ik.keyframe_pose", icon="KEY_HLT", text="Key Pose")
        op = row.operator("smpl_ik.bake", icon="RENDER_ANIMATION", text="Bake")
        op.frame_start, op.frame_end = context.scene.frame_start, context.scene.frame_end


def _alternative_label(arm):
    """'3 / 8' while a set of alternatives is on screen (0: the pose before them), else '-'."""
    index, alternatives = arm.smpl_ik.alternative_index, live.alternatives.get(arm.session_uid)
    if alternatives is None or not 0 <= index <= alternatives.count:
        return "-"
    return f"{index} / {alternatives.count}"


_detector = []


def _has_detector():
    if not _detector:  # looked up once: a package search on every redraw would be wasteful
        _detector.append(detector_problem() is None)
    return _detector[0]


class SMPL_IK_UL_mapping(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        row = layout.split(factor=0.45)
        row.label(text=item.joint, icon="BONE_DATA")
        row.prop_search(item, "bone", data.id_data.data, "bones", text="")


class SMPL_IK_PT_rig(SidebarPanel, bpy.types.Panel):
    bl_label = "Custom Rig"
    bl_idname = "SMPL_IK_PT_rig"

    def draw(self, context):
        layout = self.layout
        obj = rig_of(context.active_object)
        if not is_custom_rig(obj):
            layout.label(text="Select a humanoid armature to pose it with SMPL-IK")
            return
        props = obj.smpl_ik_rig
        layout.label(text=obj.name, icon="OUTLINER_OB_ARMATURE")
        layout.operator("smpl_ik.map_rig", icon="BONE_DATA")
        if len(props.mapping):
            layout.template_list("SMPL_IK_UL_mapping", "", props, "mapping", props, "active_index", rows=6)
        row = layout.row(align=True)
        row.operator("smpl_ik.fit_rig", icon="MOD_ARMATURE")
        op = row.operator("smpl_ik.transfer_to_rig", icon="KEYINGSET")
        op.frame_start, op.frame_end = context.scene.frame_start, context.scene.frame_end
        if props.proxy is not None:
            layout.label(text=f"Driven by {props.proxy.name}", icon="LINKED")


classes = (SMPL_IK_PT_body, SMPL_IK_PT_pose, SMPL_IK_UL_mapping, SMPL_IK_PT_rig)
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
