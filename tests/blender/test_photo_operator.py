"""Pose from a photo in Blender: through the camera it adds, the bodies overlay the people the
detector found; every person can get a body; bad photos change nothing."""
import importlib
import resource
import struct
import zlib

import bpy
import numpy as np
import pytest

from models.core.skeleton import JOINT_NAMES
from models.photo.runtime import unavailable

from benchmarks import blender_session
from conftest import ROOT
from scene import undo_restores

if unavailable("these tests") is not None:
    pytest.skip(f"{unavailable('these tests')} (requirements-photo.txt; make detector)", allow_module_level=True)
IMAGES = ROOT.parent / "shared" / "data" / "images"
needs_images = pytest.mark.skipif(not IMAGES.is_dir(), reason=f"{IMAGES} not found (the shared photos are absent)")
OVERLAY = 0.05          # of the person's box diagonal: a joint this close to its keypoint overlays it
OVERLAY_SHARE = 0.90    # of the visible keypoints that must
VISIBLE = 0.5           # MediaPipe visibility of a keypoint counted as seen
# Full body: shoulders, hips, knees and ankles all seen.
FULL_BODY = ("left_shoulder", "right_shoulder", "left_hip", "right_hip", "left_knee", "right_knee",
             "left_ankle", "right_ankle")


def addon(name):
    return importlib.import_module(f"{blender_session.MODULE}.addon.{name}")


def scene_state():
    """Everything a failed Pose from Photo must leave as it was: the objects and where they
    are, the data blocks it could make, the scene's camera and render size, the bodies' poses."""
    scene = bpy.context.scene
    poses = {o.name: tuple(np.round(pose_values(o), 7)) for o in bpy.data.objects
             if o.type == "ARMATURE" and o.smpl_ik.is_body}
    return ({o.name: tuple(o.matrix_world.translation) for o in bpy.data.objects},
            {kind: len(getattr(bpy.data, kind)) for kind in ("images", "cameras", "meshes", "armatures", "actions")},
            scene.camera, (scene.render.resolution_x, scene.render.resolution_y), poses)


def pose_values(arm):
    """(24 * 4 + 3,) the pose bones' quaternions and the root's location."""
    quats = [v for name in JOINT_NAMES for v in arm.pose.bones[name].rotation_quaternion]
    return np.array(quats + list(arm.pose.bones["pelvis"].location))


def detections(name, max_people=10):
    """The people the detector finds in a shared photo, largest first, as Pose from Photo reads it."""
    from models.photo.detect import detect_people

    rgb, image = addon("photo.image").load_rgb(str(IMAGES / name))
    bpy.data.images.remove(image)
    return detect_people(rgb, max_people=max_people)


def overlay(arm, detection):
    """(share, errors): the body's joints projected through the scene camera (Blender's own
    world_to_camera_view at the scene's render size) against the detection's keypoints for the
    joints MediaPipe marks directly (shoulders to wrists, hips to ankles) that it saw; errors
    over the person's box diagonal, share the part within OVERLAY."""
    from bpy_extras.object_utils import world_to_camera_view
    from models.photo.keypoints import DIRECT

    scene = bpy.context.scene
    bpy.context.view_layer.update()
    width, height = scene.render.resolution_x, scene.render.resolution_y
    x0, y0, x1, y1 = detection.bbox
    diagonal = np.hypot(x1 - x0, y1 - y0)
    errors = []
    for joint, landmark in DIRECT.items():
        if detection.visibility[landmark] < VISIBLE:
            continue
        view = world_to_camera_view(scene, scene.camera, arm.matrix_world @ arm.pose.bones[joint].head)
        pixel = np.array([view.x * width, (1.0 - view.y) * height])   # images count rows down
        errors.append(np.linalg.norm(pixel - detection.image_xy[landmark]) / diagonal)
    errors = np.array(errors)
    return float(np.mean(errors < OVERLAY)), errors


def full_body(detection):
    from models.photo.keypoints import DIRECT

    return all(detection.visibility[DIRECT[j]] >= VISIBLE for j in FULL_BODY)


