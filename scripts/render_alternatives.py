"""Headless render (Cycles, CPU) of what the generative model offers for a set of pins: one row
per pin set (a crouch, a reach up, one foot lifted), each the natural pose (Natural) and K
alternatives (Alternatives, stepped with Next), every one its own open body posed through the
add-on's operators with the body's default settings (Exact Effectors, Plant Feet). The pinned
targets are spheres, drawn in front of the bodies as the viewport draws effectors.

    .venv/bin/python scripts/render_alternatives.py [--out docs/alternatives.png] [--samples 16]
        [--resolution 1200 1500] [--alternatives 3]

Writes the PNG to a temporary file, then renames it (models.core.files.atomic_path). Needs the
generative weights (models/ik/weights/smplik_flow.npz).
"""
import argparse
import logging
import time

from benchmarks import alternatives_scene, blender_session


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/alternatives.png", help="the PNG (default: docs/alternatives.png)")
    ap.add_argument("--samples", type=int, default=16, help="Cycles samples, denoised (default 16)")
    ap.add_argument("--resolution", type=int, nargs=2, default=(1200, 1500), metavar=("W", "H"))
    ap.add_argument("--alternatives", type=int, default=3, metavar="K",
                    help="alternatives beside each natural pose (default 3)")
    args = ap.parse_args(argv)
    if args.alternatives < 1:
        ap.error("--alternatives must be 1 or more")
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    bpy = blender_session.start()
    t0 = time.time()
    cells, spheres = alternatives_scene.build(bpy, tuple(args.resolution), args.samples, args.alternatives)
    t_scene = time.time() - t0
    t0 = time.time()
    alternatives_scene.render(bpy, args.out, spheres)
    print(f"scene {t_scene:.1f} s, render {time.time() - t0:.1f} s -> {args.out}")
    return cells, spheres


if __name__ == "__main__":
    main()
