"""Joint files in Blender: smpl_ik.import_joints solves 3D joint positions into SMPL motion and
keys it on a body. The joints are read back from Blender's evaluated pose bones (not through
the add-on's conversion), with the bridge's one convention: Blender = BLENDER_FROM_SMPL @ SMPL."""
import inspect
import json

import bpy
import numpy as np
import pytest

from models.body.model import load_body_model
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import JOINT_INDEX, JOINT_NAMES
from models.motion.joints import COCO
from scene import data_counts, refused_unchanged

C = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])   # Blender from SMPL (+90 degrees about X)
FRAMES = 6


def figure(seed=0, frames=FRAMES):
    """(betas, the open body's posed joints (T, 24, 3), its vertices (T, V, 3)), SMPL frame, of
    a small random motion."""
    body = load_body_model()
    rng = np.random.default_rng(seed)
    betas = rng.normal(0.0, 1.0, 10)
    aa = rng.normal(0.0, 0.2, (24, 3)) + np.arange(frames)[:, None, None] * rng.normal(0.0, 0.03, (24, 3))
    aa[:, 0] = [0.0, 0.4, 0.0]
    trans = np.zeros((frames, 3))
    trans[:, 0] = np.linspace(0.0, 0.3, frames)
    out = body.forward(betas, rel_rotmats=axis_angle_to_matrix(aa), trans=trans)
    return betas, out.posed_joints, out.vertices


def joints_in_blender(arm, frames):
    """(T, 24, 3) the body's joint heads in SMPL's frame (armature space) at `frames`."""
    out = []
    for f in frames:
        bpy.context.scene.frame_set(f)
        out.append([C.T @ np.array(arm.pose.bones[n].head) for n in JOINT_NAMES])
    return np.array(out)


def set_fps(fps):
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = fps, 1.0


def test_smpl24_file_keys_the_same_joints_on_a_new_body(tmp_path):
    """IK-GAT lays every bone of the fitted body onto the file's: the keyed joints are the
    file's within a millimetre (Blender keeps 32-bit floats: micrometres)."""
    set_fps(30)
    _, joints, _ = figure()
    np.save(tmp_path / "walk.npy", joints)
    assert bpy.ops.smpl_ik.import_joints(filepath=str(tmp_path / "walk.npy"), floor="OFF") == {"FINISHED"}
    arm = bpy.context.active_object
    assert arm.smpl_ik.is_body and arm.animation_data.action.name == "walk"
    scene = bpy.context.scene
    assert (scene.frame_start, scene.frame_end) == (1, FRAMES)
    back = joints_in_blender(arm, range(1, FRAMES + 1))
    assert 1e3 * np.linalg.norm(back - joints, axis=-1).max() < 1.0


def test_a_layout_with_fewer_joints_on_the_active_body(tmp_path):
    """COCO-17 (its face points from the body's vertices), onto the selected body, which takes
    the fitted shape: its hips, knees, ankles, shoulders, elbows and wrists land within 10 mm
    on average, as in tests/core/test_joint_files.py."""
    set_fps(30)
    body = load_body_model()
    _, joints, verts = figure(seed=2, frames=3)
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    face = {n: verts[:, body.landmarks[v]] for n, v in (("nose", "nose"), ("left_eye", "leye"), ("right_eye", "reye"),
                                                          ("left_ear", "lear"), ("right_ear", "rear"))}
    coco = np.stack([face[n] if n in face else joints[:, JOINT_INDEX[n]] for n in COCO.joints], axis=1)
    (tmp_path / "coco.json").write_text(json.dumps({"joints": coco.tolist(), "fps": 30}))
    assert bpy.ops.smpl_ik.import_joints(filepath=str(tmp_path / "coco.json"), target="ACTIVE",
                                         floor="OFF") == {"FINISHED"}
    assert bpy.context.active_object == arm and arm.animation_data.action.name == "coco"
    assert np.abs(np.array(arm.smpl_ik.betas[:])).max() > 0.1   # the fitted shape, not the mean
    back = joints_in_blender(arm, range(1, 4))
    given = [JOINT_INDEX[n] for n in JOINT_NAMES if COCO.direct(n) and n != "head"]
    assert 1e3 * np.linalg.norm(back[:, given] - joints[:, given], axis=-1).mean() < 10.0


