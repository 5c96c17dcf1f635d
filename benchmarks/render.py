"""Rendering for the programs: the look every picture shares (materials, sky, Cycles) and motion
capture rendered on the open body as a video with its ground truth (`render_clip`).

A clip is retargeted onto the open neutral body with the shape fitted to the actor
(models.motion.retarget.retarget) and played at about RenderOptions.fps: every k-th source
frame, k the whole number nearest the source's rate over fps. The body (one plain material)
stands on a grey floor before a plain background, lit by a sun; the camera stands still, tilted
TILT_DEG down, looking at the middle of the body's motion from the azimuth to the left of where
the body faces on average, as far away as it must be for the whole body to stay MARGIN inside
the picture in every frame, with the lens models.photo.camera.default_camera assumes for a
picture of that size. Frames are rendered by the bpy module in a subprocess (`python -m
benchmarks.render JOB`: Workbench and EEVEE abort the whole process where no OpenGL can be had)
and written to an MP4 with OpenCV; the truth (ClipTruth) is written beside it, last.
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.body.model import load_body_model
from models.core.files import atomic_path
from models.core.kinematics import forward_kinematics
from models.core.rotations import axis_angle_to_matrix, unit
from models.core.skeleton import PARENTS, indices
from models.motion.bvh import read_bvh
from models.motion.retarget import retarget
from models.photo.camera import Camera, default_camera

ENGINES = {"CYCLES": "CYCLES", "WORKBENCH": "BLENDER_WORKBENCH", "EEVEE": "BLENDER_EEVEE"}
TILT_DEG = 10.0          # the camera looks this far below the horizon
AZIMUTH_DEG = 30.0       # ... from this far to the body's left of its mean facing: a three-quarter view
MARGIN = 0.06            # the body stays this share of the picture's height inside its edges
FIT_VERTEX_STEP = 7      # every 7th vertex frames the camera (the full mesh to within millimetres)
CONTACT_HEIGHT = 0.03    # metres above the foot joint's planted height
# the planted height: this percentile of the foot joints' heights over the clip
# (docs/training_log.md, "Planted foot height")
FLOOR_PERCENTILE = 5
CONTACT_SPEED = 0.3      # metres per second: a planted foot moves less (1 cm a frame at 30 fps)
# the foot joints (SMPL's left_foot, right_foot: the ball of the foot) whose contacts the truth gives
CONTACT_INDICES = indices(("left_foot", "right_foot"))
BODY_COLOUR = (0.80, 0.52, 0.40)    # linear RGB: skin-like, apart from the greys around it
FLOOR_COLOUR = (0.45, 0.45, 0.45)
BACKGROUND_COLOUR = (0.30, 0.33, 0.38)
WORKBENCH_AA = "FXAA"    # Workbench's anti-aliasing: the fastest (docs/training_log.md, "Render speed")
FORMAT_VERSION = 1       # bumped when a cached clip would no longer match what this renders
SMPL_TO_BLENDER = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])   # Y up -> Z up


# --- the look every picture shares (Blender side) ---------------------------------------------
def node_tree(datablock):
    """A new material's or world's node tree: Blender 5.0 makes one with the datablock
    (`use_nodes` is deprecated there); 4.2-4.5 make it when `use_nodes` is switched on."""
    if datablock.node_tree is None:
        datablock.use_nodes = True
    return datablock.node_tree


def material(bpy, name, colour):
    """A new Principled material of one colour (linear RGB), roughness 0.55."""
    mat = bpy.data.materials.new(name)
    bsdf = node_tree(mat).nodes.get("Principled BSDF")
    bsdf.inputs["Base Color"].default_value = (*colour, 1.0)
    bsdf.inputs["Roughness"].default_value = 0.55
    return mat


def sky(bpy, scene, colour, strength):
    """A new world of one colour (linear RGB) and strength for the scene."""
    world = bpy.data.worlds.new("World")
    background = node_tree(world).nodes["Background"]
    background.inputs["Color"].default_value = (*colour, 1.0)
    background.inputs["Strength"].default_value = strength
    scene.world = world


def cycles(scene, resolution, samples, denoise=False):
    """Render the scene with Cycles on the CPU to a PNG of `resolution` (W, H), AgX."""
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = denoise
    scene.render.resolution_x, scene.render.resolution_y = resolution
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    scene.view_settings.view_transform = "AgX"
    scene.view_settings.look = "AgX - Medium High Contrast"


def save_blend(bpy, path):
    """Save a copy of the open file at `path` atomically, leaving nothing else beside it."""
    with atomic_path(path) as tmp:
        bpy.ops.wm.save_as_mainfile(filepath=tmp, copy=True, check_existing=False)
        Path(tmp + "1").unlink(missing_ok=True)   # Blender keeps the (empty) file it saved over as .blend1


# --- a clip and its truth -----------------------------------------------------------------------
@dataclass(frozen=True)
class RenderOptions:
    """Which frames and how: the first source frame `start`, `frames` video frames at about
    `fps`, `resolution` (W, H) pixels, `engine` (a key of ENGINES), Cycles `samples`,
    `threads` the renderer may use, `azimuth` degrees to the body's left of its mean facing
    the camera stands (frame_camera)."""

    start: int = 0
    frames: int = 150
    fps: float = 30.0
    resolution: tuple = (1280, 720)
    engine: str = "WORKBENCH"
    samples: int = 8
    threads: int = 1
    azimuth: float = AZIMUTH_DEG

    def key(self):
        """What a cached clip must have been rendered with (everything but the threads; the
        azimuth where it is not the default, so clips rendered before it was a choice still count)."""
        key = {"version": FORMAT_VERSION, "start": self.start, "frames": self.frames, "fps": self.fps,
               "resolution": list(self.resolution), "engine": self.engine, "samples": self.samples}
        return key if self.azimuth == AZIMUTH_DEG else dict(key, azimuth=self.azimuth)


@dataclass(frozen=True)
class ClipTruth:
    """A rendered clip and its ground truth, in the camera's frame (models/photo/camera.py: the
    camera at the origin looking along -Z, +Y up, +X right), metres: joints (T, 24, 3),
    local_rot (T, 24, 3, 3) (the root's turned into the camera's frame), trans (T, 3) the root
    translation of forward kinematics from the rest joints of `betas` (10,), contact (T, 2)
    bool (left, right foot: foot_contacts), up (3,) the world's up, frames (T,) the source BVH
    frame of each video frame, fps the video's, camera a models.photo.camera.Camera,
    render_s_per_frame the mean wall seconds a frame took to render and save (Blender's start
    not included; render_wall_s the whole subprocess), key the RenderOptions.key it was made with."""

    video: Path
    bvh: str
    joints: np.ndarray
    local_rot: np.ndarray
    trans: np.ndarray
    betas: np.ndarray
    contact: np.ndarray
    up: np.ndarray
    frames: np.ndarray
    fps: float
    camera: object
    render_s_per_frame: float
    render_wall_s: float
    key: dict


def truth_path(video):
    """Where the truth of the clip rendered to `video` is kept: beside it, .npz."""
    return Path(video).with_suffix(".npz")


def look_at(position, target, up=(0.0, 1.0, 0.0)):
    """(3, 3) camera-to-world rotation of a camera at `position` (3,) looking at `target` (3,),
    level (its x axis horizontal for `up`): columns the camera's +X right, +Y up, +Z backward."""
    back = unit(np.asarray(position, float) - np.asarray(target, float))
    right = unit(np.cross(up, back))
    return np.stack([right, np.cross(back, right), back], axis=1)


