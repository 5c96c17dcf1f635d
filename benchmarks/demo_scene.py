"""The demo's scene (scripts/demo.py): the open body in three shapes, a body posed by dragging
effectors, one posed from a photo and the m21 skeleton driven through its SMPL proxy."""
import logging
import math
from pathlib import Path

import numpy as np

from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import JOINT_INDEX

from .render import cycles, material, sky

logger = logging.getLogger(__name__)
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
PHOTOS = (SHARED / "images" / "bus.jpg", SHARED / "images" / "camera.png")
M21_RIG = SHARED / "mocap" / "m21" / "m21_data_t.bvh"
# Effector moves (metres, Blender axes) for the body posed by dragging: a reach and a step.
DRAGS = {"left_wrist": (-0.2, -0.25, 0.55), "head": (0.1, -0.05, -0.04),
         "right_wrist": (0.3, -0.2, -0.3), "right_ankle": (0.05, -0.3, 0.25)}

SHAPES = (  # (label, betas, colour)
    ("average", {}, (0.80, 0.62, 0.50)),
    ("tall and slim", {0: 2.0, 3: -1.0}, (0.45, 0.60, 0.80)),
    ("short and heavy", {0: -1.5, 3: 2.5}, (0.62, 0.75, 0.50)),
)


def relaxed_pose():
    """SMPL local rotations (24, 3, 3): arms lowered, elbows and knees a little bent."""
    aa = np.zeros((24, 3))
    for side, sign in (("left", 1.0), ("right", -1.0)):
        aa[JOINT_INDEX[f"{side}_shoulder"]] = [0.0, 0.0, -sign * math.radians(62)]
        aa[JOINT_INDEX[f"{side}_elbow"]] = [0.0, sign * math.radians(25), 0.0]
        aa[JOINT_INDEX[f"{side}_knee"]] = [math.radians(6), 0.0, 0.0]
        aa[JOINT_INDEX[f"{side}_hip"]] = [-math.radians(4), 0.0, sign * math.radians(3)]
    aa[JOINT_INDEX["head"]] = [math.radians(5), 0.0, 0.0]
    return axis_angle_to_matrix(aa)


def build(bpy, bridge, resolution, samples):
    """Build the demo's scene in a new empty file, ready to render with Cycles at `resolution`
    (W, H) and `samples`; prints why a part was left out; returns the bodies' armatures."""
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    pose = relaxed_pose()
    bodies = []
    for i, (label, betas, colour) in enumerate(SHAPES):
        scene.cursor.location = ((i - 3) * 0.9, 0.0, 0.0)
        bpy.ops.smpl_ik.add_body()
        arm = bpy.context.active_object
        arm.name = f"SMPL-IK {label}"
        bridge.write_pose(arm, pose, np.zeros(3), bridge.bone_axes(arm))
        for k, value in betas.items():
            arm.smpl_ik.betas[k] = value
        arm.smpl_ik.mesh.data.materials.append(material(bpy, label, colour))
        arm.hide_render = True
        bodies.append(arm)

    notes = []
    bodies.append(effector_body(bpy, scene, (0.2, 0.0, 0.0)))
    photo_body = photo_posed_body(bpy, scene, (1.2, 0.0, 0.0), notes)
    if photo_body is not None:
        bodies.append(photo_body)
    rig_sticks = driven_rig(bpy, scene, (2.25, 0.0, 0.0), notes)

    # stand every body on the floor: lowest evaluated vertex at z = 0
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for arm in bodies:
        mesh_obj = arm.smpl_ik.mesh.evaluated_get(depsgraph)
        lowest = min((mesh_obj.matrix_world @ v.co).z for v in mesh_obj.data.vertices)
        arm.location.z -= lowest
    if rig_sticks is not None:
        rig, sticks = rig_sticks
        bpy.context.view_layer.update()
        lowest = min((s.matrix_world @ v.co).z for s in sticks for v in s.data.vertices)
        rig.location.z -= lowest
        rig.smpl_ik_rig.proxy.location.z -= lowest

    bpy.ops.mesh.primitive_plane_add(size=20.0, location=(0, 0, 0))
    bpy.context.active_object.data.materials.append(material(bpy, "floor", (0.85, 0.85, 0.82)))

    cam_data = bpy.data.cameras.new("Camera")
    cam_data.lens = 50
    cam = bpy.data.objects.new("Camera", cam_data)
    scene.collection.objects.link(cam)
    cam.location = (-0.2, -9.0, 1.45)
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
    sky(bpy, scene, (0.75, 0.78, 0.82), 0.35)
    cycles(scene, resolution, samples)
    for note in notes:
        logger.info(note)
    return bodies


