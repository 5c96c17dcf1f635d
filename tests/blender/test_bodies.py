"""Female and male open bodies, users' files keeping their gender, and Set Height and Weight."""
import bmesh
import bpy
import numpy as np
import pytest

from models.body.measure import DENSITY
from models.body.model import load_body_model, open_body_path

from test_body import add_body, evaluated_vertices, world_vertices

OPEN = {"neutral": "OPEN", "female": "OPEN_FEMALE", "male": "OPEN_MALE"}


def measured(arm):
    """(height m, weight kg) of the body's evaluated mesh (shape keys and armature applied),
    measured here with Blender's own tools: the world Z extent and bmesh's volume."""
    mesh_obj = arm.smpl_ik.mesh
    z = world_vertices(mesh_obj)[:, 2]
    depsgraph = bpy.context.evaluated_depsgraph_get()
    bm = bmesh.new()
    try:
        bm.from_object(mesh_obj, depsgraph)
        volume = bm.calc_volume(signed=True)
    finally:
        bm.free()
    scale = np.prod(np.array(mesh_obj.matrix_world.to_scale()))
    return z.max() - z.min(), volume * scale * DENSITY


def scene_state(arm):
    keys = arm.smpl_ik.mesh.data.shape_keys.key_blocks
    return (len(bpy.data.objects), len(bpy.data.meshes), tuple(arm.smpl_ik.betas), tuple(arm.location),
            tuple(k.value for k in keys))


def test_add_body_offers_and_builds_each_open_body(bridge):
    arms = {g: add_body(body=key) for g, key in OPEN.items()}
    verts = {}
    for gender, arm in arms.items():
        props = arm.smpl_ik
        assert props.is_body and props.gender == gender and props.body_path == ""
        body = load_body_model(open_body_path(gender))
        assert len(props.mesh.data.vertices) == body.num_vertices
        verts[gender] = evaluated_vertices(bridge, props.mesh)
        assert np.abs(verts[gender] - bridge.to_blender(body.v_template)).max() < 1e-4
    assert np.abs(verts["female"] - verts["neutral"]).max() > 0.02
    assert np.abs(verts["male"] - verts["neutral"]).max() > 0.02
    height = {g: measured(arm)[0] for g, arm in arms.items()}
    assert height["female"] + 0.08 < height["male"], height
    assert arms["female"].name != arms["male"].name


def test_a_gendered_body_reloads_its_own_open_body(bridge, tmp_path):
    """Saved and opened again, a female body's shape changes follow the female shape space."""
    arm = add_body(body="OPEN_FEMALE")
    arm.smpl_ik.betas[0] = 1.0
    path = tmp_path / "female.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE" and o.smpl_ik.is_body)
    assert arm.smpl_ik.gender == "female"
    arm.smpl_ik.betas[1] = -1.5
    assert arm.smpl_ik.status == ""
    betas = np.zeros(10)
    betas[0], betas[1] = 1.0, -1.5
    female = load_body_model(open_body_path("female")).rest_joints(betas)
    neutral = load_body_model(open_body_path("neutral")).rest_joints(betas)
    heads = bridge.bone_heads(arm)
    assert np.abs(heads - bridge.to_blender(female)).max() < 1e-4
    assert np.abs(heads - bridge.to_blender(neutral)).max() > 0.01


def test_a_users_file_keeps_its_gender(bridge, tmp_path):
    arrays = dict(np.load(open_body_path("neutral")))
    arrays = {k: v for k, v in arrays.items() if not k.startswith("measure_prior")}
    path = tmp_path / "my_body.npz"
    np.savez(path, **dict(arrays, gender=np.array("female"), v_template=arrays["v_template"] * 0.95))
    arm = add_body(filepath=str(path))
    assert arm.smpl_ik.gender == "female" and arm.smpl_ik.body_path == str(path)
    arm.smpl_ik.betas[0] = 1.0   # the shape follows the file, not an open body of its gender
    expected = load_body_model(path).rest_joints(np.eye(10)[0])
    assert np.abs(bridge.bone_heads(arm) - bridge.to_blender(expected)).max() < 1e-4


