"""A detected person fitted to a body, in plain numpy: MediaPipe's 33 landmarks become SMPL's
24 joints, and IK-GAT or SMPL-IK solves the pose.

From landmarks to SMPL joints (`smpl_targets`); MediaPipe numbers in brackets, left/right are
the person's:
- hips, knees, ankles, shoulders, elbows, wrists: the landmark itself (23/24, 25/26, 27/28,
  11/12, 13/14, 15/16). MediaPipe's hip landmarks are about at the hip joints (0.21-0.23 m
  apart on the sample photos; the open body's hip joints are 0.23 m apart), so they serve as
  SMPL's hips directly; only their direction from the pelvis is kept in the end.
- the trunk (pelvis, spine1-3, neck, collars) comes from the hips and shoulders: a trunk frame
  with its origin between the hips, "up" toward the point between the shoulders, "left" from
  the right to the left hip (low joints) or shoulder (high joints, blended by height), scaled
  by the hip-to-shoulder distance. Each trunk joint keeps the place it has in that frame on the
  open body at rest. So the pelvis sits above the hip joints and the spine runs straight up the
  hips-to-shoulders line at the body's proportions (a bent back is not seen: MediaPipe has no
  landmarks on the spine), and the collars sit inward of the shoulders by the body's offsets.
- head (0, 7, 8): the same combination of both ears and the nose that the open body's head
  joint is of its ear and nose points (in a frame built from the three points).
- foot, SMPL's joint at the ball of the foot (27/29/31, 28/30/32): the same combination of
  ankle, heel and toe tip that the open body's foot joint is of its ankle, heel and big toe.
- hand, SMPL's joint at the base of the middle finger (17/19, 18/20): a third of the way from
  the index knuckle to the pinky knuckle (the middle finger is the next one after the index).
A joint is confident when every landmark its rule reads has visibility >= min_visibility.

From targets to a pose: `body_targets` keeps the detection's bone directions and gives the
bones the body's lengths, walking the tree from the pelvis. With all 24 joints confident,
IK-GAT turns them into rotations in one pass; otherwise SMPL-IK solves from the confident
joints only (position effectors, refined). The result stands at the origin: the pelvis at
x = z = 0 and the lowest ankle or foot joint at the height it has in the body's rest pose.
"""
import functools
from dataclasses import dataclass

import numpy as np

from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics
from ..core.metrics import angle_deg
from ..core.rotations import axis_angle_to_matrix, matrix_to_axis_angle, shortest_arc, unit
from ..core.skeleton import JOINT_INDEX, JOINT_NAMES, NUM_JOINTS, PARENTS
from .detect import NUM_LANDMARKS

MIN_JOINTS = 4
FOOT_JOINTS = tuple(JOINT_INDEX[n] for n in ("left_ankle", "right_ankle", "left_foot", "right_foot"))

# MediaPipe landmark numbers (left/right are the person's).
NOSE, L_EAR, R_EAR = 0, 7, 8
L_SHOULDER, R_SHOULDER, L_HIP, R_HIP = 11, 12, 23, 24
TRUNK_LANDMARKS = (L_SHOULDER, R_SHOULDER, L_HIP, R_HIP)
DIRECT = {"left_hip": 23, "right_hip": 24, "left_knee": 25, "right_knee": 26,
          "left_ankle": 27, "right_ankle": 28, "left_shoulder": 11, "right_shoulder": 12,
          "left_elbow": 13, "right_elbow": 14, "left_wrist": 15, "right_wrist": 16}
TRUNK = ("pelvis", "spine1", "spine2", "spine3", "neck", "left_collar", "right_collar")
FEET = {"left_foot": (27, 29, 31), "right_foot": (28, 30, 32)}   # ankle, heel, toe tip
HANDS = {"left_hand": (19, 17), "right_hand": (20, 18)}          # index, pinky knuckles
HEAD = (L_EAR, R_EAR, NOSE)
# The open body's vertex landmarks that stand for MediaPipe's (same order as FEET / HEAD).
BODY_FEET = {"left_foot": ("left_ankle", "LHeel", "LBigToe"),
             "right_foot": ("right_ankle", "RHeel", "RBigToe")}
BODY_HEAD = ("lear", "rear", "nose")


def _landmarks_of_joint():
    """joint index -> MediaPipe landmarks its rule reads."""
    used = {}
    for name, lm in DIRECT.items():
        used[JOINT_INDEX[name]] = (lm,)
    for name in TRUNK:
        used[JOINT_INDEX[name]] = TRUNK_LANDMARKS
    for table in (FEET, HANDS):
        for name, lms in table.items():
            used[JOINT_INDEX[name]] = lms
    used[JOINT_INDEX["head"]] = HEAD
    assert sorted(used) == list(range(NUM_JOINTS))
    return tuple(used[j] for j in range(NUM_JOINTS))


LANDMARKS_OF_JOINT = _landmarks_of_joint()


@dataclass(frozen=True, eq=False)
class PhotoPose:
    """A pose solved from a detection for a body with rest joints (24, 3).

    local_rot: (24, 3, 3); trans: (3,) metres (SMPL's root translation); method: "ikgat"
    (all joints seen) or "smplik" (some joints guessed), "lifter" (the lifter's joints, the
    fit's second start) or "warm" (a video's previous frame); confident: (24,) bool, the joints
    that were seen; targets: (24, 3) where the seen joints were asked to go (NaN rows for the
    others), in the same frame as the pose.
    """

    local_rot: np.ndarray
    trans: np.ndarray
    method: str
    confident: np.ndarray
    targets: np.ndarray


def _triangle_basis(a, b, c):
    """(..., 3, 3) columns: b - a, c - a and their normal scaled to a length (so a point's
    coordinates in it survive rotation and uniform scaling of the triangle)."""
    u, v = b - a, c - a
    w = np.cross(u, v) / np.maximum(np.linalg.norm(u, axis=-1, keepdims=True), 1e-12)
    return np.stack([u, v, w], axis=-1)


