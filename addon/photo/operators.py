"""Photo and video operators (`smpl_ik.pose_from_image`, `smpl_ik.pose_from_video`)."""
import bpy
import numpy as np
from bpy.props import BoolProperty, FloatProperty, IntProperty, StringProperty

from ...models.core.errors import SmplIkError
from ..com.objects import body_of, is_effector
from ..com.operators import StepsOperator
from .image import MAX_PEOPLE, PhotoOptions, detector_problem, pose_from_image
from .video import VideoSceneOptions, pose_from_video_steps


class SMPL_IK_OT_pose_from_image(bpy.types.Operator):
    """Pose the active body (or a new one) like the person in a photo, fitted through the
    camera the photo was taken with: that camera is added with the photo as its background,
    and effectors are pinned on the joints the photo shows"""

    bl_idname = "smpl_ik.pose_from_image"
    bl_label = "Pose from Photo"
    bl_options = {"REGISTER", "UNDO"}

    filepath: StringProperty(name="Photo", subtype="FILE_PATH")
    filter_image: BoolProperty(default=True, options={"HIDDEN", "SKIP_SAVE"})
    filter_folder: BoolProperty(default=True, options={"HIDDEN", "SKIP_SAVE"})
    person: IntProperty(name="Person", default=1, min=1, max=MAX_PEOPLE,
                        description="Which person, by size in the photo (1: the largest)")
    all_people: BoolProperty(name="All People", default=False,
                             description="Pose every person in the photo: the active body takes the "
                                         "largest, a new body each other one, all seen by one camera")
    min_visibility: FloatProperty(name="Minimum Visibility", default=0.5, min=0.0, max=1.0,
                                  description="Joints the detector is less sure of are guessed by SMPL-IK")
    camera: BoolProperty(name="Add Camera", default=True,
                         description="Add the camera the photo was taken with, the photo as its background, "
                                     "as the scene's camera (the render size set to the photo's): looking "
                                     "through it the body overlays the person")
    effectors: BoolProperty(name="Add Effectors", default=True,
                            description="Pin the joints the photo shows, ready for editing")
    key_animated: BoolProperty(name="Key If Animated", default=True,
                               description="On a body whose pose is keyed, key the photo's pose at the "
                                           "current frame (otherwise the action replaces it at the next "
                                           "frame change)")

    def invoke(self, context, event):
        if (problem := detector_problem()) is not None:
            self.report({"ERROR"}, problem)
            return {"CANCELLED"}
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        obj = context.active_object
        arm = body_of(obj.smpl_ik_effector.body if is_effector(obj) else obj)
        try:
            result = pose_from_image(context, arm, self.photo_options())
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        for note in result.notes:
            self.report({"WARNING"}, note)
        self.report({"INFO"}, posed_report(result))
        first = result.bodies[0]
        if result.keyed_frame is not None:
            self.report({"INFO"}, f"{first.name}: keyed at frame {result.keyed_frame}, as the body is animated")
        elif result.animated:
            self.report({"WARNING"}, f"{first.name}: the body is animated, so its action replaces this pose "
                                     "at the next frame change: key it with Keyframe Pose")
        return {"FINISHED"}

    def photo_options(self):
        return PhotoOptions(filepath=self.filepath, person=self.person, all_people=self.all_people,
                            min_visibility=self.min_visibility, add_camera=self.camera,
                            add_effectors=self.effectors, key_animated=self.key_animated)


def posed_report(result):
    """One line on what Pose from Photo did: each body and its person, how many joints the
    photo showed and how far its keypoints lie from the detector's, and the camera."""
    parts = []
    for arm, person, fit in zip(result.bodies, result.persons, result.fits):
        seen = int(fit.confident.sum())
        off = float(np.nanmedian(fit.keypoint_error_px))
        parts.append(f"{arm.name} from person {person} ({seen} of 24 joints seen, keypoints {off:.1f} px off)")
    text = f"Posed {', '.join(parts)} of {result.people} found"
    if result.camera is not None:
        width, height = result.size
        text += (f"; camera {result.camera.name!r} is the scene camera (render size set to {width}x{height}"
                 + (f"; it was {result.previous_camera.name!r}" if result.previous_camera is not None else "")
                 + "): look through it to see the photo behind the bodies")
    return text


