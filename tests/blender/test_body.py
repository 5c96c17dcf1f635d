"""The extension in Blender: packaging, add_body, shape sliders, preferences, bad input."""
import ast
import importlib
import subprocess
import sys
import zipfile

import bpy
import numpy as np
import pytest

from models.body.model import load_body_model
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import JOINT_NAMES, PARENTS

from benchmarks import blender_session
from conftest import ROOT

BLENDER_EXT = blender_session.extension_tool()
TOL = 1e-4  # 0.1 mm


def add_body(**kw):
    assert bpy.ops.smpl_ik.add_body(**kw) == {"FINISHED"}
    return bpy.context.active_object


def evaluated_vertices(bridge, mesh_obj):
    """Armature-space (= the mesh's local space) evaluated vertices."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = mesh_obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        return bridge.mesh_vertices(mesh)
    finally:
        evaluated.to_mesh_clear()


def world_vertices(mesh_obj):
    """(V, 3) the evaluated mesh's vertices in world space (through the Armature modifier)."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = mesh_obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        co = np.empty(len(mesh.vertices) * 3)
        mesh.vertices.foreach_get("co", co)
        world = np.array(evaluated.matrix_world)
        return co.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3]
    finally:
        evaluated.to_mesh_clear()


def pelvis_world(arm):
    bpy.context.view_layer.update()
    return np.array(arm.matrix_world @ arm.pose.bones["pelvis"].head)


def random_pose(seed):
    rng = np.random.default_rng(seed)
    return axis_angle_to_matrix(rng.normal(scale=0.3, size=(24, 3))), rng.normal(scale=0.2, size=3)


