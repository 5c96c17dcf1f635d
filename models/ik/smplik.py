"""SMPL-IK in numpy: a full body pose from any set of effectors, in one network pass.

An effector pins one SMPL joint: its position, its world rotation, or a look-at (a local
axis of the joint that should point at a target), with a weight. As in ProtoRes, any number
of effectors in any order is one input; here each is written into its joint's slot for its
kind (the weighted mean where several share one, so a repeated effector counts once; weight
zero marks an empty slot), so the network sees the whole body at once: 24 joints x 3 kinds,
plus the body's rest joints. A residual MLP turns that into 24 world rotations (6D; the local
ones follow) and the root position. Conditioning on the rest joints lets one model serve the
open body, a user's SMPL file and a shape-inverted custom rig. Positions are taken relative
to the weighted mean of the filled positional slots, so the network is translation-invariant.

`refine` (models/refine.py) then makes the effectors exact with a few damped least-squares
steps on forward kinematics.
"""
import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ..core.errors import SmplIkError
from ..core.kinematics import forward_kinematics, world_to_local
from .nn import WEIGHTS_DIR, fold_norms, linear, load_weights, normalise
from ..core.rotations import rot6d_to_matrix
from ..core.skeleton import JOINT_INDEX, JOINT_NAMES, MIRROR, NUM_JOINTS, PARENTS, joint_index

ARCH = "smplik-v2"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "smplik.npz"
KINDS = ("position", "rotation", "look_at")
_KIND_INDEX = {k: i for i, k in enumerate(KINDS)}
NUM_FEATURES = 3 + 3 + 6 + 3 + 1   # kind one-hot, position, rotation 6D, look-at axis, weight
MAX_EFFECTORS = 32


@dataclass(frozen=True)
class Effector:
    """A constraint on one SMPL joint (body frame: metres, Y up).

    kind 'position': target (3,) position; 'rotation': target (3, 3) world rotation;
    'look_at': target (3,) point that the joint's local `axis` (3,) should point at.
    weight in (0, 1]: how much it matters next to the others.
    """

    joint: str
    kind: str
    target: tuple
    axis: tuple = (0.0, 0.0, 1.0)
    weight: float = 1.0


@dataclass(frozen=True)
class IkSolution:
    """A solved pose: local rotations (24, 3, 3) and root translation (3,) for a body with
    rest joints (24, 3); `positions` (24, 3) are computed on first use."""

    local_rot: np.ndarray
    trans: np.ndarray
    rest: np.ndarray

    @cached_property
    def positions(self):
        return forward_kinematics(self.local_rot, self.rest, PARENTS, self.trans).positions


def encode_effectors(effectors):
    """Effectors -> (joints (E,), features (E, 16), positional (E,) bool). Checks every value."""
    if not effectors:
        raise SmplIkError("no effectors: pin at least one joint")
    if len(effectors) > MAX_EFFECTORS:
        raise SmplIkError(f"{len(effectors)} effectors; at most {MAX_EFFECTORS} are supported")
    joints = np.zeros(len(effectors), dtype=np.int64)
    feats = np.zeros((len(effectors), NUM_FEATURES))
    positional = np.zeros(len(effectors), dtype=bool)
    for n, e in enumerate(effectors):
        j = joint_index(e.joint) if isinstance(e.joint, str) else int(e.joint)
        if not 0 <= j < NUM_JOINTS:
            raise SmplIkError(f"effector {n}: joint index {j} is not an SMPL joint")
        kind = _KIND_INDEX.get(e.kind)
        if kind is None:
            raise SmplIkError(f"effector on {e.joint}: unknown kind {e.kind!r}; use {', '.join(KINDS)}")
        target = np.asarray(e.target, dtype=np.float64)
        weight = float(e.weight)
        if not (np.isfinite(target).all() and math.isfinite(weight)
                and (kind != 2 or np.isfinite(np.asarray(e.axis, dtype=np.float64)).all())):
            raise SmplIkError(f"effector on {e.joint}: target, axis and weight must be finite numbers")
        if not 0 < weight <= 1:
            raise SmplIkError(f"effector on {e.joint}: weight must be in (0, 1], got {weight}")
        joints[n] = j
        feats[n, kind] = 1.0
        feats[n, 15] = weight
        if kind == 1:
            if target.shape != (3, 3) or abs(np.linalg.det(target) - 1) > 1e-3:
                raise SmplIkError(f"effector on {e.joint}: a rotation target must be a 3x3 rotation matrix")
            feats[n, 6:9], feats[n, 9:12] = target[:, 0], target[:, 1]    # 6D: the first two columns
            continue
        if target.shape != (3,):
            raise SmplIkError(f"effector on {e.joint}: a {e.kind} target must be a 3D point")
        feats[n, 3:6] = target
        positional[n] = True
        if kind == 2:
            axis = np.asarray(e.axis, dtype=np.float64)
            length = np.linalg.norm(axis) if axis.shape == (3,) else 0.0
            if length < 1e-9:
                raise SmplIkError(f"effector on {e.joint}: a look-at needs a non-zero local axis")
            feats[n, 12:15] = axis / length
    return joints, feats, positional


