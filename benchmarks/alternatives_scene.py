"""The scene of docs/alternatives.png (scripts/render_alternatives.py): bodies posed by the
generative model's Natural and Alternatives for a few pin sets, their pins drawn as spheres."""
import logging
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.core.files import atomic_path

from .render import cycles, material, sky

logger = logging.getLogger(__name__)

# (name, its caption's lines, {joint: move}): each pinned joint's target is where it stands in
# the rest pose moved by `move` (metres, in the body's frame: x to its left, -y forward, z up).
# The default effectors not named are removed, so those joints are free.
PIN_SETS = (
    ("crouch", "ankles on the floor,\npelvis 30 cm down,\nhands forward",
     {"left_ankle": (0.0, 0.0, 0.0), "right_ankle": (0.0, 0.0, 0.0), "pelvis": (0.0, 0.06, -0.30),
      "left_wrist": (-0.47, -0.35, -0.51), "right_wrist": (0.47, -0.35, -0.51)}),
    ("reach up", "ankles on the floor,\nright hand high\nabove the head",
     {"left_ankle": (0.0, 0.0, 0.0), "right_ankle": (0.0, 0.0, 0.0), "right_wrist": (0.51, -0.05, 0.48)}),
    ("one foot lifted", "left ankle on the floor,\nright ankle 40 cm up\nand 30 cm forward,\nhands free",
     {"left_ankle": (0.0, 0.0, 0.0), "right_ankle": (0.0, -0.30, 0.40)}),
)
NATURAL_COLOUR = (0.80, 0.62, 0.50)
ALTERNATIVE_COLOUR = (0.45, 0.60, 0.80)
TARGET_COLOUR = (0.95, 0.15, 0.10)
TARGET_RADIUS = 0.045   # metres
IN_FRONT_OPACITY = 0.8  # of a target drawn over the body that hides it
TILT = math.radians(20)    # the camera looks down this much (orthographic: every body the same size)
TURN = math.radians(30)    # every body turned to its left, so forward moves show
COLUMN = 1.3               # metres between the bodies of a row
ROW = 2.65                 # picture height of a row (metres): from the labels to the raised hand
TITLE_WIDTH = 1.75         # metres left of the first body for the row's title
LABEL_SIZE = 0.13
TITLE_SIZE = 0.17
MARGIN = 0.15              # metres round everything in the picture


@dataclass(frozen=True)
class Cell:
    """One body of the picture: its pin set, its label ("natural", "alternative N") and armature."""
    pin_set: str
    label: str
    arm: object


def picture_axes():
    """(right, up, towards the camera): the orthographic camera's axes in world space (3,) each."""
    return (np.array([1.0, 0.0, 0.0]), np.array([0.0, math.sin(TILT), math.cos(TILT)]),
            np.array([0.0, -math.cos(TILT), math.sin(TILT)]))


def on_picture(u, v, depth=2.0):
    """A world point (3,) that the camera shows at picture coordinates (u, v) (metres), `depth`
    metres in front of the plane through the origin (labels float in front, clear of the floor)."""
    right, up, towards = picture_axes()
    return u * right + v * up + depth * towards