@pytest.mark.parametrize("gender", list(OPEN))
def test_set_measurements_gives_that_height_and_weight(ext, gender):
    arm = add_body(body=OPEN[gender])
    arm.location = (0.5, -1.0, 0.2)
    floor = world_vertices(arm.smpl_ik.mesh)[:, 2].min()
    assert bpy.ops.smpl_ik.set_measurements(height=1.80, weight=80.0) == {"FINISHED"}
    assert arm.smpl_ik.status == ""
    assert np.any(np.abs(np.array(arm.smpl_ik.betas)) > 0.1)
    height, weight = measured(arm)
    assert abs(height - 1.80) < 0.01, height
    assert abs(weight - 80.0) < 2.0, weight
    # the panel's label says the same
    body_object = __import__(ext.__name__ + ".addon.body.build", fromlist=["measurements_of"])
    now = body_object.measurements_of(arm)
    assert abs(now.height - 1.80) < 0.001 and abs(now.weight - 80.0) < 0.1
    # the mesh's shape keys carry it (the betas), so the feet still stand where they stood
    assert abs(world_vertices(arm.smpl_ik.mesh)[:, 2].min() - floor) < 1e-4


def test_set_measurements_from_the_mesh_selects_its_body():
    arm = add_body(body="OPEN_MALE")
    bpy.context.view_layer.objects.active = arm.smpl_ik.mesh
    assert bpy.ops.smpl_ik.set_measurements(height=1.65, weight=60.0) == {"FINISHED"}
    height, weight = measured(arm)
    assert abs(height - 1.65) < 0.01 and abs(weight - 60.0) < 2.0


@pytest.mark.parametrize("height,weight,message", [
    (0.0, 80.0, r"height 0\.000 m is out of range: a height is more than 0 m; this body reaches .* m to .* m"),
    (5.0, 80.0, r"height 5\.000 m is out of range: .* over that"),
    (1.80, 0.0, r"weight 0\.0 kg is out of range: a weight is more than 0 kg; this body reaches"),
    (1.80, float("nan"), r"weight must be a finite number"),
    (0.8, 400.0, r"height 0\.800 m with weight 400\.0 kg is out of this body.s reach"),
])
def test_bad_measurements_are_refused_and_nothing_changes(height, weight, message):
    arm = add_body(body="OPEN_FEMALE")
    arm.smpl_ik.betas[2] = 0.5
    before = scene_state(arm)
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.smpl_ik.set_measurements(height=height, weight=weight)
    assert scene_state(arm) == before


def test_set_measurements_needs_a_body():
    bpy.ops.object.empty_add()
    with pytest.raises(RuntimeError, match="select an SMPL-IK body"):
        bpy.ops.smpl_ik.set_measurements(height=1.7, weight=70.0)


def test_body_panel_offers_height_and_weight_and_shows_them():
    from scene import draw_into

    arm = add_body(body="OPEN_MALE")
    assert bpy.ops.smpl_ik.set_measurements(height=1.92, weight=95.0) == {"FINISHED"}
    log = draw_into(bpy.types.SMPL_IK_PT_body.draw).log
    assert {"smpl_ik.set_measurements", "SmplIkBodyProperties.target_height",
            "SmplIkBodyProperties.target_weight"} <= set(log)
    assert ("label", "1.920 m, 95.0 kg (male)", False) in log, log
    assert arm.smpl_ik.gender == "male"


def test_balance_and_collision_use_the_bodys_own_parts(ext):
    """Solves are refined with the masses, capsules and soles of the body's own mesh and shape:
    the female body's hips are wider than the neutral body's scaled to her size, and a change of
    shape gives new parts."""
    from models.ik.cost import BodyParts

    solving = __import__(ext.__name__ + ".addon.pose.solving", fromlist=["refine_options"])
    arm = add_body(body="OPEN_FEMALE")
    parts = solving.refine_options(arm).body_parts
    female = BodyParts.from_body(load_body_model(open_body_path("female")))
    assert np.abs(parts.capsules.radius - female.capsules.radius).max() < 1e-9
    neutral = BodyParts.from_body(load_body_model(open_body_path("neutral"))).scaled_to(female.rest)
    assert np.abs(parts.capsules.radius - neutral.capsules.radius).max() > 0.003
    assert solving.refine_options(arm).body_parts is parts   # remembered while the shape holds
    arm.smpl_ik.betas[1] = 2.0
    assert abs(arm.smpl_ik.applied_betas[1] - 2.0) < 1e-6   # the shape is applied as it is set
    assert solving.refine_options(arm).body_parts is not parts