SLOT = 18   # per joint: position (3) + weight, rotation 6D (6) + weight, look-at target (3), axis (3) + weight
_SLOT_WEIGHTS = [3, 10, 17]
_IDENTITY_6D = np.array([1.0, 0, 0, 0, 1.0, 0])


def expected_shapes(cfg):
    w, h = cfg["width"], cfg["hidden"]
    shapes = {"inp.weight": (w, NUM_JOINTS * (SLOT + 3)), "inp.bias": (w,),
              "out_norm.weight": (w,), "out_norm.bias": (w,),
              "out.weight": (NUM_JOINTS * 6 + 3, w), "out.bias": (NUM_JOINTS * 6 + 3,)}
    for i in range(cfg["blocks"]):
        shapes.update({f"blocks.{i}.norm.weight": (w,), f"blocks.{i}.norm.bias": (w,),
                       f"blocks.{i}.fc1.weight": (h, w), f"blocks.{i}.fc1.bias": (h,),
                       f"blocks.{i}.fc2.weight": (w, h), f"blocks.{i}.fc2.bias": (w,)})
    return shapes


# Slot column c holds effector-row column _SRC[c] times the weight of kind _KIND[c]; the
# weight columns read the kind's one-hot (1 for that kind), so they hold the weight itself.
_SRC = np.array([3, 4, 5, 0, 6, 7, 8, 9, 10, 11, 1, 3, 4, 5, 12, 13, 14, 2])
_KIND = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2])


def network_input(joints, feats, mask, rest):
    """(B, 24 * 21) network input and the centre (B, 3) it is relative to.

    Each joint's slots hold the weighted mean of its effectors of each kind, with their weights
    summed and capped at 1, and its rest offset from the pelvis. Positions and look-at targets
    are taken relative to the weighted mean of the filled position and look-at slots."""
    b = len(joints)
    kind_weight = feats[..., :3] * (feats[..., 15] * mask)[..., None]        # (B, E, 3)
    rows = feats[..., _SRC] * kind_weight[..., _KIND]                        # (B, E, 18)
    slots = np.zeros((b, NUM_JOINTS, SLOT + 3), np.float32)   # the network runs in float32
    every = np.arange(b)
    for e in range(joints.shape[1]):   # one effector of each pose at a time: no index repeats within a step
        slots[every, joints[:, e], :SLOT] += rows[:, e]
    wsum = slots[..., _SLOT_WEIGHTS]                                         # (B, 24, 3)
    slots[..., :SLOT] /= np.maximum(wsum, 1e-6)[..., _KIND]
    w = slots[..., _SLOT_WEIGHTS] = np.minimum(wsum, 1.0)
    wp = w[..., 0::2]                                                        # position and look-at weights
    weighted = slots[..., 0:3] * wp[..., :1] + slots[..., 11:14] * wp[..., 1:]
    centre = weighted.sum(1) / np.maximum(wp.sum((1, 2)), 1e-9)[:, None]
    filled = wp > 0
    slots[..., 0:3] -= centre[:, None] * filled[..., :1]
    slots[..., 11:14] -= centre[:, None] * filled[..., 1:]
    slots[..., SLOT:] = rest - rest[:, :1]
    return slots.reshape(b, -1), centre


# Mirroring a problem left-right (x -> -x in the body frame) swaps each joint's slots with its
# mirror joint's and flips signs: points and look-at axes M v, rotations M R M (first two
# columns -M r0, M r1), with M = diag(-1, 1, 1).
_ROT_SIGN = np.array([1.0, -1, -1, -1, 1, 1])
_SLOT_SIGN = np.concatenate([[-1.0, 1, 1, 1], _ROT_SIGN, [1.0, -1, 1, 1, -1, 1, 1, 1, -1, 1, 1]]).astype(np.float32)
_OUT_SIGN = np.concatenate([np.tile(_ROT_SIGN, NUM_JOINTS), [-1.0, 1, 1]]).astype(np.float32)
_MIRROR_OUT = np.concatenate([np.repeat(np.array(MIRROR) * 6, 6) + np.tile(np.arange(6), NUM_JOINTS),
                              NUM_JOINTS * 6 + np.arange(3)])


def mirror_input(x):
    """(B, 504) network input -> the input of the left-right mirrored problem."""
    return (x.reshape(len(x), NUM_JOINTS, SLOT + 3)[:, list(MIRROR)] * _SLOT_SIGN).reshape(len(x), -1)


def mirror_output(out):
    """(B, 147) raw output for a mirrored problem -> the output for the original one (world
    rotations M R M of the mirror joints, root x negated; the 6D identity offset is its own mirror)."""
    return out[:, _MIRROR_OUT] * _OUT_SIGN


