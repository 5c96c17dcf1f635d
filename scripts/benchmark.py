"""Benchmark the learned IK against classical answers on motion capture, one thread.

    python scripts/benchmark.py --data DIR --json OUT [--max-frames N] [--held-out-only] [--weights DIR]
                                [--body neutral|female|male|FILE]

Every clip in DIR is retargeted with the motion code to get ground-truth SMPL poses on a
fitted body (the open body of --body's gender, or an SMPL-family FILE; default neutral); --max-frames samples N frames evenly across the clips (fixed seed). Methods:
  ikgat          IK-GAT: all 24 joint positions -> rotations (symmetric solve, the default);
                 ikgat_one_pass: one network pass, not symmetric (half the network's cost)
  analytic_full  rotations from bone directions alone (swing only, zero twist)
  ikgat_noise    IK-GAT (symmetric, denoise 'auto') and analytic_full on the same positions with
                 Gaussian noise on every joint, 1, 2 and 5 cm standard deviation (fixed seed):
                 "1cm" etc., each geodesic_deg and analytic_deg, and both again over the joints
                 with children only (*_inner: the head, hands and feet left out, whose rotations
                 no joint position shows, so either answer there is a guess at the rig's habit)
  baseline_6pt   optimisation IK (scipy least squares on forward kinematics with a pose
                 prior) from the rest pose, on SMPL-IK's 6 points: pelvis, neck, wrists,
                 ankles (positions)
  smplik_6pt     SMPL-IK on the same 6 points (symmetric solve, the default: averaged
                 with the mirrored problem's answer); smplik_6pt_refined: then made exact;
                 smplik_6pt_one_pass: one network pass, not symmetric (half the cost)
  smplik_random  SMPL-IK on 3-12 random effectors per pose (positions, rotations, look-ats;
                 at least one position), fixed seed; also MPJPE by number of effectors;
                 smplik_random_refined: then made exact
Generative SMPL-IK (with models/ik/weights/smplik_flow.npz; on --protocol-frames frames), every
pose refined as the add-on solves:
  smplik_protocol_*  SMPL-IK's paper protocol: 3-16 effectors per pose, the first three
                 positions, the others position, rotation or look-at equally likely;
                 mpjpe_aligned_mm (pelvis-aligned), pa_mpjpe_mm (after the best similarity
                 transform) and by_count (3-4 / 5-8 / 9-12 / 13-16, aligned), for
                 deterministic (the network's answer), natural (the flow's latent origin),
                 best_of_8 (the nearest of 8 samples, SmplIk.sample's default spread: "mixed",
                 the hypotheses head's and the pose library's, where both are shipped, as the
                 add-on's Alternatives), mean_of_8 (a sample's mean error),
                 best_of_8_hypotheses (the head's alone, spread "hypotheses"),
                 best_of_8_library (the library's alone), best_of_8_principal (spread
                 "principal") and best_of_8_random (the nearest of 8 latents drawn at random,
                 spread "random");
                 deterministic and natural also give mpjpe_aligned_mm_network, unrefined
  smplik_6pt_natural  the natural pose on the six points, unrefined (as smplik_6pt)
  smplik_alternatives  8 samples per protocol pose: apd_mm, their mean pairwise distance
                 on the joints without an effector (by count, and on 200 six-point frames),
                 effector_mm_max / effector_deg_max (worst sample after refinement), ms_natural,
                 ms_8 (8 samples, refined), cost_natural / cost_deterministic (median cost J,
                 models/ik/cost.py) and inside_limits (every natural pose and sample)
  smplik_path    the path drag in numpy: from the natural pose on the six points the left
                 wrist (soft) moves 1 cm a step forward and up, 30 steps, from 12 poses; the
                 mean per-step jump of the joints without an effector and the largest foot
                 lift, re-solved by the deterministic network, warm-started from the pose
                 before, and with the latent kept (jump_mm_*, foot_lift_mm_*); and
                 following a path (models.ik.path) on the six points held still with 1 cm of
                 jitter, 30 frames, the per-frame jump at smoothness 0 and 0.5
                 (follow_jump_mm_mu0, follow_jump_mm_mu05)
  smplik_balance  on up to --balance-frames frames whose true feet both stand, a protocol set of
                 effectors with both ankles pinned where they are: inside_fraction_natural and
                 inside_fraction_deterministic, the fraction of solves whose centre of mass is
                 over the support polygon of both soles (models/ik/cost.py); *_without_terms:
                 the same solves with the refinement's balance and self_collision off,
                 *_truth: the mocap poses; effector_mm_max / effector_deg_max, the worst pin
  smplik_collision  on up to --balance-frames protocol frames: fraction_natural, fraction_alternatives
                 (8 samples each) and fraction_deterministic, the fraction of poses with a
                 hand or forearm capsule more than 1 cm inside the trunk or a thigh;
                 *_without_terms and *_truth as for smplik_balance; *_unforced: only the
                 collisions the pins do not force (an arm capsule that its pinned joints'
                 places and turns alone put more than 1 cm inside, models.ik.cost.pinned_depth,
                 is the pins' doing)
SMPL-IK rows also give inside_limits: the fraction of poses whose knees and elbows are all
inside the ranges the refinement keeps (models.ik.refine.JOINT_LIMITS).
Per method: mpjpe_mm (24 joints after FK), geodesic_deg (mean local rotation error; per
joint too), effector_mm (effector methods), ms_single (median, one pose at a time) and
per_s_batch (poses per second in batches of 1024, median of 5 batches; SMPL-IK's batch is
SmplIk.solve_positions). Prints a table and writes JSON
{"frames": N, "methods": {NAME: {...}}}.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one thread, as the figures promise

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.body.model import GENDERS, load_body_model, open_body_path  # noqa: E402
from models.motion.bvh import find_bvh_files, read_bvh  # noqa: E402
from models.core.errors import SmplIkError  # noqa: E402
from models.core.files import write_json  # noqa: E402
from models.core.kinematics import analytic_rotations  # noqa: E402
from models.ik.ikgat import DEFAULT_WEIGHTS as IKGAT_WEIGHTS, IkGat  # noqa: E402
from models.core.kinematics import forward_kinematics  # noqa: E402
from models.core.metrics import aligned_error, procrustes_error  # noqa: E402
from models.motion.retarget import retarget  # noqa: E402
from models.core.rotations import axis_angle_to_matrix, geodesic_angle  # noqa: E402
from models.ik.refine import JOINT_LIMITS, refine_pose  # noqa: E402
from models.core.skeleton import CHILDREN, JOINT_INDEX, JOINT_NAMES, PARENTS  # noqa: E402
from models.ik.effectors import Effector, EffectorKind, encode_effector_sets, joint_of  # noqa: E402
from models.ik.smplik import ALTERNATIVES_SEED, DEFAULT_WEIGHTS as SMPLIK_WEIGHTS, SmplIk, SolveOptions  # noqa: E402
from models.ik.smplik import SIX_POINT_JOINTS, six_point_effectors  # noqa: E402
from models.ik.nn import WEIGHTS_DIR  # noqa: E402
from models.ik.flow import DEFAULT_FLOW_WEIGHTS as FLOW_WEIGHTS  # noqa: E402

SIX_POINTS = SIX_POINT_JOINTS


def trained_clips(weights_dir):
    """Names of the clips any network in weights_dir was trained on (its training records)."""
    return {Path(c).name for record in sorted(Path(weights_dir).glob("*.json"))
            for c in json.loads(record.read_text()).get("train_clips", [])}


def display_path(path):
    """A path as a report names it: relative to the project when inside it (the shipped weights
    read models/ik/weights from any clone), else as given."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def ground_truth(folder, max_frames, held_out_only, body, seed=0, weights_dir=WEIGHTS_DIR):
    """Local rotations (N, 24, 3, 3), rest joints (N, 24, 3), positions (N, 24, 3), clip names."""
    files = [f.path for f in find_bvh_files([folder]).found]
    if held_out_only:
        trained = trained_clips(weights_dir)
        files = [f for f in files if f.name not in trained]
    if not files:
        raise SystemExit(f"{folder}: no BVH clips to benchmark on")
    rots, rests, poss, names = [], [], [], []
    for f in files:
        try:
            r = retarget(read_bvh(f), body)
        except SmplIkError as exc:
            print(f"skipped {f.name}: {exc}", file=sys.stderr)
            continue
        rot = axis_angle_to_matrix(r.poses)[1:]  # frame 0 of a clip is often a reference pose
        rest = body.rest_joints(r.betas)
        pos = forward_kinematics(rot, rest, PARENTS, r.trans[1:]).positions
        rots.append(rot)
        rests.append(np.broadcast_to(rest, pos.shape))
        poss.append(pos)
        names += [f.name] * len(rot)
    rot, rest, pos = (np.concatenate(x) for x in (rots, rests, poss))
    if max_frames and max_frames < len(rot):
        idx = np.sort(np.random.default_rng(seed).choice(len(rot), max_frames, replace=False))
        rot, rest, pos = rot[idx], rest[idx], pos[idx]
        names = [names[i] for i in idx]
    return rot, rest, pos, sorted(set(names))


