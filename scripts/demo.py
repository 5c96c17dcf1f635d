"""Headless demo: the open body in three shapes, posed the same, rendered with Cycles (CPU).

    .venv/bin/python scripts/demo.py [--out out] [--samples 32] [--resolution 1280 720]

Writes OUT/demo.png and OUT/demo.blend (each written to a temporary file, then renamed).
"""
import argparse
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

SHAPES = (  # (label, betas, colour)
    ("average", {}, (0.80, 0.62, 0.50)),
    ("tall and slim", {0: 2.0, 3: -1.0}, (0.45, 0.60, 0.80)),
    ("short and heavy", {0: -1.5, 3: 2.5}, (0.62, 0.75, 0.50)),
)


def relaxed_pose():
    """SMPL local rotations (24, 3, 3): arms lowered, elbows and knees a little bent."""
    import numpy as np

    from models.rotations import axis_angle_to_matrix
    from models.skeleton import JOINT_INDEX

    aa = np.zeros((24, 3))
    for side, sign in (("left", 1.0), ("right", -1.0)):
        aa[JOINT_INDEX[f"{side}_shoulder"]] = [0.0, 0.0, -sign * math.radians(62)]
        aa[JOINT_INDEX[f"{side}_elbow"]] = [0.0, sign * math.radians(25), 0.0]
        aa[JOINT_INDEX[f"{side}_knee"]] = [math.radians(6), 0.0, 0.0]
        aa[JOINT_INDEX[f"{side}_hip"]] = [-math.radians(4), 0.0, sign * math.radians(3)]
    aa[JOINT_INDEX["head"]] = [math.radians(5), 0.0, 0.0]
    return axis_angle_to_matrix(aa)


def material(bpy, name, colour):
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    bsdf = mat.node_tree.nodes.get("Principled BSDF")
    bsdf.inputs["Base Color"].default_value = (*colour, 1.0)
    bsdf.inputs["Roughness"].default_value = 0.55
    return mat


def build_scene(bpy, bridge, resolution, samples):
    import numpy as np

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    pose = relaxed_pose()
    bodies = []
    for i, (label, betas, colour) in enumerate(SHAPES):
        scene.cursor.location = ((i - 1) * 0.9, 0.0, 0.0)
        bpy.ops.smpl_ik.add_body()
        arm = bpy.context.active_object
        arm.name = f"SMPL-IK {label}"
        bridge.write_pose(arm, pose, np.zeros(3), bridge.rest_frames(arm))
        for k, value in betas.items():
            arm.smpl_ik.betas[k] = value
        arm.smpl_ik.mesh.data.materials.append(material(bpy, label, colour))
        arm.hide_render = True
        bodies.append(arm)

    # stand every body on the floor: lowest evaluated vertex at z = 0
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for arm in bodies:
        mesh_obj = arm.smpl_ik.mesh.evaluated_get(depsgraph)
        lowest = min((mesh_obj.matrix_world @ v.co).z for v in mesh_obj.data.vertices)
        arm.location.z -= lowest

    bpy.ops.mesh.primitive_plane_add(size=20.0, location=(0, 0, 0))
    bpy.context.active_object.data.materials.append(material(bpy, "floor", (0.85, 0.85, 0.82)))

    cam_data = bpy.data.cameras.new("Camera")
    cam_data.lens = 50
    cam = bpy.data.objects.new("Camera", cam_data)
    scene.collection.objects.link(cam)
    cam.location = (0.0, -6.2, 1.45)
    cam.rotation_euler = (math.radians(86), 0.0, 0.0)
    scene.camera = cam

    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.data.energy = 2.2
    sun.data.angle = math.radians(8)
    sun.rotation_euler = (math.radians(50), math.radians(-20), math.radians(-30))
    scene.collection.objects.link(sun)
    fill = bpy.data.objects.new("Fill", bpy.data.lights.new("Fill", "AREA"))
    fill.data.energy = 150.0
    fill.data.size = 4.0
    fill.location = (3.0, -4.0, 3.0)
    fill.rotation_euler = (math.radians(55), 0.0, math.radians(37))
    scene.collection.objects.link(fill)
    world = bpy.data.worlds.new("World")
    world.use_nodes = True  # still needed by bpy 5.0 for a node-based world
    world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.75, 0.78, 0.82, 1.0)
    world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.35
    scene.world = world

    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = False
    scene.render.resolution_x, scene.render.resolution_y = resolution
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    scene.view_settings.view_transform = "AgX"
    scene.view_settings.look = "AgX - Medium High Contrast"
    return bodies


def write_atomically(final, write):
    """Call write(tmp_path), then move the finished file into place."""
    final = Path(final)
    tmp = final.with_name(f".{final.stem}.partial{final.suffix}")
    try:
        write(str(tmp))
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="out", help="output folder (default: out)")
    ap.add_argument("--samples", type=int, default=32, help="Cycles samples (default 32)")
    ap.add_argument("--resolution", type=int, nargs=2, default=(1280, 720), metavar=("W", "H"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import importlib

    import blender_session

    bpy = blender_session.start()
    bridge = importlib.import_module(blender_session.MODULE + ".addon.bridge")
    t0 = time.time()
    build_scene(bpy, bridge, args.resolution, args.samples)
    t_scene = time.time() - t0

    def render(path):
        bpy.context.scene.render.filepath = path
        bpy.ops.render.render(write_still=True)

    t0 = time.time()
    write_atomically(out / "demo.png", render)
    t_render = time.time() - t0
    write_atomically(out / "demo.blend",
                     lambda p: bpy.ops.wm.save_as_mainfile(filepath=p, copy=True, check_existing=False))
    print(f"scene {t_scene:.1f} s, render {t_render:.1f} s -> {out / 'demo.png'}, {out / 'demo.blend'}")


if __name__ == "__main__":
    main()
