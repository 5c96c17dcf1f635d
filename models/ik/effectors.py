"""Effectors, the constraints a solved pose must meet, and their array encoding.

One definition serves the add-on (which builds effectors from Empties), SMPL-IK and its torch
twin (which read the encoded rows) and the refinement (which makes them exact).
"""
import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from ..core.errors import SmplIkError
from ..core.skeleton import JOINT_INDEX, JOINT_NAMES, NUM_JOINTS, SIX_POINTS, indices, joint_index


class EffectorKind(str, Enum):
    """What an effector pins. A str enum: `EffectorKind("position")` and the plain string
    "position" compare equal, so either may be given."""

    POSITION = "position"    # where the joint is
    ROTATION = "rotation"    # how the joint is turned (world rotation)
    LOOK_AT = "look_at"      # that a local axis of the joint points at a target


KINDS = tuple(EffectorKind)
KIND_INDEX = {k: i for i, k in enumerate(KINDS)}   # a kind's one-hot column and slot, in this order
MAX_EFFECTORS = 32
SIX_POINT_INDICES = indices(SIX_POINTS)   # the joints of SMPL-IK's benchmark configuration


@dataclass(frozen=True)
class Effector:
    """A constraint on one SMPL joint (body frame: metres, Y up).

    joint: an SMPL joint name or index. kind (an EffectorKind or its value) POSITION: target
    (3,) position; ROTATION: target (3, 3) world rotation; LOOK_AT: target (3,) point that
    the joint's local `axis` (3,) should point at. weight in (0, 1]: how much it matters next
    to the others of its level. soft: False (a hard pin, held first and never broken for a
    soft one) or True (met as closely as the hard pins allow); tolerance (soft only, metres
    or radians): how far a soft one may end from its target before the solve reports it.
    give_way_first (hard only): when the hard pins cannot all be held, this one gives way
    before the others (the add-on marks the effectors moved since the last solve;
    refine.refine_pose).
    """

    joint: object
    kind: str
    target: tuple
    axis: tuple = (0.0, 0.0, 1.0)
    weight: float = 1.0
    soft: bool = False
    tolerance: float = 0.0
    give_way_first: bool = False


class Column:
    """The columns of an encoded effector row (`EncodedEffectors.rows`)."""

    KIND = slice(0, 3)      # one-hot, in KINDS order
    POINT = slice(3, 6)     # a position's or a look-at's target
    ROT6D = slice(6, 12)    # a rotation's target, its first two columns
    AXIS = slice(12, 15)    # a look-at's local axis (unit)
    WEIGHT = 15
    COUNT = 16


@dataclass(frozen=True)
class EncodedEffectors:
    """Batches of effector sets as arrays: joints (B, E) int, rows (B, E, Column.COUNT)
    (columns named in `Column`), mask (B, E): 1 for an effector, 0 for padding."""

    joints: np.ndarray
    rows: np.ndarray
    mask: np.ndarray

    @classmethod
    def stack(cls, encoded):
        """One batch from several encodings, padded to the longest set."""
        width = max(e.joints.shape[1] for e in encoded)
        size = sum(len(e.joints) for e in encoded)
        joints = np.zeros((size, width), np.int64)
        rows = np.zeros((size, width, Column.COUNT))
        mask = np.zeros((size, width))
        start = 0
        for e in encoded:
            n, k = e.joints.shape
            joints[start:start + n, :k], rows[start:start + n, :k], mask[start:start + n, :k] = e.joints, e.rows, e.mask
            start += n
        return cls(joints, rows, mask)


def kind_of(effector):
    """The EffectorKind of an effector; SmplIkError naming the joint when it is none."""
    try:
        return EffectorKind(effector.kind)
    except ValueError:
        raise SmplIkError(f"effector on {effector.joint}: unknown kind {effector.kind!r}; "
                          f"use {', '.join(k.value for k in KINDS)}") from None