def frame_camera(points, facing, camera, azimuth=AZIMUTH_DEG):
    """(rotation (3, 3), position (3,)) in the world (Y up) of a camera with the intrinsics of
    `camera` that sees all `points` (N, 3) MARGIN inside the picture: tilted TILT_DEG down,
    `azimuth` degrees to the left of `facing` (3,), looking at the middle of the points' box, at the
    least distance that fits (bisection; projection shrinks as the camera backs away).
    ValueError when even 100 m away is too close."""
    lo, hi = points.min(0), points.max(0)
    target = 0.5 * (lo + hi)
    flat = unit(np.array([facing[0], 0.0, facing[2]]))
    flat = axis_angle_to_matrix(np.array([0.0, math.radians(azimuth), 0.0])) @ flat
    tilt = math.radians(TILT_DEG)
    away = math.cos(tilt) * flat + np.array([0.0, math.sin(tilt), 0.0])
    rot = look_at(target + away, target)
    pad = MARGIN * camera.height

    def fits(distance):
        pixels = camera.project((points - (target + distance * away)) @ rot)
        return (np.isfinite(pixels).all() and pixels[:, 0].min() >= pad and pixels[:, 1].min() >= pad
                and pixels[:, 0].max() <= camera.width - pad and pixels[:, 1].max() <= camera.height - pad)

    near, far = 0.1, 100.0
    if not fits(far):
        raise ValueError("the motion is too large to frame from 100 m")
    for _ in range(40):
        mid = 0.5 * (near + far)
        near, far = (near, mid) if fits(mid) else (mid, far)
    return rot, target + far * away