def text(bpy, body, location, size, mat, align="CENTER"):
    """A text object facing the camera, casting no shadow."""
    curve = bpy.data.curves.new(body.split("\n")[0], "FONT")
    curve.body = body
    curve.size = size
    curve.align_x = align
    curve.align_y = "CENTER"
    obj = bpy.data.objects.new(curve.name, curve)
    obj.location = location
    obj.rotation_euler = (math.pi / 2 - TILT, 0.0, 0.0)
    obj.visible_shadow = False
    obj.data.materials.append(mat)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def posed_row(bpy, row, name, moves, alternatives, mats):
    """The bodies of one pin set: posed as an artist would (effectors moved, live solving, then
    Natural on each; alternative n stepped n times with Next); [Cell]."""
    from mathutils import Vector

    scene = bpy.context.scene
    arms = []
    for col in range(alternatives + 1):
        scene.cursor.location = (col * COLUMN, row * ROW / math.sin(TILT), 0.0)
        bpy.ops.smpl_ik.add_body()
        arm = bpy.context.active_object
        arm.rotation_euler.z = TURN
        label = "natural" if col == 0 else f"alternative {col}"
        arm.name = f"{name}, {label}"
        bpy.context.view_layer.update()
        bpy.ops.smpl_ik.add_default_effectors()
        turn = arm.matrix_world.to_3x3()
        for obj in [o for o in bpy.data.objects if o.type == "EMPTY" and o.smpl_ik_effector.body == arm]:
            move = moves.get(obj.smpl_ik_effector.joint)
            if move is None:
                bpy.data.objects.remove(obj)
            else:
                obj.location += turn @ Vector(move)
        arm.smpl_ik.mesh.data.materials.append(mats["natural" if col == 0 else "alternative"])
        arms.append((label, arm))
    bpy.context.view_layer.update()   # live solving poses each body from its moved effectors
    cells = []
    for col, (label, arm) in enumerate(arms):
        bpy.context.view_layer.objects.active = arm
        bpy.ops.smpl_ik.natural_pose()
        arm.smpl_ik.alternatives_count = max(alternatives, 2)   # the add-on's smallest set
        for _ in range(col):
            bpy.ops.smpl_ik.alternative(direction="NEXT")
        if arm.smpl_ik.status:
            logger.info(f"{arm.name}: {arm.smpl_ik.status}")
        cells.append(Cell(name, label, arm))
    return cells


def targets(bpy, cells, mat):
    """A sphere on every enabled effector of the cells' bodies; the spheres."""
    spheres = []
    for cell in cells:
        for obj in bpy.data.objects:
            if obj.type == "EMPTY" and obj.smpl_ik_effector.body == cell.arm and obj.smpl_ik_effector.enabled:
                bpy.ops.mesh.primitive_uv_sphere_add(radius=TARGET_RADIUS, segments=24, ring_count=12,
                                                     location=obj.matrix_world.translation)
                sphere = bpy.context.active_object
                sphere.name = f"target {obj.name}"
                sphere.data.materials.append(mat)
                bpy.ops.object.shade_smooth()
                spheres.append(sphere)
    return spheres


