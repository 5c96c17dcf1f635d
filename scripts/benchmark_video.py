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

Each clip is rendered once as scripts/render_motion_video.py renders it (the open body with the
actor's retargeted shape, a fixed camera whose lens is the default one the pipeline assumes;
benchmarks/render.py says the rest) into the --cache folder, which reruns read instead. The pipeline fits
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
import argparse
import logging
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"   # before numpy loads: the machines these run on are shared
    from benchmarks.render import ENGINES, RenderOptions
    from benchmarks.report import rounded
    from benchmarks.video import FIGURES, choose_clips, render_clips, run, truth_height
    from models.core.errors import SmplIkError
    from models.core.files import write_json
    from models.photo.video import VideoOptions

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="a folder of BVH clips (or one clip)")
    ap.add_argument("--json", required=True, help="where to write the figures")
    ap.add_argument("--clips", nargs="+", help="clip names in --data (default: those no network trained on)")
    ap.add_argument("--max-frames", type=int, help="frames in all, over the clips in order (default no cap)")
    ap.add_argument("--frames-per-clip", type=int, default=150, help="frames of each clip (default 150)")
    ap.add_argument("--resolution", type=int, nargs=2, default=(1280, 720), metavar=("W", "H"))
    ap.add_argument("--engine", choices=sorted(ENGINES), default="WORKBENCH", help="render engine (default WORKBENCH)")
    ap.add_argument("--threads", type=int, default=1, help="render threads (default 1)")
    ap.add_argument("--cache", default=str(ROOT / "out" / "video_clips"),
                    help="rendered clips (default out/video_clips)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        clips = choose_clips(args.data, args.clips)
    except SmplIkError as exc:
        raise SystemExit(str(exc)) from None
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
