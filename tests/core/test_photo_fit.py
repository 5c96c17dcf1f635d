"""The camera-matched fit on synthetic scenes: the open body posed and skinned, its joints and
surface landmarks projected through a known camera as MediaPipe's keypoints, MediaPipe's 3D made
from the same body with its depth disturbed (and, where a test says so, a stand-in lifter reading
the depths as well as that); the fit must find the pose and the place again."""
import numpy as np
import pytest

from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.core.metrics import procrustes_error
from models.core.rotations import axis_angle_to_matrix, matrix_to_axis_angle, unit
from models.core.skeleton import JOINT_INDEX as J
from models.core.skeleton import PARENTS
from models.ik.cost import centre_of_mass, default_parts
from models.photo import detect, fit
from models.photo.keypoints import KEYPOINTS, KNUCKLES, MP_HEAD_KEYPOINTS, body_points
from models.photo.scene import FOOT_INDICES, photo_scene, photo_up, seated
from models.photo.start import pose_from_detection
from models.photo.targets import smpl_targets
from models.photo.camera import Camera, default_camera

# MediaPipe landmark -> the open body's point it stands for (joints, or surface landmarks); the
# index points (19, 20) are the knuckles, placed as the fit places them (`scene`)
POINTS = {0: "nose", 2: "leye", 5: "reye", 7: "lear", 8: "rear", 11: "left_shoulder", 12: "right_shoulder",
          13: "left_elbow", 14: "right_elbow", 15: "left_wrist", 16: "right_wrist", 17: "lpinky", 18: "rpinky",
          23: "left_hip", 24: "right_hip", 25: "left_knee", 26: "right_knee",
          27: "left_ankle", 28: "right_ankle", 29: "LHeel", 30: "RHeel", 31: "LBigToe", 32: "RBigToe"}


def natural_pose(head_turn=0.0, head_tilt=0.0):
    """A pose a person takes in a photo: turned a little from the camera, arms down and bent,
    one knee bent, the weight on one leg; the head turned (about its up) and tilted (nodding)."""
    aa = np.zeros((24, 3))
    aa[0] = [0.1, 0.5, 0.05]
    aa[J["left_shoulder"]], aa[J["right_shoulder"]] = [0, 0, -1.1], [0, 0.3, 1.0]
    aa[J["left_elbow"]], aa[J["right_elbow"]] = [0, -0.6, 0], [0, 0.9, 0]
    aa[J["left_hip"]], aa[J["left_knee"]] = [-0.3, 0, 0.05], [0.5, 0, 0]
    aa[J["right_hip"]] = [0.1, 0, -0.1]
    aa[J["spine1"]] = [0.1, 0.1, 0]
    aa[J["neck"]] = [head_tilt / 2, head_turn / 2, 0]
    aa[J["head"]] = [head_tilt / 2, head_turn / 2, 0]
    return axis_angle_to_matrix(aa)


def scene(open_body, local, camera, trans=(0.2, -0.3, -4.0), depth_noise=0.02, seed=0):
    """(Detection, posed joints (24, 3) in the camera frame): keypoints projected through
    `camera`, MediaPipe's world landmarks hip-centred with noise on their depth."""
    betas = np.zeros(10)
    out = open_body.forward(betas, rel_rotmats=local, trans=np.asarray(trans, float))
    points = np.zeros((33, 3))
    vis = np.zeros(33)
    for lm, name in POINTS.items():
        points[lm] = out.posed_joints[J[name]] if name in J else out.vertices[open_body.landmarks[name]]
        vis[lm] = 0.95
    # MediaPipe's index points are the knuckles, where the fit's body points put them
    rest = open_body.rest_joints(betas)
    fitted, kept = body_points(rest, open_body, betas)
    placed = fitted.positions(forward_kinematics(local, rest, PARENTS, np.asarray(trans, float)))
    for row, k in enumerate(kept):
        lm, name, _ = KEYPOINTS[k]
        if name in KNUCKLES:
            points[lm], vis[lm] = placed[row], 0.95
    xy = camera.project(points)
    world = points - 0.5 * (points[23] + points[24])
    world[:, 2] += np.random.default_rng(seed).normal(scale=depth_noise, size=33)
    lo, hi = xy[vis > 0].min(0), xy[vis > 0].max(0)
    return detect.Detection(world=world, image_xy=xy, visibility=vis, bbox=(*lo, *hi)), out.posed_joints


