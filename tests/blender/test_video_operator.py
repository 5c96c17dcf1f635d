"""Pose from video in Blender: a video written in the test keys the body on every frame with
its feet held while they stand, seen through the camera it adds with the clip behind; bad
videos, a person who is not there and a cancelled run leave the scene as it was."""
import importlib

import bpy
import numpy as np
import pytest
import video_clips

from benchmarks import blender_session
from models.photo.runtime import unavailable
from scene import object_fcurves, undo_restores

if unavailable("these tests") is not None:
    pytest.skip(f"{unavailable('these tests')} (requirements-photo.txt; make detector)", allow_module_level=True)
needs_photo = pytest.mark.skipif(not video_clips.PHOTO.exists(),
                                 reason=f"{video_clips.PHOTO} not found (the shared photos are absent; the test "
                                        "video is made from one)")
FRAMES = 12
FEET = ("left_ankle", "left_foot", "right_ankle", "right_foot")


def addon(name):
    return importlib.import_module(f"{blender_session.MODULE}.addon.{name}")


def scene_state():
    """What a failed or cancelled Pose from Video must leave as it was."""
    scene = bpy.context.scene
    return ({o.name: tuple(o.matrix_world.translation) for o in bpy.data.objects},
            {kind: len(getattr(bpy.data, kind)) for kind in
             ("images", "movieclips", "cameras", "meshes", "armatures", "actions")},
            scene.camera, (scene.render.resolution_x, scene.render.resolution_y),
            (scene.render.fps, scene.render.fps_base), (scene.frame_start, scene.frame_end))


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    if not video_clips.PHOTO.exists():
        pytest.skip(f"{video_clips.PHOTO} not found (the shared photos are absent)")
    return video_clips.standing_clip(tmp_path_factory.mktemp("video") / "standing.mp4", frames=FRAMES)


def world_joints(arm, names):
    bpy.context.view_layer.update()
    return np.array([tuple(arm.matrix_world @ arm.pose.bones[n].head) for n in names])


@needs_photo
def test_every_frame_is_keyed_with_the_feet_held_and_seen_through_the_videos_camera(clip):
    """A new body keyed on all 12 frames (the scene at the video's 30 fps, so one key per
    video frame) with the person's proportions (Fit Shape, as the core fit gives them), the
    standing feet moving under 1 mm a frame (locked: they are held to 1 mm by the refinement,
    and a lock does not move; unlocked they wobble by millimetres), and through the camera it
    adds, the body's joints land on the pixels the core fit put them (within 2 pixels: the
    scene levelling, the floor and the camera placement agree)."""
    from bpy_extras.object_utils import world_to_camera_view
    from mathutils import Vector
    from models.core.skeleton import JOINT_NAMES
    from models.photo.video import VideoOptions, pose_from_video

    scene = bpy.context.scene
    scene.render.fps = 24
    assert bpy.ops.smpl_ik.pose_from_video(filepath=str(clip)) == {"FINISHED"}
    arm = bpy.context.active_object
    assert arm.type == "ARMATURE" and arm.smpl_ik.is_body
    assert (scene.render.fps / scene.render.fps_base) == pytest.approx(video_clips.FPS)
    assert (scene.frame_start, scene.frame_end) == (1, FRAMES)
    keyed = {int(k.co[0]) for fc in object_fcurves(arm) for k in fc.keyframe_points}
    assert keyed == set(range(1, FRAMES + 1))
    camera = scene.camera
    assert camera is not None and camera.name == "standing"
    background = camera.data.background_images[0]
    assert background.source == "MOVIE_CLIP" and background.clip.filepath.endswith("standing.mp4")
    assert (scene.render.resolution_x, scene.render.resolution_y) == video_clips.SIZE

    feet = []
    core = pose_from_video(clip, options=VideoOptions(fit_shape=True))   # a new body's shape is fitted
    assert core.contact.mean(axis=0).min() >= 0.9   # both feet stand on the floor
    assert np.abs(core.betas).max() > 0.05
    np.testing.assert_allclose(arm.smpl_ik.applied_betas[:], core.betas, atol=1e-6)
    for k, frame in enumerate(range(1, FRAMES + 1)):
        scene.frame_set(frame)
        feet.append(world_joints(arm, FEET))
        joints = world_joints(arm, JOINT_NAMES)
        width, height = video_clips.SIZE
        pixels = np.array([[v.x * width, (1.0 - v.y) * height] for v in
                           (world_to_camera_view(scene, camera, Vector(j))
                            for j in joints)])
        np.testing.assert_allclose(pixels, core.camera.project(core.joints[k]), atol=2.0)
    drift = np.linalg.norm(np.diff(np.array(feet), axis=0), axis=-1)        # (frames - 1, 4) metres
    held = np.repeat(core.contact[1:] & core.contact[:-1], 2, axis=1)       # left ankle, ball, right ...
    assert held.sum() >= 0.8 * held.size and drift[held].max() < 1e-3