def score(pred_rot, rest, pos, gt_rot, trans=None, effectors=None):
    """MPJPE (mm) and geodesic error (deg) of local rotations; without `trans` the root is put
    at the true pelvis (position-to-rotation methods). effectors: per frame, the joints with
    position effectors, for effector_mm."""
    trans = pos[:, 0] - rest[:, 0] if trans is None else trans
    fk = forward_kinematics(pred_rot, rest, PARENTS, trans).positions
    angle = np.degrees(geodesic_angle(pred_rot, gt_rot))
    out = {"mpjpe_mm": float(np.linalg.norm(fk - pos, axis=-1).mean() * 1000), "geodesic_deg": float(angle.mean()),
           "geodesic_deg_by_joint": {name: round(float(a), 1) for name, a in zip(JOINT_NAMES, angle.mean(0))}}
    if effectors is not None:
        err = [np.linalg.norm(fk[n, e] - pos[n, e], axis=-1) for n, e in enumerate(effectors) if len(e)]
        out["effector_mm"] = float(np.concatenate(err).mean() * 1000)
    return out


NOISE_LEVELS_M = (0.01, 0.02, 0.05)


def noise_figures(net, pos, rest, gt_rot, seed=7):
    """IK-GAT's and the analytic answer's mean local rotation error (deg) on positions with
    Gaussian noise of each NOISE_LEVELS_M standard deviation on every joint."""
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


