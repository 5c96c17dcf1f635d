"""The retargeting benchmark: BVH -> SMPL throughput and quality per folder of clips, with each clip's body check."""
import statistics
import tempfile
from pathlib import Path

import numpy as np

from models.core.errors import SmplIkError
from models.core.skeleton import JOINT_INDEX
from models.motion.batch import RetargetJob, run_job
from models.motion.bvh import find_bvh_files, read_bvh
from models.motion.retarget import HINGES, retarget

from .timing import timed

SPINE = [JOINT_INDEX[n] for n in ("spine1", "spine2", "spine3")]
BENT_DEG = 20.0   # a knee or elbow bent further than this shows the axis it bends about


def hinge_off_axis_deg(poses, kind):
    """Median angle (degrees) over a clip's frames where a knee (kind "knee") or elbow ("elbow")
    is bent more than BENT_DEG, both sides together, between its local rotation axis and
    SMPL's hinge axis (retarget.HINGES; either way along it); None when none bends that far."""
    off = []
    for _, hinge, axis in HINGES:
        if kind not in hinge:
            continue
        aa = poses[:, JOINT_INDEX[hinge]]
        bend = np.linalg.norm(aa, axis=-1)
        bent = bend > np.radians(BENT_DEG)
        cos = np.abs(aa[bent] @ np.asarray(axis)) / bend[bent]
        off.append(np.degrees(np.arccos(np.clip(cos, 0.0, 1.0))))
    off = np.concatenate(off)
    return round(float(np.median(off)), 2) if len(off) else None


def hinge_summary(clips, kind):
    """The median clip's and the worst clip's hinge_off_axis_deg (kind "knees" or "elbows" of
    {clip: {kind: degrees or None}}), and how many clips bend that far."""
    measured = {name: h[kind] for name, h in clips.items() if h[kind] is not None}
    if not measured:
        return {"clips_bent": 0}
    worst = max(measured, key=measured.get)
    return {"median_clip": round(statistics.median(measured.values()), 2), "max_clip": measured[worst],
            "max_clip_name": worst, "clips_bent": len(measured)}


def bench_folder(folder, body, repeat):
    """The figures of every BVH clip in `folder` retargeted onto `body` (scripts/benchmark_retarget.py
    --help; rates in frames a second from the median of `repeat` timed runs per clip; the shape
    inversion's length_error_pct_max, its worst length ratio's error). Raises SmplIkError naming
    a clip the batch job fails on."""
    files = [f.path for f in find_bvh_files([folder]).found]
    frames = read_s = retarget_s = total_s = 0.0
    errors, raw_errors, checks, spine, trunk, hinges = [], [], {}, [], [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            motion, t_read = timed(lambda: read_bvh(path), repeat)
            result, t_rt = timed(lambda: retarget(motion, body), repeat)
            raw = retarget(motion, body, polish=False)
            job = RetargetJob(source=str(path), output=str(Path(tmp) / (path.stem + ".npz")), overwrite=True)
            res, t_all = timed(lambda: run_job(job), repeat)
            if not res.ok:
                raise SmplIkError(f"{path}: {res.error}")
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
            hinges[path.name] = {kind + "s": hinge_off_axis_deg(result.poses, kind) for kind in ("knee", "elbow")}
            if path == files[0]:
                fit = result.shape
    heights = [c.height_m for c in checks.values()]
    shape = {"skeleton_of": files[0].name, **fit.report()}
    # the docs quote the worst measurement, so the JSON holds it
    worst = max(abs(m["length_ratio"] - 1) for m in shape["measurements"].values())
    shape["length_error_pct_max"] = round(worst * 100, 2)
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
        # how far the knees and elbows bend off SMPL's hinge axes (hinge_off_axis_deg)
        "hinge_off_axis_deg": {kind: hinge_summary(hinges, kind) for kind in ("knees", "elbows")},
        "body": {"height_m_median": round(statistics.median(heights), 3),
                 "height_m_min": round(min(heights), 3), "height_m_max": round(max(heights), 3),
                 "max_abs_beta": round(max(c.max_abs_beta for c in checks.values()), 2),
                 "length_residual_pct_max": round(max(c.length_residual_pct for c in checks.values()), 2),
                 "lean_gap_deg_max": round(max(abs(c.lean_body_deg - c.lean_source_deg) for c in checks.values()), 1),
                 "clips_with_warnings": sum(bool(c.warnings) for c in checks.values())},
        "clips_body": {name: c.report() for name, c in checks.items()},
        "clips_hinge_off_axis_deg": hinges,
        "shape_inversion": shape,
    }