@needs_photo
def test_a_new_body_takes_the_height_given(clip):
    """Height (with Fit Shape): the new body stands as tall as the person was said to be."""
    from models.body.measure import measure
    from models.body.model import load_body_model

    assert bpy.ops.smpl_ik.pose_from_video(filepath=str(clip), frame_end=10, height=1.62) == {"FINISHED"}
    arm = bpy.context.active_object
    assert measure(load_body_model(), np.array(arm.smpl_ik.applied_betas[:])).height == pytest.approx(1.62, abs=1e-3)


@needs_photo
def test_the_active_body_is_keyed_and_one_undo_takes_it_all_back(clip):
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    arm.location = (1.0, 2.0, 0.0)

    def run():
        done = bpy.ops.smpl_ik.pose_from_video(filepath=str(clip), frame_end=5, step=2, lock_feet=False)
        assert bpy.context.active_object == arm and len(bpy.data.armatures) == 1
        assert arm.animation_data.action is not None
        assert np.array_equal(arm.smpl_ik.applied_betas[:], np.zeros(10))   # Fit Shape leaves it its shape
        return done

    undo_restores(run, bpy.types.SMPL_IK_OT_pose_from_video, scene_state)


@needs_photo
def test_bad_videos_and_a_missing_person_leave_the_scene_unchanged(clip, tmp_path):
    text = tmp_path / "notes.mp4"
    text.write_text("not a video\n")
    empty = video_clips.empty_clip(tmp_path / "empty.avi")
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    before = scene_state()
    for path, message in ((text, "notes.mp4: not a video"), (empty, "empty.avi: the video has no frames"),
                          (video_clips.PHOTO, "still image"), (tmp_path / "none.mp4", "no such file")):
        with pytest.raises(RuntimeError, match=message):
            bpy.ops.smpl_ik.pose_from_video(filepath=str(path))
        assert scene_state() == before
    # the clip shows its person and, at the edge, part of the man beside him
    with pytest.raises(RuntimeError, match=r"shows only (1 person|2 people), so there is no 6th largest person"):
        bpy.ops.smpl_ik.pose_from_video(filepath=str(clip), person=6)
    assert scene_state() == before


@needs_photo
def test_cancelling_half_way_makes_nothing(clip):
    """What Esc does in the modal operator: the steps are closed half way through the frames;
    no body, action, clip or camera is made and the scene's rate and range are as they were."""
    video = addon("photo.video")
    before = scene_state()
    steps = video.pose_from_video_steps(bpy.context, None, video.VideoSceneOptions(filepath=str(clip)))
    for _ in range(FRAMES // 2):
        assert 0 < next(steps) < 1
    steps.close()
    assert scene_state() == before


@needs_photo
def test_a_failure_while_building_the_scene_removes_what_was_made(clip, monkeypatch):
    video = addon("photo.video")
    before = scene_state()

    def broken(*args, **kwargs):
        raise RuntimeError("the camera could not be made")

    monkeypatch.setattr(video, "add_camera", broken)
    with pytest.raises(RuntimeError, match="the camera could not be made"):
        for _ in video.pose_from_video_steps(bpy.context, None, video.VideoSceneOptions(filepath=str(clip))):
            pass
    assert scene_state() == before
