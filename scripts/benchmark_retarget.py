"""Benchmark BVH -> SMPL retargeting on one core: throughput and quality, printed and as JSON.

    python scripts/benchmark_retarget.py [FOLDER...] [--json docs/figures/benchmark_retarget.json]

Defaults to ../shared/data/mocap/cmu_train, m21, cmu_varied and aclstm. For each folder it times
reading, retargeting and writing every clip (median of --repeat runs per clip, one thread),
and reports the mean limb-direction error with and without the polish pass, the trunk's
(pelvis to neck) direction error, the spine's turn (spine1-3's mean local rotation, the median
frame of the median clip: a spine that bends forward at one joint and back at the next turns
far more than the trunk does), each clip's
body check (height, largest |beta|, bone-length residual, torso lean against the source's,
warnings) and the shape inversion's limb-length ratios on the folder's first clip.
"""
import os

os.environ["OMP_NUM_THREADS"] = "1"   # one core, as promised by the figures
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import argparse
from pathlib import Path

from benchmarks.data import RETARGET_FOLDERS
from benchmarks.retarget import bench_folder
from models.body.model import load_body_model
from models.core.errors import SmplIkError
from models.core.files import write_json

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "figures"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="*", type=Path, help="folders of .bvh clips")
    ap.add_argument("--json", type=Path, default=FIGURES / "benchmark_retarget.json",
                    help="JSON output (default docs/figures/benchmark_retarget.json, which the docs quote)")
    ap.add_argument("--repeat", type=int, default=3, help="timing runs per clip (median)")
    args = ap.parse_args(argv)
    folders = args.folders or [f for f in RETARGET_FOLDERS if f.is_dir()]
    if not folders:
        ap.error("no folders given and ../shared/data/mocap is not here")
    body = load_body_model()
    report = {"machine_cores_used": 1, "folders": {}}
    for folder in folders:
        try:
            r = bench_folder(folder, body, args.repeat)
        except SmplIkError as exc:
            raise SystemExit(str(exc)) from None
        report["folders"][folder.name] = r
        print(f"{folder.name}: {r['clips']} clips, {r['frames']} frames | read {r['read_frames_per_s']} fr/s, "
              f"retarget {r['retarget_frames_per_s']} fr/s, BVH->npz {r['bvh_to_npz_frames_per_s']} fr/s | "
              f"limb error {r['limb_error_deg_mean']:.2f} deg (worst clip {r['limb_error_deg_max_clip']:.2f}); "
              f"without polish {r['limb_error_deg_mean_without_polish']:.2f} "
              f"(worst {r['limb_error_deg_max_clip_without_polish']:.2f}) | trunk {r['trunk_error_deg_mean']:.2f} deg, "
              f"spine turns {r['spine_turn_deg_median']:.1f} deg")
        b = r["body"]
        print(f"  bodies: height {b['height_m_median']} m (median; {b['height_m_min']}-{b['height_m_max']}), "
              f"max |beta| {b['max_abs_beta']}, length residual up to {b['length_residual_pct_max']}%, "
              f"torso lean within {b['lean_gap_deg_max']} deg of the source's, "
              f"{b['clips_with_warnings']} clips with warnings")
        ratios = {k: v["length_ratio"] for k, v in r["shape_inversion"]["measurements"].items()}
        print(f"  shape inversion on {r['shape_inversion']['skeleton_of']}: length ratios {ratios}")
    write_json(args.json, report)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
