"""Benchmark the learned IK against classical answers on motion capture, one thread.

    python scripts/benchmark.py --data DIR --json OUT [--max-frames N] [--held-out-only] [--weights DIR]
                                [--body neutral|female|male|FILE]

Every clip in DIR is retargeted with the motion code to get ground-truth SMPL poses on a
fitted body (the open body of --body's gender, or an SMPL-family FILE; default neutral);
--max-frames samples N frames evenly across the clips (fixed seed). Methods:
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
inside the ranges the refinement keeps (models.ik.limits.JOINT_LIMITS).
Per method: mpjpe_mm (24 joints after FK), geodesic_deg (mean local rotation error; per
joint too), effector_mm (effector methods), ms_single (median, one pose at a time) and
per_s_batch (poses per second in batches of 1024, median of 5 batches; SMPL-IK's batch is
SmplIk.solve_positions). Prints a table and writes JSON
{"frames": N, "methods": {NAME: {...}}}.
"""
import os

os.environ["OMP_NUM_THREADS"] = "1"   # one thread, as the figures promise
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import argparse
import json
import sys
from pathlib import Path

from benchmarks.data import display_path, ground_truth
from benchmarks.ik_methods import IkBenchmarkOptions, measure
from benchmarks.report import rounded
from models.body.model import GENDERS, load_body_model, open_body_path
from models.core.errors import SmplIkError
from models.core.files import write_json
from models.ik.nn import WEIGHTS_DIR


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
    try:
        truth = ground_truth(args.data, args.max_frames, args.held_out_only, body, weights_dir=args.weights)
    except SmplIkError as exc:
        raise SystemExit(str(exc)) from None
    for name, why in truth.skipped:
        print(f"skipped {name}: {why}", file=sys.stderr)
    methods, notes = measure(truth, body, IkBenchmarkOptions(args.weights, args.protocol_frames, args.balance_frames,
                                                              args.baseline_frames))
    for note in notes:
        print(note, file=sys.stderr)
    n, clips = len(truth.local_rot), truth.clips
    report = {"frames": n, "data": str(args.data), "held_out_only": args.held_out_only, "clips": clips,
              "weights": display_path(args.weights), "body": body.label, "methods": rounded(methods)}
    print(f"{n} frames from {len(clips)} clips in {args.data}")
    cols = ("mpjpe_mm", "geodesic_deg", "effector_mm", "ms_single", "per_s_batch")
    print(f"{'method':16}" + "".join(f"{c:>14}" for c in cols))
    for name, r in report["methods"].items():
        print(f"{name:16}" + "".join(f"{r[c]:>14.3f}" if c in r else f"{'':>14}" for c in cols))
    if "ikgat_noise" in report["methods"]:
        noise = report["methods"]["ikgat_noise"]
        print("ikgat_noise (IK-GAT / analytic, deg): " + ", ".join(
            f"{k}: {v['geodesic_deg']:.1f} / {v['analytic_deg']:.1f}" for k, v in noise.items()))
    if "smplik_random" in report["methods"]:
        counts = report["methods"]["smplik_random"]["mpjpe_mm_by_effector_count"]
        print("smplik_random MPJPE by number of effectors: " + ", ".join(f"{k}: {v} mm" for k, v in counts.items()))
    for name, r in report["methods"].items():
        if name.startswith("smplik_protocol_"):
            print(f"{name}: {r['mpjpe_aligned_mm']:.1f} mm pelvis-aligned, PA {r['pa_mpjpe_mm']:.1f} mm; "
                  f"by count {r['by_count']}")
    if "smplik_alternatives" in report["methods"]:
        print("smplik_alternatives:", json.dumps(report["methods"]["smplik_alternatives"]))
        print("smplik_path:", json.dumps(report["methods"]["smplik_path"]))
    write_json(args.json, report)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
