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
from ..core.rotations import unit
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
    (all joints seen) or "smplik" (some joints guessed); confident: (24,) bool, the joints
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


def pose_from_detection(detection, rest, min_visibility=0.5):
    """Solve a body's pose from a detection. rest: (24, 3) the body's rest joints.

    IK-GAT when all 24 joints are confident, else SMPL-IK on the confident ones (at least 4).
    The result stands with its pelvis at x = z = 0 and its lowest ankle/foot joint at the rest
    pose's lowest ankle/foot height. Returns PhotoPose.
    """
    rest = np.asarray(rest, dtype=np.float64)
    positions, confident = smpl_targets(detection, min_visibility)
    count = int(confident.sum())
    if count < MIN_JOINTS:
        raise SmplIkError(f"cannot pose a body from this person: only {count} joints were visible "
                          f"(at least {MIN_JOINTS} are needed); try a photo showing more of the body "
                          f"or a lower minimum visibility")
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
        # little, instead of one pin giving way for all
        solution = load_smplik().solve(effectors, rest, SolveOptions(refine=RefineOptions(give_way=False)))
        local_rot, trans = solution.local_rot, np.asarray(solution.trans, dtype=np.float64)
        method = "smplik"
    posed = forward_kinematics(local_rot, rest, PARENTS, trans).positions
    shift = np.array([-posed[0, 0],
                      rest[list(FOOT_JOINTS), 1].min() - posed[list(FOOT_JOINTS), 1].min(),
                      -posed[0, 2]])
    return PhotoPose(local_rot=local_rot, trans=trans + shift, method=method,
                     confident=confident, targets=targets + shift)