def _trunk_frames(l_hip, r_hip, l_sho, r_sho, blend):
    """Trunk frames for joints at heights `blend` (K,) (0 hips, 1 shoulders).

    Returns (origin (3,), frames (K, 3, 3) with columns left, up, front, scale): origin between
    the hips, scale the hips-to-shoulders distance."""
    origin = (l_hip + r_hip) / 2
    spine = (l_sho + r_sho) / 2 - origin
    scale = np.linalg.norm(spine)
    up = unit(spine)

    def across(v):
        return unit(v - np.dot(v, up) * up)

    left = unit((1 - blend)[:, None] * across(l_hip - r_hip) + blend[:, None] * across(l_sho - r_sho))
    front = np.cross(left, up)
    return origin, np.stack([left, np.broadcast_to(up, left.shape), front], axis=-1), scale


@functools.lru_cache(maxsize=1)
def _rest_rules():
    """Constants of the rules, read off the open body at rest (zero betas)."""
    from ..body.model import load_body_model

    body = load_body_model()
    rest = body.rest_joints(np.zeros(10))
    verts = body.v_template
    missing = [n for n in BODY_HEAD + BODY_FEET["left_foot"][1:] + BODY_FEET["right_foot"][1:]
               if n not in body.landmarks]
    if missing:
        raise SmplIkError(f"the open body file lacks the landmarks {', '.join(missing)}")

    def point(name):
        return rest[JOINT_INDEX[name]] if name in JOINT_INDEX else verts[body.landmarks[name]]

    j = JOINT_INDEX
    trunk = np.array([j[n] for n in TRUNK])
    hips_mid = (rest[j["left_hip"]] + rest[j["right_hip"]]) / 2
    sho_mid = (rest[j["left_shoulder"]] + rest[j["right_shoulder"]]) / 2
    height = np.linalg.norm(sho_mid - hips_mid)
    blend = np.clip((rest[trunk] - hips_mid) @ unit(sho_mid - hips_mid) / height, 0, 1)
    origin, frames, scale = _trunk_frames(rest[j["left_hip"]], rest[j["right_hip"]],
                                          rest[j["left_shoulder"]], rest[j["right_shoulder"]], blend)
    trunk_coords = np.einsum("kab,ka->kb", frames, rest[trunk] - origin) / scale   # (K, 3)

    def triangle_coords(joint, names):
        a, b, c = (point(n) for n in names)
        return np.linalg.solve(_triangle_basis(a, b, c), rest[j[joint]] - a)

    head = triangle_coords("head", BODY_HEAD)
    feet = {name: triangle_coords(name, names) for name, names in BODY_FEET.items()}
    return blend, trunk_coords, head, feet


def smpl_targets(detection, min_visibility=0.5):
    """SMPL joint positions from a detection, by the rules in the module docstring.

    Returns (positions (24, 3) metres in SMPL's frame at the detection's scale, confident
    (24,) bool: every landmark the joint's rule reads has visibility >= min_visibility).
    """
    w = np.asarray(detection.world, dtype=np.float64)
    vis = np.asarray(detection.visibility, dtype=np.float64)
    if w.shape != (NUM_LANDMARKS, 3) or vis.shape != (NUM_LANDMARKS,):
        raise SmplIkError(f"a detection needs 33 landmarks: world {w.shape}, visibility {vis.shape}")
    blend, trunk_coords, head, feet = _rest_rules()
    pos = np.full((NUM_JOINTS, 3), np.nan)
    for name, lm in DIRECT.items():
        pos[JOINT_INDEX[name]] = w[lm]
    origin, frames, scale = _trunk_frames(w[L_HIP], w[R_HIP], w[L_SHOULDER], w[R_SHOULDER], blend)
    pos[[JOINT_INDEX[n] for n in TRUNK]] = origin + scale * np.einsum("kab,kb->ka", frames, trunk_coords)
    a, b, c = w[list(HEAD)]
    pos[JOINT_INDEX["head"]] = a + _triangle_basis(a, b, c) @ head
    for name, lms in FEET.items():
        a, b, c = w[list(lms)]
        pos[JOINT_INDEX[name]] = a + _triangle_basis(a, b, c) @ feet[name]
    for name, (index, pinky) in HANDS.items():
        pos[JOINT_INDEX[name]] = w[index] + (w[pinky] - w[index]) / 3
    confident = np.array([bool(np.all(vis[list(lms)] >= min_visibility)) for lms in LANDMARKS_OF_JOINT])
    confident &= np.all(np.isfinite(pos), axis=1)
    return pos, confident


def body_targets(positions, confident, rest):
    """Detected joints moved onto a body: each bone keeps its detected direction and takes the
    body's rest length, walking the tree from the pelvis (which stays where it was detected).

    positions: (24, 3) metres, SMPL frame; confident: (24,) bool; rest: (24, 3) the body's
    rest joints. Every joint is placed (a guessed joint still carries its children), then the
    joints that are not confident are set to NaN. A bone with no usable direction (missing or
    zero-length) keeps its rest direction. Returns (24, 3).
    """
    positions = np.asarray(positions, dtype=np.float64)
    rest = np.asarray(rest, dtype=np.float64)
    confident = np.asarray(confident, dtype=bool)
    if positions.shape != (NUM_JOINTS, 3) or rest.shape != (NUM_JOINTS, 3) or confident.shape != (NUM_JOINTS,):
        raise SmplIkError(f"body_targets needs (24, 3) positions and rest and (24,) confident; got "
                          f"{positions.shape}, {rest.shape}, {confident.shape}")
    out = np.empty_like(positions)
    out[0] = positions[0] if np.all(np.isfinite(positions[0])) else rest[0]
    for j in range(1, NUM_JOINTS):
        p = PARENTS[j]
        bone = rest[j] - rest[p]
        seen = positions[j] - positions[p]
        norm = np.linalg.norm(seen)
        direction = seen / norm if np.isfinite(norm) and norm > 1e-9 else unit(bone)
        out[j] = out[p] + np.linalg.norm(bone) * direction
    out[~confident] = np.nan
    return out


