"""Pose from a video in Blender: the person's motion fitted frame by frame
(models/photo/video.py), keyed onto the active body (or a new one) at the scene's frame rate
through the motion import's own keying (addon/motion/importer.key_motion), and the camera the
video was shot with added, the clip as its background, so that looking through it the body
moves over the person.

Everything slow happens before the scene changes, one frame at a time (`pose_from_video_steps`
is a generator, so the modal operator can show progress and stop on Esc with nothing made);
what a later failure made is removed again, so the scene is left as it was.
"""
from dataclasses import dataclass

import bpy
import numpy as np

from ...models.body.model import NUM_BETAS, load_body_model
from ...models.core.errors import SmplIkError
from ...models.core.rotations import matrix_to_axis_angle
from ..body.build import body_model_of, open_body_name_of
from ..com import bridge
from ..com.blender import remove_created
from ..motion.importer import ImportOptions, key_motion
from ..motion.keys import scene_fps
from .image import add_camera, detector_problem, without_scale


@dataclass(frozen=True)
class VideoSceneOptions:
    """What Pose from Video is asked to do. frame_start, frame_end: the video's frames used,
    counted from 0, frame_end the last one (-1: to the end); step: every step-th of them;
    person: 1 the largest on the first frame with people (then followed through the clip);
    smooth, lock_feet: models.photo.video.VideoOptions'; fit_shape: for a new body, its
    proportions fitted to the person over the clip (VideoOptions.fit_shape; an existing body
    keeps its shape), at `height` metres where that is above 0 (the person's, known), else at
    the average body's; field_of_view: the camera's, degrees
    across the diagonal (0: the default, as for a photo without EXIF); add_camera: add the
    camera with the clip as its background, as the scene's camera, the render size the
    video's; set_frame_rate: the scene's frame rate becomes the video's, so the clip and the
    keys play in step (the keys are at the scene's rate either way)."""

    filepath: str
    frame_start: int = 0
    frame_end: int = -1
    step: int = 1
    person: int = 1
    smooth: bool = True
    lock_feet: bool = True
    fit_shape: bool = True
    height: float = 0.0
    field_of_view: float = 0.0
    add_camera: bool = True
    set_frame_rate: bool = True


@dataclass(frozen=True, eq=False)
class VideoResult:
    """body: the armature keyed; action its new action; motion the models.photo.video
    VideoMotion (the camera's frame); frame_start, frame_end the scene frames keyed; camera the
    camera object added (None without add_camera) and previous_camera the scene camera it
    replaced; clip the MovieClip; notes what a person should know."""

    body: object
    action: object
    motion: object
    frame_start: int
    frame_end: int
    camera: object = None
    previous_camera: object = None
    clip: object = None
    notes: tuple = ()

    def describe(self):
        m = self.motion
        contact = m.contact.mean(axis=0) * 100
        text = (f"Keyed {self.body.name} from {len(m.frames)} video frames ({m.fps:g} fps) on scene frames "
                f"{self.frame_start}-{self.frame_end}; feet in contact {contact[0]:.0f}% (left) and "
                f"{contact[1]:.0f}% (right) of the frames; {m.seconds:.1f} s, "
                f"{len(m.frames) / max(m.seconds, 1e-9):.1f} frames a second")
        if self.camera is not None:
            text += f"; camera {self.camera.name!r} is the scene camera, the video behind the body"
            if self.previous_camera is not None:
                text += f" (it was {self.previous_camera.name!r})"
        return text


def _video_options(options, new_body):
    from ...models.photo.video import VideoOptions

    shaped = options.fit_shape and new_body
    return VideoOptions(smooth=options.smooth, lock_feet=options.lock_feet, fit_shape=shaped,
                        height_m=options.height if shaped and options.height > 0 else None,
                        fov_deg=options.field_of_view if options.field_of_view > 0 else None)


def _set_rate(scene, fps):
    """Set the scene's frame rate to `fps` (fps and fps_base, so 29.97 stays exact); returns
    what it was."""
    before = (scene.render.fps, scene.render.fps_base)
    whole = max(int(round(fps)), 1)
    scene.render.fps, scene.render.fps_base = whole, whole / fps
    return before


