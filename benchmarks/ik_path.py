"""The IK benchmark's path figures: the drag of one effector in numpy, and following a jittered path."""
import statistics
import time

import numpy as np

from models.core.kinematics import forward_kinematics
from models.core.skeleton import FOOT_JOINTS, JOINT_INDEX, PARENTS, indices
from models.ik.effectors import SIX_POINT_INDICES, Effector, EffectorKind, six_point_effectors
from models.ik.options import SolveOptions
from models.ik.path import PathFollower

FOOT_INDICES = list(indices(FOOT_JOINTS))


def path_figures(net, rest, pos, rng, starts, steps):
    """The path drag in numpy on true poses (rest, pos (N, 24, 3)), from `starts` frames drawn
    with rng: from the natural pose on six points, the left-wrist effector (soft) moves 1 cm a
    step forward and up for `steps` steps, the other five held; per step, how far the joints
    without an effector move (jump_mm_*) and the largest foot lift (foot_lift_mm_*), solved
    afresh by the deterministic network, warm-started from the pose before (the add-on's drag
    without the flow) and with the latent kept; and a PathFollower on the six points held still
    with 1 cm of jitter, `steps` frames, at smoothness 0 and 0.5 (follow_jump_mm_mu*)."""
    wrist = SIX_POINT_INDICES.index(JOINT_INDEX["left_wrist"])
    free = [j for j in range(24) if j not in SIX_POINT_INDICES]
    jumps = {"deterministic": [], "warm": [], "keep": []}
    lift = {"deterministic": 0.0, "warm": 0.0, "keep": 0.0}
    ms_keep = []
    for i in np.sort(rng.choice(len(pos), min(starts, len(pos)), replace=False)):
        effs = six_point_effectors(pos[i])
        start = net.solve(effs, rest[i], SolveOptions(mode="natural"))
        world = forward_kinematics(start.local_rot, rest[i], PARENTS, start.trans).rotations
        forward = world[0] @ [0.0, 0.0, 1.0]
        forward[1] = 0.0
        direction = (forward / np.linalg.norm(forward) + [0.0, 1.0, 0.0]) / np.sqrt(2.0)
        for mode in jumps:
            prev, y0 = start, start.positions[FOOT_INDICES, 1]
            for step in range(1, steps + 1):
                moved = list(effs)
                moved[wrist] = Effector("left_wrist", EffectorKind.POSITION,
                                        tuple(pos[i, JOINT_INDEX["left_wrist"]] + 0.01 * step * direction), soft=True)
                current = (prev.local_rot, prev.trans)
                t = time.perf_counter()
                if mode == "deterministic":
                    now = net.solve(moved, rest[i], SolveOptions(mode="deterministic", current_pose=current))
                elif mode == "warm":
                    now = net.solve(moved, rest[i], SolveOptions(mode="deterministic", current_pose=current,
                                                                 warm_start=True))
                else:
                    now = net.solve(moved, rest[i], SolveOptions(mode="natural", current_pose=current, keep=prev))
                    ms_keep.append(time.perf_counter() - t)
                jumps[mode].append(np.linalg.norm(now.positions[free] - prev.positions[free], axis=-1).mean())
                lift[mode] = max(lift[mode], np.abs(now.positions[FOOT_INDICES, 1] - y0).max())
                prev = now
    follow = {}
    noise = np.random.default_rng(3).normal(scale=0.01, size=(steps,) + pos.shape[1:])
    for mu in (0.0, 0.5):
        moves = []
        for i in np.sort(rng.choice(len(pos), min(starts, len(pos)), replace=False))[:4]:
            follower = PathFollower(net, rest[i], smoothness=mu)
            track = np.stack([follower.step(six_point_effectors(pos[i] + noise[t])).positions for t in range(steps)])
            moves.append(np.linalg.norm(np.diff(track[:, free], axis=0), axis=-1).mean())
        follow[f"follow_jump_mm_mu{mu:g}".replace(".", "")] = float(np.mean(moves) * 1e3)
    return {**follow, **{f"jump_mm_{m}": float(np.mean(v) * 1e3) for m, v in jumps.items()},
            **{f"foot_lift_mm_{m}": lift[m] * 1e3 for m in lift},
            "ms_keep_median": statistics.median(ms_keep) * 1e3, "ms_keep_p90": float(np.percentile(ms_keep, 90) * 1e3),
            "starts": int(min(starts, len(pos))), "steps": steps}