def _seen_targets(detection, min_visibility):
    """smpl_targets, or SmplIkError when fewer than MIN_JOINTS joints were seen."""
    positions, confident = smpl_targets(detection, min_visibility)
    count = int(confident.sum())
    if count < MIN_JOINTS:
        raise SmplIkError(f"cannot pose a body from this person: only {count} joints were visible "
                          f"(at least {MIN_JOINTS} are needed); try a photo showing more of the body "
                          f"or a lower minimum visibility")
    return positions, confident


def pose_from_detection(detection, rest, min_visibility=0.5):
    """Solve a body's pose from a detection. rest: (24, 3) the body's rest joints.

    IK-GAT when all 24 joints are confident, else SMPL-IK on the confident ones (at least 4).
    The result stands with its pelvis at x = z = 0 and its lowest ankle/foot joint at the rest
    pose's lowest ankle/foot height. Returns PhotoPose.
    """
    rest = np.asarray(rest, dtype=np.float64)
    positions, confident = _seen_targets(detection, min_visibility)
    targets = body_targets(positions, confident, rest)
    if confident.all():
        from ..ik.ikgat import load_ikgat

        local_rot = load_ikgat()(targets, rest)
        trans = targets[0] - rest[0]
        method = "ikgat"
    else:
        from ..ik.effectors import Effector, EffectorKind
        from ..ik.refine import RefineOptions
        from ..ik.smplik import SolveOptions, load_smplik

        effectors = [Effector(JOINT_NAMES[j], EffectorKind.POSITION, tuple(targets[j]))
                     for j in np.flatnonzero(confident)]
        # every detected joint is a little off and none is surer than the rest: where they
        # disagree with the body (the hips' directions against the rigid pelvis), each gives a
        # little, instead of one pin giving way for all. No balance: the person may be in
        # mid-stride, and the photo, not balance, says where the body's weight is (with it,
        # on the labelled 3DHP photos the lift went from 151.7 to 161.7 mm PA-MPJPE)
        solution = load_smplik().solve(effectors, rest,
                                       SolveOptions(refine=RefineOptions(give_way=False, balance=False)))
        local_rot, trans = solution.local_rot, np.asarray(solution.trans, dtype=np.float64)
        method = "smplik"
    shift = _to_the_origin(local_rot, trans, rest)
    return PhotoPose(local_rot=local_rot, trans=trans + shift, method=method,
                     confident=confident, targets=targets + shift)


def _to_the_origin(local_rot, trans, rest):
    """(3,) the move that stands a pose at the origin: its pelvis at x = z = 0 and its lowest
    ankle or foot joint at the rest pose's lowest ankle or foot height."""
    posed = forward_kinematics(local_rot, rest, PARENTS, trans).positions
    feet = list(FOOT_JOINTS)
    return np.array([-posed[0, 0], rest[feet, 1].min() - posed[feet, 1].min(), -posed[0, 2]])


# --- the camera-matched fit ------------------------------------------------------------------
# MediaPipe keypoints fitted in the image: (landmark number, the body point that stands for it:
# an SMPL joint or one of the open body's surface landmarks, weight). The face's points turn the
# head and neck; heels and toes the feet; the index fingers the hands.
KEYPOINTS = (
    (11, "left_shoulder", 1.0), (12, "right_shoulder", 1.0), (13, "left_elbow", 1.0), (14, "right_elbow", 1.0),
    (15, "left_wrist", 1.0), (16, "right_wrist", 1.0), (23, "left_hip", 1.0), (24, "right_hip", 1.0),
    (25, "left_knee", 1.0), (26, "right_knee", 1.0), (27, "left_ankle", 1.0), (28, "right_ankle", 1.0),
    (0, "nose", 1.0), (2, "leye", 0.5), (5, "reye", 0.5), (7, "lear", 0.5), (8, "rear", 0.5),
    (29, "LHeel", 0.5), (30, "RHeel", 0.5), (31, "LBigToe", 0.5), (32, "RBigToe", 0.5),
    (19, "lindex", 0.3), (20, "rindex", 0.3),
)
# Scales of the fit's terms (their reasons in fit_to_image's docstring).
ROBUST_SCALE = 0.03      # of the box diagonal: a keypoint this far off counts half (Cauchy)
PRIOR_EQUALS = 0.02  # of the box diagonal: a keypoint this far off costs as much as...
PRIOR_SIGMA = 3.0        # ... a joint turned this many radians from the learned pose, or
DEPTH_SIGMA = 0.15       # ... a joint this many metres nearer or further than the photo's
                         #     readings put it (from the pelvis, along the camera's axis)
# The lifter's share of the depth reading, MediaPipe's the rest: the two err about as much.
# Their joints' depths from the hips were 124 (MediaPipe) and 116 mm (lifter) off on the
# labelled 3DHP photos, 112 and 86 mm on pictures rendered from m21 motion capture: weights
# in inverse proportion to those errors squared give the lifter 0.53 and 0.63.
LIFTER_SHARE = 0.5
# A cold fit descends from the lifter's pose (the lift's where the lifter cannot lift the
# person). Descending from the lift as well and keeping the end that cost less chose the wrong
# end about as often as the right one: the two ends of a limb mirrored in depth cost nearly the
# same. The lifter's start alone, against both: PA-MPJPE on m21 motion capture pictured from
# five sides (scripts/render_photo_set.py, 276 pictures) 74.8 -> 73.3 mm, better from every
# side; on the labelled 3DHP photos 87.8 -> 86.9 mm with the default lens and 103.5 -> 90.1 mm
# with the labels' own focal length (the bent-over S8 kept the lift's end, 152 mm, by a cost
# 1.5% lower than the lifter's, 100 mm); and one descent instead of two
# MediaPipe's 3D face (nose and ears, about its head) as a depth reading of the head's turn, this
# many times the joints' weight: in profile the face's keypoints in the image hardly tell how
# far the head is turned toward the camera. Of 0, 1, 3, 10 on pictures of training clips from
# five sides (265 frames), 3 measured best: head 28.9 -> 26.9 deg, PA-MPJPE unchanged
FACE_DEPTH_WEIGHT = 3.0
HEAD_JOINT = JOINT_INDEX["head"]
PRIOR_FLOOR = 0.3        # the share of POSE_PRIOR_WEIGHT left once the fit has settled: the
                         # largest of 0.1, 0.3, 0.5, 1 that still meets exact keypoints (the
                         # synthetic scene: 0.3 leaves 0.8 px median, 2.5 px p90; 0.5 4.3 px p90)