def reading(joints):
    """A stand-in lifter that answers `joints` (24, 3, camera frame) less their pelvis."""
    joints = np.asarray(joints, dtype=np.float64)
    return lambda features: (joints - joints[0])[None]


def agreeing(det):
    """A stand-in lifter that reads the depths as the scene's MediaPipe does (its world
    landmarks as SMPL joints): the fit's depth reading is then MediaPipe's, as where both agree."""
    return reading(smpl_targets(det)[0])


def head_forward(local):
    """The head's forward direction: its world rotation (forward kinematics of local rotations
    (24, 3, 3)) applied to the body's forward, +Z."""
    return forward_kinematics(local, np.zeros((24, 3)), PARENTS).rotations[J["head"]] @ [0, 0, 1.0]


def test_the_camera_projects_as_a_pinhole():
    cam = Camera(1000, 800, 500.0, 500.0, 400.0)
    assert np.allclose(cam.project([0.0, 0.0, -3.0]), [500, 400])
    assert np.allclose(cam.project([1.0, 1.0, -1.0]), [1000, -100])   # 45 degrees right and up: f pixels off
    assert np.isnan(cam.project([0.0, 0.0, 1.0])).all()               # behind the camera
    point = np.array([0.4, -0.3, -2.5])
    assert np.allclose(cam.rays(cam.project(point)), point[:2] / 2.5)   # rays invert the projection
    assert default_camera(3000, 4000).diagonal_fov_deg == pytest.approx(55.0)


def test_the_fit_recovers_pose_and_place_through_a_known_camera(open_body):
    camera = default_camera(1920, 1080)
    truth_local = natural_pose()
    det, truth = scene(open_body, truth_local, camera)
    rest = open_body.rest_joints(np.zeros(10))
    result = fit.fit_to_image(det, rest, camera, body=open_body, options=fit.FitOptions(lifter=agreeing(det)))
    fitted = ~np.isnan(result.keypoint_error_px)
    assert fitted.sum() >= 20
    assert np.median(result.keypoint_error_px[fitted]) < 2.0
    assert np.percentile(result.keypoint_error_px[fitted], 90) < 4.0
    assert 1e3 * procrustes_error(result.joints, truth) < 20.0
    # the place: the body's depth comes from its size in the image; within 5% at 4 m
    assert abs(result.joints[0, 2] - truth[0, 2]) < 0.05 * 4.0
    assert np.abs(result.projected - camera.project(truth)).max() < 15.0


def test_the_fit_beats_the_lift_when_mediapipe_depth_is_poor(open_body):
    """With MediaPipe's depth off by 8 cm a landmark, the lift copies the error into the pose;
    the keypoints in the image hold the fit to the person."""
    camera = default_camera(1920, 1080)
    det, truth = scene(open_body, natural_pose(), camera, depth_noise=0.08, seed=3)
    rest = open_body.rest_joints(np.zeros(10))
    result = fit.fit_to_image(det, rest, camera, body=open_body, options=fit.FitOptions(lifter=agreeing(det)))
    start = pose_from_detection(det, rest)
    lift = forward_kinematics(start.local_rot, rest, PARENTS, start.trans).positions
    lift_px = np.linalg.norm(camera.project(lift - lift[0] + result.joints[0]) - camera.project(truth), axis=1)
    fit_px = np.linalg.norm(result.projected - camera.project(truth), axis=1)
    assert np.median(fit_px) < 0.5 * np.median(lift_px)


def test_the_lifters_reading_weighs_beside_mediapipes(open_body):
    """MediaPipe reads the depths well (2 cm off a landmark): a lifter that reads them right too
    keeps the pose, one that reads every joint mirrored in depth pulls it away by its share;
    the shipped lifter, which never saw this scene, comes within twice the exact 20 mm."""
    camera = default_camera(1920, 1080)
    det, truth = scene(open_body, natural_pose(), camera)
    rest = open_body.rest_joints(np.zeros(10))
    right = fit.fit_to_image(det, rest, camera, body=open_body, options=fit.FitOptions(lifter=reading(truth)))
    mirrored = fit.fit_to_image(det, rest, camera, body=open_body,
                                options=fit.FitOptions(lifter=reading(truth * [1, 1, -1])))
    shipped = fit.fit_to_image(det, rest, camera, body=open_body)
    errors = [1e3 * procrustes_error(f.joints, truth) for f in (right, mirrored, shipped)]
    assert errors[0] < 20.0 and errors[1] > 1.5 * errors[0] and errors[2] < 40.0, errors


