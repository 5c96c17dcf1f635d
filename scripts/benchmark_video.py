"""Benchmark pose from video on clips rendered from motion capture, where the truth is known:
the video pipeline (models.photo.video.pose_from_video) against its per-frame baseline, in one
run over the same videos.

    python scripts/benchmark_video.py --data BVH_DIR --json OUT [--max-frames N] [--clips NAME ...]
        [--frames-per-clip 150] [--resolution 1280 720] [--engine WORKBENCH] [--cache out/video_clips]

Clips: the BVH files named by --clips in BVH_DIR, else those of BVH_DIR no shipped network was
trained on (their weights' records, as scripts/benchmark.py --held-out-only), in name order;
each gives up to --frames-per-clip frames from its first (fewer where it is shorter), taken
while --max-frames (the run's total) allows. On the shared data that means cmu_varied's
held-out 002_05, 003_02, 005_07, 005_16 and every m21 clip: nobody tuned the pipeline on them.
docs/figures/benchmark_video.json is `--data ../shared/data/mocap/cmu_varied --max-frames 300`
(002_05 150 frames, 003_02 all its 91, 005_07 59).

Each clip is rendered once by scripts/render_motion_video.py (the open body with the actor's
retargeted shape, a fixed camera whose lens is the default one the pipeline assumes; its
docstring says the rest) into the --cache folder, which reruns read instead. The pipeline fits
the open neutral body at zero betas, as a user's run would, so the joint errors include the
shape's.

Methods: video, VideoOptions() (tracking, filters, foot locking); video_shape,
VideoOptions(fit_shape=True) (the same, the body's proportions fitted over the clip at the
neutral body's height); video_shape_height, the same at the rendered body's own height (as
given by someone who knows the person's height: VideoOptions(height_m=...)); per_frame,
VideoOptions(temporal=False). Figures, every joint, in the camera's frame (+X right, +Y up,
camera at the origin looking down -Z), over every frame of every clip (a frame the person was
not found on carries the pose the pipeline gave it):
  mpjpe_mm      mean joint distance after moving both pelvises to the origin (mm)
  pa_mpjpe_mm   the same after each frame's best similarity transform (mm)
  accel_mm      acceleration error of the pelvis-aligned joints (mm/frame^2; the clips run at
                about 30 fps): models.core.metrics.acceleration_error
  accel_camera_mm  the same without the alignment (the root's jitter in depth counts too)
  skate_mm      how far a foot joint (left_foot, right_foot: the ball) moves across the true
                floor from frame to frame where the truth has that foot in contact on both
                (mm/frame): models.core.metrics.foot_skating; `truth` gives the truth's own
  up_deg        angle between the floor's up the pipeline found (VideoMotion.up: how it levels
                the clip) and the truth's, mean over clips (degrees)
  fps           frames a second end to end: decoding, detecting and fitting, wall clock, on
                whatever the machine is also doing
  found         share of frames the person was detected and fitted on
Writes JSON {"frames": N, "clips": [...], "data": DIR, "render": {...}, "truth": {...},
"methods": {"video": {...}, "video_shape": {...}, "video_shape_height": {...}, "per_frame": {...}},
"per_clip": [...]} atomically and prints a
table.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # the machines these run on are shared

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

from benchmark import trained_clips  # noqa: E402
from benchmark_photo import rounded  # noqa: E402
from models.core.files import write_json  # noqa: E402
from models.core.metrics import acceleration_error, aligned_error, angle_deg, foot_skating, procrustes_error  # noqa: E402
from models.core.skeleton import JOINT_INDEX  # noqa: E402
from models.ik.nn import WEIGHTS_DIR  # noqa: E402
from models.motion.bvh import find_bvh_files  # noqa: E402
from render_motion_video import ENGINES, FOOT_JOINTS, RenderOptions, render_clip  # noqa: E402

FIGURES = ("mpjpe_mm", "pa_mpjpe_mm", "accel_mm", "accel_camera_mm", "skate_mm", "up_deg", "fps", "found")
FEET = [JOINT_INDEX[n] for n in FOOT_JOINTS]


def choose_clips(data, names=None, weights_dir=WEIGHTS_DIR):
    """BVH paths to benchmark: `names` (file names or stems) in `data`, else the files of
    `data` no network in weights_dir trained on, sorted by name."""
    files = sorted((f.path for f in find_bvh_files([data]).found), key=lambda p: p.name)
    if names:
        wanted = {Path(n).stem for n in names}
        files = [f for f in files if f.stem in wanted]
        missing = wanted - {f.stem for f in files}
        if missing:
            raise SystemExit(f"{data}: no clip named {', '.join(sorted(missing))}")
    else:
        trained = trained_clips(weights_dir)
        files = [f for f in files if f.name not in trained and not f.stem.endswith("_t")]   # m21_data_t: a T-pose
    if not files:
        raise SystemExit(f"{data}: no BVH clips to benchmark on")
    return files


def render_clips(clips, per_clip, max_frames, render_options, cache, render=render_clip):
    """ClipTruth of each clip (paths, in order) rendered (or read from `cache`) with up to
    `per_clip` frames while the run's total stays within `max_frames` (None: no cap); a clip
    shorter than its share leaves the rest to the next. Stops where fewer than 3 frames are
    left. `render` is render_motion_video.render_clip (replaceable in tests)."""
    truths, left = [], max_frames if max_frames is not None else per_clip * len(clips)
    for path in clips:
        take = min(per_clip, left)
        if take < 3:
            break
        options = replace(render_options, frames=take)
        w, h = options.resolution
        video = Path(cache) / f"{path.stem}_{options.start}+{take}_{w}x{h}_{options.engine.lower()}.mp4"
        started = time.perf_counter()
        truth = render(path, video, options)
        print(f"{path.name}: {len(truth.frames)} frames ({time.perf_counter() - started:.0f} s to render or read; "
              f"{truth.render_s_per_frame:.2f} s a frame when rendered)", flush=True)
        truths.append(truth)
        left -= len(truth.frames)
    return truths


def joined(tracks):
    """Tracks (T_i, ...) laid end to end with one NaN frame between clips, so that no
    difference spans two clips."""
    gap = np.full((1,) + tracks[0].shape[1:], np.nan)
    return np.concatenate([x for t in tracks for x in (t, gap)][:-1])


def figures(predicted, truth, contact, up, seconds, found_up):
    """The module docstring's figures (mm, mm/frame, mm/frame^2, degrees, frames a second) of
    predicted joints (T_i, 24, 3) per clip against truth's, `contact` (T_i, 2) per clip, `up`
    (3,) per clip and the pipeline's `found_up` (3,) per clip, wall `seconds` per clip."""
    p, g = np.concatenate(predicted), np.concatenate(truth)
    pj, gj = joined(predicted), joined(truth)
    frames = len(p)
    # one up for all: every clip's camera is tilted alike (TILT_DEG), within float noise
    up_all = np.mean(up, axis=0)
    return {"mpjpe_mm": 1000.0 * float(aligned_error(p, g).mean()),
            "pa_mpjpe_mm": 1000.0 * float(procrustes_error(p, g).mean()),
            "accel_mm": 1000.0 * acceleration_error(pj - pj[:, :1], gj - gj[:, :1]),
            "accel_camera_mm": 1000.0 * acceleration_error(pj, gj),
            "skate_mm": 1000.0 * foot_skating(pj[:, FEET], joined([c.astype(float) for c in contact]) == 1, up_all),
            "up_deg": float(np.mean([angle_deg(a, b) for a, b in zip(found_up, up)])),
            "fps": frames / float(np.sum(seconds))}