# The pose prior's residuals (models/ik/pose_prior.py) times POSE_PRIOR_WEIGHT weigh as much as
# keypoints off by PRIOR_EQUALS of the diagonal. 0.2 measured best on rendered m21 frames (box-1,
# dance, kick, jump, wipe; of 0, 0.05, 0.2, 0.5, 1).
POSE_PRIOR_WEIGHT = 0.2
# Keypoints the detector is less sure of are not fitted. MediaPipe's visibility is how likely
# the point is unoccluded, not how good its place is: on the labelled 3DHP photos, keypoints
# below 0.2 (a bent-over arm, an elbow behind the body) lay 28-101 px off in a 960-1400 px box,
# as close as many sure ones, and fitting them (their weight is still their visibility) took
# PA-MPJPE from 108.7 to 96.7 mm with rendered pictures unchanged (71.8 mm)
MIN_CONFIDENCE = 0.05
# Seen from behind, the detector still places a nose and eyes (visibility 1.0) where it guesses
# the face is, and a head fitted to them turns wrong. So the neck and head turn from the fitted
# turn toward the pose prior's mean as the trunk turns away from the camera, wholly past
# BEHIND_DEG[1] (the angle between the chest's forward and the direction to the camera), not
# at all below BEHIND_DEG[0]. On pictures of m21 motion capture (render_photo_set.py, five
# sides) the head went from 31.5 / 27.3 to 20.3 / 15.7 deg off from three-quarters behind,
# within 0.4 deg elsewhere (from three-quarters in front the prior's head would be worse than
# the face's: 25 against 16 deg)
BEHIND_DEG = (105.0, 135.0)
FIT_ITERATIONS = 40
STEP_EPS = 1e-5          # radians / metres: the finite-difference step of the Jacobian


@dataclass(frozen=True, eq=False)
class ImageFit:
    """A body fitted to a person through a camera. In the camera's frame (models/photo/camera.py:
    camera at the origin looking down -Z, +Y up, +X right): local_rot (24, 3, 3) (the root's
    rotation is the body's turn relative to the camera), trans (3,) SMPL's root translation for
    the rest joints fitted, joints (24, 3) the posed joints; projected (24, 2) their pixels;
    camera the Camera; confident (24,) the joints the photo showed; keypoint_error_px (K,) each
    fitted keypoint's distance from its detection (NaN where not fitted) and keypoints (K,) the
    MediaPipe landmark numbers they stand for; box_diagonal_px the person's; start the PhotoPose
    the descent started from (the lifter's pose, the lift, or a warm start); iterations taken;
    notes."""

    local_rot: np.ndarray
    trans: np.ndarray
    joints: np.ndarray
    projected: np.ndarray
    camera: object
    confident: np.ndarray
    keypoint_error_px: np.ndarray
    keypoints: tuple
    box_diagonal_px: float
    start: PhotoPose
    iterations: int
    notes: tuple = ()


def _lifter_targets(detection, rest, camera, lifter=None):
    """(24, 3) the joints a lifter (models.photo.lifter; None: the shipped one) lifts from the
    detection's 2D keypoints through `camera`, at the body's bone lengths (body_targets), in
    the camera's axes. SmplIkError when too few keypoints are seen to lift."""
    from .lifter import lift_detection

    return body_targets(lift_detection(detection, camera, lifter), np.ones(NUM_JOINTS, dtype=bool), rest)


def _lifter_pose(keyed, rest, lift):
    """The PhotoPose of the lifter's joints `keyed` (24, 3) (IK-GAT turns them into a pose),
    standing at the origin as pose_from_detection's do; the joints the photo shows confident
    and the targets are the lift's."""
    from ..ik.ikgat import load_ikgat

    local_rot = load_ikgat()(keyed, rest)
    trans = keyed[0] - rest[0]
    return PhotoPose(local_rot=local_rot, trans=trans + _to_the_origin(local_rot, trans, rest), method="lifter",
                     confident=lift.confident, targets=lift.targets)


# MediaPipe's index points (19, 20) lie on the knuckles, not the finger tips: on pictures of the
# open body they sat 9 cm from its index tip vertices, 2-3 cm from its hand joints (SMPL's hand
# joint is the middle finger's knuckle). Body landmark -> (wrist, hand joint, middle finger tip).
KNUCKLES = {"lindex": ("left_wrist", "left_hand", "lmiddle"), "rindex": ("right_wrist", "right_hand", "rmiddle")}
KNUCKLE_SPREAD = 0.5     # the knuckles lie about half as far apart as the open fingers' tips


def _knuckle_offset(body, shaped, rest_body, name):
    """(3,) the index knuckle from the hand joint, rest pose: KNUCKLE_SPREAD of the step from
    the middle finger's tip to the index finger's, across the hand (its part along the hand,
    wrist to hand joint, taken out); zero where the body has no middle finger tip."""
    wrist, hand, middle = KNUCKLES[name]
    if middle not in body.landmarks:
        return np.zeros(3)
    along = unit(rest_body[JOINT_INDEX[hand]] - rest_body[JOINT_INDEX[wrist]])
    step = shaped[body.landmarks[name]] - shaped[body.landmarks[middle]]
    return KNUCKLE_SPREAD * (step - (step @ along) * along)