@pytest.mark.parametrize("shoulder, elbow", [([0, 1.2, -0.3], [0, -0.4, 0]), ([0.3, 1.3, 0.0], [0, -0.3, 0])])
def test_the_fit_starts_from_the_lifters_pose_where_it_can_lift(open_body, shoulder, elbow):
    """MediaPipe's 3D puts an arm reaching away from the camera in front of the body instead
    (its depth mirrored about the shoulder); the lifter reads it right. The fit descends from
    the lifter's pose and ends with the arm behind; where the lifter cannot lift the person it
    descends from the lift, and the arm stays in front."""

    def unable(features):
        raise SmplIkError("cannot lift this person")

    camera = default_camera(1920, 1080)
    aa = matrix_to_axis_angle(natural_pose())
    aa[J["left_shoulder"]], aa[J["left_elbow"]] = shoulder, elbow
    det, truth = scene(open_body, axis_angle_to_matrix(aa), camera)
    assert truth[J["left_wrist"], 2] - truth[J["left_shoulder"], 2] < -0.4    # the wrist 40 cm further away
    world = det.world.copy()
    arm = [13, 15, 17, 19, 21]
    world[arm, 2] = 2 * world[11, 2] - world[arm, 2]
    det = detect.Detection(world=world, image_xy=det.image_xy, visibility=det.visibility, bbox=det.bbox)
    rest = open_body.rest_joints(np.zeros(10))
    lifter = fit.fit_to_image(det, rest, camera, body=open_body, options=fit.FitOptions(lifter=reading(truth)))
    lift = fit.fit_to_image(det, rest, camera, body=open_body, options=fit.FitOptions(lifter=unable))
    assert lifter.start.method == "lifter" and lift.start.method == pose_from_detection(det, rest).method
    reach = [f.joints[J["left_wrist"], 2] - f.joints[J["left_shoulder"], 2] for f in (lifter, lift)]
    assert reach[0] < -0.3 and reach[1] > 0.0, reach     # behind, as the truth; in front, as MediaPipe's
    errors = [1e3 * procrustes_error(f.joints, truth) for f in (lifter, lift)]
    assert errors[1] > 2 * errors[0], errors     # (the arm's depth still takes half MediaPipe's reading)


@pytest.mark.parametrize("turn, tilt", [(0.8, 0.0), (-0.6, 0.3)])
def test_the_head_follows_a_turned_head(open_body, turn, tilt, monkeypatch):
    """With MediaPipe's 3D face not used, the face's keypoints alone turn the head."""
    monkeypatch.setattr(fit, "FACE_DEPTH_WEIGHT", 0.0)
    camera = default_camera(1920, 1080)
    truth_local = natural_pose(head_turn=turn, head_tilt=tilt)
    det, _ = scene(open_body, truth_local, camera, depth_noise=0.05)
    flat = detect.Detection(world=det.world * [1, 1, 0], image_xy=det.image_xy,   # MediaPipe sees no depth at all
                            visibility=det.visibility, bbox=det.bbox)             # (nor the lifter): the face's
    det = flat                                                                    # keypoints must turn the head
    result = fit.fit_to_image(det, open_body.rest_joints(np.zeros(10)), camera, body=open_body,
                              options=fit.FitOptions(lifter=agreeing(det)))
    truth_dir, fit_dir = head_forward(truth_local), head_forward(result.local_rot)
    angle = np.degrees(np.arccos(np.clip(truth_dir @ fit_dir, -1, 1)))
    assert angle < 10.0, angle


@pytest.mark.parametrize("turn", [1.0, -1.0])
def test_mediapipes_3d_face_weighs_in_the_heads_turn_in_profile(open_body, turn):
    """A person seen from the side, the head turned 57 degrees toward or away from the camera:
    with MediaPipe's 3D face read right (2 cm noise) the head ends within 10 degrees; with its
    face mirrored in depth about the head (the turn read the other way) it is pulled further off."""
    camera = default_camera(1920, 1080)
    local = natural_pose(head_turn=turn)
    local[0] = axis_angle_to_matrix(np.array([0.0, np.pi / 2, 0.0]))          # in profile
    det, _ = scene(open_body, local, camera)
    rest = open_body.rest_joints(np.zeros(10))
    world = det.world.copy()
    head_z = smpl_targets(det, 0.0)[0][J["head"], 2]
    world[list(MP_HEAD_KEYPOINTS), 2] = 2 * head_z - world[list(MP_HEAD_KEYPOINTS), 2]
    mirrored = detect.Detection(world=world, image_xy=det.image_xy, visibility=det.visibility, bbox=det.bbox)
    angles = []
    for seen in (det, mirrored):
        result = fit.fit_to_image(seen, rest, camera, body=open_body, options=fit.FitOptions(lifter=agreeing(det)))
        cos = head_forward(local) @ head_forward(result.local_rot)
        angles.append(np.degrees(np.arccos(np.clip(cos, -1, 1))))
    assert fit.FACE_DEPTH_WEIGHT > 0 and angles[0] < 10.0 and angles[1] > angles[0] + 2.0, angles