def random_effectors(pos, world, rng):
    """3-12 effectors of random kinds per frame (positions 60%, rotations 25%, look-ats 15%);
    the first is always a position, since without one the body's place is unknown."""
    sets = []
    for n in range(len(pos)):
        k = rng.integers(3, 13)
        effs = []
        for i, j in enumerate(rng.permutation(24)[:k]):
            u = 0.0 if i == 0 else rng.random()
            effs.append(true_effector(0 if u < 0.6 else 1 if u < 0.85 else 2, int(j), pos[n], world[n], rng))
        sets.append(effs)
    return sets


def true_effector(kind, j, pos, world, rng):
    """An effector of kind 0 (position), 1 (rotation) or 2 (look-at: a random local axis, its
    target 0.3-2 m along it) that joint j of a true pose (positions, world rotations) meets."""
    if kind == 0:
        return Effector(j, EffectorKind.POSITION, tuple(pos[j]))
    if kind == 1:
        return Effector(j, EffectorKind.ROTATION, world[j])
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    return Effector(j, EffectorKind.LOOK_AT, tuple(pos[j] + world[j] @ axis * rng.uniform(0.3, 2)), tuple(axis))


def refined(local, trans, rest, sets, pos, gt_rot, network):
    """Score the network's poses made exact by models.ik.refine; timing is the network's plus
    the refinement's mean per pose."""
    t = time.perf_counter()
    out = [refine_pose(local[i], trans[i], rest[i], sets[i]) for i in range(len(sets))]
    per_pose = (time.perf_counter() - t) / len(sets)
    poses = np.stack([r.local_rot for r in out])
    return {**score(poses, rest, pos, gt_rot, np.stack([r.trans for r in out]), effector_joints(sets)),
            "ms_single": per_pose * 1000 + network["ms_single"], "per_s_batch": 1 / per_pose,
            "inside_limits": inside_limits(poses)}


def inside_limits(local_rot):
    """Fraction of poses (N, 24, 3, 3) whose knees and elbows are all inside the documented
    ranges (models.ik.refine.JOINT_LIMITS), read with scipy's Euler decomposition."""
    from scipy.spatial.transform import Rotation

    ok = np.ones(len(local_rot), bool)
    for lim in JOINT_LIMITS:
        angles = Rotation.from_matrix(local_rot[:, JOINT_INDEX[lim.joint]]).as_euler(lim.order, degrees=True)
        ok &= np.all((angles >= np.array(lim.low) - 1e-6) & (angles <= np.array(lim.high) + 1e-6), axis=1)
    return float(ok.mean())


def effector_joints(sets):
    return [[joint_of(e, n) for n, e in enumerate(effs) if e.kind == EffectorKind.POSITION] for effs in sets]


def median_seconds(call, repeats):
    """Median time of call(i) for i in range(repeats)."""
    times = []
    for i in range(repeats):
        t = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def timing(fn, single_inputs, batch_inputs, repeats=100):
    singles = [[x[i % len(x)][None] for x in single_inputs] for i in range(repeats)]
    return {"ms_single": median_seconds(lambda i: fn(*singles[i]), repeats) * 1000,
            "per_s_batch": len(batch_inputs[0]) / median_seconds(lambda i: fn(*batch_inputs), 5)}


def baseline_6pt(pos, rest, prior=0.05):
    """Optimisation IK from the rest pose: 6 effector positions, axis-angle pose prior.
    Returns local rotations (N, 24, 3, 3) and trans (N, 3)."""
    from scipy.optimize import least_squares

    out, out_trans = np.zeros(pos.shape[:-1] + (3, 3)), np.zeros((len(pos), 3))
    six = list(SIX_POINTS)
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

PROTOCOL_GROUPS = ((3, 4), (5, 8), (9, 12), (13, 16))


