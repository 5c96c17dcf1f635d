"""Effectors as residuals: their targets as arrays, the weighted residuals of a pose and their
Jacobian over joint turns and the root move, and each effector's error."""
import numpy as np

from ..core.kinematics import ancestor_matrix, forward_kinematics
from ..core.rotations import matrix_to_axis_angle, skew, unit
from ..core.skeleton import NUM_JOINTS, PARENTS
from .effectors import KIND_INDEX, EffectorKind, joint_of, kind_of

# ANCESTOR[j, k]: k is j or one of its ancestors (turning k moves j).
ANCESTOR = ancestor_matrix(tuple(PARENTS))
POSITION, ROTATION, LOOK_AT = (KIND_INDEX[k] for k in (EffectorKind.POSITION, EffectorKind.ROTATION,
                                                         EffectorKind.LOOK_AT))


class Targets:
    """Effectors as arrays: joint (E,), kind (E,), weight (E,), point (E, 3), rotation
    (E, 3, 3) (identity unless a rotation), axis (E, 3) (unit; look-ats)."""

    def __init__(self, effectors):
        n = len(effectors)
        self.joint = np.array([joint_of(e, n) for n, e in enumerate(effectors)], dtype=np.int64)
        kinds = [kind_of(e) for e in effectors]
        self.kind = np.array([KIND_INDEX[k] for k in kinds], dtype=np.int64)
        self.weight = np.array([float(e.weight) for e in effectors])
        self.point = np.zeros((n, 3))
        self.rotation = np.tile(np.eye(3), (n, 1, 1))
        self.axis = np.zeros((n, 3))
        for i, (e, kind) in enumerate(zip(effectors, kinds)):
            if kind is EffectorKind.ROTATION:
                self.rotation[i] = np.asarray(e.target, float)
            else:
                self.point[i] = np.asarray(e.target, float)
            if kind is EffectorKind.LOOK_AT:
                self.axis[i] = unit(np.asarray(e.axis, float))
        self.mask = ANCESTOR[self.joint]                                   # (E, 24)
        self.rotation_rows, self.look_rows = self.kind == ROTATION, self.kind == LOOK_AT
        self.any_rotation, self.any_look = bool(self.rotation_rows.any()), bool(self.look_rows.any())
        self.turn_scale = (self.mask * self.weight[:, None])[..., None, None]   # (E, 24, 1, 1)
        # the root move's rows: the identity for positions (look-ats add theirs per pose)
        self.move = np.where((self.kind == POSITION)[:, None, None], np.eye(3), 0.0) * self.weight[:, None, None]

    def __len__(self):
        return len(self.joint)


def effector_residuals(t, world, pos, want_jacobian):
    """Weighted residuals (..., 3E) and their Jacobian (..., 3E, 75) over [turns (24x3),
    root move], for poses world (..., 24, 3, 3), pos (..., 24, 3) (a batch of poses shares
    the effectors). Each kind's terms are worked out only where there are effectors of that
    kind (most sets are positions)."""
    batch = pos.shape[:-2]
    if not len(t):
        return np.zeros(batch + (0,)), np.zeros(batch + (0, 3 * NUM_JOINTS + 3))
    p = pos[..., t.joint, :]                                                # (..., E, 3)
    r = p - t.point                                                         # position
    if t.any_rotation:
        w = world[..., t.joint, :, :]                                       # (..., E, 3, 3)
        rot_err = matrix_to_axis_angle(w @ np.swapaxes(t.rotation, -1, -2))
        r = np.where(t.rotation_rows[:, None], rot_err, r)
    if t.any_look:
        u = np.einsum("...eij,ej->...ei", world[..., t.joint, :, :], t.axis)
        to = t.point - p
        dist = np.maximum(np.linalg.norm(to, axis=-1, keepdims=True), 1e-6)
        v = to / dist
        r = np.where(t.look_rows[:, None], u - v, r)
    r = r * t.weight[:, None]
    if not want_jacobian:
        return r.reshape(batch + (-1,)), None
    n = len(t.joint)
    turn = skew(pos[..., None, :, :] - p[..., :, None, :])                 # (..., E, 24, 3, 3): position
    if t.any_rotation:
        turn[..., t.rotation_rows, :, :, :] = np.eye(3)
    move = t.move
    if t.any_look:
        look = t.look_rows
        proj = (np.eye(3) - v[..., look, :, None] * v[..., look, None, :]) / dist[..., look, :, None]   # (..., L, 3, 3)
        turn[..., look, :, :, :] = (-skew(u[..., look, :])[..., None, :, :]
                                    + proj[..., None, :, :] @ turn[..., look, :, :, :])
        move = np.broadcast_to(move, batch + move.shape).copy()
        move[..., look, :, :] = proj * t.weight[look, None, None]
    turn *= t.turn_scale
    jac = np.concatenate([np.swapaxes(turn, -3, -2).reshape(batch + (n, 3, 3 * NUM_JOINTS)),
                          np.broadcast_to(move, batch + t.move.shape)], axis=-1)
    return r.reshape(batch + (-1,)), jac.reshape(batch + (3 * n, -1))


def effector_errors(effectors, local_rot, trans, rest):
    """Per effector, unweighted: metres (position), radians (rotation: the geodesic angle;
    look-at: the angle between the joint's axis and the direction to the target)."""
    fk = forward_kinematics(local_rot, rest, PARENTS, trans)
    return posed_effector_errors(effectors, fk.rotations, fk.positions)


def posed_effector_errors(effectors, world, positions):
    """effector_errors of poses given as world rotations (..., 24, 3, 3) and joint positions
    (..., 24, 3): (..., E)."""
    t = Targets(effectors)
    batch = np.shape(positions)[:-2]
    if not len(t):
        return np.zeros(batch + (0,))
    r = effector_residuals(t, world, positions, False)[0].reshape(batch + (len(t), 3))
    r = np.linalg.norm(r, axis=-1) / t.weight
    chord = t.kind == LOOK_AT                            # |u - v| of unit vectors is 2 sin(angle / 2)
    r[..., chord] = 2 * np.arcsin(np.clip(r[..., chord] / 2, 0.0, 1.0))
    return r
