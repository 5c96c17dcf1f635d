"""The IK benchmark's generative figures: SMPL-IK's protocol and its alternatives' spread, on mocap."""
import statistics
import time
from dataclasses import dataclass

import numpy as np

from models.core.metrics import aligned_error, procrustes_error
from models.ik.cost import CostOptions, Segments, pose_cost
from models.ik.effectors import SIX_POINT_INDICES, encode_effector_sets, six_point_effectors
from models.ik.options import ALTERNATIVES_SEED, SampleOptions, SolveOptions
from models.ik.residuals import effector_errors

from .effectors import protocol_effectors, worst_errors
from .ik_balance import balance_collision
from .ik_path import path_figures
from .ik_scores import inside_limits, score
from .timing import median_seconds

PROTOCOL_GROUPS = ((3, 4), (5, 8), (9, 12), (13, 16))   # effector counts the protocol's by_count splits into


@dataclass(frozen=True)
class GenerativeOptions:
    """How much the generative figures measure: frames (protocol and alternatives), samples per
    pose, six_frames (frames of the six-point spread), path_starts and path_steps (the path
    drag), balance_frames (balance and self-collision)."""

    frames: int = 1000
    samples: int = 8
    six_frames: int = 200
    path_starts: int = 12
    path_steps: int = 30
    balance_frames: int = 400


def apd(positions, joints):
    """Mean pairwise distance (metres) of K poses (K, 24, 3) over the joint indices `joints`."""
    k = len(positions)
    d = [np.linalg.norm(positions[i, joints] - positions[j, joints], axis=-1).mean()
         for i in range(k) for j in range(i)]
    return float(np.mean(d))


def by_group(values, counts):
    """{"lo-hi": mean of values (rounded to 0.1)} over the PROTOCOL_GROUPS that some count falls in."""
    return {f"{lo}-{hi}": round(float(values[(counts >= lo) & (counts <= hi)].mean()), 1)
            for lo, hi in PROTOCOL_GROUPS if ((counts >= lo) & (counts <= hi)).any()}