def protocol_effectors(pos, world, rng):
    """SMPL-IK's random protocol: 3-16 effectors per pose on distinct joints, the first three
    positions (so the body's place is known), the others of the three kinds equally likely."""
    sets = []
    for n in range(len(pos)):
        effs = []
        for i, j in enumerate(rng.permutation(24)[:rng.integers(3, 17)]):
            effs.append(true_effector(0 if i < 3 else int(rng.integers(3)), int(j), pos[n], world[n], rng))
        sets.append(effs)
    return sets


def apd(positions, joints):
    """Mean pairwise distance (metres) of K poses (K, 24, 3) over `joints`."""
    k = len(positions)
    d = [np.linalg.norm(positions[i, joints] - positions[j, joints], axis=-1).mean() for i in range(k) for j in range(i)]
    return float(np.mean(d))


def worst_errors(effectors, errors):
    """The largest position error (mm) and the largest rotation or look-at error (degrees) of
    effector_errors' per-effector errors (0 where there is none of a kind)."""
    # a mask from `is`, not np.array of the kinds: EffectorKind is a str enum, which numpy
    # turns into truncated strings that all compare equal
    position = np.array([e.kind is EffectorKind.POSITION for e in effectors])
    errors = np.asarray(errors, dtype=np.float64)
    mm = errors[position].max() * 1e3 if position.any() else 0.0
    deg = np.degrees(errors[~position].max()) if (~position).any() else 0.0
    return float(mm), float(deg)