def test_mediapipes_index_points_stand_for_the_knuckles_not_the_finger_tips(open_body):
    """MediaPipe marks the index finger's knuckle (19, 20): the fit's point for it lies across
    the knuckles from the hand joint (the middle finger's), 1-3 cm toward the index finger's
    side, and far short of the index tip."""
    rest = open_body.rest_joints(np.zeros(10))
    points, kept = body_points(rest, open_body, np.zeros(10))
    verts = open_body.shaped_vertices(np.zeros(10))
    for name, (_, hand, middle) in KNUCKLES.items():
        row = [KEYPOINTS[k][1] for k in kept].index(name)
        assert points.joints[row] == J[hand]
        knuckle = rest[J[hand]] + points.offsets[row]
        assert 0.01 < np.linalg.norm(points.offsets[row]) < 0.03
        tip, middle_tip = verts[open_body.landmarks[name]], verts[open_body.landmarks[middle]]
        assert np.linalg.norm(tip - knuckle) > 0.06
        assert np.linalg.norm(knuckle - tip) < np.linalg.norm(rest[J[hand]] - tip)   # toward the index side
        assert np.linalg.norm(knuckle - middle_tip) > np.linalg.norm(rest[J[hand]] - middle_tip) - 0.005


def test_too_few_keypoints_is_an_error(open_body):
    camera = default_camera(1920, 1080)
    det, _ = scene(open_body, natural_pose(), camera)
    vis = np.zeros(33)
    vis[[11, 12, 23]] = 0.9
    hidden = detect.Detection(world=det.world, image_xy=det.image_xy, visibility=vis, bbox=det.bbox)
    with pytest.raises(SmplIkError, match="visible|seen"):
        fit.fit_to_image(hidden, open_body.rest_joints(np.zeros(10)), camera, body=open_body)


def test_a_scene_stands_people_on_the_floor_and_keeps_the_overlay(open_body):
    """Two people on one floor seen by a camera tilted 15 degrees down: placed on one floor with
    the camera's tilt found, through the placed camera each projects where the fit put them."""
    camera = default_camera(1920, 1080)
    # the camera looks down: people lean back in its frame
    tilt = axis_angle_to_matrix(np.array([np.radians(15.0), 0.0, 0.0]))
    rest = open_body.rest_joints(np.zeros(10))
    fits = []
    for k, level in enumerate([(0.2, -0.9, -4.0), (-1.2, -0.9, -6.0)]):   # on one floor, seen level
        local = natural_pose()
        local[0] = tilt @ local[0]
        det, _ = scene(open_body, local, camera, trans=tilt @ np.array(level) + (tilt - np.eye(3)) @ rest[0], seed=k)
        fits.append(fit.fit_to_image(det, rest, camera, body=open_body, options=fit.FitOptions(lifter=agreeing(det))))
    placed = photo_scene(fits, [rest, rest])
    assert placed.tilt_deg == pytest.approx(15.0, abs=4.0)   # two people's feet on one floor give the camera's tilt
    for (local, trans), f in zip(placed.poses, fits):
        world = forward_kinematics(local, rest, PARENTS, trans).positions
        in_camera = (world - placed.camera_position) @ placed.camera_rotation   # world -> camera frame
        assert np.abs(camera.project(in_camera) - f.projected).max() < 1e-6
    first = forward_kinematics(placed.poses[0][0], rest, PARENTS, placed.poses[0][1]).positions
    feet = [J["left_ankle"], J["right_ankle"], J["left_foot"], J["right_foot"]]
    assert first[feet, 1].min() == pytest.approx(rest[feet, 1].min(), abs=1e-9)
    assert abs(first[0, 0]) < 1e-9 and abs(first[0, 2]) < 1e-9
    second = forward_kinematics(placed.poses[1][0], rest, PARENTS, placed.poses[1][1]).positions
    assert second[0, 2] < first[0, 2] - 1.0            # the smaller person stands further from the camera
    assert abs(second[feet, 1].min() - first[feet, 1].min()) < 0.05   # on the same floor