@needs_images
@pytest.mark.parametrize("photo", ["camera.png", "bus.jpg"])
def test_through_the_photo_camera_the_body_overlays_the_person(photo, capfd):
    """A moved and turned body: the camera stands where the photo was taken from, relative to
    the body; looking through it (the scene camera, the render size the photo's) the posed
    joints lie within 5% of the person's box diagonal of MediaPipe's keypoints for at least 90%
    of the keypoints it saw. Measured: camera.png 9 of 9 (at most 1.0%), bus.jpg 12 of 12 (1.5%)."""
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    arm.location, arm.rotation_euler = (1.0, 2.0, 0.3), (0.0, 0.0, 0.5)
    bpy.context.view_layer.update()
    where = tuple(arm.matrix_world.translation)
    capfd.readouterr()
    assert bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / photo)) == {"FINISHED"}
    out = capfd.readouterr().out
    scene = bpy.context.scene
    (cam,) = [o for o in bpy.data.objects if o.type == "CAMERA"]
    assert scene.camera == cam and cam.name == photo
    width, height = addon("photo.image").load_rgb(str(IMAGES / photo))[1].size
    assert (scene.render.resolution_x, scene.render.resolution_y) == (width, height)
    assert f"render size set to {width}x{height}" in out
    data = cam.data
    assert data.sensor_fit == "AUTO" and data.sensor_width == 36 and data.shift_x == data.shift_y == 0
    assert data.show_background_images and len(data.background_images) == 1
    background = data.background_images[0]
    assert background.image.name.startswith(photo) and 0.7 <= background.alpha <= 1.0
    assert tuple(arm.matrix_world.translation) == where     # the body stays; the camera comes to it
    share, errors = overlay(arm, detections(photo)[0])
    print(f"overlay {photo}: {share:.3f} of {len(errors)} keypoints within {OVERLAY:.0%}, "
          f"worst {errors.max():.3f} of the box diagonal")
    assert len(errors) >= 8 and share >= OVERLAY_SHARE, errors


@needs_images
def test_the_second_person_overlays_the_second_person_not_the_first():
    """bus.jpg, person 2 (the second largest): the body lies on that person through the camera,
    and no keypoint of the largest person lies near it (each more than four times the overlay
    distance away, in the median)."""
    first, second = detections("bus.jpg", max_people=3)[:2]
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    assert bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / "bus.jpg"), person=2) == {"FINISHED"}
    share, errors = overlay(arm, second)
    assert len(errors) >= 5 and share >= OVERLAY_SHARE, errors
    share, errors = overlay(arm, first)
    assert share == 0.0 and np.median(errors) > 4 * OVERLAY, errors


@needs_images
def test_all_people_in_bus_jpg_each_get_a_body_that_overlays_them(capfd):
    """All People: the active body takes the largest person, a new open body of its gender each
    other one, one camera for all; every detection with its full body seen is overlaid by a body
    (within 5% for 90% of its keypoints), each body by its own person; effectors on every body."""
    people = detections("bus.jpg")
    complete = [d for d in people if full_body(d)]
    # the two men on the left; the man cut off at the right edge is found or not as 1-pixel
    # changes tip the landmark model's score
    assert len(people) in (2, 3) and len(complete) >= 2
    assert bpy.ops.smpl_ik.add_body(body="OPEN_FEMALE") == {"FINISHED"}
    arm = bpy.context.active_object
    capfd.readouterr()
    assert bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / "bus.jpg"), all_people=True) == {"FINISHED"}
    assert f"of {len(people)} found" in capfd.readouterr().out
    bodies = [o for o in bpy.data.objects if o.type == "ARMATURE" and o.smpl_ik.is_body]
    assert len(bodies) == len(people) and arm in bodies
    assert {b.smpl_ik.gender for b in bodies} == {"female"}
    assert len([o for o in bpy.data.objects if o.type == "CAMERA"]) == 1 and len(bpy.data.images) == 1
    for k, detection in enumerate(people):
        shares = {b.name: overlay(b, detection)[0] for b in bodies}
        best = max(shares, key=shares.get)
        if detection in complete:
            assert shares[best] >= OVERLAY_SHARE, (k, shares)
        assert best == (arm.name if k == 0 else f"bus person {k + 1}"), (k, shares)
    for body in bodies:
        effectors = [o for o in bpy.data.objects if o.type == "EMPTY" and o.smpl_ik_effector.body == body]
        assert {o.smpl_ik_effector.joint for o in effectors} >= {"pelvis", "left_knee"}
        for o in effectors:
            head = body.matrix_world @ body.pose.bones[o.smpl_ik_effector.joint].head
            assert (head - o.matrix_world.translation).length < 1e-4