class SmplIk:
    """The numpy SMPL-IK network. `SmplIk.load(path)` checks the file's architecture.

    symmetric (default): every problem is solved as given and mirrored left-right, and the
    two answers are averaged, so mirrored effectors give exactly the mirrored pose (and the
    held-out error drops by about 1 mm, 5%, at twice the network's cost; docs/learned_ik.md)."""

    def __init__(self, params, config, symmetric=True):
        self.config = config
        self.symmetric = symmetric
        self.p = fold_norms(params, [(f"blocks.{i}.norm", f"blocks.{i}.fc1") for i in range(config["blocks"])]
                            + [("out_norm", "out")])

    @classmethod
    def load(cls, path=DEFAULT_WEIGHTS, symmetric=True):
        return cls(*load_weights(path, ARCH, expected_shapes), symmetric=symmetric)

    def network(self, x):
        """(B, 504) network input -> (B, 24*6 + 3) raw outputs, in float32."""
        p = self.p
        h = linear(x.astype(np.float32, copy=False), p, "inp")
        for i in range(self.config["blocks"]):
            hidden = linear(normalise(h), p, f"blocks.{i}.fc1")
            h += linear(np.maximum(hidden, 0.0, out=hidden), p, f"blocks.{i}.fc2")
        return linear(normalise(h), p, "out")

    def predict(self, joints, feats, mask, positional, rest):
        """Batched solve from encoded effectors: joints (B, E) int, feats (B, E, 16), mask (B, E)
        1 for real effectors (0 pads), positional (B, E), rest (B, 24, 3) -> local rotations
        (B, 24, 3, 3), trans (B, 3)."""
        x, centre = network_input(joints, feats, mask, rest)
        if self.symmetric:
            both = self.network(np.concatenate([x, mirror_input(x)]))
            out = both[:len(x)]
            out += mirror_output(both[len(x):])
            out *= 0.5
        else:
            out = self.network(x)
        out = out.astype(np.float64)   # orthonormal to float64 precision: the refinement needs it
        rot6 = out[:, :NUM_JOINTS * 6].reshape(-1, NUM_JOINTS, 6) + _IDENTITY_6D
        world = rot6d_to_matrix(rot6)   # the network predicts world rotations: errors do not pile up down the chains
        local = world_to_local(world)
        trans = centre + out[:, NUM_JOINTS * 6:] - rest[:, 0]
        return local, trans

    def solve(self, effectors, rest_joints, refine=True):
        """Pose for a list of Effectors on a body with rest joints (24, 3)."""
        joints, feats, positional = encode_effectors(effectors)
        rest = np.asarray(rest_joints, dtype=np.float64)[None]
        local, trans = self.predict(joints[None], feats[None], np.ones((1, len(joints))), positional[None], rest)
        local, trans = local[0], trans[0]
        if refine:
            from .refine import refine_pose

            local, trans = refine_pose(local, trans, rest[0], effectors)
        return IkSolution(local_rot=local, trans=trans, rest=rest[0])

    def solve_positions(self, joints, targets, rest_joints):
        """Many poses at once from the same joints pinned by position (no refinement), for
        batch scripts: joints, E names or indices; targets (B, E, 3); rest joints (24, 3) or
        (B, 24, 3) -> local rotations (B, 24, 3, 3), trans (B, 3)."""
        index = np.array([joint_index(j) if isinstance(j, str) else int(j) for j in joints], dtype=np.int64)
        targets = np.asarray(targets, dtype=np.float64)
        if len(index) == 0:
            raise SmplIkError("no effectors: pin at least one joint")
        if targets.ndim != 3 or targets.shape[1:] != (len(index), 3):
            raise SmplIkError(f"targets must have shape (poses, {len(index)}, 3), got {targets.shape}")
        if np.any((index < 0) | (index >= NUM_JOINTS)):
            raise SmplIkError(f"joint indices must be in 0-{NUM_JOINTS - 1}, got {index.tolist()}")
        if not np.all(np.isfinite(targets)):
            bad = np.argwhere(~np.isfinite(targets))[0]
            raise SmplIkError(f"pose {bad[0]}: the target of {JOINT_NAMES[index[bad[1]]]} is not a finite number")
        b, e = targets.shape[:2]
        feats = np.zeros((b, e, NUM_FEATURES))
        feats[..., 0] = feats[..., 15] = 1.0
        feats[..., 3:6] = targets
        rest = np.broadcast_to(np.asarray(rest_joints, dtype=np.float64), (b, NUM_JOINTS, 3))
        ones = np.ones((b, e))
        return self.predict(np.broadcast_to(index, (b, e)), feats, ones, ones, rest)


SIX_POINTS = ("pelvis", "neck", "left_wrist", "right_wrist", "left_ankle", "right_ankle")
SIX_POINT_JOINTS = tuple(JOINT_INDEX[n] for n in SIX_POINTS)


def six_point_effectors(positions):
    """SMPL-IK's benchmark configuration: pelvis, neck, wrists, ankles (positions)."""
    return [Effector(n, "position", tuple(positions[JOINT_INDEX[n]])) for n in SIX_POINTS]


@lru_cache(maxsize=2)
def load_smplik(path=str(DEFAULT_WEIGHTS)):
    return SmplIk.load(path)
