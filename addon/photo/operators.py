"""Photo operators (`smpl_ik.pose_from_image`)."""
import bpy
from bpy.props import BoolProperty, FloatProperty, IntProperty, StringProperty

from ...models.core.errors import SmplIkError
from ..com.blender import remove_created
from ..com.objects import body_of, is_effector
from .image import MISSING, PhotoOptions, detector_available, pose_from_image


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
        if not detector_available():
            self.report({"ERROR"}, MISSING)
            return {"CANCELLED"}
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        try:
            obj = context.active_object
            arm = body_of(obj.smpl_ik_effector.body if is_effector(obj) else obj)
            created = arm is None
            if created:  # no body yet: check the photo on a throw-away load first, then add one
                if not detector_available():
                    raise SmplIkError(MISSING)
                bpy.ops.smpl_ik.add_body()
                arm = context.active_object
            try:
                result = pose_from_image(context, arm, self.photo_options())
            except SmplIkError:
                if created:  # leave the scene as it was
                    remove_created((arm.smpl_ik.mesh, arm))
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
        return PhotoOptions(filepath=self.filepath, person=self.person, min_visibility=self.min_visibility,
                                  show_photo=self.reference, add_effectors=self.effectors,
                                  key_animated=self.key_animated)

classes = (SMPL_IK_OT_pose_from_image,)
register, unregister = bpy.utils.register_classes_factory(classes)