def effector_body(bpy, scene, location):
    """A body posed by moving three of its default effectors, as an artist drags them."""
    from mathutils import Vector

    scene.cursor.location = location
    bpy.ops.smpl_ik.add_body()
    arm = bpy.context.active_object
    arm.name = "SMPL-IK posed by effectors"
    bpy.ops.smpl_ik.add_default_effectors()
    bpy.context.view_layer.update()
    for obj in [o for o in bpy.data.objects if o.type == "EMPTY" and o.smpl_ik_effector.body == arm]:
        move = DRAGS.get(obj.smpl_ik_effector.joint)
        if move:
            obj.location += Vector(move)
            bpy.context.view_layer.update()   # one live solve per drag
    arm.smpl_ik.mesh.data.materials.append(material(bpy, "effectors", (0.85, 0.55, 0.35)))
    arm.hide_render = True
    return arm


def photo_posed_body(bpy, scene, location, notes):
    """A body posed from the first photo found, or None (with a note saying why)."""
    photo = next((p for p in PHOTOS if p.is_file()), None)
    if photo is None:
        notes.append(f"no photo body: none of {', '.join(str(p) for p in PHOTOS)} exists")
        return None
    scene.cursor.location = location
    bpy.ops.smpl_ik.add_body()
    arm = bpy.context.active_object
    arm.name = f"SMPL-IK from {photo.name}"
    try:
        bpy.ops.smpl_ik.pose_from_image(filepath=str(photo), effectors=False, camera=False)
    except RuntimeError as exc:   # MediaPipe not installed, or nobody found
        notes.append(f"no photo body: {exc}")
        bpy.data.objects.remove(arm.smpl_ik.mesh)
        bpy.data.objects.remove(arm)
        return None
    arm.location = location       # the photo pose stands at the body's own origin
    arm.smpl_ik.mesh.data.materials.append(material(bpy, "photo", (0.55, 0.50, 0.80)))
    arm.hide_render = True
    return arm


def driven_rig(bpy, scene, location, notes):
    """The m21 skeleton fitted with a proxy and posed through it; (rig, stick meshes) or None."""
    from mathutils import Vector

    if not M21_RIG.is_file():
        notes.append(f"no custom rig: {M21_RIG} not found")
        return None
    bpy.ops.import_anim.bvh(filepath=str(M21_RIG), global_scale=0.01)
    rig = bpy.context.active_object
    rig.location = location
    bpy.context.view_layer.update()
    bpy.ops.smpl_ik.fit_rig()
    proxy = rig.smpl_ik_rig.proxy
    bpy.ops.smpl_ik.add_default_effectors()
    bpy.context.view_layer.update()
    waves = {"right_wrist": (-0.15, -0.1, 0.85), "left_wrist": (-0.1, -0.25, 0.2), "left_ankle": (0.1, 0.0, 0.12)}
    for obj in [o for o in bpy.data.objects if o.type == "EMPTY" and o.smpl_ik_effector.body == proxy]:
        move = waves.get(obj.smpl_ik_effector.joint)
        if move:
            obj.location += Vector(move)
            bpy.context.view_layer.update()
    proxy.smpl_ik.mesh.hide_render = True
    proxy.hide_render = True
    stick = material(bpy, "rig", (0.35, 0.35, 0.38))
    sticks = []
    for bone in rig.data.bones:   # a tapered stick per bone, parented to the bone
        length = bone.length
        if length < 1e-4:
            continue
        bpy.ops.mesh.primitive_cone_add(vertices=10, radius1=0.035, radius2=0.015, depth=length,
                                        location=(0, length / 2, 0), rotation=(-np.pi / 2, 0, 0))
        obj = bpy.context.active_object
        obj.data.transform(obj.matrix_basis)
        obj.matrix_basis.identity()
        obj.data.materials.append(stick)
        obj.parent, obj.parent_type, obj.parent_bone = rig, "BONE", bone.name
        obj.matrix_world = rig.matrix_world @ rig.pose.bones[bone.name].matrix   # as posed now
        sticks.append(obj)
    return rig, sticks
