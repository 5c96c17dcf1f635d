"""MediaPipe's keypoint tables: which of its 33 landmarks stand for which SMPL joints and body
points, and the body points (joints or the open body's surface landmarks) the photo fit places.

Landmark numbers are MediaPipe's; left and right are the person's.
"""
import numpy as np

from ..core.kinematics import AttachedPoints
from ..core.rotations import unit
from ..core.skeleton import JOINT_INDEX, NUM_JOINTS

NOSE, L_EAR, R_EAR = 0, 7, 8
L_SHOULDER, R_SHOULDER, L_HIP, R_HIP = 11, 12, 23, 24
TRUNK_LANDMARKS = (L_SHOULDER, R_SHOULDER, L_HIP, R_HIP)
# SMPL joints that are a landmark itself.
DIRECT = {"left_hip": 23, "right_hip": 24, "left_knee": 25, "right_knee": 26,
          "left_ankle": 27, "right_ankle": 28, "left_shoulder": 11, "right_shoulder": 12,
          "left_elbow": 13, "right_elbow": 14, "left_wrist": 15, "right_wrist": 16}
# SMPL joints placed in the trunk frame of the hips and shoulders.
TRUNK = ("pelvis", "spine1", "spine2", "spine3", "neck", "left_collar", "right_collar")
MP_FOOT_KEYPOINTS = {"left_foot": (27, 29, 31), "right_foot": (28, 30, 32)}   # ankle, heel, toe tip
MP_HAND_KEYPOINTS = {"left_hand": (19, 17), "right_hand": (20, 18)}          # index, pinky knuckles
MP_HEAD_KEYPOINTS = (L_EAR, R_EAR, NOSE)
# The open body's points that stand for MediaPipe's (same order as MP_FOOT_KEYPOINTS / MP_HEAD_KEYPOINTS).
BODY_FOOT_LANDMARKS = {"left_foot": ("left_ankle", "LHeel", "LBigToe"),
                       "right_foot": ("right_ankle", "RHeel", "RBigToe")}
BODY_HEAD_LANDMARKS = ("lear", "rear", "nose")


def _landmarks_of_joint():
    """joint index -> MediaPipe landmarks its rule reads."""
    used = {}
    for name, lm in DIRECT.items():
        used[JOINT_INDEX[name]] = (lm,)
    for name in TRUNK:
        used[JOINT_INDEX[name]] = TRUNK_LANDMARKS
    for table in (MP_FOOT_KEYPOINTS, MP_HAND_KEYPOINTS):
        for name, lms in table.items():
            used[JOINT_INDEX[name]] = lms
    used[JOINT_INDEX["head"]] = MP_HEAD_KEYPOINTS
    assert sorted(used) == list(range(NUM_JOINTS))
    return tuple(used[j] for j in range(NUM_JOINTS))


LANDMARKS_OF_JOINT = _landmarks_of_joint()   # (24,): the landmarks each SMPL joint's rule reads

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

# MediaPipe's index points lie on the knuckles, not the finger tips (docs/training_log.md,
# "Index knuckles"). Body landmark -> (wrist, hand joint, middle finger tip).
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


def body_points(rest, body, betas):
    """(AttachedPoints for KEYPOINTS' body points, keypoint rows kept) on a body with rest
    joints `rest` (24, 3), metres; body a BodyModel (None: joints only) with betas (None:
    zeros). A joint is itself (no offset); a surface landmark follows the joint that moves its
    vertex most, at the offset it has in the rest pose; an index knuckle (KNUCKLES) follows the
    hand joint. A landmark the body file lacks (a user's SMPL file) is left out."""
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