def generative(net, body, gt_rot, rest, pos, world, frames, samples=8, six_frames=200, path_starts=12,
               path_steps=30, balance_frames=400):
    """The protocol, alternatives and path figures of the deterministic network and the flow
    (all refined, as the add-on solves), on `frames` frames; balance and self-collision on
    `balance_frames`. Returns {method: figures}."""
    from models.ik.cost import Segments, pose_cost
    from models.ik.refine import effector_errors

    rng = np.random.default_rng(7)
    idx = np.sort(rng.choice(len(pos), min(frames, len(pos)), replace=False))
    sets = protocol_effectors(pos[idx], world[idx], np.random.default_rng(0))
    reference = Segments.from_body(body)
    zero_rest = body.rest_joints(np.zeros(10))
    prior = (net.flow.prior_mean, net.flow.prior_std)
    kinds = [k for k, there in (("hypotheses", net.hypotheses is not None), ("library", net.library_path is not None),
                                ("principal", True)) if there]   # the spreads these weights have, beside the default
    names = ("deterministic", "natural", "best_of_8", "mean_of_8", *(f"best_of_8_{k}" for k in kinds),
             "best_of_8_random")
    aligned = {m: [] for m in names}
    pa = {m: [] for m in names}
    network_aligned = {"deterministic": [], "natural": []}
    spread, costs, inside, worst_mm, worst_deg, counts = [], {"deterministic": [], "natural": []}, [], 0.0, 0.0, []
    ms = {"deterministic": [], "natural": [], "8": []}
    for n, (i, effs) in enumerate(zip(idx, sets)):
        r, g = rest[i], pos[i]
        seg = reference.scaled_to(r, zero_rest)
        timed = {}
        for mode in ("deterministic", "natural"):
            t = time.perf_counter()
            timed[mode] = net.solve(effs, r, SolveOptions(mode=mode))
            ms[mode].append(time.perf_counter() - t)
            raw = net.solve(effs, r, SolveOptions(mode=mode, refine=None))
            network_aligned[mode].append(aligned_error(raw.positions, g))
            costs[mode].append(pose_cost(timed[mode].local_rot, timed[mode].trans, r, seg, *prior)["cost"])
        t = time.perf_counter()
        alts = net.sample(effs, r, count=samples, seed=ALTERNATIVES_SEED)   # as the add-on's Alternatives
        ms["8"].append(time.perf_counter() - t)
        alt_pos = np.stack([a.positions for a in alts])
        errs = aligned_error(alt_pos, g)
        for mode in ("deterministic", "natural"):
            aligned[mode].append(aligned_error(timed[mode].positions, g))
            pa[mode].append(procrustes_error(timed[mode].positions, g))
        best = int(np.argmin(errs))
        aligned["best_of_8"].append(errs[best])
        aligned["mean_of_8"].append(errs.mean())
        alt_pa = [procrustes_error(p, g) for p in alt_pos]
        pa["best_of_8"].append(min(alt_pa))
        pa["mean_of_8"].append(np.mean(alt_pa))
        for kind in kinds:
            along = np.stack([a.positions for a in net.sample(effs, r, count=samples, seed=ALTERNATIVES_SEED,
                                                              spread=kind)])
            aligned[f"best_of_8_{kind}"].append(aligned_error(along, g).min())
            pa[f"best_of_8_{kind}"].append(min(procrustes_error(p, g) for p in along))
        drawn = np.stack([a.positions for a in net.sample(effs, r, count=samples, seed=n, spread="random")])
        aligned["best_of_8_random"].append(aligned_error(drawn, g).min())
        pa["best_of_8_random"].append(min(procrustes_error(p, g) for p in drawn))
        pinned = {int(e.joint) for e in effs}
        spread.append(apd(alt_pos, [j for j in range(24) if j not in pinned]))
        counts.append(len(effs))
        for a in alts + [timed["natural"]]:
            mm, deg = worst_errors(effs, effector_errors(effs, a.local_rot, a.trans, r))
            worst_mm, worst_deg = max(worst_mm, mm), max(worst_deg, deg)
            inside.append(a.local_rot)
    counts = np.array(counts)
    methods = {}
    for m in names:
        a = np.array(aligned[m]) * 1e3
        methods[f"smplik_protocol_{m}"] = {
            "mpjpe_aligned_mm": float(a.mean()), "pa_mpjpe_mm": float(np.mean(pa[m]) * 1e3),
            "by_count": {f"{lo}-{hi}": round(float(a[(counts >= lo) & (counts <= hi)].mean()), 1)
                         for lo, hi in PROTOCOL_GROUPS if ((counts >= lo) & (counts <= hi)).any()},
            "frames": len(idx)}
    for m in ("deterministic", "natural"):
        methods[f"smplik_protocol_{m}"]["mpjpe_aligned_mm_network"] = float(np.mean(network_aligned[m]) * 1e3)
        methods[f"smplik_protocol_{m}"]["ms_single"] = statistics.median(ms[m]) * 1e3
    spread = np.array(spread) * 1e3
    apd_mm = {f"{lo}-{hi}": round(float(spread[(counts >= lo) & (counts <= hi)].mean()), 1)
              for lo, hi in PROTOCOL_GROUPS if ((counts >= lo) & (counts <= hi)).any()}
    # six points: the network's figures on every frame, the samples' spread on some
    six_effs = [six_point_effectors(p) for p in pos]
    from models.ik.effectors import encode_effector_sets

    nat_local, nat_trans = (x[:, 0] for x in net.decode(net.condition(encode_effector_sets(six_effs), rest),
                                                        np.zeros((len(pos), 1, 72))))
    raw_natural = SolveOptions(mode="natural", refine=None)
    single = median_seconds(lambda i: net.solve(six_effs[i % len(pos)], rest[i % len(pos)], raw_natural), 100)
    methods["smplik_6pt_natural"] = {**score(nat_local, rest, pos, gt_rot, nat_trans, [list(SIX_POINTS)] * len(pos)),
                                     "ms_single": single * 1000, "inside_limits": inside_limits(nat_local)}
    six_idx = np.sort(rng.choice(len(pos), min(six_frames, len(pos)), replace=False))
    free = [j for j in range(24) if j not in SIX_POINTS]
    apd_mm["six_points"] = round(float(np.mean([apd(np.stack([a.positions for a in net.sample(
        six_effs[i], rest[i], count=samples, seed=int(i))]), free) for i in six_idx]) * 1e3), 1)
    methods["smplik_alternatives"] = {
        "apd_mm": apd_mm, "effector_mm_max": worst_mm, "effector_deg_max": worst_deg,
        "ms_natural": statistics.median(ms["natural"]) * 1e3, "ms_8": statistics.median(ms["8"]) * 1e3,
        "ms_deterministic": statistics.median(ms["deterministic"]) * 1e3,
        "cost_natural": float(np.median(costs["natural"])), "cost_deterministic": float(np.median(costs["deterministic"])),
        "inside_limits": inside_limits(np.stack(inside)), "samples": samples, "frames": len(idx)}
    methods["smplik_path"] = path_figures(net, rest, pos, rng, path_starts, path_steps)
    methods.update(balance_collision(net, body, gt_rot, rest, pos, world, balance_frames, samples))
    return methods


