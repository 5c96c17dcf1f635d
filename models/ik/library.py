"""A library of real poses, for alternatives: the training motion's poses that best meet a set
of pins, each a different pose, as starts for the refinement.

The hypotheses head (`hypotheses.py`) answers every problem with eight learned poses; each is
in effect the average of the poses it stands for, so with few pins none of the eight is a pose
anybody held. Motion capture holds many: turned about the vertical and moved to the pins, the
poses whose joints land nearest the pins are candidates, the nearest first, each kept only
when it differs from those kept before (MIN_APART), and SMPL-IK's refinement then meets the
pins exactly from each (`SmplIk.sample`, spread "mixed" or "library").

The file (`models/ik/weights/pose_library.npz`, scripts/build_pose_library.py) holds local
rotations (N, 24, 3) as axis-angle, the root's included; its JSON record names the clips.
"""
from pathlib import Path

import numpy as np

from ..core.errors import SmplIkError
from ..core.rotations import axis_angle_to_matrix
from ..core.skeleton import NUM_JOINTS, PARENTS
from .effectors import EffectorKind, joint_of, kind_of
from .nn import WEIGHTS_DIR, load_weights
from .residuals import posed_effector_errors

ARCH = "pose-library-v1"
DEFAULT_LIBRARY = WEIGHTS_DIR / "pose_library.npz"
SHORTLIST = 200          # candidates nearest the position pins, then scored on every pin
MIN_APART = 0.05         # metres: a kept pose's joints (about the pelvis) differ this much on average
ANGLE_METRES = 0.1       # a radian of a rotation or look-at miss counts as this many metres of position
MIN_SPREAD = 0.1         # metres across the floor the position pins must span to turn a pose by them


def expected_shapes(config):
    return {"poses": (int(config["count"]), NUM_JOINTS, 3)}


def _yaw(angle):
    """(N,) angles -> (N, 3, 3) turns about +Y (SMPL's up)."""
    c, s = np.cos(angle), np.sin(angle)
    out = np.zeros(np.shape(angle) + (3, 3))
    out[..., 0, 0], out[..., 0, 2], out[..., 1, 1], out[..., 2, 0], out[..., 2, 2] = c, s, 1.0, -s, c
    return out


def _turned(points, angle):
    """(N, J, 3) points each turned about +Y by its pose's angle (N,)."""
    c, s = np.cos(angle)[:, None], np.sin(angle)[:, None]
    return np.stack([c * points[..., 0] + s * points[..., 2], points[..., 1],
                     c * points[..., 2] - s * points[..., 0]], -1)


def _heading(rot):
    """(..., 3, 3) root rotations -> (...,) the angle about +Y of where the body faces (+Z)."""
    return np.arctan2(rot[..., 0, 2], rot[..., 2, 2])


