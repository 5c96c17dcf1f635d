"""Operators (`smpl_ik.*`): thin wrappers that read options, call one function, report."""
from pathlib import Path

import bpy
from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    IntProperty,
    StringProperty,
)

from ..models.body.measure import fit_measurements
from ..models.body.model import GENDERS, NUM_BETAS, load_body_model, open_body_path
from ..models.core.errors import SmplIkError
from ..models.core.skeleton import JOINT_NAMES
from . import photo, rig, solving
from .body_object import body_model_of, body_of, create_body, is_body
from .effectors import DEFAULT_JOINTS, KINDS, create_effector, effectors_of, is_effector
from .preferences import user_body_files

OPEN_BODY = "OPEN"   # the neutral open body; OPEN_FEMALE and OPEN_MALE the others
OPEN_BODIES = {OPEN_BODY if g == "neutral" else f"{OPEN_BODY}_{g.upper()}": g for g in GENDERS}
_enum_cache = []  # Blender needs enum item strings kept alive by Python


def _body_items(self, context):
    items = [(key, f"Open body ({g})", f"The shipped open SMPL-layout body, {g} (CC0 data)")
             for key, g in OPEN_BODIES.items()]
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
                       description="An open body (neutral, female or male), or one of your files from the "
                                   "preferences' folder")
    filepath: StringProperty(name="File", subtype="FILE_PATH",
                             description="An SMPL-family file to use instead of the choice above")

    def execute(self, context):
        gender = OPEN_BODIES.get(self.body, "neutral") if not self.filepath else "neutral"
        path = self.filepath or ("" if self.body in OPEN_BODIES else self.body)
        try:
            body = load_body_model(bpy.path.abspath(path) if path else open_body_path(gender))
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if context.mode != "OBJECT" and context.view_layer.objects.active is not None:
            bpy.ops.object.mode_set(mode="OBJECT")
        name = f"SMPL-IK {gender} body" if not path else f"SMPL-IK {Path(path).stem}"
        if not path and gender == "neutral":
            name = "SMPL-IK body"
        arm = create_body(context, body, body_path=path, name=name,
                          location=context.scene.cursor.location.copy())
        for obj in context.selected_objects:
            obj.select_set(False)
        arm.select_set(True)
        context.view_layer.objects.active = arm
        self.report({"INFO"}, f"Added {body.label}")
        return {"FINISHED"}


def target_body(context):
    """The body an operator acts on: the active body, its mesh, or an active effector's body.

    Raises SmplIkError saying what to select (or that an effector's body is gone)."""
    obj = context.active_object
    if is_effector(obj):
        arm = body_of(obj.smpl_ik_effector.body)
        if arm is None or not arm.users_scene:
            raise SmplIkError(f"effector {obj.name!r}: its body was deleted; point it at another body "
                              "in the SMPL-IK panel, or delete the effector")
        return arm
    arm = body_of(obj)
    if arm is None:
        raise SmplIkError("select an SMPL-IK body (its armature or mesh) or one of its effectors")
    return arm


class BodyOperator:
    """Mixin: `run(context, target)` on what `target(context)` picks (the body here);
    SmplIkError from either becomes a report and cancels. There is no poll: a script or a
    shortcut run with the wrong selection is told what to select instead of "poll() failed"
    (the panels show these buttons only when there is something to act on)."""

    bl_options = {"REGISTER", "UNDO"}

    def target(self, context):
        return target_body(context)

    def execute(self, context):
        try:
            message = self.run(context, self.target(context))
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if message:
            self.report({"INFO"}, message)
        return {"FINISHED"}


class SMPL_IK_OT_reset_shape(BodyOperator, bpy.types.Operator):
    """Return the body to the average shape (all betas zero), keeping its pose"""

    bl_idname = "smpl_ik.reset_shape"
    bl_label = "Reset Shape"

    def run(self, context, arm):
        arm.smpl_ik.status = ""   # a refusal now is reported, not an old one
        arm.smpl_ik.betas = [0.0] * NUM_BETAS
        if arm.smpl_ik.status:
            raise SmplIkError(arm.smpl_ik.status)


