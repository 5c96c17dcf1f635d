"""SMPL-IK in numpy: a full body pose from any set of effectors, in one network pass.

An effector pins one SMPL joint: its position, its world rotation, or a look-at (a local
axis of the joint that should point at a target), with a weight. The network follows
ProtoRes: each effector is encoded alone, the encodings are averaged into a prototype (so any
number of effectors, in any order, works), a second pass refines each encoding with the
prototype, and a decoder turns the final prototype into 24 local rotations (6D) and the root
position. It is conditioned on the body's rest joints, so one model serves the open body, a
user's SMPL file and a shape-inverted custom rig. Positions are taken relative to the mean
of the positional targets, so the network is translation-invariant.

`refine` (models/refine.py) then makes the effectors exact with a few damped least-squares
steps on forward kinematics.
"""
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from .errors import SmplIkError
from .kinematics import forward_kinematics
from .nn import WEIGHTS_DIR, layer_norm, linear, load_weights
from .rotations import matrix_to_rot6d, rot6d_to_matrix, unit
from .skeleton import JOINT_INDEX, NUM_JOINTS, PARENTS, joint_index

ARCH = "smplik-v1"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "smplik.npz"
KINDS = ("position", "rotation", "look_at")
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
        if e.kind not in KINDS:
            raise SmplIkError(f"effector on {e.joint}: unknown kind {e.kind!r}; use {', '.join(KINDS)}")
        target = np.asarray(e.target, dtype=np.float64)
        axis = np.asarray(e.axis, dtype=np.float64)
        weight = float(e.weight)
        if not (np.all(np.isfinite(target)) and np.all(np.isfinite(axis)) and np.isfinite(weight)):
            raise SmplIkError(f"effector on {e.joint}: target, axis and weight must be finite numbers")
        if not 0 < weight <= 1:
            raise SmplIkError(f"effector on {e.joint}: weight must be in (0, 1], got {weight}")
        joints[n] = j
        feats[n, KINDS.index(e.kind)] = 1.0
        feats[n, 15] = weight
        if e.kind == "rotation":
            if target.shape != (3, 3) or abs(np.linalg.det(target) - 1) > 1e-3:
                raise SmplIkError(f"effector on {e.joint}: a rotation target must be a 3x3 rotation matrix")
            feats[n, 6:12] = matrix_to_rot6d(target)
        else:
            if target.shape != (3,):
                raise SmplIkError(f"effector on {e.joint}: a {e.kind} target must be a 3D point")
            feats[n, 3:6] = target
            positional[n] = True
            if e.kind == "look_at":
                if axis.shape != (3,) or np.linalg.norm(axis) < 1e-9:
                    raise SmplIkError(f"effector on {e.joint}: a look-at needs a non-zero local axis")
                feats[n, 12:15] = unit(axis)
    return joints, feats, positional


def expected_shapes(cfg):
    d, h, dd, dh = cfg["dim"], cfg["hidden"], cfg["dec_dim"], cfg["dec_hidden"]
    shapes = {"embed": (NUM_JOINTS, d), "inp.weight": (d, NUM_FEATURES), "inp.bias": (d,),
              "shape.weight": (d, NUM_JOINTS * 3), "shape.bias": (d,),
              "mix.weight": (d, d), "mix.bias": (d,),
              "dec_in.weight": (dd, 2 * d), "dec_in.bias": (dd,),
              "out_norm.weight": (dd,), "out_norm.bias": (dd,),
              "out.weight": (NUM_JOINTS * 6 + 3, dd), "out.bias": (NUM_JOINTS * 6 + 3,)}

    def block(prefix, width, hidden):
        shapes.update({f"{prefix}.norm.weight": (width,), f"{prefix}.norm.bias": (width,),
                       f"{prefix}.fc1.weight": (hidden, width), f"{prefix}.fc1.bias": (hidden,),
                       f"{prefix}.fc2.weight": (width, hidden), f"{prefix}.fc2.bias": (width,)})

    for stage in ("enc1", "enc2"):
        for i in range(cfg["enc_blocks"]):
            block(f"{stage}.{i}", d, h)
    for i in range(cfg["dec_blocks"]):
        block(f"dec.{i}", dd, dh)
    return shapes


def _block(x, p, prefix):
    hidden = linear(layer_norm(x, p, prefix + ".norm"), p, prefix + ".fc1")
    return x + linear(np.maximum(hidden, 0.0, out=hidden), p, prefix + ".fc2")


class SmplIk:
    """The numpy SMPL-IK network. `SmplIk.load(path)` checks the file's architecture."""

    def __init__(self, params, config):
        self.p, self.config = params, config

    @classmethod
    def load(cls, path=DEFAULT_WEIGHTS):
        return cls(*load_weights(path, ARCH, expected_shapes))

    def network(self, joints, feats, mask, rest):
        """Batched pass. joints (B, E) int, feats (B, E, 16) (positions already centred),
        mask (B, E) 1 for real effectors, rest (B, 24, 3) -> (B, 24*6 + 3) raw outputs."""
        p, cfg = self.p, self.config
        f32 = np.float32
        shape = linear((rest - rest[:, :1]).reshape(len(rest), -1).astype(f32), p, "shape")  # (B, d)
        tok = linear(feats.astype(f32), p, "inp") + p["embed"][joints] + shape[:, None]
        w = (mask / np.maximum(mask.sum(1, keepdims=True), 1))[..., None].astype(f32)
        for i in range(cfg["enc_blocks"]):
            tok = _block(tok, p, f"enc1.{i}")
        proto = (tok * w).sum(1)
        tok = tok + linear(proto, p, "mix")[:, None]
        for i in range(cfg["enc_blocks"]):
            tok = _block(tok, p, f"enc2.{i}")
        proto = (tok * w).sum(1)
        h = linear(np.concatenate([proto, shape], -1), p, "dec_in")
        for i in range(cfg["dec_blocks"]):
            h = _block(h, p, f"dec.{i}")
        return linear(layer_norm(h, p, "out_norm"), p, "out")

    def predict(self, joints, feats, mask, positional, rest):
        """Batched solve from encoded effectors: local rotations (B, 24, 3, 3), trans (B, 3)."""
        feats = feats.copy()
        wpos = (mask * positional)[..., None]
        centre = (feats[..., 3:6] * wpos).sum(1) / np.maximum(wpos.sum(1), 1)     # (B, 3)
        feats[..., 3:6] -= centre[:, None] * wpos
        out = self.network(joints, feats, mask, rest).astype(np.float64)
        rot6 = out[:, :NUM_JOINTS * 6].reshape(-1, NUM_JOINTS, 6) + [1.0, 0, 0, 0, 1.0, 0]
        local = rot6d_to_matrix(rot6)
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


SIX_POINTS = ("pelvis", "neck", "left_wrist", "right_wrist", "left_ankle", "right_ankle")
SIX_POINT_JOINTS = tuple(JOINT_INDEX[n] for n in SIX_POINTS)


def six_point_effectors(positions):
    """SMPL-IK's benchmark configuration: pelvis, neck, wrists, ankles (positions)."""
    return [Effector(n, "position", tuple(positions[JOINT_INDEX[n]])) for n in SIX_POINTS]


@lru_cache(maxsize=2)
def load_smplik(path=str(DEFAULT_WEIGHTS)):
    return SmplIk.load(path)