@needs_images
def test_the_bodies_stand_on_one_floor_at_the_depths_the_photo_shows():
    """bus.jpg, All People: the first body's soles on the floor it was added on (measured 2 cm
    under it), every person's lower ankle on one level within 15 cm (measured 6 cm: the person
    cut by the photo's edge the highest), and the person smallest in the photo the furthest
    from the camera (5.05 m against 4.6 for the largest)."""
    people = detections("bus.jpg")
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    floor = bpy.context.scene.cursor.location.z
    assert bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / "bus.jpg"), all_people=True,
                                           effectors=False) == {"FINISHED"}
    bpy.context.view_layer.update()
    mesh = arm.smpl_ik.mesh.evaluated_get(bpy.context.evaluated_depsgraph_get())
    soles = min((mesh.matrix_world @ v.co).z for v in mesh.data.vertices)
    assert abs(soles - floor) < 0.05, soles
    cam = bpy.context.scene.camera.matrix_world.translation
    bodies = [arm] + [bpy.data.objects[f"bus person {k}"] for k in range(2, len(people) + 1)]
    feet, distance = [], []
    for body in bodies:
        feet.append(min((body.matrix_world @ body.pose.bones[j].head).z for j in ("left_ankle", "right_ankle")))
        distance.append((body.matrix_world @ body.pose.bones["pelvis"].head - cam).length)
    assert np.ptp(feet) < 0.15, feet
    heights = [d.bbox[3] - d.bbox[1] for d in people]
    assert distance[int(np.argmin(heights))] > distance[int(np.argmax(heights))], (heights, distance)


@needs_images
def test_one_undo_step_removes_the_bodies_the_camera_and_the_photo():
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    undo_restores(lambda: bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / "bus.jpg"), all_people=True),
                  bpy.types.SMPL_IK_OT_pose_from_image, scene_state)


@needs_images
def test_asking_for_more_people_than_the_photo_shows_says_how_many_were_found():
    found = len(detections("bus.jpg"))
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    before = scene_state()
    for person in (5, 9):
        with pytest.raises(RuntimeError, match=f"bus.jpg: asked for person {person} .* found only {found} people; "
                                               f"choose a person from 1 to {found}"):
            bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / "bus.jpg"), person=person)
    with pytest.raises(RuntimeError, match=r"camera.png: asked for person 2 .* found only 1 person$"):
        bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / "camera.png"), person=2)
    assert scene_state() == before


def png(path, width, height):
    """A valid black 1-bit greyscale PNG, written cheaply however large (its rows of zeros
    compress about a thousandfold)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" * (1 + (width + 7) // 8)
    packer = zlib.compressobj(9)
    pixels = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0))
                     + chunk(b"IDAT", pixels) + chunk(b"IEND", b""))
    return path


@needs_images
def test_nobody_in_the_photo_leaves_the_scene_unchanged(tmp_path):
    blank = png(tmp_path / "blank.png", 640, 480)
    for active in (False, True):
        if active:
            assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
        before = scene_state()
        for path, name in ((IMAGES / "zidane.jpg", "zidane.jpg"), (blank, "blank.png")):
            for everyone in (False, True):
                with pytest.raises(RuntimeError, match=f"{name}: no person found"):
                    bpy.ops.smpl_ik.pose_from_image(filepath=str(path), all_people=everyone)
        assert scene_state() == before


def test_a_photo_too_small_or_too_large_is_refused_before_its_pixels_are_read(tmp_path):
    """1x1 and 20,000 x 20,000 pixels: named errors, nothing made. The large one is refused from
    its header: Blender decoding it would take 1.6 GB (it decodes on asking the size), the test
    allows the process's peak memory 300 MB more at most."""
    tiny = png(tmp_path / "tiny.png", 1, 1)
    huge = png(tmp_path / "huge.png", 20_000, 20_000)
    assert huge.stat().st_size < 100_000
    for active in (False, True):
        if active:
            assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
        before = scene_state()
        with pytest.raises(RuntimeError, match=r"tiny.png is 1x1 pixels: too small to find a person in"):
            bpy.ops.smpl_ik.pose_from_image(filepath=str(tiny))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss   # kilobytes
        with pytest.raises(RuntimeError, match=r"huge.png is 20000x20000 pixels \(400 megapixels\): too large"):
            bpy.ops.smpl_ik.pose_from_image(filepath=str(huge), all_people=True)
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 300_000
        assert scene_state() == before