class SMPL_IK_OT_set_measurements(BodyOperator, bpy.types.Operator):
    """Shape the body to a height and a weight (the average shape of its gender's population
    for them, met exactly on the rest mesh), keeping its pose"""

    bl_idname = "smpl_ik.set_measurements"
    bl_label = "Set Height and Weight"

    # No hard limits: Blender would clamp a bad value silently; the fit refuses it with a message.
    height: FloatProperty(name="Height", default=1.75, subtype="DISTANCE", unit="LENGTH", precision=3,
                          description="Metres, top of the head to the sole in the rest pose")
    weight: FloatProperty(name="Weight", default=75.0, unit="MASS", precision=1,
                          description="Kilograms (the mesh's volume times the body's density)")

    def run(self, context, arm):
        props = arm.smpl_ik
        if props.rig is not None:
            raise SmplIkError(f"{arm.name} is the proxy of rig {props.rig.name!r} and takes its shape "
                              "from it; change the rig and fit it again")
        betas = fit_measurements(body_model_of(arm), self.height, self.weight)   # refusals change nothing
        props.status = ""
        props.betas = betas.tolist()
        if props.status:
            raise SmplIkError(props.status)
        return f"{arm.name}: {self.height:.3f} m, {self.weight:.1f} kg"


_JOINT_CHOICES = [("ACTIVE", "Active Bone", "The active pose bone")] + [
    (n, n.replace("_", " ").title(), f"SMPL joint {n}") for n in JOINT_NAMES]


class SMPL_IK_OT_add_effector(BodyOperator, bpy.types.Operator):
    """Pin a joint of the body with a new effector (an Empty at the joint)"""

    bl_idname = "smpl_ik.add_effector"
    bl_label = "Add Effector"

    joint: EnumProperty(name="Joint", items=_JOINT_CHOICES, default="ACTIVE")
    kind: EnumProperty(name="Kind", items=KINDS, default="POSITION")

    def run(self, context, arm):
        joint = self.joint
        if joint == "ACTIVE":
            bone = context.active_pose_bone
            if bone is None or bone.id_data != arm or bone.name not in JOINT_NAMES:
                raise SmplIkError("select one of the body's bones in Pose Mode, or choose a joint")
            joint = bone.name
        obj = create_effector(context, arm, joint, self.kind)
        return f"Added {obj.name}"


class SMPL_IK_OT_add_default_effectors(BodyOperator, bpy.types.Operator):
    """Pin the pelvis, head, wrists and ankles (positions), skipping ones already pinned"""

    bl_idname = "smpl_ik.add_default_effectors"
    bl_label = "Add Default Effectors"

    def run(self, context, arm):
        have = {(o.smpl_ik_effector.joint, o.smpl_ik_effector.kind) for o in effectors_of(arm, False)}
        added = [create_effector(context, arm, j, "POSITION") for j in DEFAULT_JOINTS if (j, "POSITION") not in have]
        return f"Added {len(added)} effector(s)"


class SMPL_IK_OT_solve(BodyOperator, bpy.types.Operator):
    """Pose the body from its enabled effectors now (a warning names any it cannot meet)"""

    bl_idname = "smpl_ik.solve"
    bl_label = "Solve"

    def run(self, context, arm):
        solution = solving.solve_body(arm)
        if solution.misses:
            self.report({"WARNING"}, f"{arm.name}: {solving.reach_message(solution.misses)}")


class SMPL_IK_OT_natural_pose(BodyOperator, bpy.types.Operator):
    """Pose the body from its enabled effectors with the least effort the generative model
    knows (its natural pose; a warning names any effector it cannot meet)"""

    bl_idname = "smpl_ik.natural_pose"
    bl_label = "Natural"

    def run(self, context, arm):
        solution = solving.solve_body(arm, mode="natural")
        if solution.misses:
            self.report({"WARNING"}, f"{arm.name}: {solving.reach_message(solution.misses)}")


class SMPL_IK_OT_alternative(BodyOperator, bpy.types.Operator):
    """Step to another pose that meets the same effectors (the first step samples a set; the
    pose before them comes round again)"""

    bl_idname = "smpl_ik.alternative"
    bl_label = "Alternative Pose"

    direction: EnumProperty(name="Direction", items=(("NEXT", "Next", "The next alternative"),
                                                     ("PREVIOUS", "Previous", "The previous alternative")),
                            default="NEXT")

    def run(self, context, arm):
        index, alternatives = solving.step_alternatives(arm, 1 if self.direction == "NEXT" else -1)
        if index == 0:
            return "Pose before the alternatives"
        message = f"Alternative {index} of {alternatives.count}"
        misses = alternatives.solutions[index].misses
        if misses:
            self.report({"WARNING"}, f"{message}; {solving.reach_message(misses)}")
            return None
        return message


class SMPL_IK_OT_mirror_pose(BodyOperator, bpy.types.Operator):
    """Swap the pose's left and right sides; effectors move to their joints"""

    bl_idname = "smpl_ik.mirror_pose"
    bl_label = "Mirror Pose"

    def run(self, context, arm):
        solving.mirror_pose(arm)