def pose_from_video_steps(context, arm, options):
    """Generator: fit the video's person frame by frame (yielding the fraction done), then key
    `arm` (None: a new open body at the 3D cursor) and add the camera and clip as options (a
    VideoSceneOptions) say; returns a VideoResult (StopIteration's value). Closing it before
    it ends makes nothing. SmplIkError, with the scene as it was, for a file that is not a
    video, a video with no frames or nobody in it, a person beyond those found."""
    from ...models.motion.amass import MotionFile
    from ...models.photo.video import VideoClip, video_scene, video_steps
    from ...models.photo.video_reader import video_path

    if (problem := detector_problem()) is not None:
        raise SmplIkError(problem)
    if options.person < 1:
        raise SmplIkError(f"person {options.person}: people are counted from 1 (the largest)")
    path = video_path(bpy.path.abspath(options.filepath))
    if arm is None:
        body, body_path, betas = load_body_model(), "", np.zeros(NUM_BETAS)
    else:
        body, body_path, betas = body_model_of(arm), arm.smpl_ik.body_path, np.array(arm.smpl_ik.applied_betas[:])
    end = None if options.frame_end < 0 else options.frame_end + 1
    steps = video_steps(path, VideoClip(options.frame_start, end, options.step, options.person - 1), body, betas,
                        _video_options(options, arm is None))
    try:
        while True:
            done, total = next(steps)
            yield 0.9 * done / max(total, 1)
    except StopIteration as finished:
        motion = finished.value
    finally:
        steps.close()

    scene = context.scene
    betas = motion.betas   # the person's, where a new body's shape was fitted
    rest = body.rest_joints(betas)
    levelled = video_scene(motion, rest)
    floor = float(body.rest_floor_point(betas)[1])   # the soles' floor under the feet, as levelled
    clip_motion = MotionFile(poses=matrix_to_axis_angle(levelled.local_rot), trans=levelled.trans, betas=betas,
                             gender=body.gender, fps=motion.fps, path=str(path),
                             body_model=open_body_name_of(body_path, body), up_axis="Y", floor_height=floor)
    keys = ImportOptions(filepath=str(path), target="NEW" if arm is None else "ACTIVE", up_axis="Y", floor="AUTO")
    rate = _set_rate(scene, motion.video_fps) if options.set_frame_rate else None
    notes = list(motion.notes)
    if rate is None and abs(scene_fps(scene) - motion.video_fps) > 1e-3 * motion.video_fps:
        notes.append(f"the scene plays at {scene_fps(scene):g} fps, the video at {motion.video_fps:g}: the clip "
                     "behind the body runs out of step with the keys")
    created, imported, previous = [], None, scene.camera
    resolution = (scene.render.resolution_x, scene.render.resolution_y)
    frame_range = (scene.frame_start, scene.frame_end)
    try:
        imported = key_motion(context, clip_motion, keys, lambda f: None,
                              new_body=(body, body_path) if arm is None else None)
        created.append(imported.action)
        if arm is None:
            created += [imported.body, imported.body.smpl_ik.mesh]
        camera_obj = clip = None
        if options.add_camera:
            clip = bpy.data.movieclips.load(str(path), check_existing=False)
            created.append(clip)
            clip.frame_start = imported.frame_start
            clip.frame_offset = int(motion.frames[0])   # the first frame used plays on the first key
            shift = imported.floor.shift if imported.floor is not None else 0.0
            context.view_layer.update()   # the new body's matrix_world follows its location
            world = bridge.matrix_array(imported.body.matrix_world)
            placed = world @ bridge.object_matrix(levelled.camera_rotation,
                                                  levelled.camera_position + [0.0, shift, 0.0])
            camera_obj = add_camera(context, path.stem, motion.camera, without_scale(placed), clip=clip)
            created.append(camera_obj)
            scene.camera = camera_obj
            scene.render.resolution_x, scene.render.resolution_y = motion.camera.width, motion.camera.height
    except BaseException:
        remove_created(reversed(created))
        scene.camera = previous
        scene.render.resolution_x, scene.render.resolution_y = resolution
        scene.frame_start, scene.frame_end = frame_range
        if rate is not None:
            scene.render.fps, scene.render.fps_base = rate
        raise
    return VideoResult(body=imported.body, action=imported.action, motion=motion,
                       frame_start=imported.frame_start, frame_end=imported.frame_end, camera=camera_obj,
                       previous_camera=previous if camera_obj is not None else None, clip=clip,
                       notes=tuple(notes) + tuple(imported.notes))
