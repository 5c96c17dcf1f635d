"""Headless demo, rendered with Cycles (CPU), left to right: the open body in three shapes,
posed the same; a body posed by dragging effectors (SMPL-IK); a body posed from a photo
(../shared/data/images/bus.jpg, else camera.png; skipped without MediaPipe or photos); and the
m21 skeleton (../shared/data/mocap/m21) as a custom rig, driven by its SMPL proxy (drawn as
sticks on its own bones; skipped without the data).

    .venv/bin/python scripts/demo.py [--out out] [--samples 32] [--resolution 1600 720]

Writes OUT/demo.png and OUT/demo.blend (each written to a temporary file, then renamed:
models.core.files.atomic_path).
"""
import argparse
import importlib
import logging
import time
from pathlib import Path

from benchmarks import blender_session, demo_scene
from benchmarks.render import save_blend
from models.core.files import atomic_path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="out", help="output folder (default: out)")
    ap.add_argument("--samples", type=int, default=32, help="Cycles samples (default 32)")
    ap.add_argument("--resolution", type=int, nargs=2, default=(1600, 720), metavar=("W", "H"))
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    bpy = blender_session.start()
    bridge = importlib.import_module(blender_session.MODULE + ".addon.com.bridge")
    t0 = time.time()
    demo_scene.build(bpy, bridge, args.resolution, args.samples)
    t_scene = time.time() - t0

    t0 = time.time()
    with atomic_path(out / "demo.png") as tmp:
        bpy.context.scene.render.filepath = tmp
        bpy.ops.render.render(write_still=True)
    t_render = time.time() - t0
    save_blend(bpy, out / "demo.blend")
    print(f"scene {t_scene:.1f} s, render {t_render:.1f} s -> {out / 'demo.png'}, {out / 'demo.blend'}")


if __name__ == "__main__":
    main()
