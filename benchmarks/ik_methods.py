"""The IK benchmark on mocap: IK-GAT, the analytic answer, SMPL-IK and an optimisation baseline, scored and timed."""
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.core.kinematics import analytic_rotations, forward_kinematics
from models.core.rotations import axis_angle_to_matrix, geodesic_angle
from models.core.skeleton import CHILDREN, JOINT_NAMES, PARENTS
from models.ik.effectors import SIX_POINT_INDICES, encode_effector_sets, six_point_effectors
from models.ik.flow import DEFAULT_FLOW_WEIGHTS as FLOW_WEIGHTS
from models.ik.ikgat import DEFAULT_WEIGHTS as IKGAT_WEIGHTS, IkGat
from models.ik.nn import WEIGHTS_DIR
from models.ik.refine import refine_pose
from models.ik.options import SolveOptions
from models.ik.smplik import DEFAULT_WEIGHTS as SMPLIK_WEIGHTS, SmplIk

from .effectors import position_joints, random_effectors
from .ik_generative import GenerativeOptions, generative
from .ik_scores import inside_limits, score
from .timing import median_seconds, single_and_batch

NOISE_LEVELS_M = (0.01, 0.02, 0.05)    # standard deviations of the noise on every joint, metres
BATCH = 1024                           # poses per batch for the batch rates


@dataclass(frozen=True)
class IkBenchmarkOptions:
    """What the IK benchmark runs: weights, the folder of the networks (ikgat.npz, smplik.npz,
    smplik_flow.npz); protocol_frames, frames for the generative figures (0: none);
    balance_frames, for balance and self-collision; baseline_frames, for the slow optimisation
    baseline (0: none)."""

    weights: Path = WEIGHTS_DIR
    protocol_frames: int = 1000
    balance_frames: int = 400
    baseline_frames: int = 100


def noise_figures(net, pos, rest, gt_rot, seed=7):
    """{"1cm", ...: {"geodesic_deg", "analytic_deg", "geodesic_deg_inner", "analytic_deg_inner"}}:
    IK-GAT's (`net`) and the analytic answer's mean local rotation error (degrees, over all
    joints and over those with children) on positions (N, 24, 3) with Gaussian noise of each
    NOISE_LEVELS_M standard deviation on every joint."""
    rng = np.random.default_rng(seed)
    inner = [j for j in range(len(JOINT_NAMES)) if CHILDREN[j]]
    out = {}
    for sigma in NOISE_LEVELS_M:
        shaken = pos + rng.normal(scale=sigma, size=pos.shape)
        net_deg = np.degrees(geodesic_angle(net(shaken, rest), gt_rot))
        analytic_deg = np.degrees(geodesic_angle(analytic_rotations(shaken, rest), gt_rot))
        out[f"{sigma * 100:g}cm"] = {
            "geodesic_deg": round(float(net_deg.mean()), 3), "analytic_deg": round(float(analytic_deg.mean()), 3),
            "geodesic_deg_inner": round(float(net_deg[:, inner].mean()), 3),
            "analytic_deg_inner": round(float(analytic_deg[:, inner].mean()), 3)}
    return out


def refined(local, trans, rest, sets, truth, network):
    """score() of the network's poses (local (N, 24, 3, 3), trans (N, 3)) made exact on their
    effector `sets` by models.ik.refine, with inside_limits; ms_single is the network's
    (`network`, its figures) plus the refinement's mean per pose."""
    t = time.perf_counter()
    out = [refine_pose(local[i], trans[i], rest[i], sets[i]) for i in range(len(sets))]
    per_pose = (time.perf_counter() - t) / len(sets)
    poses = np.stack([r.local_rot for r in out])
    return {**score(poses, rest, truth.positions, truth.local_rot, np.stack([r.trans for r in out]),
                    position_joints(sets)),
            "ms_single": per_pose * 1000 + network["ms_single"], "per_s_batch": 1 / per_pose,
            "inside_limits": inside_limits(poses)}


def baseline_6pt(pos, rest, prior=0.05):
    """Optimisation IK from the rest pose (scipy least squares on forward kinematics) on the six
    points' positions of pos (N, 24, 3), with an axis-angle pose prior of weight `prior`.
    Returns local rotations (N, 24, 3, 3) and trans (N, 3)."""
    from scipy.optimize import least_squares

    out, out_trans = np.zeros(pos.shape[:-1] + (3, 3)), np.zeros((len(pos), 3))
    six = list(SIX_POINT_INDICES)
    for n in range(len(pos)):
        target = pos[n, six]

        def residual(x):
            rot = axis_angle_to_matrix(x[:72].reshape(24, 3))
            p = forward_kinematics(rot, rest[n], PARENTS, x[72:]).positions
            return np.concatenate([(p[six] - target).ravel(), prior * x[3:72]])

        x0 = np.zeros(75)
        x0[72:] = target[0] - rest[n, 0]
        sol = least_squares(residual, x0, method="trf", max_nfev=200)
        out[n] = axis_angle_to_matrix(sol.x[:72].reshape(24, 3))
        out_trans[n] = sol.x[72:]
    return out, out_trans