def build(bpy, resolution, samples, alternatives=3):
    """The picture's scene: bodies, targets, labels, floor, camera, lights; returns ([Cell],
    [target sphere])."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    mats = {"natural": material(bpy, "natural", NATURAL_COLOUR),
            "alternative": material(bpy, "alternative", ALTERNATIVE_COLOUR)}
    ink = material(bpy, "label", (0.01, 0.01, 0.012))
    cells = []
    rows = len(PIN_SETS)
    for i, (name, pinned, moves) in enumerate(PIN_SETS):
        row = rows - 1 - i   # the first pin set furthest back, at the top of the picture
        row_cells = posed_row(bpy, row, name, moves, alternatives, mats)
        base = row * ROW
        for col, cell in enumerate(row_cells):
            text(bpy, cell.label, on_picture(col * COLUMN, base - 0.18), LABEL_SIZE, ink)
        text(bpy, name, on_picture(-TITLE_WIDTH, base + 1.25), TITLE_SIZE, ink, align="LEFT")
        text(bpy, pinned, on_picture(-TITLE_WIDTH, base + 0.85), LABEL_SIZE * 0.8, ink, align="LEFT")
        cells += row_cells
    glow = material(bpy, "target", TARGET_COLOUR)
    bsdf = glow.node_tree.nodes["Principled BSDF"]
    bsdf.inputs["Emission Color"].default_value = (*TARGET_COLOUR, 1.0)
    bsdf.inputs["Emission Strength"].default_value = 0.6
    spheres = targets(bpy, cells, glow)
    frame_camera(bpy, scene, resolution, [o for o in scene.objects if o.type in {"MESH", "FONT"}])
    bpy.ops.mesh.primitive_plane_add(size=80.0, location=(0.0, 10.0, 0.0))
    bpy.context.active_object.data.materials.append(material(bpy, "floor", (0.72, 0.72, 0.70)))

    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.data.energy = 3.5
    sun.data.angle = math.radians(10)
    sun.rotation_euler = (math.radians(40), 0.0, math.radians(-35))
    scene.collection.objects.link(sun)
    sky(bpy, scene, (0.78, 0.80, 0.84), 0.4)
    cycles(scene, resolution, samples, denoise=True)
    return cells, spheres


def frame_camera(bpy, scene, resolution, objs):
    """An orthographic camera, tilted down TILT, framing the objects with MARGIN."""
    right, up, towards = picture_axes()
    depsgraph = bpy.context.evaluated_depsgraph_get()
    corners = []
    for obj in objs:   # the posed meshes' vertices (a skinned mesh's bound box is its rest pose's)
        ev = obj.evaluated_get(depsgraph)
        mesh = ev.to_mesh()
        co = np.empty(len(mesh.vertices) * 3)
        mesh.vertices.foreach_get("co", co)
        ev.to_mesh_clear()
        world = np.array(ev.matrix_world)
        corners.append(co.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3])
    points = np.concatenate(corners)
    u, v = points @ right, points @ up
    width, height = u.max() - u.min() + 2 * MARGIN, v.max() - v.min() + 2 * MARGIN
    w, h = resolution
    cam_data = bpy.data.cameras.new("Camera")
    cam_data.type = "ORTHO"
    cam_data.sensor_fit = "HORIZONTAL"
    cam_data.ortho_scale = max(width, height * w / h)
    cam_data.clip_end = 200.0
    cam = bpy.data.objects.new("Camera", cam_data)
    scene.collection.objects.link(cam)
    centre = (u.max() + u.min()) / 2 * right + (v.max() + v.min()) / 2 * up + 60.0 * towards
    cam.location = tuple(centre)
    cam.rotation_euler = (math.pi / 2 - TILT, 0.0, 0.0)
    scene.camera = cam


def render(bpy, path, spheres):
    """Render the scene to `path` (PNG, atomically), with the target spheres drawn over what
    hides them: a second pass renders the spheres alone on a transparent film, laid over."""
    scene = bpy.context.scene
    w, h = scene.render.resolution_x, scene.render.resolution_y
    with tempfile.TemporaryDirectory() as tmp:
        layers = []
        for name, alone in (("scene", False), ("targets", True)):
            shown = set(spheres) if alone else None
            for obj in scene.objects:
                obj.visible_camera = shown is None or obj in shown
            scene.render.film_transparent = alone
            scene.render.image_settings.color_mode = "RGBA" if alone else "RGB"
            scene.render.filepath = str(Path(tmp) / f"{name}.png")
            bpy.ops.render.render(write_still=True)
            image = bpy.data.images.load(scene.render.filepath)
            pixels = np.empty(w * h * 4, np.float32)
            image.pixels.foreach_get(pixels)
            bpy.data.images.remove(image)
            layers.append(pixels.reshape(h, w, 4))
        for obj in scene.objects:
            obj.visible_camera = True
        scene.render.film_transparent = False
        base, over = layers
        alpha = over[..., 3:] * IN_FRONT_OPACITY
        out = base.copy()
        out[..., :3] = base[..., :3] * (1 - alpha) + over[..., :3] * alpha
        out[..., 3] = 1.0
        image = bpy.data.images.new("alternatives", w, h)
        image.pixels.foreach_set(out.ravel())
        with atomic_path(path) as partial:
            image.filepath_raw = partial
            image.file_format = "PNG"
            image.save()
        bpy.data.images.remove(image)