def foot_contacts(feet, fps):
    """(T, 2) bool: a foot joint (feet (T, 2, 3), world, Y up) at `fps` is in contact where it
    is within CONTACT_HEIGHT of its planted height (the FLOOR_PERCENTILE percentile of both
    feet's heights over the clip) and its speed (central difference, one-sided at the ends) is
    under CONTACT_SPEED."""
    velocity = np.gradient(feet, axis=0) * fps if len(feet) > 1 else np.zeros_like(feet)
    low = feet[..., 1] < np.percentile(feet[..., 1], FLOOR_PERCENTILE) + CONTACT_HEIGHT
    return low & (np.linalg.norm(velocity, axis=-1) < CONTACT_SPEED)


@dataclass(frozen=True)
class Scene:
    """What the renderer needs (world, Y up, metres) and the truth that goes with it."""

    vertices: np.ndarray      # (T, V, 3) float32
    faces: np.ndarray         # (F, 3)
    floor: float              # the floor's height
    rotation: np.ndarray      # (3, 3) camera to world
    position: np.ndarray      # (3,)
    truth: dict               # ClipTruth's arrays by name


def clip_scene(bvh, options):
    """Scene for the clip at `bvh` rendered with RenderOptions `options` (no Blender).
    ValueError when fewer than 3 frames are left to render."""
    motion = read_bvh(bvh)
    body = load_body_model()
    result = retarget(motion, body)
    step = max(1, round(result.fps / options.fps))
    frames = np.arange(options.start, result.poses.shape[0], step)[:options.frames]
    if len(frames) < 3:
        raise ValueError(f"{bvh}: {len(frames)} frames from frame {options.start} every {step}; at least 3 are needed")
    rot = axis_angle_to_matrix(result.poses[frames])
    trans = result.trans[frames]
    rest = body.rest_joints(result.betas)
    joints = forward_kinematics(rot, rest, PARENTS, trans).positions
    vertices = body.forward(result.betas, rel_rotmats=rot, trans=trans).vertices
    floor = float(vertices[..., 1].min())
    camera = default_camera(*options.resolution)
    facing = np.einsum("tab,b->a", rot[:, 0], np.array([0.0, 0.0, 1.0]))
    cam_rot, cam_pos = frame_camera(vertices[:, ::FIT_VERTEX_STEP].reshape(-1, 3), facing, camera,
                                    options.azimuth)

    feet = joints[:, list(CONTACT_INDICES)]
    local = rot.copy()
    local[:, 0] = cam_rot.T @ rot[:, 0]
    # forward kinematics puts the pelvis at rest[0] + trans, turned about nothing: in the camera
    # frame trans' = R^T (rest[0] + trans - c) - rest[0] keeps that
    trans_camera = (rest[0] + trans - cam_pos) @ cam_rot - rest[0]
    truth = {"joints": (joints - cam_pos) @ cam_rot, "local_rot": local, "trans": trans_camera,
             "betas": result.betas, "contact": foot_contacts(feet, result.fps / step),
             "up": cam_rot.T @ np.array([0.0, 1.0, 0.0]), "frames": frames, "fps": result.fps / step,
             "focal_px": camera.focal_px, "width": camera.width, "height": camera.height}
    return Scene(vertices.astype(np.float32), body.faces, floor, cam_rot, cam_pos, truth)