def score_clip(motion, truth):
    """The truth's joints (T, 24, 3) on the frames `motion` (a VideoMotion) has, and its own."""
    frames = np.asarray(motion.frames)
    if frames.max() >= len(truth.joints):
        raise ValueError(f"{truth.video}: the pipeline gave frame {frames.max()} of {len(truth.joints)}")
    return np.asarray(motion.joints, dtype=np.float64), truth.joints[frames], truth.contact[frames]


def truth_height(truth):
    """The height (metres) of the body a clip was rendered with: the open body in the actor's
    shape, as a user who knows the person's height would give it."""
    from models.body.measure import measure
    from models.body.model import load_body_model

    return measure(load_body_model(), truth.betas).height


def run(truths, methods):
    """{"methods": {name: figures}, "truth": {...}, "per_clip": [...], "render": {...}} over
    rendered clips (ClipTruth); methods name -> VideoOptions, or a callable giving a clip's
    VideoOptions from its ClipTruth."""
    from models.photo.video import pose_from_video

    out = {"methods": {}, "per_clip": [{"clip": t.video.name, "bvh": Path(t.bvh).name, "frames": len(t.frames),
                                        "source_frames": [int(t.frames[0]), int(t.frames[-1])], "fps": t.fps,
                                        "methods": {}} for t in truths]}
    for name, video_options in methods.items():
        predicted, true, contacts, ups, found_ups, seconds, found = [], [], [], [], [], [], []
        for truth, record in zip(truths, out["per_clip"]):
            started = time.perf_counter()
            motion = pose_from_video(truth.video, options=video_options(truth) if callable(video_options)
                                     else video_options)
            seconds.append(time.perf_counter() - started)
            p, g, c = score_clip(motion, truth)
            predicted.append(p)
            true.append(g)
            contacts.append(c)
            ups.append(truth.up)
            found_ups.append(np.asarray(motion.up, dtype=np.float64))
            found.append(np.asarray(motion.found, dtype=bool) if motion.found is not None else np.ones(len(p), bool))
            record["methods"][name] = {**figures([p], [g], [c], [truth.up], [seconds[-1]], [found_ups[-1]]),
                                       "found": float(found[-1].mean())}
            print(f"  {name} on {truth.video.name}: " + ", ".join(
                f"{k} {v:.1f}" for k, v in record["methods"][name].items()), flush=True)
        out["methods"][name] = {**figures(predicted, true, contacts, ups, seconds, found_ups),
                                "found": float(np.concatenate(found).mean())}
    gj = joined([t.joints for t in truths])
    contact = joined([t.contact.astype(float) for t in truths]) == 1
    out["truth"] = {"skate_mm": 1000.0 * foot_skating(gj[:, FEET], contact, np.mean([t.up for t in truths], 0)),
                    "contact_share": float(np.mean(np.concatenate([t.contact for t in truths])))}
    out["render"] = {**{k: v for k, v in truths[0].key.items() if k != "frames"},
                     "s_per_frame": [t.render_s_per_frame for t in truths]}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="a folder of BVH clips (or one clip)")
    ap.add_argument("--json", required=True, help="where to write the figures")
    ap.add_argument("--clips", nargs="+", help="clip names in --data (default: those no network trained on)")
    ap.add_argument("--max-frames", type=int, help="frames in all, over the clips in order (default no cap)")
    ap.add_argument("--frames-per-clip", type=int, default=150, help="frames of each clip (default 150)")
    ap.add_argument("--resolution", type=int, nargs=2, default=(1280, 720), metavar=("W", "H"))
    ap.add_argument("--engine", choices=sorted(ENGINES), default="WORKBENCH", help="render engine (default WORKBENCH)")
    ap.add_argument("--threads", type=int, default=1, help="render threads (default 1)")
    ap.add_argument("--cache", default=str(ROOT / "out" / "video_clips"), help="rendered clips (default out/video_clips)")
    args = ap.parse_args(argv)
    from models.photo.video import VideoOptions

    clips = choose_clips(args.data, args.clips)
    render = RenderOptions(resolution=tuple(args.resolution), engine=args.engine, threads=args.threads)
    truths = render_clips(clips, args.frames_per_clip, args.max_frames, render, args.cache)
    if not truths:
        raise SystemExit("--max-frames leaves no clip 3 frames or more")
    result = run(truths, {"video": VideoOptions(), "video_shape": VideoOptions(fit_shape=True),
                          "video_shape_height": lambda truth: VideoOptions(height_m=truth_height(truth)),
                          "per_frame": VideoOptions(temporal=False)})
    report = rounded({"frames": int(sum(len(t.frames) for t in truths)),
                      "clips": [Path(t.bvh).name for t in truths], "data": str(args.data), **result})
    print(f"{report['frames']} frames of {len(truths)} clips from {args.data}")
    print(f"{'method':12}" + "".join(f"{c:>16}" for c in FIGURES))
    for name, r in report["methods"].items():
        print(f"{name:12}" + "".join(f"{r[c]:>16.3f}" if r.get(c) is not None else f"{'':>16}" for c in FIGURES))
    print(f"the truth's own skate_mm {report['truth']['skate_mm']}")
    write_json(args.json, report)
    print(f"wrote {args.json}")
    return report


if __name__ == "__main__":
    main()