@needs_images
def test_a_corrupt_exif_poses_with_the_default_field_of_view_and_says_so(tmp_path, capfd):
    """bus.jpg with an Exif APP1 segment of garbage spliced in after its start: the pose comes,
    overlaying the person as well, and the report names the corrupt EXIF and the default."""
    from models.photo.camera import DEFAULT_DIAGONAL_FOV_DEG

    original = (IMAGES / "bus.jpg").read_bytes()
    garbage = b"Exif\x00\x00" + b"XY" + np.random.default_rng(5).integers(0, 256, 300, dtype=np.uint8).tobytes()
    spliced = tmp_path / "corrupt.jpg"
    spliced.write_bytes(original[:2] + b"\xff\xe1" + struct.pack(">H", len(garbage) + 2) + garbage + original[2:])
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    capfd.readouterr()
    assert bpy.ops.smpl_ik.pose_from_image(filepath=str(spliced)) == {"FINISHED"}
    out = capfd.readouterr().out
    assert "corrupt.jpg: corrupt EXIF" in out
    assert f"used the default {DEFAULT_DIAGONAL_FOV_DEG:g} degree field of view" in out
    share, errors = overlay(arm, detections("bus.jpg")[0])
    assert share >= OVERLAY_SHARE, errors


def test_unreadable_or_missing_image_leaves_the_scene_unchanged(tmp_path):
    bad = tmp_path / "notes.jpg"
    bad.write_text("not a picture\n")
    empty = scene_state()
    with pytest.raises(RuntimeError, match="notes.jpg: not an image Blender can read"):
        bpy.ops.smpl_ik.pose_from_image(filepath=str(bad))   # no body active: none is left behind
    with pytest.raises(RuntimeError, match="notes.jpg: not an image Blender can read"):
        bpy.ops.smpl_ik.pose_from_image(filepath=str(bad), all_people=True)
    assert scene_state() == empty
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    before = scene_state()
    with pytest.raises(RuntimeError, match="missing.png: no such file"):
        bpy.ops.smpl_ik.pose_from_image(filepath=str(tmp_path / "missing.png"))
    assert scene_state() == before


def test_no_file_given_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)    # an empty path must not be read as the current folder
    for path in ("", "  "):
        with pytest.raises(RuntimeError, match="no photo was given: choose an image file"):
            bpy.ops.smpl_ik.pose_from_image(filepath=path)
    assert scene_state()[:2] == ({}, {"images": 0, "cameras": 0, "meshes": 0, "armatures": 0, "actions": 0})


@needs_images
def test_a_failure_after_the_checks_removes_what_was_made(monkeypatch):
    """A step failing once the bodies, effectors and camera are being made (the camera here):
    they are removed again and the active body's pose and effectors are as they were."""
    photo = addon("photo.image")
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    assert bpy.ops.smpl_ik.add_default_effectors() == {"FINISHED"}
    bpy.context.view_layer.update()
    before = scene_state()

    def broken(*args):
        raise RuntimeError("the camera could not be made")

    monkeypatch.setattr(photo, "add_camera", broken)
    with pytest.raises(RuntimeError, match="the camera could not be made"):
        photo.pose_from_image(bpy.context, bpy.context.active_object,
                              photo.PhotoOptions(str(IMAGES / "bus.jpg"), all_people=True))
    assert scene_state() == before