def balance_collision(net, body, gt_rot, rest, pos, world, frames, samples=8):
    """smplik_balance and smplik_collision: the add-on's solves (refined with RefineOptions'
    defaults, balance and self-collision on) beside the same solves with both terms off
    (`*_without_terms`), and the mocap's own poses (`*_truth`), measured on the body's own
    cost.BodyParts. Balance, on `frames` frames whose true feet both stand (their lowest sole
    points within cost.SUPPORT_HEIGHT of each other): the protocol's effectors with both ankles
    pinned by position where they truly are; the fraction of natural and deterministic solves
    whose centre of mass is over the support polygon of both soles (within 1 mm,
    cost.balance_distance). Self-collision, on `frames` protocol frames: the fraction of
    natural, deterministic and alternative poses (`samples` each) with a hand or forearm capsule
    more than 1 cm inside the trunk or a thigh (cost.collision_depth); `*_unforced` counts only
    those whose pins do not put the arm there (cost.pinned_depth)."""
    from models.core.kinematics import FKResult
    from models.ik.cost import (HAND_AND_FOREARM, SUPPORT_HEIGHT, BodyParts, balance_distance, collision_depth,
                                pinned_depth)
    from models.ik.refine import RefineOptions, effector_errors

    reference = BodyParts.from_body(body)
    rng = np.random.default_rng(11)
    soles = reference.soles.positions(FKResult(rotations=world, positions=pos))          # (N, K, 3)
    lowest = np.stack([soles[:, reference.sole_foot == f, 1].min(-1) for f in (0, 1)], -1)
    standing = np.flatnonzero(np.abs(lowest[:, 0] - lowest[:, 1]) < SUPPORT_HEIGHT)
    # as the add-on solves: with the body's own parts (scaled to each frame's rest joints)
    settings = {"": RefineOptions(body_parts=reference),
                "_without_terms": RefineOptions(balance=False, self_collision=False, body_parts=reference)}
    ankles = {JOINT_INDEX["left_ankle"], JOINT_INDEX["right_ankle"]}

    def deep(solution, parts, pins=None):
        """Whether an arm is more than 1 cm inside; with pins (positions, rotations), also
        whether one is where the pins do not put it (cost.pinned_depth)."""
        args = (solution.local_rot, solution.trans, solution.rest, parts)
        inside = collision_depth(*args, HAND_AND_FOREARM) > 0.01
        if pins is None:
            return bool(inside.any())
        return bool(inside.any()), bool((inside & (pinned_depth(*args, *pins, joints=HAND_AND_FOREARM) <= 0.01)).any())

    inside = {f"{m}{s}": [] for m in ("natural", "deterministic", "truth") for s in settings if m != "truth" or not s}
    ms = {f"natural{s}": [] for s in settings}
    worst_mm, worst_deg = 0.0, 0.0
    idx = np.sort(rng.choice(standing, min(frames, len(standing)), replace=False)) if len(standing) else []
    for i, effs in zip(idx, protocol_effectors(pos[idx], world[idx], np.random.default_rng(12))):
        parts = reference.scaled_to(rest[i])
        effs = [e for e in effs if not (int(e.joint) in ankles and e.kind is EffectorKind.POSITION)]
        effs += [Effector(j, EffectorKind.POSITION, tuple(pos[i, j])) for j in sorted(ankles)]
        truth = balance_distance(gt_rot[i], pos[i, 0] - rest[i, 0], rest[i], parts, pinned=(True, True))
        inside["truth"].append(truth <= 1e-3)
        for suffix, refine in settings.items():
            for mode in ("natural", "deterministic"):
                t = time.perf_counter()
                solution = net.solve(effs, rest[i], SolveOptions(mode=mode, refine=refine))
                if mode == "natural":
                    ms[f"natural{suffix}"].append(time.perf_counter() - t)
                out = balance_distance(solution.local_rot, solution.trans, rest[i], parts, pinned=(True, True))
                inside[f"{mode}{suffix}"].append(out <= 1e-3)
                if not suffix:
                    mm, deg = worst_errors(effs, effector_errors(effs, solution.local_rot, solution.trans, rest[i]))
                    worst_mm, worst_deg = max(worst_mm, mm), max(worst_deg, deg)
    fraction = lambda x: float(np.mean(x)) if len(x) else None   # noqa: E731
    balance = {f"inside_fraction_{k}": fraction(v) for k, v in inside.items()}
    balance.update({f"ms_{k}": statistics.median(v) * 1e3 if v else None for k, v in ms.items()})
    balance.update({"effector_mm_max": worst_mm, "effector_deg_max": worst_deg, "frames": len(idx)})

    flagged = {f"{m}{s}": [] for m in ("natural", "alternatives", "deterministic", "truth") for s in settings
               if m != "truth" or not s}
    flagged.update({f"{m}_unforced": [] for m in ("natural", "alternatives", "deterministic")})
    idx = np.sort(rng.choice(len(pos), min(frames, len(pos)), replace=False))
    for i, effs in zip(idx, protocol_effectors(pos[idx], world[idx], np.random.default_rng(13))):
        parts = reference.scaled_to(rest[i])
        pins = ({int(e.joint): e.target for e in effs if e.kind is EffectorKind.POSITION},
                {int(e.joint): e.target for e in effs if e.kind is EffectorKind.ROTATION})
        flagged["truth"].append(bool(collision_depth(gt_rot[i], pos[i, 0] - rest[i, 0], rest[i], parts,
                                                     HAND_AND_FOREARM).max() > 0.01))
        for suffix, refine in settings.items():
            solutions = {mode: [net.solve(effs, rest[i], SolveOptions(mode=mode, refine=refine))]
                         for mode in ("natural", "deterministic")}
            solutions["alternatives"] = net.sample(effs, rest[i], count=samples, seed=ALTERNATIVES_SEED,
                                                   options=SolveOptions(refine=refine))
            for mode, poses in solutions.items():
                for pose in poses:
                    if suffix:
                        flagged[f"{mode}{suffix}"].append(deep(pose, parts))
                    else:   # with the terms: also whether the pins force it
                        any_deep, not_forced = deep(pose, parts, pins)
                        flagged[mode].append(any_deep)
                        flagged[f"{mode}_unforced"].append(not_forced)
    collision = {f"fraction_{k}": fraction(v) for k, v in flagged.items()}
    collision.update({"frames": len(idx), "samples": samples})
    return {"smplik_balance": balance, "smplik_collision": collision}