def _body_points(rest, body, betas):
    """(AttachedPoints for KEYPOINTS' body points, keypoint rows kept): a joint is itself (no
    offset); a surface landmark follows the joint that moves its vertex most, at the offset it
    has in the rest pose; an index knuckle (KNUCKLES) follows the hand joint. A landmark the
    body file lacks (a user's SMPL file) is left out."""
    from ..core.kinematics import AttachedPoints

    shaped = rest_body = None
    if body is not None and body.landmarks:
        betas = np.zeros(body.shapedirs.shape[-1]) if betas is None else np.asarray(betas, dtype=np.float64)
        shaped = body.shaped_vertices(betas[:body.shapedirs.shape[-1]])
        rest_body = body.rest_joints(betas[:body.shapedirs.shape[-1]])
    joints, offsets, kept = [], [], []
    for k, (_, name, _) in enumerate(KEYPOINTS):
        if name in JOINT_INDEX:
            joints.append(JOINT_INDEX[name])
            offsets.append(np.zeros(3))
        elif shaped is not None and name in KNUCKLES and name in body.landmarks:
            joints.append(JOINT_INDEX[KNUCKLES[name][1]])
            offsets.append(_knuckle_offset(body, shaped, rest_body, name))
        elif shaped is not None and name in body.landmarks:
            v = body.landmarks[name]
            owner = int(np.argmax(body.weights[v]))
            joints.append(owner)
            offsets.append(shaped[v] - rest_body[owner])
        else:
            continue
        kept.append(k)
    return AttachedPoints(np.array(joints), np.array(offsets)), tuple(kept)


def _solve_root_translation(points, observed, weights, camera):
    """(3,) the translation t that best puts `points` (N, 3), camera frame, on the pixels
    `observed` (N, 2) (weights (N,)): linear least squares on the projection equations
    multiplied through by the depth."""
    f, cx, cy = camera.focal_px, camera.cx, camera.cy
    du, dv = observed[:, 0] - cx, observed[:, 1] - cy
    x, y, z = points.T
    # u: cx + f (x + tx) / -(z + tz)  ->  f tx + du tz = -du z - f x
    # v: cy - f (y + ty) / -(z + tz)  ->  f ty - dv tz = dv z - f y
    a = np.zeros((2 * len(points), 3))
    b = np.zeros(2 * len(points))
    a[0::2, 0], a[0::2, 2], b[0::2] = f, du, -du * z - f * x
    a[1::2, 1], a[1::2, 2], b[1::2] = f, -dv, dv * z - f * y
    w = np.repeat(np.sqrt(weights), 2)
    return np.linalg.lstsq(a * w[:, None], b * w, rcond=None)[0]