def smplik_methods(net_path, flow_path, truth, batch):
    """smplik_6pt_one_pass, smplik_6pt, their refined answer, smplik_random (3-12 random
    effectors) and its refined answer; returns ({method: figures}, the symmetric network,
    world rotations (N, 24, 3, 3) of the true poses)."""
    rot, rest, pos = truth.local_rot, truth.rest, truth.positions
    n, six_idx = len(rot), list(SIX_POINT_INDICES)
    methods = {}
    world = forward_kinematics(rot, rest, PARENTS, pos[:, 0] - rest[:, 0]).rotations
    six = [six_point_effectors(p) for p in pos]
    big = np.resize(pos[:, six_idx], (BATCH, len(six_idx), 3))
    for name, symmetric in (("smplik_6pt_one_pass", False), ("smplik_6pt", True)):
        net = SmplIk.load(net_path, symmetric=symmetric, flow_path=flow_path)
        local, trans = net.solve_positions(SIX_POINT_INDICES, pos[:, six_idx], rest)
        single = median_seconds(lambda i: net.solve(six[i % n], rest[i % n], SolveOptions(refine=None)), 100)
        rate = BATCH / median_seconds(lambda i: net.solve_positions(SIX_POINT_INDICES, big, batch[1]), 5)
        methods[name] = {**score(local, rest, pos, rot, trans, [six_idx] * n),
                         "ms_single": single * 1000, "per_s_batch": rate, "inside_limits": inside_limits(local)}
    methods["smplik_6pt_refined"] = refined(local, trans, rest, six, truth, methods["smplik_6pt"])
    sets = random_effectors(pos, world, np.random.default_rng(0))
    local, trans = net.predict(encode_effector_sets(sets), rest)
    counts = np.array([len(e) for e in sets])
    by_count = {}
    for lo, hi in ((3, 4), (5, 8), (9, 12)):
        k = (counts >= lo) & (counts <= hi)
        by_count[f"{lo}-{hi}"] = round(score(local[k], rest[k], pos[k], rot[k], trans[k])["mpjpe_mm"], 1)
    methods["smplik_random"] = {**score(local, rest, pos, rot, trans, position_joints(sets)),
                                "mpjpe_mm_by_effector_count": by_count,
                                "ms_single": methods["smplik_6pt"]["ms_single"], "per_s_batch": rate,
                                "inside_limits": inside_limits(local)}
    methods["smplik_random_refined"] = refined(local, trans, rest, sets, truth, methods["smplik_random"])
    return methods, net, world


def measure(truth, body, options=IkBenchmarkOptions()):
    """Every method's figures on a GroundTruth (the module docstring of scripts/benchmark.py),
    the methods whose weights are missing in options.weights left out: ({method: figures},
    notes), notes saying what was skipped and why."""
    ikgat_weights, smplik_weights, flow_weights = (Path(options.weights) / p.name
                                                   for p in (IKGAT_WEIGHTS, SMPLIK_WEIGHTS, FLOW_WEIGHTS))
    rot, rest, pos = truth.local_rot, truth.rest, truth.positions
    n = len(rot)
    batch = [np.resize(pos, (BATCH,) + pos.shape[1:]), np.resize(rest, (BATCH,) + rest.shape[1:])]
    methods, notes = {}, []
    methods["analytic_full"] = {**score(analytic_rotations(pos, rest), rest, pos, rot),
                                **single_and_batch(analytic_rotations, [pos, rest], batch)}
    if ikgat_weights.exists():
        for name, symmetric in (("ikgat_one_pass", False), ("ikgat", True)):
            net = IkGat.load(ikgat_weights, symmetric=symmetric)
            methods[name] = {**score(net(pos, rest), rest, pos, rot), **single_and_batch(net, [pos, rest], batch)}
        methods["ikgat_noise"] = noise_figures(net, pos, rest, rot)
    else:
        notes.append(f"ikgat skipped: {ikgat_weights} not trained yet")
    if smplik_weights.exists():
        found, net, world = smplik_methods(smplik_weights, flow_weights, truth, batch)
        methods.update(found)
        if net.flow is not None and options.protocol_frames:
            methods.update(generative(net, body, truth, world, GenerativeOptions(
                frames=options.protocol_frames, balance_frames=options.balance_frames)))
        elif net.flow is None:
            notes.append(f"generative figures skipped: {flow_weights} not trained yet")
    else:
        notes.append(f"smplik skipped: {smplik_weights} not trained yet")
    k = min(options.baseline_frames, n)
    if k > 0:
        t = time.perf_counter()
        base = baseline_6pt(pos[:k], rest[:k])
        per_pose = (time.perf_counter() - t) / k
        methods["baseline_6pt"] = {**score(base[0], rest[:k], pos[:k], rot[:k], base[1], [list(SIX_POINT_INDICES)] * k),
                                   "ms_single": per_pose * 1000, "per_s_batch": 1.0 / per_pose, "frames": k}
    return methods, notes