def balanced(local, rest):
    """local (24, 3, 3) with the whole body turned about its left-right axis until its centre of
    mass (the open body's segment masses) stands above its feet, as a person holds a pose."""
    segments = default_parts(rest).segments
    feet = list(FOOT_INDICES)
    out = local.copy()
    for _ in range(20):
        fk = forward_kinematics(out, rest, PARENTS)
        up = centre_of_mass(fk, segments) - fk.positions[feet].mean(axis=0)
        out[0] = axis_angle_to_matrix(np.array([np.arctan2(-up[2], up[1]), 0.0, 0.0])) @ out[0]
    return out


def legs_pose(pelvis_pitch=0.0, hips=(0.0, 0.0), knees=(0.0, 0.0)):
    """A pose turned 0.4 rad from the camera, pelvis pitched forward, left and right hips bent
    forward and knees bent back by the given degrees."""
    aa = np.zeros((24, 3))
    aa[0] = [np.radians(pelvis_pitch), 0.4, 0.0]
    for side, hip, knee in zip(("left", "right"), hips, knees):
        aa[J[f"{side}_hip"]] = [-np.radians(hip), 0.0, 0.0]
        aa[J[f"{side}_knee"]] = [np.radians(knee), 0.0, 0.0]
    return axis_angle_to_matrix(aa)


def shins_lean(local, rest):
    """Degrees the shins' mean direction (ankle to knee) leans from up in a pose."""
    joints = forward_kinematics(local, rest, PARENTS).positions
    shins = sum(unit(joints[J[f"{s}_knee"]] - joints[J[f"{s}_ankle"]]) for s in ("left", "right"))
    return np.degrees(np.arccos(unit(shins)[1]))


@pytest.mark.parametrize("pose", [
    dict(pelvis_pitch=45.0, hips=(45.0, 45.0)),               # a bow at the hips, legs straight
    dict(hips=(30.0, -20.0), knees=(0.0, 30.0)),               # a walker's stride
    dict(pelvis_pitch=15.0, hips=(40.0, 40.0), knees=(35.0, 35.0)),   # a boxer's bent knees
])
def test_a_person_balanced_over_their_feet_leaves_a_level_camera_level(open_body, pose):
    """A person bowing, striding or standing with bent knees, their centre of mass over their
    feet, seen by a level camera: the scene keeps the camera within 6 degrees of level, where
    the pelvis (bent) or the shins (slanted) would tilt it more than twice as far."""
    camera = default_camera(1920, 1080)
    rest = open_body.rest_joints(np.zeros(10))
    local = balanced(legs_pose(**pose), rest)
    det, _ = scene(open_body, local, camera)
    result = fit.fit_to_image(det, rest, camera, body=open_body, options=fit.FitOptions(lifter=agreeing(det)))
    lean = shins_lean(local, rest)
    pelvis = np.degrees(np.arccos((local[0] @ [0, 1.0, 0])[1]))
    tilt = photo_scene([result], [rest]).tilt_deg
    assert tilt < 6.0 and 2.0 * tilt < max(lean, pelvis)   # the shins or the pelvis would tilt it twice as far


def test_a_leg_the_photo_is_unsure_of_leaves_the_camera_level(open_body):
    """A balanced person seen by a camera looking 12 degrees down: with both legs seen the
    scene finds the tilt from their feet; with a knee MediaPipe is unsure of (visibility 0.3)
    the feet say nothing sure and the camera is kept level."""
    camera = default_camera(1920, 1080)
    rest = open_body.rest_joints(np.zeros(10))
    local = balanced(legs_pose(hips=(30.0, -20.0), knees=(0.0, 30.0)), rest)
    local[0] = axis_angle_to_matrix(np.array([np.radians(12.0), 0.0, 0.0])) @ local[0]   # the camera's tilt
    det, _ = scene(open_body, local, camera)
    seen = fit.fit_to_image(det, rest, camera, body=open_body, options=fit.FitOptions(lifter=agreeing(det)))
    visibility = det.visibility.copy()
    visibility[26] = 0.3                                     # the right knee
    unsure = detect.Detection(world=det.world, image_xy=det.image_xy, visibility=visibility, bbox=det.bbox)
    guessed = fit.fit_to_image(unsure, rest, camera, body=open_body, options=fit.FitOptions(lifter=agreeing(unsure)))
    assert abs(photo_scene([seen], [rest]).tilt_deg - 12.0) < 4.0
    assert not guessed.confident[J["right_knee"]]
    assert np.allclose(photo_up(guessed, rest), [0.0, 1.0, 0.0])
    assert photo_scene([guessed], [rest]).tilt_deg < 1e-6


