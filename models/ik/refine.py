"""Make effectors exact: a few damped least-squares (Levenberg-Marquardt) steps on forward
kinematics, starting from a network's pose and staying close to it.

Unknowns are a small world-frame rotation at every joint (turning its subtree about it) and
the root translation; residuals are each effector's error scaled by its weight. The damping
keeps each step short, so the pose moves only as far as the effectors ask, and a target out
of reach gives a stretched pose, never NaN.
"""
import numpy as np

from ..core.kinematics import forward_kinematics
from ..core.rotations import axis_angle_to_matrix, matrix_to_axis_angle, skew, unit
from ..core.skeleton import NUM_JOINTS, PARENTS
from .effectors import KIND_INDEX, EffectorKind, joint_of, kind_of

# ANCESTOR[j, k]: k is j or one of its ancestors (turning k moves j).
ANCESTOR = np.zeros((NUM_JOINTS, NUM_JOINTS))
for _j in range(NUM_JOINTS):
    _k = _j
    while _k >= 0:
        ANCESTOR[_j, _k] = 1.0
        _k = PARENTS[_k]
_PARENT_OR_SELF = [max(p, 0) for p in PARENTS]
POSITION, ROTATION, LOOK_AT = (KIND_INDEX[k] for k in (EffectorKind.POSITION, EffectorKind.ROTATION,
                                                         EffectorKind.LOOK_AT))


class _Targets:
    """Effectors as arrays: joint (E,), kind (E,), weight (E,), point (E, 3), rotation
    (E, 3, 3) (identity unless a rotation), axis (E, 3) (unit; look-ats)."""

    def __init__(self, effectors):
        n = len(effectors)
        self.joint = np.array([joint_of(e, n) for n, e in enumerate(effectors)], dtype=np.int64)
        kinds = [kind_of(e) for e in effectors]
        self.kind = np.array([KIND_INDEX[k] for k in kinds])
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
        self.any_rotation = bool((self.kind == ROTATION).any())


def _residuals(t, world, pos, want_jacobian):
    """Weighted residuals (3E,) and their Jacobian (3E, 75) over [turns (24x3), root move]."""
    p = pos[t.joint]                                                        # (E, 3)
    r = p - t.point                                                         # position
    rot_err = (matrix_to_axis_angle(world[t.joint] @ np.swapaxes(t.rotation, -1, -2)) if t.any_rotation
               else 0.0)
    u = np.einsum("eij,ej->ei", world[t.joint], t.axis)
    to = t.point - p
    dist = np.maximum(np.linalg.norm(to, axis=-1, keepdims=True), 1e-6)
    v = to / dist
    kind = t.kind[:, None]
    r = np.where(kind == POSITION, r, np.where(kind == ROTATION, rot_err, u - v)) * t.weight[:, None]
    if not want_jacobian:
        return r.ravel(), None
    n = len(t.joint)
    lever = skew(p[:, None] - pos[None])                                   # (E, 24, 3, 3)
    proj = (np.eye(3) - v[:, :, None] * v[:, None, :]) / dist[..., None]    # (E, 3, 3)
    turn = np.where(kind[..., None, None] == POSITION, -lever,
                    np.where(kind[..., None, None] == ROTATION, np.eye(3),
                             -skew(u)[:, None] - proj[:, None] @ lever))
    turn = turn * (t.mask * t.weight[:, None])[..., None, None]
    move = np.where(kind[..., None] == POSITION, np.eye(3), np.where(kind[..., None] == LOOK_AT, proj, 0.0))
    jac = np.concatenate([turn.transpose(0, 2, 1, 3).reshape(n, 3, 3 * NUM_JOINTS),
                          move * t.weight[:, None, None]], axis=2)
    return r.ravel(), jac.reshape(3 * n, -1)


def apply_step(local_rot, trans, fk, step):
    """Turn every joint k's subtree by the world-frame rotation step[3k:3k+3] (axis-angle,
    about the joint) and move the root by step[-3:]; fk is the pose's forward kinematics."""
    turn = axis_angle_to_matrix(step[:-3].reshape(NUM_JOINTS, 3))
    wp = fk.rotations[_PARENT_OR_SELF]                       # a joint turns in its parent's frame
    wp[0] = np.eye(3)
    return np.swapaxes(wp, -1, -2) @ turn @ wp @ local_rot, trans + step[-3:]


def refine_pose(local_rot, trans, rest, effectors, iterations=20, damping=1e-3, tolerance=1e-5):
    """Refined (local_rot (24, 3, 3), trans (3,)) so the effectors hold.

    Stops early once every weighted residual is below `tolerance` (1e-5: 0.01 mm).
    """
    local = np.array(local_rot, dtype=np.float64)
    trans = np.array(trans, dtype=np.float64)
    rest = np.asarray(rest, dtype=np.float64)
    lam = damping
    targets = _Targets(effectors)
    fk = forward_kinematics(local, rest, PARENTS, trans)
    r, jac = _residuals(targets, fk.rotations, fk.positions, True)
    cost = r @ r
    for _ in range(iterations):
        if np.abs(r).max() < tolerance:
            break
        # (J'J + lam I)^-1 J' = J' (J J' + lam I)^-1: the small system has one row per residual
        step = -jac.T @ np.linalg.solve(jac @ jac.T + lam * np.eye(len(r)), r)
        new, new_trans = apply_step(local, trans, fk, step)
        new_fk = forward_kinematics(new, rest, PARENTS, new_trans)
        new_r, new_jac = _residuals(targets, new_fk.rotations, new_fk.positions, True)
        new_cost = new_r @ new_r
        if new_cost < cost:  # accept, trust the linear model more
            local, trans, fk, r, jac, cost = new, new_trans, new_fk, new_r, new_jac, new_cost
            lam = max(lam * 0.3, 1e-7)
        else:                # reject, shorter step
            lam *= 10.0
    return local, trans