def fit_to_image(detection, rest, camera, body=None, betas=None, min_visibility=0.5, start=None,
                 iterations=FIT_ITERATIONS, lifter=None):
    """Fit a body with rest joints `rest` (24, 3) to a Detection through `camera`; returns an
    ImageFit. body (a BodyModel, optional) and its betas give the surface points the face, heel,
    toe and finger keypoints stand for (without it only joints are fitted).

    The fit starts from the lifter's joints turned into a pose by IK-GAT (models.photo.lifter;
    where the lifter cannot lift the person, from the lift: pose_from_detection, MediaPipe's 3D
    directions turned into a pose by IK-GAT or SMPL-IK, turned as MediaPipe sees the person),
    moved to where its projection best matches the keypoints. A limb the start puts on the
    wrong side in depth holds the descent in a wrong valley: the keypoints alone cannot tell
    the two apart, and a second start from the lift, its end kept where it cost less, picked
    the wrong valley as often as the right one (the comment after LIFTER_SHARE). Then a damped
    Gauss-Newton descent
    (finite-difference Jacobian, every joint's rotation, the root's rotation and its 3D
    translation, depth included) minimises
    - each keypoint's distance in the image from its detection, over the person's box diagonal,
      weighted by the detector's visibility and by a robust Cauchy weight (a keypoint off by
      ROBUST_SCALE of the diagonal counts half, so one wrong keypoint cannot drag the body), and
    - the pose prior's max-mixture residuals (models.ik.pose_prior: how unlike real motion the
      pose is), weighted POSE_PRIOR_WEIGHT (0: not used), and
    - the turn of each joint away from the learned start pose: the prior, which decides what
      one image cannot (depth along the camera's ray, twist about a bone); PRIOR_SIGMA radians
      weigh as much as PRIOR_EQUALS of the diagonal in the image.
    - the depth of the nose and ears from the head joint away from MediaPipe's 3D face
      (FACE_DEPTH_WEIGHT times the joints' weight; not in a warm start);
    - each seen joint's depth (from the pelvis, along the camera's axis) away from where the
      photo's two readings put it on average: MediaPipe's 3D landmarks (what the person looks
      like) and the lifter's joints (models.photo.lifter: where in depth joints most likely
      are for keypoints laid out so, learned from motion capture), LIFTER_SHARE of the
      lifter's; DEPTH_SIGMA metres weigh as much as PRIOR_EQUALS of the diagonal.
    Knees and elbows are kept inside the joint ranges after every step
    (models.ik.refine.JOINT_LIMITS). A person with the back to the camera ends with the neck
    and head turned toward the pose prior's mean (BEHIND_DEG): the face's keypoints are then
    the detector's guesses. The body's size is its shape's: the depth comes from how
    large the person is in the image. SmplIkError when too little of the person is visible.

    start: None (the lift above), or a pose (local_rot (24, 3, 3), trans (3,)) in the camera's
    frame to start from instead, such as the fit of a video's previous frame (a warm start):
    no lift is solved, the prior pulls toward that pose, the depth term toward this
    detection's own readings (its 3D landmarks as body_targets, and the lifter's, as a cold
    fit's) and the robust scale starts narrow, so a few `iterations` (the most descent steps
    taken) suffice. The
    ImageFit's `start` is then a PhotoPose of method "warm" (that pose, and the detection's
    targets put at its pelvis).

    lifter: the lifter whose reading of the depths joins MediaPipe's (a PhotoLifter, or any
    callable taking its features; None: the shipped weights)."""
    from ..ik.refine import clamp_to_limits

    rest = np.asarray(rest, dtype=np.float64)
    warm = start is not None
    start = _warm_start(detection, rest, min_visibility, start) if warm else \
        pose_from_detection(detection, rest, min_visibility)
    keyed = None
    try:   # the lifter's reading, where it can lift this person
        keyed = _lifter_targets(detection, rest, camera, lifter)
    except SmplIkError:
        pass
    # where the descent begins: a warm start's pose, else the lifter's where it can lift the person
    begin = _lifter_pose(keyed, rest, start) if keyed is not None and not warm else start
    points, kept = _body_points(rest, body, betas)
    landmarks = np.array([KEYPOINTS[k][0] for k in kept])
    observed = np.asarray(detection.image_xy, dtype=np.float64)[landmarks]
    confidence = np.asarray(detection.visibility, dtype=np.float64)[landmarks]
    weight = np.array([KEYPOINTS[k][2] for k in kept]) * np.where(confidence >= MIN_CONFIDENCE, confidence, 0.0)
    weight[~np.isfinite(observed).all(axis=1)] = 0.0
    if np.count_nonzero(weight) < MIN_JOINTS:
        raise SmplIkError(f"cannot fit a body to this person: only {np.count_nonzero(weight)} keypoints were "
                          f"seen (at least {MIN_JOINTS} are needed)")
    x0, y0, x1, y1 = detection.bbox
    diagonal = max(float(np.hypot(x1 - x0, y1 - y0)), 1.0)

    prior_scale = PRIOR_EQUALS / PRIOR_SIGMA
    depth_scale = PRIOR_EQUALS / DEPTH_SIGMA
    seen = np.flatnonzero(start.confident)
    lifted = forward_kinematics(start.local_rot, rest, PARENTS, start.trans).positions
    if warm:   # the detection's own depths, about the start's pelvis
        lifted = np.where(np.isfinite(start.targets), start.targets, lifted)
    lifted_depth = lifted[seen, 2] - lifted[0, 2]
    if keyed is not None:   # and the lifter's
        lifted_depth = (1.0 - LIFTER_SHARE) * lifted_depth + LIFTER_SHARE * (keyed[seen, 2] - keyed[0, 2])

    def pose_scale_at(step):
        """The pose prior's scale at descent step `step` (from 1): it eases off as the fit
        settles, to PRIOR_FLOOR of it; a warm start has settled already."""
        return PRIOR_EQUALS * POSE_PRIOR_WEIGHT * (PRIOR_FLOOR if warm else max(PRIOR_FLOOR, 0.8 ** (step - 1)))

    def robust_scale_at(step):
        """The robust scale at step `step`: it starts wide (the start can be far off everywhere)
        and narrows to ROBUST_SCALE; a warm start is near already."""
        return ROBUST_SCALE * (1.0 if warm else max(1.0, 8.0 * 0.7 ** (step - 1)))

    face_depth = None
    if FACE_DEPTH_WEIGHT > 0 and not warm:
        names = [KEYPOINTS[k][1] for k in kept]
        rows = [names.index(n) for n in BODY_HEAD if n in names]
        mp_head = smpl_targets(detection, 0.0)[0][HEAD_JOINT]
        reading = np.asarray(detection.world, dtype=np.float64)[list(HEAD)][:, 2] - mp_head[2]
        if len(rows) == len(HEAD) and np.isfinite(reading).all():
            face_depth = (rows, reading)
    if POSE_PRIOR_WEIGHT > 0:
        from ..ik.pose_prior import load_pose_prior
        pose_prior = load_pose_prior()

    def residuals(local_b, trans_b, pose_scale):
        """(B, R) residuals of B candidate poses, and the 2D error (B, K) in diagonals."""
        fk_b = forward_kinematics(local_b, rest, PARENTS, trans_b)
        placed = points.positions(fk_b)
        uv = camera.project(placed)
        err = (uv - observed) / diagonal
        err = np.where(np.isfinite(err), err, 10.0)      # behind the camera: far off
        prior = matrix_to_axis_angle(start_t @ local_b[:, 1:]).reshape(len(local_b), -1) * prior_scale
        depth = (fk_b.positions[:, seen, 2] - fk_b.positions[:, :1, 2] - lifted_depth) * depth_scale
        extra = [prior, depth]
        if face_depth is not None:
            rows, reading = face_depth
            own = placed[:, rows, 2] - fk_b.positions[:, HEAD_JOINT, None, 2]
            extra.append((own - reading) * depth_scale * FACE_DEPTH_WEIGHT)
        if POSE_PRIOR_WEIGHT > 0:
            extra.append(pose_prior.residuals(local_b) * pose_scale)
        return err, np.concatenate(extra, axis=1)

    def total(err, prior, robust):
        r = np.concatenate([(err * np.sqrt(weight * robust)[:, None]).reshape(len(err), -1), prior], axis=1)
        return r, np.einsum("br,br->b", r, r)

    n = 3 * NUM_JOINTS + 3
    eye = np.eye(3)
    turns = axis_angle_to_matrix(STEP_EPS * eye)

    def descend(local, trans, first, last):
        """Damped Gauss-Newton steps `first`..`last` (the scales follow the step numbers) from
        local, trans: (local, trans, the 2D error (K, 2) in diagonals, the last step taken)."""
        damping = 1e-3
        pose_scale = pose_scale_at(first)
        err, prior = residuals(local[None], trans[None], pose_scale)
        taken = first - 1
        for taken in range(first, last + 1):
            if pose_scale_at(taken) != pose_scale:   # the current pose's cost at the new scale
                pose_scale = pose_scale_at(taken)
                err, prior = residuals(local[None], trans[None], pose_scale)
            dist = np.linalg.norm(err[0], axis=1)
            robust = 1.0 / (1.0 + (dist / robust_scale_at(taken)) ** 2)
            r0, cost = total(err, prior, robust)
            # candidates: each joint's rotation turned by STEP_EPS about each axis (the root in
            # the camera's frame, the others in their own), then the translation moved along each
            cand_local = np.repeat(local[None], n, axis=0)
            cand_trans = np.repeat(trans[None], n, axis=0)
            for j in range(NUM_JOINTS):
                for a in range(3):
                    c = 3 * j + a
                    cand_local[c, j] = turns[a] @ local[j] if j == 0 else local[j] @ turns[a]
            cand_trans[3 * NUM_JOINTS:] += STEP_EPS * eye
            r_c, _ = total(*residuals(cand_local, cand_trans, pose_scale), robust)
            jac = (r_c - r0[0]).T / STEP_EPS                          # (R, n)
            jtj, jtr = jac.T @ jac, jac.T @ r0[0]
            while True:
                step = -np.linalg.solve(jtj + damping * (np.diag(np.diag(jtj)) + 1e-9 * np.eye(n)), jtr)
                rot = axis_angle_to_matrix(step[:3 * NUM_JOINTS].reshape(NUM_JOINTS, 3))
                new_local = local @ rot
                new_local[0] = rot[0] @ local[0]
                new_local = clamp_to_limits(new_local)
                new_trans = trans + step[3 * NUM_JOINTS:]
                new_err, new_prior = residuals(new_local[None], new_trans[None], pose_scale)
                _, new_cost = total(new_err, new_prior, robust)
                if new_cost[0] < cost[0]:
                    break
                damping *= 10.0
                if damping > 1e6:
                    break
            if new_cost[0] >= cost[0]:
                break
            improvement = (cost[0] - new_cost[0]) / max(cost[0], 1e-12)
            local, trans, err, prior = new_local, new_trans, new_err, new_prior
            damping = max(damping / 10.0, 1e-6)
            if improvement < 1e-6:
                break
        return local, trans, err[0], taken

    # the start stands at the origin in SMPL's axes, turned as the camera sees it: its frame is
    # the camera's up to a translation
    local = clamp_to_limits(begin.local_rot)
    fk = forward_kinematics(local, rest, PARENTS, begin.trans)
    trans = begin.trans + _solve_root_translation(points.positions(fk), observed, weight, camera)
    start_t = np.swapaxes(begin.local_rot[1:], -1, -2)
    local, trans, err, taken = descend(local, trans, 1, int(iterations))

    turned = _head_turned_away(local, trans, rest)
    if turned is not local:   # the face's keypoints measured where the head now is
        local = turned
        err = residuals(local[None], trans[None], pose_scale_at(np.inf))[0][0]
    fk = forward_kinematics(local, rest, PARENTS, trans)
    error_px = np.full(len(KEYPOINTS), np.nan)
    fitted = weight > 0
    error_px[np.array(kept)[fitted]] = np.linalg.norm(err[fitted], axis=1) * diagonal
    return ImageFit(local_rot=local, trans=trans, joints=fk.positions, projected=camera.project(fk.positions),
                    camera=camera, confident=start.confident, keypoint_error_px=error_px,
                    keypoints=tuple(k[0] for k in KEYPOINTS), box_diagonal_px=diagonal, start=begin,
                    iterations=taken)