class SMPL_IK_OT_reset_pose(BodyOperator, bpy.types.Operator):
    """Return the body to its rest pose; effectors move to their joints"""

    bl_idname = "smpl_ik.reset_pose"
    bl_label = "Reset Pose"

    def run(self, context, arm):
        solving.reset_pose(arm)


class SMPL_IK_OT_keyframe_pose(BodyOperator, bpy.types.Operator):
    """Key the body's current pose at the current frame"""

    bl_idname = "smpl_ik.keyframe_pose"
    bl_label = "Keyframe Pose"

    def run(self, context, arm):
        solving.keyframe_pose(arm, context.scene.frame_current)


class SMPL_IK_OT_bake(BodyOperator, bpy.types.Operator):
    """Solve every frame of a range from the animated effectors and key the body (Esc cancels)"""

    bl_idname = "smpl_ik.bake"
    bl_label = "Bake Effectors"

    frame_start: IntProperty(name="Start", default=1)
    frame_end: IntProperty(name="End", default=250)
    smoothing: FloatProperty(name="Smoothing", default=0.0, min=0.0, max=10.0,
                             description="Temporal smoothing (Gaussian sigma in frames; 0: none)")
    follow_path: BoolProperty(name="Follow Path", default=False,
                              description="Solve the range as one motion: the same latent of the generative "
                                          "model on every frame, so what the effectors leave free keeps one "
                                          "character (needs the generative weights; effectors always exact)")
    path_smoothness: FloatProperty(name="Path Smoothness", default=0.5, min=0.0, max=solving.PATH_SMOOTHNESS_MAX,
                                   description="Follow Path: how much each frame carries the frame before "
                                               "forward (0: none; the effectors are met either way)")

    def _steps(self, context):
        options = solving.BakeOptions(frame_start=self.frame_start, frame_end=self.frame_end,
                                      smoothing=self.smoothing, follow_path=self.follow_path,
                                      path_smoothness=self.path_smoothness)
        return solving.bake_steps(context, target_body(context), options)

    def draw(self, context):
        layout = self.layout
        for name in ("frame_start", "frame_end", "smoothing", "follow_path"):
            layout.prop(self, name)
        row = layout.row()
        row.active = self.follow_path
        row.prop(self, "path_smoothness")

    def _done(self, baked):
        """Report a finished bake (solving.Baked): a warning when an effector was not met."""
        self.report({"WARNING"} if baked.missed else {"INFO"}, baked.describe())
        return {"FINISHED"}

    def execute(self, context):
        wm = context.window_manager
        wm.progress_begin(0, 1000)
        try:
            steps = self._steps(context)
            while True:
                try:
                    wm.progress_update(int(next(steps) * 1000))
                except StopIteration as done:
                    baked = done.value
                    break
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        finally:
            wm.progress_end()
        return self._done(baked)

    def invoke(self, context, event):
        if context.window is None:
            return self.execute(context)
        try:
            self._gen = self._steps(context)
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.progress_begin(0, 1000)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _finish(self, context):
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()

    def modal(self, context, event):
        if event.type == "ESC":
            self._gen.close()  # nothing keyed yet; restores the frame
            self._finish(context)
            self.report({"WARNING"}, "Bake cancelled; nothing was keyed")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        try:
            fraction = next(self._gen)
        except StopIteration as done:
            self._finish(context)
            return self._done(done.value)
        except SmplIkError as exc:
            self._finish(context)
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        context.window_manager.progress_update(int(fraction * 1000))
        return {"RUNNING_MODAL"}


