"""Fit an SMPL body to the person in videos: one AMASS-style .npz per video file.

    python scripts/video_to_smpl.py INPUT... --out DIR [options]

INPUT is a video file, a folder (searched recursively for .mp4, .mov, .avi, .mkv, .webm, ...)
or a glob ("clips/**/*.mp4"). For X.mp4 it writes DIR/X.npz (folders keep their sub-folders),
as every motion file of this project is written (models.motion.amass.write_motion_npz,
atomically: a failure leaves no file), with
  poses (T, 72) axis-angle, root first;  trans (T, 3) metres;  betas (10,);  the frame rate
  (the video's over --step);  gender;  body_model;  up_axis "Y": SMPL's frame levelled on the
  floor the feet stand on;  and the camera and tracking: camera_rotation (3, 3) and
  camera_position (3,) (the file's frame from the camera's: models/photo/camera.py axes),
  focal_px, image_size, source_frames, contact (T, 2: left, right foot), found (T,),
  video_fps.
Each frame is tracked by MediaPipe, filtered, fitted through the camera (the default 55 degree
diagonal field of view unless --focal-px or --fov gives the lens) warm-started from the frame
before; the poses are smoothed and the feet held where they rest (docs/posing.md, "Pose from
video"). --fit-shape also fits the person's proportions over the clip and refits every frame
with them, at the body's height or the person's (--height). Existing outputs are kept unless
--overwrite. A failed file never leaves a partial output and the others still run; the exit
status is 1 if any file failed.
"""
import argparse
import sys

from benchmarks.cli import add_batch_options, check_batch_options, run_batch_as_asked
from models.core.errors import SmplIkError
from models.core.files import find_files
from models.motion.batch import output_paths
from models.photo.video import MAX_HEIGHT_M, MIN_HEIGHT_M, VideoOptions
from models.photo.video_job import VideoJob, run_video_job
from models.photo.video_reader import VIDEO_SUFFIXES


def summary(results, stream=sys.stdout):
    for r in results:
        status = (f"ok: {r.frames} frames at {r.fps:.3g} fps in {r.seconds:.1f} s "
                  f"({r.frames / max(r.seconds, 1e-9):.1f} frames/s)"
                  + "".join(f"; {n}" for n in r.notes)) if r.ok else \
            ("skipped: " + r.skipped) if r.skipped else "FAILED: " + r.error
        stream.write(f"{r.source} -> {r.output or '-'}: {status}\n")
    ok = [r for r in results if r.ok]
    stream.write(f"{len(ok)} of {len(results)} videos fitted, {sum(r.frames for r in ok)} frames\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 2)[2],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", metavar="INPUT", help="video files, folders or globs")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--body", help="SMPL/SMPL-H/SMPL-X model file (default: the open body)")
    ap.add_argument("--frame-start", type=int, default=0, help="first source frame, from 0 (default 0)")
    ap.add_argument("--frame-end", type=int, default=None, help="source frame to stop before (default: the end)")
    ap.add_argument("--step", type=int, default=1, help="use every step-th frame (default 1)")
    ap.add_argument("--person", type=int, default=0,
                    help="which person, from 0, largest first on the first frame with people (default 0)")
    lens = ap.add_mutually_exclusive_group()
    lens.add_argument("--focal-px", type=float, help="the camera's focal length in pixels")
    lens.add_argument("--fov", type=float, help="the camera's field of view across the diagonal, degrees "
                                                "(default 55)")
    ap.add_argument("--per-frame", action="store_true",
                    help="the per-frame baseline: each frame detected and fitted alone, no filter, no foot locking")
    ap.add_argument("--no-smooth", action="store_true", help="no keypoint filter and no smoothing of the poses")
    ap.add_argument("--no-lock", action="store_true", help="do not hold feet in contact in place")
    ap.add_argument("--fit-shape", action="store_true",
                    help="fit the body's proportions to the person over the clip, at the body's height (betas in the "
                         "file are then the fitted ones; a second, shorter pass)")
    ap.add_argument("--height", type=float, metavar="METRES",
                    help="the person's height where known: the fitted shape keeps it (implies --fit-shape)")
    ap.add_argument("--overwrite", action="store_true", help="replace existing outputs")
    add_batch_options(ap)
    args = ap.parse_args(argv)
    check_batch_options(ap, args)
    if args.step < 1:
        ap.error("--step must be at least 1")
    if args.fov is not None and not 0 < args.fov < 180:
        ap.error(f"--fov {args.fov:g}: a field of view is between 0 and 180 degrees")
    if args.focal_px is not None and not args.focal_px > 0:
        ap.error(f"--focal-px {args.focal_px:g}: a focal length is above 0 pixels")
    if args.height is not None and not MIN_HEIGHT_M <= args.height <= MAX_HEIGHT_M:
        ap.error(f"--height {args.height:g}: a person's height is between {MIN_HEIGHT_M:g} and {MAX_HEIGHT_M:g} metres")

    search = find_files(args.inputs, VIDEO_SUFFIXES, kind="video")
    pairs, failures = output_paths([(f.path, f.relative) for f in search.found], args.out, search.missing)
    options = VideoOptions(temporal=not args.per_frame, smooth=not args.no_smooth, lock_feet=not args.no_lock,
                           focal_px=args.focal_px, fov_deg=args.fov, fit_shape=args.fit_shape, height_m=args.height)
    jobs = [VideoJob(source=str(src), output=str(target), frame_start=args.frame_start, frame_end=args.frame_end,
                     step=args.step, person=args.person, body=args.body or "", options=options,
                     overwrite=args.overwrite) for src, target in pairs]
    try:
        results = run_batch_as_asked(jobs, failures, args, work=run_video_job)
    except SmplIkError as exc:
        raise SystemExit(str(exc)) from None
    summary(results)
    return 0 if results and not any(r.failed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