def generative(net, body, truth, world, options=GenerativeOptions()):
    """The protocol, alternatives and path figures of the deterministic network and the flow
    of `net` (SmplIk with a flow; all refined, as the add-on solves) on a GroundTruth with its
    world rotations (N, 24, 3, 3), and balance and self-collision (ik_balance). Returns
    {method: figures}."""
    gt_rot, rest, pos = truth.local_rot, truth.rest, truth.positions
    samples = options.samples
    rng = np.random.default_rng(7)
    idx = np.sort(rng.choice(len(pos), min(options.frames, len(pos)), replace=False))
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
        solved = {}
        for mode in ("deterministic", "natural"):
            t = time.perf_counter()
            solved[mode] = net.solve(effs, r, SolveOptions(mode=mode))
            ms[mode].append(time.perf_counter() - t)
            raw = net.solve(effs, r, SolveOptions(mode=mode, refine=None))
            network_aligned[mode].append(aligned_error(raw.positions, g))
            cost = pose_cost(solved[mode].local_rot, solved[mode].trans, r, CostOptions(seg, *prior))
            costs[mode].append(cost["cost"])
        t = time.perf_counter()
        # as the add-on's Alternatives
        alts = net.sample(effs, r, SampleOptions(count=samples, seed=ALTERNATIVES_SEED))
        ms["8"].append(time.perf_counter() - t)
        alt_pos = np.stack([a.positions for a in alts])
        errs = aligned_error(alt_pos, g)
        for mode in ("deterministic", "natural"):
            aligned[mode].append(aligned_error(solved[mode].positions, g))
            pa[mode].append(procrustes_error(solved[mode].positions, g))
        best = int(np.argmin(errs))
        aligned["best_of_8"].append(errs[best])
        aligned["mean_of_8"].append(errs.mean())
        alt_pa = [procrustes_error(p, g) for p in alt_pos]
        pa["best_of_8"].append(min(alt_pa))
        pa["mean_of_8"].append(np.mean(alt_pa))
        for kind in kinds:
            along = np.stack([a.positions for a in net.sample(effs, r, SampleOptions(
                count=samples, seed=ALTERNATIVES_SEED, spread=kind))])
            aligned[f"best_of_8_{kind}"].append(aligned_error(along, g).min())
            pa[f"best_of_8_{kind}"].append(min(procrustes_error(p, g) for p in along))
        drawn = np.stack([a.positions for a in net.sample(effs, r, SampleOptions(count=samples, seed=n,
                                                                                 spread="random"))])
        aligned["best_of_8_random"].append(aligned_error(drawn, g).min())
        pa["best_of_8_random"].append(min(procrustes_error(p, g) for p in drawn))
        pinned = {int(e.joint) for e in effs}
        spread.append(apd(alt_pos, [j for j in range(24) if j not in pinned]))
        counts.append(len(effs))
        for a in alts + [solved["natural"]]:
            mm, deg = worst_errors(effs, effector_errors(effs, a.local_rot, a.trans, r))
            worst_mm, worst_deg = max(worst_mm, mm), max(worst_deg, deg)
            inside.append(a.local_rot)
    counts = np.array(counts)
    methods = {}
    for m in names:
        a = np.array(aligned[m]) * 1e3
        methods[f"smplik_protocol_{m}"] = {
            "mpjpe_aligned_mm": float(a.mean()), "pa_mpjpe_mm": float(np.mean(pa[m]) * 1e3),
            "by_count": by_group(a, counts), "frames": len(idx)}
    for m in ("deterministic", "natural"):
        methods[f"smplik_protocol_{m}"]["mpjpe_aligned_mm_network"] = float(np.mean(network_aligned[m]) * 1e3)
        methods[f"smplik_protocol_{m}"]["ms_single"] = statistics.median(ms[m]) * 1e3
    apd_mm = by_group(np.array(spread) * 1e3, counts)
    # six points: the network's figures on every frame, the samples' spread on some
    six_effs = [six_point_effectors(p) for p in pos]
    nat_local, nat_trans = (x[:, 0] for x in net.decode(net.condition(encode_effector_sets(six_effs), rest),
                                                        np.zeros((len(pos), 1, 72))))
    raw_natural = SolveOptions(mode="natural", refine=None)
    single = median_seconds(lambda i: net.solve(six_effs[i % len(pos)], rest[i % len(pos)], raw_natural), 100)
    methods["smplik_6pt_natural"] = {**score(nat_local, rest, pos, gt_rot, nat_trans,
                                             [list(SIX_POINT_INDICES)] * len(pos)),
                                     "ms_single": single * 1000, "inside_limits": inside_limits(nat_local)}
    six_idx = np.sort(rng.choice(len(pos), min(options.six_frames, len(pos)), replace=False))
    free = [j for j in range(24) if j not in SIX_POINT_INDICES]
    apd_mm["six_points"] = round(float(np.mean([apd(np.stack([a.positions for a in net.sample(
        six_effs[i], rest[i], SampleOptions(count=samples, seed=int(i)))]), free) for i in six_idx]) * 1e3), 1)
    methods["smplik_alternatives"] = {
        "apd_mm": apd_mm, "effector_mm_max": worst_mm, "effector_deg_max": worst_deg,
        "ms_natural": statistics.median(ms["natural"]) * 1e3, "ms_8": statistics.median(ms["8"]) * 1e3,
        "ms_deterministic": statistics.median(ms["deterministic"]) * 1e3,
        "cost_natural": float(np.median(costs["natural"])),
        "cost_deterministic": float(np.median(costs["deterministic"])),
        "inside_limits": inside_limits(np.stack(inside)), "samples": samples, "frames": len(idx)}
    methods["smplik_path"] = path_figures(net, rest, pos, rng, options.path_starts, options.path_steps)
    methods.update(balance_collision(net, body, truth, world, options.balance_frames, samples))
    return methods
