"""Pose from a photo: landmark rules, rescaling and solving on synthetic detections made from a
posed body; detection itself on real photos when mediapipe and ../shared/data are here."""
import sys
from pathlib import Path

from types import SimpleNamespace

import numpy as np
import pytest

from models.ik.limits import clamp_to_limits
from models.photo import detect, fit, keypoints, scene, start, targets
from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import JOINT_INDEX, JOINT_NAMES, NUM_JOINTS, PARENTS

IMAGES = Path(__file__).resolve().parents[3] / "shared" / "data" / "images"
J = JOINT_INDEX
LIMBS = [("left_hip", "left_knee"), ("left_knee", "left_ankle"), ("right_hip", "right_knee"),
         ("right_knee", "right_ankle"), ("left_shoulder", "left_elbow"),
         ("left_elbow", "left_wrist"), ("right_shoulder", "right_elbow"),
         ("right_elbow", "right_wrist")]
# Joints whose local rotation would bend what MediaPipe cannot see (the spine, the collars,
# the toes): kept at rest so the posed body's joints are exactly what the rules can recover.
UNSEEN = ("spine1", "spine2", "spine3", "left_collar", "right_collar", "left_foot", "right_foot")


def angle_deg(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    cos = np.sum(a * b, -1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return np.degrees(np.arccos(np.clip(cos, -1, 1)))


def random_pose(rng, scale=0.5):
    aa = rng.normal(scale=scale, size=(NUM_JOINTS, 3))
    aa[0] = [0.0, rng.uniform(-np.pi, np.pi), 0.0] + rng.normal(scale=0.15, size=3)
    for name in UNSEEN:
        aa[J[name]] = 0.0
    return clamp_to_limits(axis_angle_to_matrix(aa))   # a pose a person can take: knees and elbows in range


def synthetic_detection(body, local_rot, trans=(0.0, 0.0, 0.0), hidden=()):
    """MediaPipe-like landmarks (SMPL frame) of the open body posed by local_rot: joints where
    MediaPipe has them, face and foot points carried rigidly by the head and ankles from the
    body's own vertex landmarks, index and pinky knuckles either side of the hand joint."""
    rest = body.rest_joints(np.zeros(10))
    fk = forward_kinematics(local_rot, rest, PARENTS, np.asarray(trans, float))
    pos, rot = fk.positions, fk.rotations
    verts = body.v_template

    def carried(joint, vertex_name):
        j = J[joint]
        return pos[j] + rot[j] @ (verts[body.landmarks[vertex_name]] - rest[j])

    world = np.zeros((33, 3))
    for name, lm in keypoints.DIRECT.items():
        world[lm] = pos[J[name]]
    world[0:11] = carried("head", "nose")                # eyes and mouth: unused, near the face
    world[7], world[8] = carried("head", "lear"), carried("head", "rear")
    for side, s in (("left", 0), ("right", 1)):
        hand = J[f"{side}_hand"]
        across = rot[hand] @ np.array([0.0, 0.0, 0.02])   # across the palm at rest
        world[19 + s] = pos[hand] + across                # index knuckle
        world[17 + s] = pos[hand] - 2 * across            # pinky knuckle
        world[21 + s] = pos[hand]                         # thumb: unused
        foot = "L" if side == "left" else "R"
        world[29 + s] = carried(f"{side}_ankle", f"{foot}Heel")
        world[31 + s] = carried(f"{side}_ankle", f"{foot}BigToe")
    vis = np.ones(33)
    vis[list(hidden)] = 0.0
    xy = world[:, :2] * [300, -300] + [400, 400]
    bbox = (*xy.min(0), *xy.max(0))
    return detect.Detection(world=world, image_xy=xy, visibility=vis, bbox=bbox), pos


def test_mediapipe_axes_become_smpl_axes():
    # A person facing the camera, in MediaPipe's camera axes: their left shoulder on the
    # image's right (+x), the head up the image (-y), the nose nearer the camera (-z).
    left, head, nose = detect.mediapipe_to_smpl([[0.2, 0, 0], [0, -0.6, 0], [0, 0, -0.1]])
    assert left[0] > 0 and head[1] > 0 and nose[2] > 0            # SMPL: +X left, +Y up, +Z front
    assert np.allclose(np.cross(left, head) / np.linalg.norm(np.cross(left, head)), nose / 0.1)
    assert np.isclose(np.linalg.det(detect.MEDIAPIPE_TO_SMPL), 1.0)  # a rotation, not a mirror


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_targets_recover_a_posed_body(open_body, seed):
    rng = np.random.default_rng(seed)
    det, joints = synthetic_detection(open_body, random_pose(rng), trans=rng.normal(size=3))
    positions, confident = targets.smpl_targets(det)
    assert confident.all()
    err = np.linalg.norm(positions - joints, axis=1)
    assert err.max() < 1e-9, {n: e for n, e in zip(JOINT_NAMES, err) if e > 1e-9}


def test_targets_at_rest_put_the_pelvis_above_the_hips(open_body):
    det, joints = synthetic_detection(open_body, np.broadcast_to(np.eye(3), (NUM_JOINTS, 3, 3)))
    positions, _ = targets.smpl_targets(det)
    hips_mid = (positions[J["left_hip"]] + positions[J["right_hip"]]) / 2
    assert positions[J["pelvis"]][1] > hips_mid[1] + 0.05
    heights = positions[[J[n] for n in ("pelvis", "spine1", "spine2", "spine3", "neck", "head")], 1]
    assert np.all(np.diff(heights) > 0)


def test_confidence_follows_the_landmarks_each_joint_reads(open_body, rng):
    det, _ = synthetic_detection(open_body, random_pose(rng), hidden=(15, 24, 31))
    _, confident = targets.smpl_targets(det)
    trunk = {"pelvis", "spine1", "spine2", "spine3", "neck", "left_collar", "right_collar"}
    unseen = {n for n in JOINT_NAMES if not confident[J[n]]}
    # left wrist (15); right hip (24) and the trunk built on it; left toe (31) -> left foot
    assert unseen == {"left_wrist", "right_hip", "left_foot"} | trunk
    _, strict = targets.smpl_targets(det, min_visibility=1.01)
    assert not strict.any()


def test_body_targets_keep_directions_and_take_the_body_lengths(open_body, rng):
    det, _ = synthetic_detection(open_body, random_pose(rng))
    positions, confident = targets.smpl_targets(det)
    positions = positions * 1.3        # a bigger person: lengths must not carry over
    rest = open_body.rest_joints(rng.normal(scale=1.5, size=10))
    out = targets.body_targets(positions, confident, rest)
    bones = np.arange(1, NUM_JOINTS), np.array(PARENTS[1:])
    lengths = np.linalg.norm(out[bones[0]] - out[bones[1]], axis=1)
    assert np.allclose(lengths, np.linalg.norm(rest[bones[0]] - rest[bones[1]], axis=1), atol=1e-9)
    assert angle_deg(out[bones[0]] - out[bones[1]], positions[bones[0]] - positions[bones[1]]).max() < 1.0
    assert np.allclose(out[0], positions[0])

    partial = confident.copy()
    partial[[J["left_elbow"], J["neck"]]] = False
    out2 = targets.body_targets(positions, partial, rest)
    assert np.isnan(out2[~partial]).all()
    assert np.allclose(out2[partial], out[partial])   # a guessed joint still carries its children


def check_pose(pose, det, rest):
    posed = forward_kinematics(pose.local_rot, rest, PARENTS, pose.trans).positions
    seen, _ = targets.smpl_targets(det)
    for a, b in LIMBS:
        if pose.confident[J[a]] and pose.confident[J[b]]:
            angle = angle_deg(posed[J[b]] - posed[J[a]], seen[J[b]] - seen[J[a]])
            assert angle < 10, f"{a}->{b} is {angle:.1f} degrees off the detection"
    # placed where the rest body stands
    feet = list(scene.FOOT_INDICES)
    assert np.allclose(posed[0, [0, 2]], 0, atol=1e-9)
    assert np.isclose(posed[feet, 1].min(), rest[feet, 1].min())
    ok = pose.confident
    assert np.linalg.norm(posed[ok] - pose.targets[ok], axis=1).max() < 0.03


def test_pose_from_a_full_detection_uses_ikgat(open_body, rng):
    det, _ = synthetic_detection(open_body, random_pose(rng, 0.4), trans=(0.3, 1.0, -2.0))
    rest = open_body.rest_joints(rng.normal(scale=1.0, size=10))
    pose = start.pose_from_detection(det, rest)
    assert pose.method == "ikgat" and pose.confident.all()
    check_pose(pose, det, rest)


def test_pose_from_a_partial_detection_uses_smplik(open_body, rng):
    det, _ = synthetic_detection(open_body, random_pose(rng, 0.4), hidden=(16, 20, 0, 7, 8))
    rest = open_body.rest_joints(rng.normal(scale=1.0, size=10))
    pose = start.pose_from_detection(det, rest)
    assert pose.method == "smplik"
    assert not pose.confident[[J["right_wrist"], J["right_hand"], J["head"]]].any()
    assert np.isnan(pose.targets[~pose.confident]).all()
    check_pose(pose, det, rest)


def test_too_few_visible_joints_is_an_error(open_body, rng):
    hidden = [i for i in range(33) if i not in (11, 13)]     # left shoulder and elbow only
    det, _ = synthetic_detection(open_body, random_pose(rng), hidden=hidden)
    with pytest.raises(SmplIkError, match="only 2 joints"):
        start.pose_from_detection(det, open_body.rest_joints(np.zeros(10)))


def test_bad_photo_arrays_are_refused():
    for bad in (np.zeros((8, 8), np.uint8), np.zeros((8, 8, 4), np.uint8), np.zeros((8, 8, 3))):
        with pytest.raises(SmplIkError, match=r"\(H, W, 3\) uint8"):
            detect.detect_people(bad)


def test_missing_litert_names_the_package(monkeypatch):
    detect._landmarker.cache_clear()
    monkeypatch.setitem(sys.modules, "ai_edge_litert", None)   # makes `import ai_edge_litert` fail
    try:
        with pytest.raises(SmplIkError, match=r"^pose from a photo needs the Python package 'ai-edge-litert', "
                                              r"which is not installed$"):
            detect.detect_people(np.zeros((32, 32, 3), np.uint8))
    finally:
        detect._landmarker.cache_clear()


def test_read_image_gives_rgb_and_names_bad_files(tmp_path):
    cv2 = pytest.importorskip("cv2", reason="reading images needs opencv (requirements-photo.txt)")
    bgr = np.zeros((4, 6, 3), np.uint8)
    bgr[..., 2] = 255                                        # red, in OpenCV's BGR order
    cv2.imwrite(str(tmp_path / "red.png"), bgr)
    rgb = detect.read_image(tmp_path / "red.png")
    assert rgb.shape == (4, 6, 3) and rgb.dtype == np.uint8
    assert (rgb[..., 0] == 255).all() and (rgb[..., 1:] == 0).all()
    (tmp_path / "junk.jpg").write_bytes(b"not an image")
    with pytest.raises(SmplIkError, match="junk.jpg"):
        detect.read_image(tmp_path / "junk.jpg")


# --- real photos ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def images(detector):
    if not IMAGES.is_dir():
        pytest.skip(f"{IMAGES} is not here (photos of people from ../shared/data/images)")
    return IMAGES


def test_bus_finds_the_people_standing_largest_first(images, open_body):
    rgb = detect.read_image(images / "bus.jpg")
    people = detect.detect_people(rgb)
    assert len(people) >= 2
    areas = [p.area for p in people]
    assert areas == sorted(areas, reverse=True)
    height, width = rgb.shape[:2]
    assert (people[0].bbox[0] + people[0].bbox[2]) / 2 < width / 3   # the man in the light coat
    for p in people:
        hips_y, ankles_y = p.world[[23, 24], 1].mean(), p.world[[27, 28], 1].mean()
        assert ankles_y < hips_y - 0.4 and p.world[0, 1] > hips_y + 0.4   # feet down, head up
    # The two men on the left walk toward the camera: their left side is on the image's right,
    # and in SMPL's frame their left shoulder is on +X and the nose in front (+Z) of the ears.
    facing = [p for p in people if (p.bbox[0] + p.bbox[2]) / 2 < width / 2]
    assert len(facing) == 2
    for p in facing:
        assert p.image_xy[11, 0] > p.image_xy[12, 0]
        assert p.world[11, 0] > p.world[12, 0]
        assert p.world[0, 2] > p.world[[7, 8], 2].mean() + 0.03

    rest = open_body.rest_joints(np.zeros(10))
    pose = start.pose_from_detection(people[0], rest)
    posed = forward_kinematics(pose.local_rot, rest, PARENTS, pose.trans).positions
    assert posed[[J["left_ankle"], J["right_ankle"]], 1].max() < posed[0, 1] - 0.5
    assert posed[J["head"], 1] > posed[J["neck"], 1] > posed[0, 1]
    assert pose.local_rot[0][2, 2] > 0.5                               # still facing +Z


def test_bus_people_placed_alone_stand_upright(images, open_body):
    """bus.jpg, each person fitted and placed alone: their trunk (pelvis to neck) stands within
    15 degrees of the scene's up (measured 2-12; taking up along the shins, as the scene did
    before, leant them 17-27 degrees back: a standing person's shins slant)."""
    from models.photo.camera import camera_for_image

    rgb = detect.read_image(images / "bus.jpg")
    rest = open_body.rest_joints(np.zeros(10))
    camera = camera_for_image(images / "bus.jpg", rgb.shape[1], rgb.shape[0])
    people = detect.detect_people(rgb)
    assert len(people) >= 2     # the two men on the left; the man cut off at the right edge is found or not
    for person in people:       # as 1-pixel changes tip the landmark model's score (0.18 <-> 0.98)
        fitted = fit.fit_to_image(person, rest, camera, body=open_body)
        ((local, trans),) = scene.photo_scene([fitted], [rest]).poses
        joints = forward_kinematics(local, rest, PARENTS, trans).positions
        trunk = joints[J["neck"]] - joints[0]
        assert np.degrees(np.arccos(trunk[1] / np.linalg.norm(trunk))) < 15.0, person.bbox


def test_a_mirrored_look_gives_back_the_persons_own_left_and_right(images):
    """The man in the light coat looked at in the photo mirrored: mirrored back, each of his
    shoulders, elbows, hips, knees and ankles lies nearer where the plain look puts that
    landmark than where it puts its other-side twin (exchanged, left for right, it would be the
    other way round), and within 8% of his box's diagonal; his left shoulder is still on +X in
    SMPL's frame. passes=1 is the plain look itself; the fused detection (the median of the
    looks) differs from it, but no limb landmark by more than 8% of the diagonal."""
    rgb = detect.read_image(images / "bus.jpg")
    first = detect.detect_people(rgb, passes=1)[0]
    with detect._POSE_LOCK:
        plain = detect.look(detect._landmarker(), rgb)
        mirrored = detect.look(detect._landmarker(), rgb, mirror=True)
    np.testing.assert_allclose(plain.image_xy, first.image_xy)
    x0, y0, x1, y1 = first.bbox
    diagonal = np.hypot(x1 - x0, y1 - y0)
    limbs = np.array([11, 12, 13, 14, 23, 24, 25, 26, 27, 28])
    twins = detect.MIRRORED[limbs]
    assert (twins != limbs).all()
    same = np.linalg.norm(mirrored.image_xy[limbs] - first.image_xy[limbs], axis=1)
    other = np.linalg.norm(mirrored.image_xy[limbs] - first.image_xy[twins], axis=1)
    assert (same < other).all() and same.max() < 0.08 * diagonal
    assert mirrored.world[11, 0] > mirrored.world[12, 0]
    fused = detect.detect_people(rgb)[0]
    assert not np.array_equal(fused.image_xy, first.image_xy)
    assert np.linalg.norm(fused.image_xy[limbs] - first.image_xy[limbs], axis=1).max() < 0.08 * diagonal


def test_bus_max_people_limits_the_passes(images):
    assert len(detect.detect_people(detect.read_image(images / "bus.jpg"), max_people=1)) == 1


def test_a_person_small_in_a_large_photo_is_found_in_a_part_of_it(images):
    """bus.jpg's man in the light coat (580 pixels high) pasted onto a grey 3200 x 3200 photo:
    MediaPipe looking at the whole photo finds nobody; the search of its parts finds him, where
    he was pasted (his keypoints there as in bus.jpg, within 5% of his height)."""
    rgb = detect.read_image(images / "bus.jpg")
    x0, y0, x1, y1 = (0, 380, 300, 960)
    canvas = np.full((3200, 3200, 3), 128, np.uint8)
    ox, oy = 1920, 1760
    canvas[oy:oy + y1 - y0, ox:ox + x1 - x0] = rgb[y0:y1, x0:x1]
    assert detect.detect_people(canvas, tiles=False) == []
    found = detect.detect_people(canvas)
    assert len(found) == 1
    there = detect.detect_people(rgb)[0].image_xy + (ox - x0, oy - y0)
    torso_and_limbs = [11, 12, 13, 14, 23, 24, 25, 26, 27, 28]
    assert np.linalg.norm(found[0].image_xy[torso_and_limbs] - there[torso_and_limbs], axis=1).max() < 0.05 * 580


def test_a_person_found_in_a_part_of_a_photo_must_be_seen_down_to_the_knees():
    """Shoulders and hips each seen, the knees on average: a person bent over with one knee
    half hidden counts; a man cut off at the waist (knees 0.31 and 0.54) or with a hip hidden
    does not."""
    def seen(**changes):
        vis = np.ones(detect.NUM_LANDMARKS)
        for index, value in changes.items():
            vis[int(index[1:])] = value
        return SimpleNamespace(visibility=vis)

    assert detect.whole(seen()) and detect.whole(seen(i25=0.48))
    assert not detect.whole(seen(i25=0.31, i26=0.54))
    assert not detect.whole(seen(i24=0.4)) and not detect.whole(seen(i11=0.0))


def test_a_person_beside_one_found_is_found_in_a_strip_of_the_photo(images):
    """A COCO photo of two men sitting apart: MediaPipe looking at the whole photo finds the one
    on the left, and with him greyed out finds nobody; the search of upright strips finds the
    man on the right, seen down to the knees."""
    path = images / "labelled" / "coco" / "000000040083.jpg"
    if not path.exists():
        pytest.skip(f"{path} is not here (labelled photos)")
    rgb = detect.read_image(path)
    alone = detect.detect_people(rgb, max_people=10, tiles=False)
    assert len(alone) == 1 and alone[0].bbox[2] < 250
    people = detect.detect_people(rgb, max_people=10)
    assert len(people) == 2
    right = [p for p in people if p.bbox[0] > 250]
    assert len(right) == 1 and detect.whole(right[0])
    x0, y0, x1, y1 = right[0].bbox
    assert 255 < x0 and x1 < 410 and 130 < y0 and y1 < 300    # COCO's box for him: x 258-398, y 139-293


def test_zidane_finds_nobody(images):
    assert detect.detect_people(detect.read_image(images / "zidane.jpg")) == []


def test_camera_finds_one_person(images):
    rgb = detect.read_image(images / "camera.png")        # grey file, read as three channels
    assert rgb.shape == (512, 512, 3)
    people = detect.detect_people(rgb)
    assert len(people) == 1
    x0, y0, x1, y1 = people[0].bbox
    assert x0 < 256 and y1 > 400                          # the man on the left, down to the thigh