def test_manifest_validates_and_builds_a_zip_without_training_code(tmp_path):
    run = subprocess.run([sys.executable, str(BLENDER_EXT), "validate", str(ROOT)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    run = subprocess.run([sys.executable, str(BLENDER_EXT), "build", "--source-dir", str(ROOT),
                          "--output-dir", str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    (zip_path,) = tmp_path.glob("smpl_ik-*.zip")
    names = zipfile.ZipFile(zip_path).namelist()
    assert "blender_manifest.toml" in names and "__init__.py" in names
    assert "models/body/open_smpl_neutral.npz" in names and "addon/pose/operators.py" in names
    assert not any(n.startswith((".venv", "tests/", "scripts/", ".git", "docs/")) for n in names)
    # what runs in Blender and nothing that trains: no torch code, no training records
    assert "models/ik/weights/smplik.npz" in names and "models/ik/weights/ikgat.npz" in names
    assert not [n for n in names if n.startswith("models/training/")]
    assert not [n for n in names if n.endswith(".json")], "training records or figures in the zip"
    archive = zipfile.ZipFile(zip_path)
    for name in (n for n in names if n.endswith(".py")):
        tree = ast.parse(archive.read(name).decode(), filename=name)
        for node in ast.walk(tree):
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for module in modules:
                assert module.split(".")[0] != "torch", f"{name}:{node.lineno} imports torch"
                assert "training" not in module.split("."), f"{name}:{node.lineno} imports {module}"


INSTALL_SCRIPT = """
import os, sys, tempfile
os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp()
import bpy, addon_utils
before = set(dir(bpy.types))
bpy.ops.extensions.package_install_files(filepath=sys.argv[1], repo="user_default", enable_on_install=True)
mod = "bl_ext.user_default.smpl_ik"
assert mod in bpy.context.preferences.addons, "not enabled"
heavy = [m for m in ("ai_edge_litert", "cv2", "torch", "mediapipe") if m in sys.modules]
assert not heavy, f"imported when enabled: {heavy}"
assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
assert hasattr(bpy.types.Object, "smpl_ik") and "SMPL_IK_PT_body" in dir(bpy.types)
addon_utils.disable(mod, default_set=True)
assert not hasattr(bpy.types.Object, "smpl_ik"), "property left behind"
left = sorted(n for n in set(dir(bpy.types)) - before if "SMPL" in n.upper())
assert not left, left
print("INSTALL-OK")
"""


def test_built_zip_installs_enables_and_unregisters_cleanly(tmp_path):
    subprocess.run([sys.executable, str(BLENDER_EXT), "build", "--source-dir", str(ROOT),
                    "--output-dir", str(tmp_path)], check=True, capture_output=True)
    (zip_path,) = tmp_path.glob("smpl_ik-*.zip")
    script = tmp_path / "install.py"
    script.write_text(INSTALL_SCRIPT)
    run = subprocess.run([sys.executable, str(script), str(zip_path)], capture_output=True, text=True)
    assert "INSTALL-OK" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]


def test_missing_photo_packages_message_names_each_zip_as_the_builder_names_it(ext, tmp_path):
    """Build, as scripts/build_extension.py does (a manifest listing the platforms, split by
    Blender's builder, renamed for the Blender releases of each Python), a stand-in with this
    extension's id and version: the message must name every zip that comes out for this
    Blender's Python and no zip for another, and the platforms must be the ones the build
    script fetches wheels for."""
    from benchmarks import extension as build_extension
    from benchmarks import wheels as fetch_wheels

    builds = importlib.import_module(blender_session.MODULE + ".addon.com.builds")
    photo = importlib.import_module(blender_session.MODULE + ".addon.photo.image")
    assert list(builds.PHOTO_PLATFORMS) == list(fetch_wheels.PLATFORMS)
    manifest = (ROOT / "blender_manifest.toml").read_text()
    for python in builds.BLENDER_PYTHONS:
        src, out = tmp_path / python.python / "src", tmp_path / python.python / "out"
        src.mkdir(parents=True)
        out.mkdir()
        (src / "blender_manifest.toml").write_text(
            build_extension.staged_manifest(manifest, [], builds.PHOTO_PLATFORMS, python))
        (src / "__init__.py").write_text("def register(): pass\ndef unregister(): pass\n")
        built = sorted(p.name for p in build_extension.build_split(src, out, python, builds.PHOTO_PLATFORMS))
        assert built == sorted(p.name for p in out.glob("*.zip"))
        assert len(built) == len(builds.PHOTO_PLATFORMS)
        for name in built:
            assert (name in photo.MISSING) == (python == builds.blender_python()), (name, photo.MISSING)
    assert builds.blender_python().says in photo.MISSING


def test_add_body_builds_rig_and_mesh_at_cursor(bridge):
    bpy.context.scene.cursor.location = (1.0, 2.0, 3.0)
    arm = add_body()
    body = load_body_model()
    assert arm.type == "ARMATURE"   # standing on the cursor: see test_add_body_stands_the_feet_on_the_cursor
    assert [b.name for b in arm.data.bones] != [] and {b.name for b in arm.data.bones} == set(JOINT_NAMES)
    for j, name in enumerate(JOINT_NAMES):
        parent = arm.data.bones[name].parent
        assert (parent.name if parent else None) == (JOINT_NAMES[PARENTS[j]] if PARENTS[j] >= 0 else None)
    heads = bridge.bone_heads(arm)
    assert np.abs(heads - bridge.to_blender(body.rest_joints(np.zeros(10)))).max() < TOL
    assert heads[JOINT_NAMES.index("head"), 2] > heads[0, 2] + 0.3  # Z up in Blender
    mesh_obj = arm.smpl_ik.mesh
    assert mesh_obj.parent == arm and len(mesh_obj.data.vertices) == body.num_vertices
    assert [g.name for g in mesh_obj.vertex_groups] == list(JOINT_NAMES)
    assert [m.type for m in mesh_obj.modifiers] == ["ARMATURE"] and mesh_obj.modifiers[0].object == arm
    keys = [k.name for k in mesh_obj.data.shape_keys.key_blocks]
    assert keys == ["Basis"] + [f"beta_{k:02d}" for k in range(10)]
    nose = evaluated_vertices(bridge, mesh_obj)[body.landmarks["nose"]]
    assert nose[1] < heads[JOINT_NAMES.index("head"), 1] - 0.05  # faces -Y, Blender's front


def test_only_the_bridge_changes_axes(bridge):
    """The bridge's matrices agree with its point conversion, and no other add-on module
    holds the axis change or builds a rotation of its own."""
    rng = np.random.default_rng(3)
    axes, origin, points = axis_angle_to_matrix(rng.normal(size=3)), rng.normal(size=3), rng.normal(size=(5, 3))
    m = bridge.object_matrix(axes, origin)
    assert np.allclose(points @ m[:3, :3].T + m[:3, 3], bridge.to_blender(points @ axes.T + origin))
    to_smpl = axis_angle_to_matrix(rng.normal(size=3))
    assert np.allclose(points @ bridge.frame_to_blender(to_smpl).T, bridge.to_blender(points @ to_smpl.T))
    assert bridge.up_extent(bridge.from_blender(points)) == (points[:, 2].min(), points[:, 2].max())
    for path in sorted((ROOT / "addon").glob("*.py")):
        if path.name != "bridge.py":
            text = path.read_text()
            for word in ("BLENDER_FROM_SMPL", "Matrix.Rotation("):
                assert word not in text, f"addon/{path.name} uses {word}: convert through the bridge"


CURSOR = np.array([0.3, -0.2, 0.5])
FLOOR_TOL = 1e-4   # 0.1 mm: the issue asks 5 mm, but betas[0] = 3 moves the open body's feet only 4.7 mm


def user_smpl_file(folder):
    """A stand-in for a user's SMPL file: the open body 10 % larger (its feet 8 cm lower)."""
    arrays = dict(np.load(ROOT / "models/body/open_smpl_neutral.npz"))
    path = folder / "SMPL_MALE.npz"
    np.savez(path, **dict(arrays, v_template=arrays["v_template"] * 1.1))
    return path


@pytest.mark.parametrize("which", ["open", "file"])
def test_add_body_stands_the_feet_on_the_cursor(bridge, tmp_path, which):
    """Add Body: the evaluated mesh's lowest vertex at the cursor's height and the pelvis over
    the cursor, as added and after shape changes (betas[0] = 3, then betas[1] = 3, which moves
    the open body's feet by 8.5 cm), for the open body and for a user's file."""
    bpy.context.scene.cursor.location = CURSOR
    arm = add_body(**({} if which == "open" else {"filepath": str(user_smpl_file(tmp_path))}))
    for k in (None, 0, 1):
        if k is not None:
            arm.smpl_ik.betas[k] = 3.0
            assert arm.smpl_ik.status == ""
        verts = world_vertices(arm.smpl_ik.mesh)
        assert abs(verts[:, 2].min() - CURSOR[2]) < FLOOR_TOL, (k, verts[:, 2].min() - CURSOR[2])
        assert np.abs(pelvis_world(arm)[:2] - CURSOR[:2]).max() < FLOOR_TOL, k


def test_shape_change_keeps_a_posed_turned_body_on_its_floor(bridge):
    """The floor point under the rest pelvis stays put in the world when betas change, along
    the object's own axes (turned, scaled); the pose is kept in armature space."""
    bpy.context.scene.cursor.location = CURSOR
    arm = add_body()
    arm.rotation_euler = (0.0, 0.0, 0.7)
    arm.scale = (1.5, 1.5, 1.5)
    body = load_body_model()
    rot, trans = random_pose(5)
    bridge.write_pose(arm, rot, trans, bridge.bone_axes(arm))
    bpy.context.view_layer.update()
    floor = lambda betas: np.array(arm.matrix_world) @ [*bridge.to_blender(body.rest_floor_point(betas)), 1]  # noqa: E731
    before = floor(np.zeros(10))
    betas = np.zeros(10)
    betas[1] = -2.5   # the feet 7 cm higher in armature space
    arm.smpl_ik.betas = betas
    bpy.context.view_layer.update()
    assert np.abs(floor(betas) - before).max() < 1e-5
    rot_after, trans_after = bridge.read_pose(arm, bridge.bone_axes(arm))
    assert np.allclose(rot_after, rot, atol=1e-6) and np.allclose(trans_after, trans, atol=1e-6)
    bridge.write_pose(arm, np.broadcast_to(np.eye(3), (24, 3, 3)), np.zeros(3), bridge.bone_axes(arm))
    # back in the rest pose, the lowest vertex is on that floor (scaling the object after Add
    # Body scaled about its origin, which lifted the floor point off the cursor's height)
    assert abs(world_vertices(arm.smpl_ik.mesh)[:, 2].min() - before[2]) < FLOOR_TOL
    assert abs(before[2] - CURSOR[2]) > 0.1


def test_vertex_groups_carry_the_weights(bridge):
    arm = add_body()
    body = load_body_model()
    mesh = arm.smpl_ik.mesh.data
    got = np.zeros_like(body.weights)
    for v in mesh.vertices:
        for g in v.groups:
            got[v.index, g.group] = g.weight
    assert np.abs(got - body.weights).max() < 1e-6


def test_betas_move_bones_and_mesh_and_keep_the_pose(bridge):
    arm = add_body()
    body = load_body_model()
    rot, trans = random_pose(3)
    bridge.write_pose(arm, rot, trans, bridge.bone_axes(arm))
    arm.smpl_ik.betas[0] = 2.0
    betas = np.zeros(10)
    betas[0] = 2.0
    assert arm.smpl_ik.status == ""
    assert np.abs(bridge.bone_heads(arm) - bridge.to_blender(body.rest_joints(betas))).max() < TOL
    rot_after, trans_after = bridge.read_pose(arm, bridge.bone_axes(arm))
    assert np.allclose(rot_after, rot, atol=1e-6) and np.allclose(trans_after, trans, atol=1e-6)
    expected = bridge.to_blender(body.vertices(betas, rel_rotmats=rot, trans=trans))
    assert np.abs(evaluated_vertices(bridge, arm.smpl_ik.mesh) - expected).max() < TOL
    # several betas at once, set as a vector from Python
    betas = np.linspace(-1.5, 1.5, 10)
    arm.smpl_ik.betas = betas
    expected = bridge.to_blender(body.vertices(betas, rel_rotmats=rot, trans=trans))
    assert np.abs(evaluated_vertices(bridge, arm.smpl_ik.mesh) - expected).max() < TOL
    assert bpy.ops.smpl_ik.reset_shape() == {"FINISHED"}
    assert list(arm.smpl_ik.betas) == [0.0] * 10
    assert np.abs(bridge.bone_heads(arm) - bridge.to_blender(body.rest_joints(np.zeros(10)))).max() < TOL


def test_shape_change_keeps_mode_and_selection(bridge):
    arm = add_body()
    bpy.ops.object.mode_set(mode="POSE")
    arm.smpl_ik.betas[2] = 1.0
    assert arm.mode == "POSE" and bpy.context.view_layer.objects.active == arm
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = arm.smpl_ik.mesh
    arm.smpl_ik.betas[2] = -1.0
    assert bpy.context.view_layer.objects.active == arm.smpl_ik.mesh
    assert np.isclose(arm.smpl_ik.mesh.data.shape_keys.key_blocks["beta_02"].value, -1.0)


def test_nan_beta_is_refused_and_nothing_changes(bridge):
    arm = add_body()
    arm.smpl_ik.betas[0] = 1.0
    heads = bridge.bone_heads(arm)
    verts = evaluated_vertices(bridge, arm.smpl_ik.mesh)
    location = tuple(arm.location)
    arm.smpl_ik.betas[4] = float("nan")
    assert "beta 4 must be a number" in arm.smpl_ik.status
    assert list(arm.smpl_ik.betas)[:5] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert tuple(arm.location) == location   # the body did not move to keep its feet down either
    assert np.array_equal(bridge.bone_heads(arm), heads)
    assert np.array_equal(evaluated_vertices(bridge, arm.smpl_ik.mesh), verts)


def _prefs(ext):
    return bpy.context.preferences.addons[ext.__name__].preferences


def test_user_body_folder_offers_files(ext, bridge, tmp_path):
    user_smpl_file(tmp_path)
    (tmp_path / "broken.pkl").write_bytes(b"\x80\x04not a pickle")
    (tmp_path / "notes.txt").write_text("ignored")
    _prefs(ext).body_folder = str(tmp_path)
    ops = __import__(ext.__name__ + ".addon.body.operators", fromlist=["_body_items"])
    items = ops._body_items(None, bpy.context)
    assert [i[1] for i in items] == ["Open body (neutral)", "Open body (female)", "Open body (male)",
                                     "SMPL_MALE.npz", "broken.pkl"]
    arm = add_body(body=str(tmp_path / "SMPL_MALE.npz"))
    expected = load_body_model(tmp_path / "SMPL_MALE.npz").rest_joints(np.zeros(10))
    assert np.abs(bridge.bone_heads(arm) - bridge.to_blender(expected)).max() < TOL
    arm.smpl_ik.betas[0] = 1.5  # the shape follows the user's file, not the open body
    expected = load_body_model(tmp_path / "SMPL_MALE.npz").rest_joints(np.eye(10)[0] * 1.5)
    assert np.abs(bridge.bone_heads(arm) - bridge.to_blender(expected)).max() < TOL


@pytest.mark.parametrize("name,content,message", [
    ("broken.pkl", b"\x80\x04not a pickle", "broken.pkl: not a readable body model file"),
    ("missing.npz", None, "missing.npz: body model file not found"),
])
def test_unreadable_body_file_leaves_scene_untouched(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    before = (len(bpy.data.objects), len(bpy.data.meshes), len(bpy.data.armatures))
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.smpl_ik.add_body(filepath=str(path))
    assert (len(bpy.data.objects), len(bpy.data.meshes), len(bpy.data.armatures)) == before


def test_missing_preferences_folder_lists_only_the_open_body(ext, tmp_path):
    _prefs(ext).body_folder = str(tmp_path / "nowhere")
    prefs_mod = __import__(ext.__name__ + ".addon.com.blender", fromlist=["user_body_files"])
    assert prefs_mod.user_body_files(bpy.context) == []