class SMPL_IK_OT_pose_from_image(bpy.types.Operator):
    """Pose the active body (or a new one) like the person in a photo, with effectors on the
    joints the photo shows and the photo behind the body as a reference"""

    bl_idname = "smpl_ik.pose_from_image"
    bl_label = "Pose from Photo"
    bl_options = {"REGISTER", "UNDO"}

    filepath: StringProperty(name="Photo", subtype="FILE_PATH")
    filter_image: BoolProperty(default=True, options={"HIDDEN", "SKIP_SAVE"})
    filter_folder: BoolProperty(default=True, options={"HIDDEN", "SKIP_SAVE"})
    person: IntProperty(name="Person", default=1, min=1, max=10,
                        description="Which person, by size in the photo (1: the largest)")
    min_visibility: FloatProperty(name="Minimum Visibility", default=0.5, min=0.0, max=1.0,
                                  description="Joints the detector is less sure of are guessed by SMPL-IK")
    reference: BoolProperty(name="Show Photo", default=True, description="Stand the photo behind the body")
    effectors: BoolProperty(name="Add Effectors", default=True,
                            description="Pin the joints the photo shows, ready for editing")
    key_animated: BoolProperty(name="Key If Animated", default=True,
                               description="On a body whose pose is keyed, key the photo's pose at the "
                                           "current frame (otherwise the action replaces it at the next "
                                           "frame change)")

    def invoke(self, context, event):
        if not photo.detector_available():
            self.report({"ERROR"}, photo.MISSING)
            return {"CANCELLED"}
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        try:
            obj = context.active_object
            arm = body_of(obj.smpl_ik_effector.body if is_effector(obj) else obj)
            created = arm is None
            if created:  # no body yet: check the photo on a throw-away load first, then add one
                if not photo.detector_available():
                    raise SmplIkError(photo.MISSING)
                bpy.ops.smpl_ik.add_body()
                arm = context.active_object
            try:
                result = photo.pose_from_image(context, arm, self.photo_options())
            except SmplIkError:
                if created:  # leave the scene as it was
                    mesh = arm.smpl_ik.mesh
                    bpy.data.objects.remove(mesh)
                    bpy.data.objects.remove(arm)
                raise
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        seen = int(result.pose.confident.sum())
        method = "IK-GAT" if result.pose.method == "ikgat" else "SMPL-IK"
        posed = (f"Posed {arm.name} from person {self.person} of {result.people} "
                 f"({seen} of 24 joints seen, {method})")
        if result.keyed_frame is not None:
            self.report({"INFO"}, f"{posed}; keyed at frame {result.keyed_frame}, as the body is animated")
        elif result.animated:
            self.report({"WARNING"}, f"{posed}; the body is animated, so its action replaces this pose "
                                     "at the next frame change: key it with Keyframe Pose")
        else:
            self.report({"INFO"}, posed)
        return {"FINISHED"}

    def photo_options(self):
        return photo.PhotoOptions(filepath=self.filepath, person=self.person, min_visibility=self.min_visibility,
                                  show_photo=self.reference, add_effectors=self.effectors,
                                  key_animated=self.key_animated)


class RigOperator(BodyOperator):
    """Mixin: `run(context, rig)` on the active armature (a proxy stands for its rig)."""

    def target(self, context):
        obj = context.active_object
        if is_body(obj) and obj.smpl_ik.rig is not None:
            obj = obj.smpl_ik.rig
        if context.mode != "OBJECT":
            bpy.ops.object.mode_set(mode="OBJECT")
        return obj


class SMPL_IK_OT_map_rig(RigOperator, bpy.types.Operator):
    """Guess which bone of the active armature sits at each SMPL joint (edit the list after)"""

    bl_idname = "smpl_ik.map_rig"
    bl_label = "Map Bones"

    def run(self, context, obj):
        if not rig.is_custom_rig(obj):
            raise SmplIkError("select a humanoid armature (not an SMPL-IK body) to map")
        missing = rig.auto_map(obj)
        return f"Mapped {24 - len(missing)} of 24 joints" + (f"; none for {', '.join(missing)}" if missing else "")


class SMPL_IK_OT_fit_rig(RigOperator, bpy.types.Operator):
    """Fit an SMPL proxy body to the active humanoid armature and drive the armature from it"""

    bl_idname = "smpl_ik.fit_rig"
    bl_label = "Fit Rig"

    def run(self, context, obj):
        proxy, fit = rig.fit_and_drive(context, obj)
        for other in context.selected_objects:
            other.select_set(False)
        proxy.select_set(True)
        context.view_layer.objects.active = proxy
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
        n = rig.transfer_to_rig(context, obj, self.frame_start, self.frame_end, self.remove_drive)
        return f"Keyed {n} frame(s) on {obj.name} into the new action {obj.animation_data.action.name!r}"


classes = (SMPL_IK_OT_add_body, SMPL_IK_OT_reset_shape, SMPL_IK_OT_set_measurements, SMPL_IK_OT_add_effector,
           SMPL_IK_OT_add_default_effectors, SMPL_IK_OT_solve, SMPL_IK_OT_natural_pose,
           SMPL_IK_OT_alternative, SMPL_IK_OT_mirror_pose,
           SMPL_IK_OT_reset_pose, SMPL_IK_OT_keyframe_pose, SMPL_IK_OT_bake, SMPL_IK_OT_map_rig,
           SMPL_IK_OT_fit_rig, SMPL_IK_OT_transfer_to_rig, SMPL_IK_OT_pose_from_image)
register, unregister = bpy.utils.register_classes_factory(classes)