def joint_of(effector, n):
    """The SMPL joint index of an effector (its n-th place in a list, for the message)."""
    j = joint_index(effector.joint) if isinstance(effector.joint, str) else int(effector.joint)
    if not 0 <= j < NUM_JOINTS:
        raise SmplIkError(f"effector {n}: joint index {j} is not an SMPL joint")
    return j


def encode_effectors(effectors):
    """A list of Effectors -> EncodedEffectors of one set (B = 1). Checks every value."""
    if not effectors:
        raise SmplIkError("no effectors: pin at least one joint")
    if len(effectors) > MAX_EFFECTORS:
        raise SmplIkError(f"{len(effectors)} effectors; at most {MAX_EFFECTORS} are supported")
    joints = np.zeros(len(effectors), dtype=np.int64)
    rows = np.zeros((len(effectors), Column.COUNT))
    for n, e in enumerate(effectors):
        j = joint_of(e, n)
        kind = kind_of(e)
        target = np.asarray(e.target, dtype=np.float64)
        weight = float(e.weight)
        if not (np.isfinite(target).all() and math.isfinite(weight)
                and (kind is not EffectorKind.LOOK_AT or np.isfinite(np.asarray(e.axis, dtype=np.float64)).all())):
            raise SmplIkError(f"effector on {e.joint}: target, axis and weight must be finite numbers")
        if not 0 < weight <= 1:
            raise SmplIkError(f"effector on {e.joint}: weight must be in (0, 1], got {weight}")
        tolerance = float(e.tolerance)
        if not (math.isfinite(tolerance) and tolerance >= 0):
            raise SmplIkError(f"effector on {e.joint}: tolerance must be a number of 0 or more, got {tolerance}")
        joints[n] = j
        rows[n, Column.KIND.start + KIND_INDEX[kind]] = 1.0
        rows[n, Column.WEIGHT] = weight
        if kind is EffectorKind.ROTATION:
            if target.shape != (3, 3) or abs(np.linalg.det(target) - 1) > 1e-3:
                raise SmplIkError(f"effector on {e.joint}: a rotation target must be a 3x3 rotation matrix")
            rows[n, Column.ROT6D] = np.concatenate([target[:, 0], target[:, 1]])
            continue
        if target.shape != (3,):
            raise SmplIkError(f"effector on {e.joint}: a {kind.value} target must be a 3D point")
        rows[n, Column.POINT] = target
        if kind is EffectorKind.LOOK_AT:
            axis = np.asarray(e.axis, dtype=np.float64)
            length = np.linalg.norm(axis) if axis.shape == (3,) else 0.0
            if length < 1e-9:
                raise SmplIkError(f"effector on {e.joint}: a look-at needs a non-zero local axis")
            rows[n, Column.AXIS] = axis / length
    return EncodedEffectors(joints[None], rows[None], np.ones((1, len(joints))))


def encode_effector_sets(sets):
    """Many effector lists -> one padded EncodedEffectors batch (B = len(sets))."""
    return EncodedEffectors.stack([encode_effectors(s) for s in sets])


def encode_positions(joints, targets):
    """Position effectors on the same joints for many poses: joints, E names or indices;
    targets (B, E, 3) metres -> EncodedEffectors. Raises SmplIkError on bad input."""
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
    rows = np.zeros((b, e, Column.COUNT))
    rows[..., Column.KIND.start + KIND_INDEX[EffectorKind.POSITION]] = rows[..., Column.WEIGHT] = 1.0
    rows[..., Column.POINT] = targets
    return EncodedEffectors(np.broadcast_to(index, (b, e)), rows, np.ones((b, e)))


def six_point_effectors(positions):
    """SMPL-IK's benchmark configuration: position effectors on the SIX_POINTS (pelvis, neck,
    wrists, ankles) at those joints' positions in `positions` (24, 3)."""
    return [Effector(n, EffectorKind.POSITION, tuple(positions[JOINT_INDEX[n]])) for n in SIX_POINTS]