class PoseLibrary:
    """`PoseLibrary.load(path)`; `starts(effectors, rest, count, reference)` -> the local
    rotations (K, 24, 3, 3) and root translations (K, 3) of the library poses nearest the
    pins, each turned and placed where they put it (K < count where the library holds fewer
    distinct ones)."""

    def __init__(self, poses, config=None):
        poses = np.asarray(poses, dtype=np.float64)
        if poses.ndim != 3 or poses.shape[1:] != (NUM_JOINTS, 3) or not len(poses):
            raise SmplIkError(f"a pose library is (N, 24, 3) axis-angle rotations, not {poses.shape}")
        self.config = config or {"arch": ARCH, "count": len(poses)}
        self.local = axis_angle_to_matrix(poses)
        world = self.local.copy()
        for j in range(1, NUM_JOINTS):
            world[:, j] = world[:, PARENTS[j]] @ self.local[:, j]
        self.world = world
        # each bone's turn (its parent's world rotation), bone-major and float32: one small
        # matrix product a bone in `positions`
        turns = world[:, list(PARENTS[1:])].transpose(1, 0, 2, 3)
        self._bone_turns = np.ascontiguousarray(turns, dtype=np.float32).reshape(NUM_JOINTS - 1, -1, 3)
        self._last_positions = (None, None)

    @classmethod
    def load(cls, path=DEFAULT_LIBRARY):
        params, config = load_weights(Path(path), ARCH, expected_shapes)
        return cls(params["poses"], config)

    def __len__(self):
        return len(self.local)

    def positions(self, rest):
        """(N, 24, 3) every library pose's joints on rest joints (24, 3), the pelvis at the origin
        (the last body's kept: a session poses one body many times)."""
        rest = np.asarray(rest, dtype=np.float64)
        key = rest.tobytes()
        if self._last_positions[0] != key:
            pos = self._positions(rest)
            pos.flags.writeable = False
            self._last_positions = (key, pos)
        return self._last_positions[1]

    def _positions(self, rest):
        offsets = (rest[1:] - rest[list(PARENTS[1:])]).astype(np.float32)
        pos = np.zeros((NUM_JOINTS, len(self), 3), dtype=np.float32)
        for j in range(1, NUM_JOINTS):
            pos[j] = pos[PARENTS[j]] + (self._bone_turns[j - 1] @ offsets[j - 1]).reshape(-1, 3)
        return pos.transpose(1, 0, 2).astype(np.float64)

    def starts(self, effectors, rest, count, reference, apart=MIN_APART):
        """Local rotations (K <= count, 24, 3, 3) and root translations (K, 3) of the library
        poses that meet `effectors` best on rest joints (24, 3), each turned about the vertical
        and moved so its position pins come nearest theirs, the best first, each `apart`
        (metres, MIN_APART) from those before it.
        reference: a root rotation (3, 3) and pelvis position (3,) (the network's answer) whose
        heading a pose takes where the position pins span less than MIN_SPREAD across the floor,
        and whose place where there are none."""
        effectors = list(effectors)
        if count < 1 or not effectors:
            return np.zeros((0, NUM_JOINTS, 3, 3)), np.zeros((0, 3))
        ref_rot, ref_pelvis = (np.asarray(a, dtype=np.float64) for a in reference)
        pos = self.positions(rest)
        placed = [n for n, e in enumerate(effectors) if kind_of(e) is EffectorKind.POSITION]
        joints = [joint_of(effectors[n], n) for n in placed]
        targets = np.array([effectors[n].target for n in placed], dtype=np.float64).reshape(-1, 3)
        if len(placed) and np.linalg.norm((targets - targets.mean(0))[:, [0, 2]], axis=1).max() >= MIN_SPREAD:
            # the turn about +Y that brings the pins' floor-plane layout nearest the targets'
            p = pos[:, joints] - pos[:, joints].mean(1, keepdims=True)
            q = targets - targets.mean(0)
            a = (p[..., 0] * q[:, 0] + p[..., 2] * q[:, 2]).sum(1)
            b = (p[..., 2] * q[:, 0] - p[..., 0] * q[:, 2]).sum(1)
            turn = np.arctan2(b, a)
        else:
            turn = _heading(ref_rot) - _heading(self.local[:, 0])
        if len(placed):   # the nearest to the position pins first (only their joints turned), then every pin scored
            pinned = _turned(pos[:, joints], turn)
            shift = targets.mean(0) - pinned.mean(1)
            near = np.linalg.norm(pinned + shift[:, None] - targets, axis=-1).mean(1)
            short = np.argpartition(near, SHORTLIST - 1)[:SHORTLIST] if len(self) > SHORTLIST else np.arange(len(self))
            short = short[np.lexsort((short, near[short]))]   # nearest first, ties by index
            shift = shift[short]
        else:
            short = np.arange(len(self))
            shift = np.broadcast_to(ref_pelvis, (len(self), 3))
        yaw = _yaw(turn[short])
        turned = _turned(pos[short], turn[short]) + shift[:, None]
        errors = posed_effector_errors(effectors, yaw[:, None] @ self.world[short], turned)
        position = np.array([kind_of(e) is EffectorKind.POSITION for e in effectors])
        score = (errors[:, position].mean(1) if position.any() else 0.0) + \
            (ANGLE_METRES * errors[:, ~position].mean(1) if (~position).any() else 0.0)
        about = turned - turned[:, :1]
        kept = []   # places in `short`
        for n in np.argsort(score, kind="stable"):
            if len(kept) == count:
                break
            if not kept or np.linalg.norm(about[kept] - about[n], axis=-1).mean(-1).min() >= apart:
                kept.append(n)
        local = self.local[short[kept]].copy()
        local[:, 0] = yaw[kept] @ local[:, 0]
        return local, turned[kept, 0] - rest[0]


def load_library(path=DEFAULT_LIBRARY):
    """The shipped pose library, or None where the file is not there."""
    return PoseLibrary.load(path) if Path(path).exists() else None