@needs_images
def test_a_person_who_cannot_be_fitted_is_left_out_of_all_people_or_refused_alone(monkeypatch, capfd):
    """bus.jpg with the fit failing on person 2 (as it does with too few keypoints seen): All
    People poses the other two and the report says who was left out; asked for alone, person 2
    is a named error and nothing is made."""
    fit = importlib.import_module(f"{blender_session.MODULE}.models.photo.fit")
    errors = importlib.import_module(f"{blender_session.MODULE}.models.core.errors")
    people = detections("bus.jpg")
    second = people[1]
    real = fit.fit_to_image

    def failing(detection, *args, **kwargs):
        if np.allclose(detection.bbox, second.bbox):
            raise errors.SmplIkError("cannot fit a body to this person: only 3 keypoints were seen")
        return real(detection, *args, **kwargs)

    monkeypatch.setattr(fit, "fit_to_image", failing)
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    before = scene_state()
    with pytest.raises(RuntimeError, match="bus.jpg: person 2: cannot fit a body to this person"):
        bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / "bus.jpg"), person=2)
    assert scene_state() == before
    capfd.readouterr()
    assert bpy.ops.smpl_ik.pose_from_image(filepath=str(IMAGES / "bus.jpg"), all_people=True) == {"FINISHED"}
    assert "bus.jpg: person 2 was left out: cannot fit a body" in capfd.readouterr().out
    names = sorted(o.name for o in bpy.data.objects if o.type == "ARMATURE")
    assert names == ["SMPL-IK body"] + [f"bus person {k}" for k in range(3, len(people) + 1)]


@needs_images
def test_photo_options_choose_what_is_added_besides_the_pose():
    photo = addon("photo.image")
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    bare = photo.PhotoOptions(str(IMAGES / "camera.png"), add_camera=False, add_effectors=False)
    result = photo.pose_from_image(bpy.context, arm, bare)
    assert result.people == 1 and result.bodies == (arm,) and result.camera is None
    assert not result.fits[0].confident.all()            # some joints unseen at 0.5
    assert not [o for o in bpy.data.objects if o.type in ("EMPTY", "CAMERA")] and not bpy.data.images
    assert bpy.context.scene.camera is None
    everything = photo.PhotoOptions(str(IMAGES / "camera.png"), min_visibility=0.0)
    result = photo.pose_from_image(bpy.context, arm, everything)
    assert result.fits[0].confident.all()                # every joint counts as seen at 0
    empties = [o for o in bpy.data.objects if o.type == "EMPTY"]
    assert sorted(o.smpl_ik_effector.joint for o in empties if o.smpl_ik_effector.is_effector) == \
        sorted(photo.EFFECTOR_JOINTS)
    assert [o.name for o in bpy.data.objects if o.type == "CAMERA"] == ["camera.png"]
    assert result.camera.data.background_images[0].image == bpy.data.images[0]
    with pytest.raises(AttributeError):
        everything.person = 3           # frozen: what the operator read stays what it asked for


@needs_images
def test_photo_pose_on_a_keyed_body_is_keyed_at_the_current_frame(capfd):
    """A body with keys: the photo's pose is keyed at the current frame (and the report says
    so), so the next frame change keeps it; with Key If Animated off the report warns that the
    action takes it back, and it does. A body without keys gets no action."""
    scene = bpy.context.scene
    photo = str(IMAGES / "camera.png")
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    assert bpy.ops.smpl_ik.pose_from_image(filepath=photo, camera=False, effectors=False) == {"FINISHED"}
    assert arm.animation_data is None                       # not animated: nothing keyed
    assert bpy.ops.smpl_ik.reset_pose() == {"FINISHED"}
    rest = pose_values(arm)
    for frame in (1, 20):
        scene.frame_set(frame)
        assert bpy.ops.smpl_ik.keyframe_pose() == {"FINISHED"}
    scene.frame_set(10)
    capfd.readouterr()
    assert bpy.ops.smpl_ik.pose_from_image(filepath=photo, camera=False, effectors=False) == {"FINISHED"}
    assert "keyed at frame 10, as the body is animated" in capfd.readouterr().out
    posed = pose_values(arm)
    assert np.abs(posed - rest).max() > 0.1
    scene.frame_set(11)
    scene.frame_set(10)
    assert np.allclose(pose_values(arm), posed, atol=1e-5)  # the action now holds the photo's pose
    scene.frame_set(15)
    before = pose_values(arm)
    capfd.readouterr()
    assert bpy.ops.smpl_ik.pose_from_image(filepath=photo, camera=False, effectors=False,
                                           key_animated=False) == {"FINISHED"}
    out = capfd.readouterr().out
    assert np.abs(pose_values(arm) - before).max() > 0.05   # the photo's pose, for now
    assert "the body is animated, so its action replaces this pose at the next frame change" in out
    assert "keyed at frame" not in out
    scene.frame_set(16)
    scene.frame_set(15)
    assert np.allclose(pose_values(arm), before, atol=1e-5)  # as warned: not keyed, replaced