def path_figures(net, rest, pos, rng, starts, steps):
    """The path drag in numpy: from the natural pose on six points, the left-wrist effector
    (soft) moves 1 cm a step forward and up, the other five held; per step, how far the
    joints without an effector move, solved afresh by the deterministic network, warm-started
    from the pose before (the add-on's drag without the flow) and with the latent kept."""
    from models.ik.effectors import Effector as E
    from models.ik.path import PathFollower

    wrist = SIX_POINTS.index(JOINT_INDEX["left_wrist"])
    free = [j for j in range(24) if j not in SIX_POINTS]
    feet = [JOINT_INDEX[j] for j in ("left_ankle", "right_ankle", "left_foot", "right_foot")]
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
            prev, y0 = start, start.positions[feet, 1]
            for step in range(1, steps + 1):
                moved = list(effs)
                moved[wrist] = E("left_wrist", EffectorKind.POSITION, tuple(pos[i, 20] + 0.01 * step * direction), soft=True)
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
                lift[mode] = max(lift[mode], np.abs(now.positions[feet, 1] - y0).max())
                prev = now
    # following a path: pins held still with 1 cm of jitter, 30 frames, smoothness 0 and 0.5
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="folder of BVH clips")
    ap.add_argument("--json", type=Path, required=True, help="JSON output")
    ap.add_argument("--max-frames", type=int, default=2000, help="frames sampled across the clips (default 2000)")
    ap.add_argument("--held-out-only", action="store_true", help="only the clips the networks were not trained on")
    ap.add_argument("--protocol-frames", type=int, default=1000,
                    help="frames for the generative figures (protocol, alternatives; 0: none) (default 1000)")
    ap.add_argument("--balance-frames", type=int, default=400,
                    help="frames for the balance and self-collision figures, each solved with the refinement's "
                         "terms and without (default 400)")
    ap.add_argument("--baseline-frames", type=int, default=100,
                    help="frames for the (slow) optimisation baseline (0: none) (default 100)")
    ap.add_argument("--weights", type=Path, default=WEIGHTS_DIR,
                    help="folder holding the networks (ikgat.npz, smplik.npz, smplik_flow.npz and their "
                         "records) (default the shipped ones)")
    ap.add_argument("--body", default="neutral",
                    help="the body the clips are retargeted onto: neutral, female, male (the open bodies) "
                         "or an SMPL-family file (default neutral)")
    args = ap.parse_args(argv)

    try:
        body = load_body_model(open_body_path(args.body) if args.body in GENDERS else args.body)
    except SmplIkError as exc:
        raise SystemExit(f"--body: {exc}") from None
    ikgat_weights, smplik_weights, flow_weights = (args.weights / p.name for p in (IKGAT_WEIGHTS, SMPLIK_WEIGHTS,
                                                                                    FLOW_WEIGHTS))
    gt_rot, rest, pos, clips = ground_truth(args.data, args.max_frames, args.held_out_only, body,
                                            weights_dir=args.weights)
    n = len(gt_rot)
    batch = [np.resize(pos, (1024,) + pos.shape[1:]), np.resize(rest, (1024,) + rest.shape[1:])]
    methods = {}
    methods["analytic_full"] = {**score(analytic_rotations(pos, rest), rest, pos, gt_rot),
                                **timing(analytic_rotations, [pos, rest], batch)}
    if ikgat_weights.exists():
        for name, symmetric in (("ikgat_one_pass", False), ("ikgat", True)):
            net = IkGat.load(ikgat_weights, symmetric=symmetric)
            methods[name] = {**score(net(pos, rest), rest, pos, gt_rot), **timing(net, [pos, rest], batch)}
        methods["ikgat_noise"] = noise_figures(net, pos, rest, gt_rot)
    else:
        print(f"ikgat skipped: {ikgat_weights} not trained yet", file=sys.stderr)
    if smplik_weights.exists():
        world = forward_kinematics(gt_rot, rest, PARENTS, pos[:, 0] - rest[:, 0]).rotations
        six = [six_point_effectors(p) for p in pos]
        big = np.resize(pos[:, list(SIX_POINTS)], (1024, len(SIX_POINTS), 3))
        for name, symmetric in (("smplik_6pt_one_pass", False), ("smplik_6pt", True)):
            net = SmplIk.load(smplik_weights, symmetric=symmetric, flow_path=flow_weights)
            local, trans = net.solve_positions(SIX_POINTS, pos[:, list(SIX_POINTS)], rest)
            single = median_seconds(lambda i: net.solve(six[i % n], rest[i % n], SolveOptions(refine=None)), 100)
            rate = 1024 / median_seconds(lambda i: net.solve_positions(SIX_POINTS, big, batch[1]), 5)
            methods[name] = {**score(local, rest, pos, gt_rot, trans, [list(SIX_POINTS)] * n),
                             "ms_single": single * 1000, "per_s_batch": rate, "inside_limits": inside_limits(local)}
        methods["smplik_6pt_refined"] = refined(local, trans, rest, six, pos, gt_rot, methods["smplik_6pt"])
        sets = random_effectors(pos, world, np.random.default_rng(0))
        local, trans = net.predict(encode_effector_sets(sets), rest)
        counts = np.array([len(e) for e in sets])
        by_count = {}
        for lo, hi in ((3, 4), (5, 8), (9, 12)):
            k = (counts >= lo) & (counts <= hi)
            by_count[f"{lo}-{hi}"] = round(score(local[k], rest[k], pos[k], gt_rot[k], trans[k])["mpjpe_mm"], 1)
        methods["smplik_random"] = {**score(local, rest, pos, gt_rot, trans, effector_joints(sets)),
                                    "mpjpe_mm_by_effector_count": by_count,
                                    "ms_single": methods["smplik_6pt"]["ms_single"], "per_s_batch": rate,
                                    "inside_limits": inside_limits(local)}
        methods["smplik_random_refined"] = refined(local, trans, rest, sets, pos, gt_rot, methods["smplik_random"])
        if net.flow is not None and args.protocol_frames:
            methods.update(generative(net, body, gt_rot, rest, pos, world, args.protocol_frames,
                                      balance_frames=args.balance_frames))
        elif net.flow is None:
            print(f"generative figures skipped: {flow_weights} not trained yet", file=sys.stderr)
    else:
        print(f"smplik skipped: {smplik_weights} not trained yet", file=sys.stderr)
    k = min(args.baseline_frames, n)
    if k > 0:
        t = time.perf_counter()
        base = baseline_6pt(pos[:k], rest[:k])
        per_pose = (time.perf_counter() - t) / k
        methods["baseline_6pt"] = {**score(base[0], rest[:k], pos[:k], gt_rot[:k], base[1], [list(SIX_POINTS)] * k),
                                   "ms_single": per_pose * 1000, "per_s_batch": 1.0 / per_pose, "frames": k}
    report = {"frames": n, "data": str(args.data), "held_out_only": args.held_out_only, "clips": clips,
              "weights": display_path(args.weights),
              "body": body.label,
              "methods": {m: {key: round(v, 3) if isinstance(v, float) else v for key, v in r.items()}
                          for m, r in methods.items()}}
    print(f"{n} frames from {len(clips)} clips in {args.data}")
    cols = ("mpjpe_mm", "geodesic_deg", "effector_mm", "ms_single", "per_s_batch")
    print(f"{'method':16}" + "".join(f"{c:>14}" for c in cols))
    for name, r in report["methods"].items():
        print(f"{name:16}" + "".join(f"{r[c]:>14.3f}" if c in r else f"{'':>14}" for c in cols))
    if "ikgat_noise" in report["methods"]:
        print("ikgat_noise (IK-GAT / analytic, deg): " + ", ".join(
            f"{k}: {v['geodesic_deg']:.1f} / {v['analytic_deg']:.1f}" for k, v in report["methods"]["ikgat_noise"].items()))
    if "smplik_random" in report["methods"]:
        counts = report["methods"]["smplik_random"]["mpjpe_mm_by_effector_count"]
        print("smplik_random MPJPE by number of effectors: " + ", ".join(f"{k}: {v} mm" for k, v in counts.items()))
    for name, r in report["methods"].items():
        if name.startswith("smplik_protocol_"):
            print(f"{name}: {r['mpjpe_aligned_mm']:.1f} mm pelvis-aligned, PA {r['pa_mpjpe_mm']:.1f} mm; by count {r['by_count']}")
    if "smplik_alternatives" in report["methods"]:
        print("smplik_alternatives:", json.dumps(report["methods"]["smplik_alternatives"]))
        print("smplik_path:", json.dumps(report["methods"]["smplik_path"]))
    write_json(args.json, report)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