class SMPL_IK_OT_pose_from_video(StepsOperator, bpy.types.Operator):
    """Animate the active body (or a new one) like the person in a video: fitted frame by frame
    through the camera it was shot with, smoothed, the feet held where they rest; that camera is
    added with the clip as its background (Esc cancels, keeping nothing)"""

    bl_idname = "smpl_ik.pose_from_video"
    bl_label = "Pose from Video"
    bl_options = {"REGISTER", "UNDO"}

    filepath: StringProperty(name="Video", subtype="FILE_PATH")
    filter_movie: BoolProperty(default=True, options={"HIDDEN", "SKIP_SAVE"})
    filter_folder: BoolProperty(default=True, options={"HIDDEN", "SKIP_SAVE"})
    frame_start: IntProperty(name="First Frame", default=0, min=0,
                             description="The video's first frame used (counted from 0)")
    frame_end: IntProperty(name="Last Frame", default=-1, min=-1,
                           description="The video's last frame used (-1: to the end)")
    step: IntProperty(name="Step", default=1, min=1, description="Use every step-th frame")
    person: IntProperty(name="Person", default=1, min=1, max=MAX_PEOPLE,
                        description="Which person, by size on the first frame with people (1: the largest)")
    smooth: BoolProperty(name="Smooth", default=True,
                         description="Filter the keypoints (One Euro) and smooth the fitted poses")
    lock_feet: BoolProperty(name="Lock Feet", default=True,
                            description="Hold a foot where it rests while it is on the floor (no skating)")
    fit_shape: BoolProperty(name="Fit Shape", default=True,
                            description="For a new body: fit its proportions to the person over the clip (at the "
                                        "average height, or the Height given). An active body keeps its own "
                                        "shape")
    height: FloatProperty(name="Height", default=0.0, min=0.0, max=2.6, subtype="DISTANCE", unit="LENGTH",
                          description="The person's height, where you know it (0: unknown, the average body's "
                                      "height is kept: one camera cannot see a person's size); with Fit Shape")
    field_of_view: FloatProperty(name="Field of View", default=0.0, min=0.0, max=170.0,
                                 description="The camera's field of view across the diagonal, degrees "
                                             "(0: the default 55, as for a photo without EXIF)")
    camera: BoolProperty(name="Add Camera", default=True,
                         description="Add the camera the video was shot with, the clip as its background, as "
                                     "the scene's camera (the render size set to the video's)")
    set_frame_rate: BoolProperty(name="Use Video's Frame Rate", default=True,
                                 description="Set the scene's frame rate to the video's, so the clip and the "
                                             "keys play in step")

    from_interface: BoolProperty(default=False, options={"HIDDEN", "SKIP_SAVE"})
    CANCEL_MESSAGE = "Pose from Video cancelled; nothing was made"

    def invoke(self, context, event):
        if (problem := detector_problem()) is not None:
            self.report({"ERROR"}, problem)
            return {"CANCELLED"}
        self.from_interface = context.window is not None   # then progress shows and Esc cancels
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def _steps(self, context):
        obj = context.active_object
        arm = body_of(obj.smpl_ik_effector.body if is_effector(obj) else obj)
        return pose_from_video_steps(context, arm, VideoSceneOptions(
            filepath=self.filepath, frame_start=self.frame_start, frame_end=self.frame_end, step=self.step,
            person=self.person, smooth=self.smooth, lock_feet=self.lock_feet, fit_shape=self.fit_shape,
            height=self.height, field_of_view=self.field_of_view,
            add_camera=self.camera, set_frame_rate=self.set_frame_rate))

    def _done(self, result):
        for note in result.notes:
            self.report({"WARNING"}, note)
        self.report({"INFO"}, result.describe())
        return {"FINISHED"}

    def execute(self, context):
        if self.from_interface and context.window is not None:
            return self.run_modal(context)   # after the file browser; a script's call runs to the end
        return self.run_to_end(context)


classes = (SMPL_IK_OT_pose_from_image, SMPL_IK_OT_pose_from_video)
register, unregister = bpy.utils.register_classes_factory(classes)