def test_a_seated_person_stands_the_camera_on_their_shins(open_body):
    """Sitting on a chair (hips and knees bent 90 degrees), a seat carries the weight, not the
    feet: the shins stand upright, so a level camera stays level (the centre of mass over the
    feet would tilt it over 20 degrees)."""
    camera = default_camera(1920, 1080)
    rest = open_body.rest_joints(np.zeros(10))
    local = legs_pose(hips=(90.0, 90.0), knees=(90.0, 90.0))
    det, _ = scene(open_body, local, camera)
    result = fit.fit_to_image(det, rest, camera, body=open_body, options=fit.FitOptions(lifter=agreeing(det)))
    assert seated(result.joints)
    assert photo_scene([result], [rest]).tilt_deg < shins_lean(local, rest) + 3.0 < 8.0
    fk = forward_kinematics(local, rest, PARENTS)
    over_feet = unit(centre_of_mass(fk, default_parts(rest).segments) - fk.positions[list(FOOT_INDICES)].mean(axis=0))
    assert np.degrees(np.arccos(over_feet[1])) > 20.0


@pytest.mark.parametrize("heading_deg", [0.0, 90.0, 120.0, 180.0])
def test_seen_from_behind_the_neck_and_head_take_the_priors_mean_turn(open_body, heading_deg):
    """Facing the camera or in profile the fitted head is kept; with the back to the camera it
    takes the pose prior's mean turn (the face's keypoints are the detector's guesses), and
    part of the way between; nothing else moves."""
    from models.ik.pose_prior import load_pose_prior

    prior = load_pose_prior()
    rest = open_body.rest_joints(np.zeros(10))
    local = natural_pose(head_turn=0.8, head_tilt=-0.4)
    local[0] = axis_angle_to_matrix(np.array([0.0, np.radians(heading_deg), 0.0]))
    trans = np.array([0.0, 0.0, -4.0])
    away = fit.facing_away_deg(forward_kinematics(local, rest, PARENTS, trans).positions)
    low, high = fit.BEHIND_DEG
    # the spine bends a little and the chest sits above the camera's axis: not quite the heading
    assert {0.0: away < low, 90.0: away < low, 120.0: low < away < high, 180.0: away > high}[heading_deg], away
    out = fit._head_turned_away(local, trans, rest)
    others = [j for j in range(24) if j not in (J["neck"], J["head"])]
    assert np.array_equal(out[others], local[others])
    to_mean = [np.degrees(np.linalg.norm(matrix_to_axis_angle(out[j].T @ prior.mean_rotation(j))))
               for j in (J["neck"], J["head"])]
    before = [np.degrees(np.linalg.norm(matrix_to_axis_angle(local[j].T @ prior.mean_rotation(j))))
              for j in (J["neck"], J["head"])]
    if heading_deg <= 90.0:
        assert np.array_equal(out, local)
    elif heading_deg >= 180.0:
        assert max(to_mean) < 1e-4, to_mean
    else:
        assert all(1.0 < a < b - 1.0 for a, b in zip(to_mean, before)), (to_mean, before)


def test_a_fit_from_behind_ends_with_the_priors_head(open_body):
    """Through fit_to_image: a person with the back to the camera and the head turned gets the
    prior's neck and head, whatever the face keypoints say."""
    from models.ik.pose_prior import load_pose_prior

    camera = default_camera(1920, 1080)
    local = natural_pose(head_turn=0.8)
    local[0] = axis_angle_to_matrix(np.array([0.0, np.pi, 0.0]))
    det, _ = scene(open_body, local, camera)
    result = fit.fit_to_image(det, open_body.rest_joints(np.zeros(10)), camera, body=open_body,
                              options=fit.FitOptions(lifter=agreeing(det)))
    prior = load_pose_prior()
    for j in (J["neck"], J["head"]):
        assert np.allclose(result.local_rot[j], prior.mean_rotation(j), atol=1e-6)
    assert fit.facing_away_deg(result.joints) > fit.BEHIND_DEG[1]