def render_clip(bvh, video, options=RenderOptions(), reuse=True):
    """Render the clip at `bvh` to the MP4 `video` with its ground truth beside it
    (truth_path(video)), both atomically, and return the ClipTruth; with `reuse`, a video
    already there that was rendered from the same file with the same options is kept (its truth
    is worked out again: that takes seconds, and follows this module's definitions as they are
    now). RuntimeError when rendering fails."""
    video = Path(video)
    scene = clip_scene(bvh, options)
    source = str(Path(bvh).resolve())
    timing = None
    if reuse and video.exists() and truth_path(video).exists():
        with np.load(truth_path(video), allow_pickle=False) as old:
            if json.loads(str(old["key"])) == options.key() and str(old["bvh"]) == source:
                timing = float(old["render_s_per_frame"]), float(old["render_wall_s"])
    seconds, wall = timing or render_frames(scene, options, video)
    with atomic_path(truth_path(video)) as partial:
        np.savez(partial, bvh=source, render_s_per_frame=seconds, render_wall_s=wall,
                 key=json.dumps(options.key()), **scene.truth)
    return load_truth(video)


def render_frames(scene, options, video):
    """Render the Scene's frames in a Blender subprocess and write them to the MP4 `video`;
    returns (mean seconds a frame, the subprocess's wall seconds)."""
    with tempfile.TemporaryDirectory(prefix="render_motion_video_") as tmp:
        tmp = Path(tmp)
        job = tmp / "job.npz"
        world = np.eye(4)
        world[:3, :3] = SMPL_TO_BLENDER @ scene.rotation
        world[:3, 3] = SMPL_TO_BLENDER @ scene.position
        np.savez(job, vertices=scene.vertices @ SMPL_TO_BLENDER.T.astype(np.float32), faces=scene.faces,
                 camera=world, floor=scene.floor, floor_centre=(SMPL_TO_BLENDER @ scene.position)[:2],
                 lens_mm=scene.truth["focal_px"] * 36.0 / options.resolution[0],
                 resolution=np.array(options.resolution), samples=options.samples,
                 threads=options.threads, engine=ENGINES[options.engine])
        env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp / "blender_user"))
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "benchmarks.render", str(job)],
                              env=env, capture_output=True, text=True)
        if done.returncode != 0 or len(list(tmp.glob("frame_*.png"))) != len(scene.vertices):
            raise RuntimeError(f"rendering with {options.engine} failed (exit {done.returncode}):\n"
                               f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        wall = time.perf_counter() - t0
        seconds = float(np.mean(json.loads((tmp / "seconds.json").read_text())))
        write_mp4(video, sorted(tmp.glob("frame_*.png")), scene.truth["fps"])
    return seconds, wall


def write_mp4(video, pngs, fps):
    """Write the PNG frames `pngs` to the MP4 `video` (MPEG-4 Part 2) at `fps`, atomically."""
    import cv2

    first = cv2.imread(str(pngs[0]))
    h, w = first.shape[:2]
    with atomic_path(video) as partial:
        writer = cv2.VideoWriter(partial, cv2.VideoWriter_fourcc(*"mp4v"), float(fps), (w, h))
        if not writer.isOpened():
            raise RuntimeError(f"OpenCV cannot write MP4 files here ({video})")
        for png in pngs:
            writer.write(cv2.imread(str(png)))
        writer.release()


def load_truth(video):
    """The ClipTruth of a clip rendered to `video` (from truth_path(video))."""
    with np.load(truth_path(video), allow_pickle=False) as data:
        d = {k: data[k] for k in data.files}
    camera = Camera(int(d["width"]), int(d["height"]), float(d["focal_px"]),
                    float(d["width"]) / 2.0, float(d["height"]) / 2.0, "default")
    return ClipTruth(video=Path(video), bvh=str(d["bvh"]), joints=d["joints"], local_rot=d["local_rot"],
                     trans=d["trans"], betas=d["betas"], contact=d["contact"].astype(bool), up=d["up"],
                     frames=d["frames"], fps=float(d["fps"]), camera=camera,
                     render_s_per_frame=float(d["render_s_per_frame"]),
                     render_wall_s=float(d["render_wall_s"]), key=json.loads(str(d["key"])))


def worker(job):
    """Inside the subprocess: render every frame of `job` (render_frames' npz) to
    frame_NNNNN.png beside it, and the seconds each took to seconds.json."""
    import bpy
    from mathutils import Matrix

    with np.load(job, allow_pickle=False) as data:
        d = {k: data[k] for k in data.files}
    verts = d["vertices"]
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    mesh = bpy.data.meshes.new("body")
    mesh.from_pydata(verts[0].tolist(), [], d["faces"].tolist())
    mesh.polygons.foreach_set("use_smooth", np.ones(len(mesh.polygons), dtype=bool))
    body = bpy.data.objects.new("body", mesh)
    scene.collection.objects.link(body)
    mesh.materials.append(material(bpy, "body", BODY_COLOUR))
    bpy.ops.mesh.primitive_plane_add(size=60.0, location=(*d["floor_centre"], float(d["floor"])))
    floor = bpy.context.active_object
    floor.data.materials.append(material(bpy, "floor", FLOOR_COLOUR))
    for obj, colour in ((body, BODY_COLOUR), (floor, FLOOR_COLOUR)):
        obj.data.materials[0].diffuse_color = (*colour, 1.0)   # what Workbench shows
    sky(bpy, scene, BACKGROUND_COLOUR, 1.0)
    scene.world.color = BACKGROUND_COLOUR

    cam_data = bpy.data.cameras.new("camera")
    cam_data.sensor_fit = "HORIZONTAL"
    cam_data.sensor_width = 36.0
    cam_data.lens = float(d["lens_mm"])
    cam_data.clip_end = 500.0
    cam = bpy.data.objects.new("camera", cam_data)
    scene.collection.objects.link(cam)
    cam.matrix_world = Matrix(d["camera"].tolist())
    scene.camera = cam
    sun = bpy.data.objects.new("sun", bpy.data.lights.new("sun", "SUN"))
    sun.data.energy = 3.0
    sun.rotation_euler = (math.radians(40), math.radians(15), math.radians(-35))
    scene.collection.objects.link(sun)

    engine = str(d["engine"])
    cycles(scene, tuple(int(x) for x in d["resolution"]), int(d["samples"]))
    scene.view_settings.view_transform = "Standard"
    scene.view_settings.look = "None"
    scene.render.engine = engine
    if engine == "BLENDER_WORKBENCH":
        shading = scene.display.shading
        shading.light, shading.color_type = "STUDIO", "MATERIAL"
        shading.show_shadows = True
        scene.display.render_aa = WORKBENCH_AA
    elif engine == "BLENDER_EEVEE":
        scene.eevee.taa_render_samples = int(d["samples"])
    scene.render.threads_mode = "FIXED"
    scene.render.threads = int(d["threads"])
    out = Path(job).parent
    co = np.empty(verts.shape[1] * 3, np.float32)
    seconds = []
    for t in range(len(verts)):
        t0 = time.perf_counter()
        co[:] = verts[t].ravel()
        mesh.vertices.foreach_set("co", co)
        mesh.update()
        scene.render.filepath = str(out / f"frame_{t:05d}.png")
        bpy.ops.render.render(write_still=True)
        seconds.append(time.perf_counter() - t0)
    (out / "seconds.json").write_text(json.dumps(seconds))


if __name__ == "__main__":   # render_frames' subprocess: python -m benchmarks.render JOB
    worker(sys.argv[1])
