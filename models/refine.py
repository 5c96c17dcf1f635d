"""Make effectors exact: a few damped least-squares (Levenberg-Marquardt) steps on forward
kinematics, starting from a network's pose and staying close to it.

Unknowns are a small world-frame rotation at every joint (turning its subtree about it) and
the root translation; residuals are each effector's error scaled by its weight. The damping
keeps each step short, so the pose moves only as far as the effectors ask, and a target out
of reach gives a stretched pose, never NaN.
"""
from dataclasses import replace

import numpy as np

from .kinematics import forward_kinematics
from .rotations import axis_angle_to_matrix, matrix_to_axis_angle, unit
from .skeleton import NUM_JOINTS, PARENTS, joint_index

ANCESTORS = []
for _j in range(NUM_JOINTS):
    _chain, _k = [], _j
    while _k >= 0:
        _chain.append(_k)
        _k = PARENTS[_k]
    ANCESTORS.append(_chain)


def _skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def _residuals(effectors, world, pos, want_jacobian):
    rows, jac = [], []
    n_unknown = NUM_JOINTS * 3 + 3
    for e in effectors:
        j = joint_index(e.joint) if isinstance(e.joint, str) else int(e.joint)
        w = float(e.weight)
        block = np.zeros((3, n_unknown)) if want_jacobian else None
        if e.kind == "position":
            r = pos[j] - np.asarray(e.target, float)
            if want_jacobian:
                for k in ANCESTORS[j]:
                    block[:, 3 * k:3 * k + 3] = -_skew(pos[j] - pos[k])
                block[:, -3:] = np.eye(3)
        elif e.kind == "rotation":
            r = matrix_to_axis_angle(world[j] @ np.asarray(e.target, float).T)
            if want_jacobian:
                for k in ANCESTORS[j]:
                    block[:, 3 * k:3 * k + 3] = np.eye(3)
        else:  # look_at: the joint's local axis, in the world, should point at the target
            u = world[j] @ unit(np.asarray(e.axis, float))
            to = np.asarray(e.target, float) - pos[j]
            dist = max(np.linalg.norm(to), 1e-6)
            v = to / dist
            r = u - v
            if want_jacobian:
                proj = (np.eye(3) - np.outer(v, v)) / dist
                for k in ANCESTORS[j]:
                    block[:, 3 * k:3 * k + 3] = -_skew(u) - proj @ _skew(pos[j] - pos[k])
                block[:, -3:] = proj
        rows.append(w * r)
        if want_jacobian:
            jac.append(w * block)
    return np.concatenate(rows), (np.concatenate(jac) if want_jacobian else None)


def effector_errors(effectors, local_rot, trans, rest):
    """Per effector: metres (position), radians (rotation, look-at)."""
    fk = forward_kinematics(local_rot, rest, PARENTS, trans)
    r, _ = _residuals([replace(e, weight=1.0) for e in effectors], fk.rotations, fk.positions, False)
    return np.linalg.norm(r.reshape(-1, 3), axis=1)


def refine_pose(local_rot, trans, rest, effectors, iterations=20, damping=1e-3, tolerance=1e-5):
    """Refined (local_rot (24, 3, 3), trans (3,)) so the effectors hold.

    Stops early once every weighted residual is below `tolerance` (1e-5: 0.01 mm).
    """
    local = np.array(local_rot, dtype=np.float64)
    trans = np.array(trans, dtype=np.float64)
    rest = np.asarray(rest, dtype=np.float64)
    lam = damping
    fk = forward_kinematics(local, rest, PARENTS, trans)
    r, jac = _residuals(effectors, fk.rotations, fk.positions, True)
    cost = r @ r
    for _ in range(iterations):
        if np.abs(r).max() < tolerance:
            break
        h = jac.T @ jac
        step = -np.linalg.solve(h + lam * np.eye(len(h)), jac.T @ r)
        turn = axis_angle_to_matrix(step[:-3].reshape(NUM_JOINTS, 3))
        world = fk.rotations
        new = local.copy()
        new[0] = turn[0] @ local[0]
        for k in range(1, NUM_JOINTS):
            wp = world[PARENTS[k]]
            new[k] = wp.T @ turn[k] @ wp @ local[k]
        new_trans = trans + step[-3:]
        new_fk = forward_kinematics(new, rest, PARENTS, new_trans)
        new_r, new_jac = _residuals(effectors, new_fk.rotations, new_fk.positions, True)
        new_cost = new_r @ new_r
        if new_cost < cost:  # accept, trust the linear model more
            local, trans, fk, r, jac, cost = new, new_trans, new_fk, new_r, new_jac, new_cost
            lam = max(lam * 0.3, 1e-7)
        else:                # reject, shorter step
            lam *= 10.0
    return local, trans
