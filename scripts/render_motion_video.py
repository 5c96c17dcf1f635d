"""Render a BVH clip as a video of the open body seen by a fixed camera, with its ground truth:
the joints in the camera's frame and the feet's contacts with the floor.

    python scripts/render_motion_video.py CLIP.bvh --out CLIP.mp4 [--start 0] [--frames 150]
        [--fps 30] [--resolution 1280 720] [--engine WORKBENCH|CYCLES|EEVEE] [--samples 8]

The clip is retargeted onto the open neutral body with the actor's shape and played at about
--fps; the camera stands still, tilted down, from three-quarters, with the lens
models.photo.camera.default_camera assumes for the picture's size (benchmarks/render.py says
the rest). Beside CLIP.mp4, CLIP.npz (written last, so a clip with its .npz is complete) holds
the ground truth (benchmarks.render.ClipTruth: camera frame, metres). Both are written atomically.
"""
import argparse

from benchmarks.render import ENGINES, RenderOptions, render_clip, worker


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bvh", nargs="?", help="the BVH clip")
    ap.add_argument("--out", help="the MP4 to write (its ground truth beside it, .npz)")
    ap.add_argument("--start", type=int, default=0, help="first source frame (default 0)")
    ap.add_argument("--frames", type=int, default=150, help="video frames (default 150)")
    ap.add_argument("--fps", type=float, default=30.0, help="about this many frames a second (default 30)")
    ap.add_argument("--resolution", type=int, nargs=2, default=(1280, 720), metavar=("W", "H"))
    ap.add_argument("--engine", choices=sorted(ENGINES), default="WORKBENCH",
                    help="Workbench (default; the fastest by far), Cycles on the CPU or EEVEE")
    ap.add_argument("--samples", type=int, default=8, help="Cycles or EEVEE samples (default 8)")
    ap.add_argument("--threads", type=int, default=1, help="render threads (default 1)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if not args.bvh or not args.out:
        ap.error("a BVH clip and --out are needed")
    options = RenderOptions(args.start, args.frames, args.fps, tuple(args.resolution), args.engine,
                            args.samples, args.threads)
    truth = render_clip(args.bvh, args.out, options, reuse=False)
    print(f"{len(truth.frames)} frames at {truth.fps:g} fps, {truth.render_s_per_frame:.2f} s a frame "
          f"({options.engine}; {truth.render_wall_s:.1f} s in all) -> {args.out}")
    return truth


if __name__ == "__main__":
    main()
