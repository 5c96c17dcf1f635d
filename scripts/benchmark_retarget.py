"""Benchmark BVH -> SMPL retargeting on one core: throughput and quality, printed and as JSON.

    python scripts/benchmark_retarget.py [FOLDER...] [--json docs/figures/benchmark_retarget.json]

Defaults to ../shared/data/mocap/cmu_train, m21 and cmu_varied. For each folder it times
reading, retargeting and writing every clip (median of --repeat runs per clip, one thread),
and reports the mean limb-direction error with and without the polish pass, the trunk's
(pelvis to neck) direction error, the spine's turn (spine1-3's mean local rotation, the median
frame of the median clip: a spine that bends forward at one joint and back at the next turns
far more than the trunk does), each clip's
body check (height, largest |beta|, bone-length residual, torso lean against the source's,
warnings) and the shape inversion's limb-length ratios on the folder's first clip.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # one core, as promised by the figures

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.core.files import write_json  # noqa: E402
from models.motion.batch import RetargetJob, run_job  # noqa: E402
from models.body.model import load_body_model  # noqa: E402
from models.motion.bvh import find_bvh_files, read_bvh  # noqa: E402
from models.motion.retarget import retarget  # noqa: E402
from models.core.skeleton import JOINT_INDEX  # noqa: E402

SPINE = [JOINT_INDEX[n] for n in ("spine1", "spine2", "spine3")]
DEFAULT = [ROOT.parent / "shared" / "data" / "mocap" / name for name in ("cmu_train", "m21", "cmu_varied")]


def timed(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def bench_folder(folder, body, repeat):
    files = [f.path for f in find_bvh_files([folder]).found]
    frames = read_s = retarget_s = total_s = 0.0
    errors, raw_errors, checks, spine, trunk = [], [], {}, [], []
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            t_read, motion = timed(lambda: read_bvh(path), repeat)
            t_rt, result = timed(lambda: retarget(motion, body), repeat)
            raw = retarget(motion, body, polish=False)
            job = RetargetJob(source=str(path), output=str(Path(tmp) / (path.stem + ".npz")), overwrite=True)
            t_all, res = timed(lambda: run_job(job), repeat)
            if not res.ok:
                raise SystemExit(f"{path}: {res.error}")
            frames += motion.num_frames
            read_s += t_read
            retarget_s += t_rt
            total_s += t_all
            errors.append(result.mean_limb_error_deg)
            raw_errors.append(raw.mean_limb_error_deg)
            checks[path.name] = result.check
            turns = np.degrees(np.linalg.norm(result.poses[:, SPINE], axis=-1))        # (T, 3)
            spine.append(float(np.median(turns.mean(axis=1))))
            trunk.append(result.limb_error_deg["pelvis->neck"])
            if path == files[0]:
                fit = result.shape
    heights = [c.height_m for c in checks.values()]
    return {
        "clips": len(files), "frames": int(frames),
        "read_frames_per_s": round(frames / read_s),
        "retarget_frames_per_s": round(frames / retarget_s),
        "bvh_to_npz_frames_per_s": round(frames / total_s),
        "limb_error_deg_mean": round(statistics.mean(errors), 3),
        "limb_error_deg_max_clip": round(max(errors), 3),
        "limb_error_deg_mean_without_polish": round(statistics.mean(raw_errors), 3),
        "limb_error_deg_max_clip_without_polish": round(max(raw_errors), 3),
        "trunk_error_deg_mean": round(statistics.mean(trunk), 2),
        "spine_turn_deg_median": round(statistics.median(spine), 1),
        "body": {"height_m_median": round(statistics.median(heights), 3),
                 "height_m_min": round(min(heights), 3), "height_m_max": round(max(heights), 3),
                 "max_abs_beta": round(max(c.max_abs_beta for c in checks.values()), 2),
                 "length_residual_pct_max": round(max(c.length_residual_pct for c in checks.values()), 2),
                 "lean_gap_deg_max": round(max(abs(c.lean_body_deg - c.lean_source_deg) for c in checks.values()), 1),
                 "clips_with_warnings": sum(bool(c.warnings) for c in checks.values())},
        "clips_body": {name: c.report() for name, c in checks.items()},
        "shape_inversion": {"skeleton_of": files[0].name, **fit.report()},
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="*", type=Path, help="folders of .bvh clips")
    ap.add_argument("--json", type=Path, default=ROOT / "docs" / "figures" / "benchmark_retarget.json",
                    help="JSON output (default docs/figures/benchmark_retarget.json, which the docs quote)")
    ap.add_argument("--repeat", type=int, default=3, help="timing runs per clip (median)")
    args = ap.parse_args(argv)
    folders = args.folders or [f for f in DEFAULT if f.is_dir()]
    if not folders:
        ap.error("no folders given and ../shared/data/mocap is not here")
    body = load_body_model()
    report = {"machine_cores_used": 1, "folders": {}}
    for folder in folders:
        r = bench_folder(folder, body, args.repeat)
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
    for r in report["folders"].values():   # the docs quote the worst measurement, so the JSON holds it
        shape = r["shape_inversion"]
        shape["length_error_pct_max"] = round(max(abs(m["length_ratio"] - 1) for m in shape["measurements"].values()) * 100, 2)
    write_json(args.json, report)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