def facing_away_deg(joints):
    """Degrees between the chest's forward (the shoulders' left-to-right line crossed with the
    pelvis-to-neck line) and the direction from the chest to the camera, for joints (24, 3) in
    the camera's frame (camera at the origin): 0 facing the camera, 180 the back to it."""
    left, right = joints[JOINT_INDEX["left_shoulder"]], joints[JOINT_INDEX["right_shoulder"]]
    up = joints[JOINT_INDEX["neck"]] - joints[JOINT_INDEX["pelvis"]]
    chest = joints[JOINT_INDEX["spine3"]]
    return float(angle_deg(np.cross(left - right, up), -chest))


def _head_turned_away(local_rot, trans, rest):
    """local_rot with the neck and head turned toward the pose prior's mean as far as the body
    faces away from the camera (BEHIND_DEG)."""
    low, high = BEHIND_DEG
    away = facing_away_deg(forward_kinematics(local_rot, rest, PARENTS, trans).positions)
    share = float(np.clip((away - low) / (high - low), 0.0, 1.0))
    if share == 0.0:
        return local_rot
    from ..ik.pose_prior import load_pose_prior

    prior = load_pose_prior()
    share = share * share * (3.0 - 2.0 * share)     # eased: no sudden turn as a person turns around
    out = np.array(local_rot, copy=True)
    for joint in (JOINT_INDEX["neck"], JOINT_INDEX["head"]):
        toward = matrix_to_axis_angle(out[joint].T @ prior.mean_rotation(joint))
        out[joint] = out[joint] @ axis_angle_to_matrix(share * toward)
    return out


def _warm_start(detection, rest, min_visibility, pose):
    """The PhotoPose a warm start stands for: `pose` (local_rot, trans) as given, the joints
    the detection shows confident, and their body_targets (the detection's own 3D directions
    at the body's bone lengths) moved to the pose's pelvis. SmplIkError when too few joints
    are seen, as pose_from_detection."""
    local_rot, trans = (np.asarray(a, dtype=np.float64) for a in pose)
    if local_rot.shape != (NUM_JOINTS, 3, 3) or trans.shape != (3,):
        raise SmplIkError(f"a warm start is local_rot (24, 3, 3) and trans (3,); got {local_rot.shape}, {trans.shape}")
    positions, confident = _seen_targets(detection, min_visibility)
    placed = body_targets(positions, np.ones(NUM_JOINTS, dtype=bool), rest)
    pelvis = forward_kinematics(local_rot, rest, PARENTS, trans).positions[0]
    targets = np.where(confident[:, None], placed - placed[0] + pelvis, np.nan)
    return PhotoPose(local_rot=local_rot, trans=trans, method="warm", confident=confident, targets=targets)


@dataclass(frozen=True, eq=False)
class PhotoScene:
    """People fitted in one photo, placed in one frame in SMPL's axes (Y up, metres): the first
    person's body frame, where they stand as their body stands at rest (pelvis above the origin,
    the lowest ankle or foot joint at its rest height, so the body's own floor is the floor;
    the others on the same floor as far as the fit's depth allows): `poses`, one
    (local_rot (24, 3, 3), trans (3,)) per person, in the order of `fits`; the camera at
    `camera_position` (3,) turned by `camera_rotation` (3, 3) (world from camera frame,
    models/photo/camera.py); `tilt_deg` how far the camera was found tilted from level."""

    poses: tuple
    camera_rotation: np.ndarray
    camera_position: np.ndarray
    tilt_deg: float
    fits: tuple


FLOOR_TRUST = 0.25   # square metres: feet this far apart (0.5 m) weigh as much as the people's own up