def test_a_file_with_gaps_keys_every_frame_and_the_report_says_so(tmp_path, capfd):
    """A wrist and hand lost for two frames (NaN) and one frame lost whole: every frame is
    keyed, the whole frames exactly, the lost ones near the truth; the report counts them."""
    set_fps(30)
    _, joints, _ = figure(seed=4)
    gaps = joints.copy()
    gaps[2:4, [JOINT_INDEX["right_wrist"], JOINT_INDEX["right_hand"]]] = np.nan
    gaps[4] = np.nan
    np.save(tmp_path / "gaps.npy", gaps)
    capfd.readouterr()
    assert bpy.ops.smpl_ik.import_joints(filepath=str(tmp_path / "gaps.npy"), floor="OFF") == {"FINISHED"}
    assert "3 of 6 frames miss joints" in capfd.readouterr().out
    arm = bpy.context.active_object
    back = joints_in_blender(arm, range(1, FRAMES + 1))
    error = 1e3 * np.linalg.norm(back - joints, axis=-1)
    assert error[[0, 1, 5]].max() < 1.0
    assert error[2:5].max() < 30.0


def _bad(path, case):
    _, joints, _ = figure(frames=3)
    if case == "inf":
        joints[1, 3, 2] = np.inf
        np.save(path, joints)
    elif case == "count":
        np.save(path, np.zeros((3, 19, 3)))
    elif case == "junk":
        path.write_bytes(b"\x00\x01 not a zip")
    elif case == "empty":
        path.write_text("")
    elif case == "height":
        np.save(path, 1000.0 * joints)


BAD = {"inf": ("inf.npy", "frame 1 .*joint 3 is infinite"),
       "count": ("count.npy", "19 joints per frame, which no layout has"),
       "junk": ("junk.npz", "not a readable"), "empty": ("empty.csv", "the file is empty"),
       "height": ("height.npy", "the figure would be .* m tall")}


@pytest.mark.parametrize("target", ["NEW", "ACTIVE"])
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_names_the_file_and_leaves_the_scene_untouched(tmp_path, case, target):
    name, message = BAD[case]
    path = tmp_path / name
    _bad(path, case)
    refused_unchanged(lambda: bpy.ops.smpl_ik.import_joints(filepath=str(path), target=target),
                      f"{name}: {message}", target)


def test_the_import_menu_and_the_panel_offer_it():
    names = {getattr(f, "__name__", "") for f in bpy.types.TOPBAR_MT_file_import._dyn_ui_initialize()}
    assert "_menu_import_joints" in names

    panel = next(c for c in bpy.types.Panel.__subclasses__() if c.__name__ == "SMPL_IK_PT_body")
    assert "smpl_ik.import_joints" in inspect.getsource(panel.draw)


def test_one_undo_takes_the_import_back(tmp_path):
    """The operator's UNDO flag: the import is one step (pushed here as the UI pushes it), and
    one undo leaves the scene as it was before, with no body, action or mesh left."""
    _, joints, _ = figure(frames=3)
    np.save(tmp_path / "step.npy", joints)
    bpy.ops.ed.undo_push(message="before the import")
    before = data_counts()
    assert bpy.ops.smpl_ik.import_joints(filepath=str(tmp_path / "step.npy")) == {"FINISHED"}
    assert data_counts() != before
    bpy.ops.ed.undo_push(message="Import Joint Positions")
    assert bpy.ops.ed.undo() == {"FINISHED"}
    assert data_counts() == before
