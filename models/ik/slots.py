"""The SMPL-IK network's input: each joint's slot of effectors (Slot), the encoding of
effector sets into those slots, and mirroring a problem and an answer left-right."""
import numpy as np

from ..core.skeleton import MIRROR, NUM_JOINTS
from .effectors import Column


class Slot:
    """The columns of one joint's slot in the network input: its effectors of each kind (the
    weighted mean where several share a kind) and their summed weight, capped at 1 (0: none);
    the joint's rest offset from the pelvis follows (3 more columns)."""

    POSITION = slice(0, 3)
    POSITION_WEIGHT = 3
    ROT6D = slice(4, 10)
    ROTATION_WEIGHT = 10
    LOOK_TARGET = slice(11, 14)
    LOOK_AXIS = slice(14, 17)
    LOOK_WEIGHT = 17
    WIDTH = 18
    WEIGHTS = [POSITION_WEIGHT, ROTATION_WEIGHT, LOOK_WEIGHT]   # in KINDS order
    INPUT = WIDTH + 3


def _slot_tables():
    """For each slot column: the effector-row column it takes and the kind whose weight scales
    it. A weight column takes its kind's one-hot column (1 for that kind), so it holds the
    weight itself."""
    source, kind = np.zeros(Slot.WIDTH, np.int64), np.zeros(Slot.WIDTH, np.int64)
    cols = np.arange(Column.COUNT)
    for slot, column, k in ((Slot.POSITION, Column.POINT, 0), (Slot.ROT6D, Column.ROT6D, 1),
                            (Slot.LOOK_TARGET, Column.POINT, 2), (Slot.LOOK_AXIS, Column.AXIS, 2)):
        source[slot], kind[slot] = cols[column], k
    for k, slot in enumerate(Slot.WEIGHTS):
        source[slot], kind[slot] = cols[Column.KIND][k], k
    return source, kind


SLOT_SOURCE, SLOT_KIND = _slot_tables()
IDENTITY_6D = np.array([1.0, 0, 0, 0, 1.0, 0])


def network_input(effectors, rest):
    """(B, 24 * Slot.INPUT) network input for EncodedEffectors and rest joints (B, 24, 3),
    and the centre (B, 3) it is relative to.

    Each joint's slots hold the weighted mean of its effectors of each kind, with their weights
    summed and capped at 1, and its rest offset from the pelvis. Positions and look-at targets
    are taken relative to the weighted mean of the filled position and look-at slots."""
    joints, feats = effectors.joints, effectors.rows
    b = len(joints)
    kind_weight = feats[..., Column.KIND] * (feats[..., Column.WEIGHT] * effectors.mask)[..., None]   # (B, E, 3)
    rows = feats[..., SLOT_SOURCE] * kind_weight[..., SLOT_KIND]                                   # (B, E, 18)
    slots = np.zeros((b, NUM_JOINTS, Slot.INPUT), np.float32)   # the network runs in float32
    every = np.arange(b)
    for e in range(joints.shape[1]):   # one effector of each pose at a time: no index repeats within a step
        slots[every, joints[:, e], :Slot.WIDTH] += rows[:, e]
    wsum = slots[..., Slot.WEIGHTS]                                          # (B, 24, 3)
    slots[..., :Slot.WIDTH] /= np.maximum(wsum, 1e-6)[..., SLOT_KIND]
    w = slots[..., Slot.WEIGHTS] = np.minimum(wsum, 1.0)
    wp = w[..., 0::2]                                                        # position and look-at weights
    weighted = slots[..., Slot.POSITION] * wp[..., :1] + slots[..., Slot.LOOK_TARGET] * wp[..., 1:]
    centre = weighted.sum(1) / np.maximum(wp.sum((1, 2)), 1e-9)[:, None]
    filled = wp > 0
    slots[..., Slot.POSITION] -= centre[:, None] * filled[..., :1]
    slots[..., Slot.LOOK_TARGET] -= centre[:, None] * filled[..., 1:]
    slots[..., Slot.WIDTH:] = rest - rest[:, :1]
    return slots.reshape(b, -1), centre


# Mirroring a problem left-right (x -> -x in the body frame) swaps each joint's slots with its
# mirror joint's and flips signs: points and look-at axes M v, rotations M R M (first two
# columns -M r0, M r1), with M = diag(-1, 1, 1).
_ROT_SIGN = np.array([1.0, -1, -1, -1, 1, 1])
SLOT_SIGN = np.ones(Slot.INPUT, np.float32)
for _points in (Slot.POSITION, Slot.LOOK_TARGET, Slot.LOOK_AXIS, slice(Slot.WIDTH, Slot.INPUT)):
    SLOT_SIGN[_points.start] = -1.0
SLOT_SIGN[Slot.ROT6D] = _ROT_SIGN
OUT_SIGN = np.concatenate([np.tile(_ROT_SIGN, NUM_JOINTS), [-1.0, 1, 1]]).astype(np.float32)
MIRROR_OUT = np.concatenate([np.repeat(np.array(MIRROR) * 6, 6) + np.tile(np.arange(6), NUM_JOINTS),
                              NUM_JOINTS * 6 + np.arange(3)])


def mirror_input(x):
    """(B, 504) network input -> the input of the left-right mirrored problem."""
    return (x.reshape(len(x), NUM_JOINTS, Slot.INPUT)[:, list(MIRROR)] * SLOT_SIGN).reshape(len(x), -1)


def mirror_output(out):
    """(B, 147) raw output for a mirrored problem -> the output for the original one (world
    rotations M R M of the mirror joints, root x negated; the 6D identity offset is its own mirror)."""
    return out[:, MIRROR_OUT] * OUT_SIGN
