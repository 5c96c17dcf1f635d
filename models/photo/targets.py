"""A detected person's 33 MediaPipe landmarks as targets for SMPL's 24 joints (`smpl_targets`),
and those targets moved onto a body's bone lengths (`body_targets`).

The rules (MediaPipe numbers in brackets, left/right are the person's; models.photo.keypoints):
- hips, knees, ankles, shoulders, elbows, wrists: the landmark itself (23/24, 25/26, 27/28,
  11/12, 13/14, 15/16); MediaPipe's hip landmarks lie about at the hip joints.
- the trunk (pelvis, spine1-3, neck, collars) comes from the hips and shoulders: a trunk frame
  with its origin between the hips, "up" toward the point between the shoulders, "left" from
  the right to the left hip (low joints) or shoulder (high joints, blended by height), scaled
  by the hip-to-shoulder distance. Each trunk joint keeps the place it has in that frame on the
  open body at rest (MediaPipe has no landmarks on the spine: a bent back is not seen).
- head (0, 7, 8): the same combination of both ears and the nose that the open body's head
  joint is of its ear and nose points (in a frame built from the three points).
- foot, SMPL's joint at the ball of the foot (27/29/31, 28/30/32): the same combination of
  ankle, heel and toe tip that the open body's foot joint is of its ankle, heel and big toe.
- hand, SMPL's joint at the base of the middle finger (17/19, 18/20): a third of the way from
  the index knuckle to the pinky knuckle.
A joint is confident when every landmark its rule reads has visibility >= min_visibility.
"""
import functools

import numpy as np

from ..body.model import load_body_model
from ..core.errors import SmplIkError
from ..core.rotations import unit
from ..core.skeleton import JOINT_INDEX, NUM_JOINTS, PARENTS
from .detect import NUM_LANDMARKS
from .keypoints import (BODY_FOOT_LANDMARKS, BODY_HEAD_LANDMARKS, DIRECT, L_HIP, L_SHOULDER, LANDMARKS_OF_JOINT,
                        MP_FOOT_KEYPOINTS, MP_HAND_KEYPOINTS, MP_HEAD_KEYPOINTS, R_HIP, R_SHOULDER, TRUNK)


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
    body = load_body_model()
    rest = body.rest_joints(np.zeros(10))
    verts = body.v_template
    missing = [n for n in BODY_HEAD_LANDMARKS + BODY_FOOT_LANDMARKS["left_foot"][1:]
               + BODY_FOOT_LANDMARKS["right_foot"][1:] if n not in body.landmarks]
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

    head = triangle_coords("head", BODY_HEAD_LANDMARKS)
    feet = {name: triangle_coords(name, names) for name, names in BODY_FOOT_LANDMARKS.items()}
    return blend, trunk_coords, head, feet


def smpl_targets(detection, min_visibility=0.5):
    """SMPL joint positions from a detection, by the rules in the module docstring.

    Returns (positions (24, 3) metres in SMPL's frame at the detection's scale, confident
    (24,) bool: every landmark the joint's rule reads has visibility >= min_visibility).
    SmplIkError when the detection does not hold 33 landmarks.
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
    a, b, c = w[list(MP_HEAD_KEYPOINTS)]
    pos[JOINT_INDEX["head"]] = a + _triangle_basis(a, b, c) @ head
    for name, lms in MP_FOOT_KEYPOINTS.items():
        a, b, c = w[list(lms)]
        pos[JOINT_INDEX[name]] = a + _triangle_basis(a, b, c) @ feet[name]
    for name, (index, pinky) in MP_HAND_KEYPOINTS.items():
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
    zero-length) keeps its rest direction. Returns (24, 3). SmplIkError for other shapes.
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