SHINS = tuple((JOINT_INDEX[f"{side}_ankle"], JOINT_INDEX[f"{side}_knee"]) for side in ("left", "right"))
# Both knees and both hips bent further than this (degrees from straight): the person sits, and
# a seat, not the feet, carries the weight
SEATED_DEG = 60.0


def _bent(joints, a, b, c):
    """Degrees the chains a-b-c (joint numbers) of joints (..., 24, 3) bend at b (0: straight)."""
    return 180.0 - angle_deg(joints[..., a, :] - joints[..., b, :], joints[..., c, :] - joints[..., b, :])


def seated(joints):
    """Whether poses' joints (..., 24, 3) sit: both knees and both hips bent past SEATED_DEG (the
    hip's bend between the trunk, spine3 to hip, and the thigh); (...) bool."""
    knees = np.minimum(*(_bent(joints, JOINT_INDEX[f"{s}_hip"], JOINT_INDEX[f"{s}_knee"], JOINT_INDEX[f"{s}_ankle"])
                         for s in ("left", "right")))
    hips = np.minimum(*(_bent(joints, JOINT_INDEX["spine3"], JOINT_INDEX[f"{s}_hip"], JOINT_INDEX[f"{s}_knee"])
                        for s in ("left", "right")))
    return (knees > SEATED_DEG) & (hips > SEATED_DEG)


def standing_up(local_rot, trans, rest):
    """(..., 3) unit: which way is up for people posed local_rot (..., 24, 3, 3), trans (..., 3)
    on rest joints (24, 3), in the poses' frame (the camera's, for a fit). A body balances over
    its feet: up runs from the feet (the ankle and ball joints' mean) to the centre of mass (the
    open body's segment masses scaled to `rest`, models.ik.cost), so a walker's slanted shins,
    a boxer's bent knees or a bow do not tilt it. Seated (`seated`) a seat carries the weight
    and the shins stand upright: their mean direction, ankle to knee. Legs the photo did not
    show count as the fit placed them: on pictures rendered from motion capture with a leg
    MediaPipe was unsure of, that put the up 9.9 degrees off on average where the pelvis's up
    was 33.4 off. scripts/benchmark_photo.py's up_deg measures it."""
    from ..ik.cost import centre_of_mass, default_parts

    fk = forward_kinematics(local_rot, rest, PARENTS, trans)
    joints = fk.positions
    feet = unit(centre_of_mass(fk, default_parts(rest).segments) - joints[..., list(FOOT_JOINTS), :].mean(axis=-2))
    shins = unit(sum(unit(joints[..., k, :] - joints[..., a, :]) for a, k in SHINS))
    return np.where(seated(joints)[..., None], shins, feet)


def photo_up(fit, rest):
    """(3,) unit: which way is up for one ImageFit on rest joints (24, 3), in the camera's frame.
    standing_up where the photo shows both legs (both knees and ankles `confident`); else the
    camera's own up, a camera held level: where MediaPipe is unsure of a leg it often puts it
    on the other one (bus.jpg's man cut off by the picture's edge, his feet together and
    slanting, came out 21.5 degrees off the level camera), and the feet then say nothing
    sure of the floor. On pictures rendered from motion capture (scripts/render_photo_set.py,
    the camera 10 degrees from level) the 49 of 276 with a leg unsure were 9.7 degrees off
    along the feet, 10 with the camera's up."""
    if np.asarray(fit.confident)[np.ravel(SHINS)].all():
        return standing_up(fit.local_rot, fit.trans, rest)
    return np.array([0.0, 1.0, 0.0])


def photo_scene(fits, rest_joints):
    """Place ImageFits of one photo (each person's rest joints in `rest_joints`, one (24, 3)
    each) in a PhotoScene. The camera's tilt is taken from the people, who stand on their feet:
    the world's up is the mean of each one's up (`photo_up`: from their feet to their centre
    of mass, or along their shins when they sit; the camera's own up where the photo does not
    surely show both legs), weighted by their box diagonals, and
    the camera is turned from its own frame by the shortest rotation that makes that up the
    world's (a person bent forward or walking keeps a level camera level). With two people
    or more, that up is turned toward the one that puts every person's lowest foot on one plane,
    the more so the further apart they stand (FLOOR_TRUST). The floor is at
    the first person's lowest ankle or foot joint less its height at rest; every person keeps the
    depth the fit found from their size in the image, so the people stand where the camera sees
    them, nearer or further (a person's own floor may differ by the fit's depth error)."""
    fits, rests = tuple(fits), [np.asarray(r, dtype=np.float64) for r in rest_joints]
    if not fits:
        raise SmplIkError("no people to place")
    weights = np.array([f.box_diagonal_px for f in fits])
    up = unit(sum(w * photo_up(f, r) for w, f, r in zip(weights, fits, rests)))
    if len(fits) > 1:   # people stand on one floor: the up that puts their feet on one plane
        lowest = np.array([f.joints[list(FOOT_JOINTS)][np.argmin(f.joints[list(FOOT_JOINTS)] @ up)] for f in fits])
        spread = lowest[1:] - lowest[0]
        up = unit(np.linalg.solve(spread.T @ spread + FLOOR_TRUST * np.eye(3), FLOOR_TRUST * up))
    turn = shortest_arc(up, np.array([0.0, 1.0, 0.0]))
    first, rest0 = fits[0], rests[0]
    joints = first.joints @ turn.T
    feet = list(FOOT_JOINTS)
    shift = -np.array([joints[0, 0], joints[feet, 1].min() - rest0[feet, 1].min(), joints[0, 2]])
    poses = []
    for f, rest in zip(fits, rests):
        local = f.local_rot.copy()
        local[0] = turn @ local[0]
        # the root turns about the rest pelvis: trans moves with the pelvis
        pelvis = turn @ (rest[0] + f.trans) + shift
        poses.append((local, pelvis - rest[0]))
    tilt = float(np.degrees(np.arccos(np.clip(up[1], -1.0, 1.0))))
    return PhotoScene(poses=tuple(poses), camera_rotation=turn, camera_position=shift, tilt_deg=tilt, fits=fits)
