"""Posing operators (`smpl_ik.*`): effectors, Solve, Natural, Alternatives, Mirror, Reset,
Keyframe Pose and Bake; each reads its options, calls one function of this package, reports."""
import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty

from ...models.core.errors import SmplIkError
from ...models.core.skeleton import JOINT_NAMES
from ..com.objects import target_body
from ..com.operators import BodyOperator, StepsOperator
from ..motion.keys import keyframe_pose
from .alternatives import step_alternatives
from .bake import PATH_SMOOTHNESS_MAX, BakeOptions, bake_steps
from .edits import mirror_pose, reset_pose
from .effectors import DEFAULT_JOINTS, KINDS, create_effector, effectors_of
from .solving import reach_message, solve_body

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
        solution = solve_body(arm)
        if solution.misses:
            self.report({"WARNING"}, f"{arm.name}: {reach_message(solution.misses)}")


class SMPL_IK_OT_natural_pose(BodyOperator, bpy.types.Operator):
    """Pose the body from its enabled effectors with the least effort the generative model
    knows (its natural pose; a warning names any effector it cannot meet)"""

    bl_idname = "smpl_ik.natural_pose"
    bl_label = "Natural"

    def run(self, context, arm):
        solution = solve_body(arm, mode="natural")
        if solution.misses:
            self.report({"WARNING"}, f"{arm.name}: {reach_message(solution.misses)}")


class SMPL_IK_OT_alternative(BodyOperator, bpy.types.Operator):
    """Step to another pose that meets the same effectors (the first step samples a set; the
    pose before them comes round again)"""

    bl_idname = "smpl_ik.alternative"
    bl_label = "Alternative Pose"

    direction: EnumProperty(name="Direction", items=(("NEXT", "Next", "The next alternative"),
                                                     ("PREVIOUS", "Previous", "The previous alternative")),
                            default="NEXT")

    def run(self, context, arm):
        index, alternatives = step_alternatives(arm, 1 if self.direction == "NEXT" else -1)
        if index == 0:
            return "Pose before the alternatives"
        message = f"Alternative {index} of {alternatives.count}"
        misses = alternatives.solutions[index].misses
        if misses:
            self.report({"WARNING"}, f"{message}; {reach_message(misses)}")
            return None
        return message


class SMPL_IK_OT_mirror_pose(BodyOperator, bpy.types.Operator):
    """Swap the pose's left and right sides; effectors move to their joints"""

    bl_idname = "smpl_ik.mirror_pose"
    bl_label = "Mirror Pose"

    def run(self, context, arm):
        mirror_pose(arm)


class SMPL_IK_OT_reset_pose(BodyOperator, bpy.types.Operator):
    """Return the body to its rest pose; effectors move to their joints"""

    bl_idname = "smpl_ik.reset_pose"
    bl_label = "Reset Pose"

    def run(self, context, arm):
        reset_pose(arm)


class SMPL_IK_OT_keyframe_pose(BodyOperator, bpy.types.Operator):
    """Key the body's current pose at the current frame"""

    bl_idname = "smpl_ik.keyframe_pose"
    bl_label = "Keyframe Pose"

    def run(self, context, arm):
        keyframe_pose(arm, context.scene.frame_current)


class SMPL_IK_OT_bake(StepsOperator, bpy.types.Operator):
    """Solve every frame of a range from the animated effectors and key the body (Esc cancels)"""

    bl_idname = "smpl_ik.bake"
    bl_label = "Bake Effectors"
    bl_options = {"REGISTER", "UNDO"}
    CANCEL_MESSAGE = "Bake cancelled; nothing was keyed"

    frame_start: IntProperty(name="Start", default=1)
    frame_end: IntProperty(name="End", default=250)
    smoothing: FloatProperty(name="Smoothing", default=0.0, min=0.0, max=10.0,
                             description="Temporal smoothing (Gaussian sigma in frames; 0: none)")
    follow_path: BoolProperty(name="Follow Path", default=False,
                              description="Solve the range as one motion: the same latent of the generative "
                                          "model on every frame, so what the effectors leave free keeps one "
                                          "character (needs the generative weights; effectors always exact)")
    path_smoothness: FloatProperty(name="Path Smoothness", default=0.5, min=0.0, max=PATH_SMOOTHNESS_MAX,
                                   description="Follow Path: how much each frame carries the frame before "
                                               "forward (0: none; the effectors are met either way)")

    def _steps(self, context):
        options = BakeOptions(frame_start=self.frame_start, frame_end=self.frame_end,
                                      smoothing=self.smoothing, follow_path=self.follow_path,
                                      path_smoothness=self.path_smoothness)
        return bake_steps(context, target_body(context), options)

    def draw(self, context):
        layout = self.layout
        for name in ("frame_start", "frame_end", "smoothing", "follow_path"):
            layout.prop(self, name)
        row = layout.row()
        row.active = self.follow_path
        row.prop(self, "path_smoothness")

    def _done(self, baked):
        """Report a finished bake (bake.Baked): a warning when an effector was not met."""
        self.report({"WARNING"} if baked.missed else {"INFO"}, baked.describe())
        return {"FINISHED"}

    def execute(self, context):
        return self.run_to_end(context)

    def invoke(self, context, event):
        return self.execute(context) if context.window is None else self.run_modal(context)

classes = (SMPL_IK_OT_add_effector, SMPL_IK_OT_add_default_effectors, SMPL_IK_OT_solve, SMPL_IK_OT_natural_pose,
           SMPL_IK_OT_alternative, SMPL_IK_OT_mirror_pose, SMPL_IK_OT_reset_pose, SMPL_IK_OT_keyframe_pose,
           SMPL_IK_OT_bake)
register, unregister = bpy.utils.register_classes_factory(classes)
