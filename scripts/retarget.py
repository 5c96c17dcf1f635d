"""Retarget BVH motion capture onto an SMPL body: one AMASS-style .npz per input file.

    python scripts/retarget.py INPUT... --out DIR [options]

INPUT is a .bvh file, a folder (searched recursively) or a glob ("mocap/**/*.bvh").
For X.bvh it writes DIR/X.npz (folders keep their sub-folders), as every motion file of this
project is written (models.motion.amass.write_motion_npz), with
  poses (T, 72) axis-angle in SMPL joint order, root first;  root_orient (T, 3) and
  pose_body (T, 63), AMASS's split of them;  trans (T, 3) metres;  betas (10,) from shape
  inversion, at the source's size;  mocap_framerate and mocap_frame_rate;  gender;
  body_model;  up_axis ("Y": SMPL's frame, Y up);  and the retargeting report: source,
  limb_error_deg, length_unit and the body check: height_m, max_abs_beta,
  length_residual_pct, torso_lean_deg (source, body) and warnings (one string each).
The file's length unit is inferred from its skeleton (an adult is 1.4-2.1 m tall) unless
--unit gives it. A body that is not plausible (height outside 1.4-2.1 m with an inferred
unit, betas at their bound, bone lengths missed by over 5%, the torso leaning 10 degrees off
the source's) is retargeted with a WARNING in the table, the .npz and the --report JSON.
Joints are found from each skeleton's tree and shape (legs, arms, spine, head, left and right
from the way the body faces), whatever its bones are called; --mapping overrides any of them,
and --report says for each SMPL joint which source joint it took, how it was found (structure,
name, both, or the mapping file) and how sure that is. A skeleton that is no humanoid (a hand
alone, a four-legged animal) is refused with the reason.
--fps gives the frame rate of files whose header states a wrong one; every output takes it,
and the table's fps column says so: "60 (given; header says 120)".
Existing outputs are kept unless --overwrite: their files are reported as skipped, so a batch
can be run again to finish what it left. A failed file never leaves a partial output and the
others still run; the exit status is 1 if any file failed.
"""
import argparse
import sys

from benchmarks.cli import add_batch_options, check_batch_options, run_batch_as_asked
from models.core.errors import SmplIkError
from models.core.files import write_json
from models.motion.batch import RetargetJob, output_paths, results_report, results_table
from models.motion.bvh import find_bvh_files
from models.motion.rates import RULES_HELP, given_fps, rate_rules
from models.motion.units import LENGTH_UNITS, parse_unit


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", metavar="INPUT", help="BVH files, folders or globs")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--body", help="SMPL/SMPL-H/SMPL-X model file (default: the open body)")
    ap.add_argument("--mapping", help='JSON {"smpl_joint": "source joint" or null} overriding the automatic mapping')
    ap.add_argument("--bvh-out", action="store_true", help="also write DIR/X_smpl.bvh on SMPL's skeleton")
    ap.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    ap.add_argument("--unit", help=f"the files' length unit: {', '.join(LENGTH_UNITS)} ('cmu': CMU's own "
                                   "1/0.45 inch) or metres per unit; default: inferred from each skeleton")
    ap.add_argument("--fps", action="append", metavar="[PATTERN=]RATE", help=RULES_HELP)
    ap.add_argument("--report", help="also write a JSON report of every file (body figures, warnings, and per "
                    "SMPL joint the source joint, how it was found and a confidence)")
    ap.add_argument("--no-polish", action="store_true",
                    help="rotation transfer only: skip the pass that makes segments follow the source's")
    add_batch_options(ap)
    args = ap.parse_args(argv)
    check_batch_options(ap, args)
    if args.unit:
        try:
            parse_unit(args.unit)
        except SmplIkError as exc:
            ap.error(str(exc))
    try:
        rates = rate_rules(args.fps)
    except SmplIkError as exc:
        ap.error(f"--fps {exc}")

    search = find_bvh_files(args.inputs)
    pairs, failures = output_paths([(f.path, f.relative) for f in search.found], args.out, search.missing)
    jobs = [RetargetJob(source=str(src), output=str(target), body=args.body or "", mapping=args.mapping or "",
                        polish=not args.no_polish, overwrite=args.overwrite, unit=args.unit or "",
                        source_fps=given_fps(rates, src),
                        bvh_output=str(target.with_name(target.stem + "_smpl.bvh")) if args.bvh_out else "")
            for src, target in pairs]
    try:
        results = run_batch_as_asked(jobs, failures, args)
    except SmplIkError as exc:
        raise SystemExit(str(exc)) from None
    sys.stdout.write(results_table(results))
    if args.report:
        write_json(args.report, results_report(results))
    return 0 if results and not any(r.failed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
