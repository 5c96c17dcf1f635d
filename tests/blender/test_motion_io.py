"""AMASS-style motion in Blender: smpl_ik.import_motion and smpl_ik.export_motion.

The bones are read back into SMPL rotations here from Blender's evaluated pose matrices and
the bones' rest matrices (not through the add-on's own conversion), with the bridge's one
convention: Blender = BLENDER_FROM_SMPL @ SMPL.
"""
import importlib
import os

import bpy
import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp

from models.body.model import load_body_model
from models.core.rotations import axis_angle_to_matrix, matrix_to_axis_angle
from models.core.skeleton import JOINT_NAMES, PARENTS
from models.motion.batch import RetargetJob, run_job
from models.motion.bvh import write_smpl_bvh
from scene import data_counts, object_fcurves, refused_unchanged

from benchmarks import blender_session

C = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])   # Blender from SMPL (+90 degrees about X)
ROT_TOL = 1e-5    # radians
POS_TOL = 1e-6    # metres
AMASS_UP = np.array([np.pi / 2, 0.0, 0.0])   # AMASS's root orientations carry +90 degrees about X


def geodesic_angle(m1, m2):
    """(...) radians between rotation matrices, precise near zero (arccos of the trace is
    not: float32 noise of 1e-7 there reads as 4e-4 rad)."""
    return np.linalg.norm(matrix_to_axis_angle(np.swapaxes(m1, -1, -2) @ m2), axis=-1)


def set_fps(fps):
    bpy.context.scene.render.fps = fps
    bpy.context.scene.render.fps_base = 1.0


def bones_as_smpl(arm, frame):
    """(local rotations (24, 3, 3), pelvis position (3,)) of the body at `frame`, SMPL frame,
    armature space, from the evaluated pose matrices and the rest matrices."""
    bpy.context.scene.frame_set(frame)
    pose = np.array([np.array(arm.pose.bones[n].matrix) for n in JOINT_NAMES])
    rest = np.array([np.array(arm.data.bones[n].matrix_local) for n in JOINT_NAMES])
    world = C.T @ pose[:, :3, :3] @ np.swapaxes(rest[:, :3, :3], -1, -2) @ C
    local = np.array([world[j] if PARENTS[j] < 0 else world[PARENTS[j]].T @ world[j] for j in range(24)])
    return local, C.T @ pose[0, :3, 3]


def rest_pelvis(arm):
    return C.T @ np.array(arm.data.bones["pelvis"].head_local)


def imported(path, **options):
    before = set(bpy.data.objects)
    assert bpy.ops.smpl_ik.import_motion(filepath=str(path), **options) == {"FINISHED"}
    arm = bpy.context.active_object
    assert arm.type == "ARMATURE" and arm.smpl_ik.is_body
    if options.get("target", "NEW") == "NEW":
        assert arm not in before
    return arm


def keyed_frames(arm):
    return bpy.context.scene.frame_start, bpy.context.scene.frame_end


def standing_poses(rng, frames, joints=24, scale=0.25):
    """Plausible motion in SMPL's frame: small joint rotations, the body turning about its up."""
    aa = rng.normal(scale=scale, size=(frames, joints, 3))
    aa[:, 0] = rng.normal(scale=0.15, size=(frames, 3)) + [0.0, rng.uniform(-3, 3), 0.0]
    return aa


def amass_root(aa):
    out = aa.copy()
    out[:, 0] = matrix_to_axis_angle(axis_angle_to_matrix(AMASS_UP) @ axis_angle_to_matrix(aa[:, 0]))
    return out


@pytest.fixture(scope="module")
def retargeted(tmp_path_factory):
    """An AMASS-style file written by this project's retarget writer (models.motion.batch, as
    scripts/retarget.py runs it) from a BVH of SMPL motion: (path, its arrays)."""
    folder = tmp_path_factory.mktemp("retarget")
    rng = np.random.default_rng(7)
    body = load_body_model()
    rot = axis_angle_to_matrix(rng.normal(scale=0.25, size=(24, 24, 3)))
    trans = np.cumsum(rng.normal(scale=0.02, size=(24, 3)), axis=0)
    write_smpl_bvh(folder / "walk.bvh", rot, trans, body.rest_joints(np.eye(10)[0] * 1.2), 30.0)
    result = run_job(RetargetJob(source=str(folder / "walk.bvh"), output=str(folder / "walk.npz")))
    assert result.ok, result.error
    with np.load(folder / "walk.npz") as d:
        return folder / "walk.npz", {k: d[k] for k in d.files}


def test_a_retargeted_file_imports_with_every_frame_as_its_pose_vectors(retargeted):
    path, data = retargeted
    arm = imported(path, keep_source_rate=True, floor="OFF")   # the file's numbers as they are
    poses = axis_angle_to_matrix(data["poses"].reshape(-1, 24, 3).astype(np.float64))
    assert keyed_frames(arm) == (1, len(poses))
    assert arm.animation_data.action.name == "walk"
    # the file's betas are the open body's (body_model says so): the body takes them
    assert np.allclose(arm.smpl_ik.betas[:], data["betas"], atol=1e-6) and np.any(data["betas"])
    expected_rest = load_body_model().rest_joints(data["betas"].astype(np.float64))[0]
    assert np.abs(rest_pelvis(arm) - expected_rest).max() < POS_TOL
    for f in range(len(poses)):
        local, pelvis = bones_as_smpl(arm, f + 1)
        assert geodesic_angle(local, poses[f]).max() < ROT_TOL, f
        assert np.abs(pelvis - (rest_pelvis(arm) + data["trans"][f])).max() < POS_TOL, f


def test_a_retargeted_file_stands_upright_because_of_its_up_axis_key(tmp_path):
    """A retarget.py output says it is Y-up; with Up Axis on Auto that word decides, even for a
    clip whose body lies face down (its root orientation alone reads as a Z-up file). The same
    file without the key, as earlier versions wrote it, still imports (decided from the pose)."""
    rng = np.random.default_rng(3)
    body = load_body_model()
    aa = standing_poses(rng, 24, scale=0.1)
    aa[:, 0] = [np.pi / 2, 0.0, 0.0]           # lying face down: the body's up is SMPL's +Z
    trans = np.zeros((24, 3))
    write_smpl_bvh(tmp_path / "lying.bvh", axis_angle_to_matrix(aa), trans, body.rest_joints(np.zeros(10)), 30.0)
    result = run_job(RetargetJob(source=str(tmp_path / "lying.bvh"), output=str(tmp_path / "lying.npz")))
    assert result.ok, result.error
    with np.load(tmp_path / "lying.npz") as d:
        data = {k: d[k] for k in d.files}
    assert str(data["up_axis"]) == "Y"
    ops = importlib.import_module(blender_session.MODULE + ".addon.motion.importer")
    said = ops.import_motion(bpy.context, ops.ImportOptions(filepath=str(tmp_path / "lying.npz"), floor="OFF"))
    assert said.up.axis == "Y" and "the file says" in said.up.reason
    arm = said.body
    local, pelvis = bones_as_smpl(arm, bpy.context.scene.frame_start)   # as in the file: lying down
    assert geodesic_angle(local[:1], axis_angle_to_matrix(data["poses"][0, :3])[None]).max() < ROT_TOL
    older = {k: v for k, v in data.items() if k != "up_axis"}
    np.savez(tmp_path / "older.npz", **older)
    guessed = ops.import_motion(bpy.context, ops.ImportOptions(filepath=str(tmp_path / "older.npz"), floor="OFF"))
    assert guessed.up.axis == "Z"              # what the key prevents: the pose alone misleads
    assert guessed.frame_end - guessed.frame_start + 1 == said.frame_end - said.frame_start + 1


def test_a_z_up_amass_file_stands_upright_with_its_pelvis_where_amass_puts_it(tmp_path):
    rng = np.random.default_rng(8)
    upright = standing_poses(rng, 20)
    poses = amass_root(upright)
    trans = np.column_stack([np.linspace(0, 1, 20), np.linspace(0, 0.5, 20), 0.9 + 0.02 * rng.normal(size=20)])
    path = tmp_path / "amass_walk.npz"
    np.savez(path, poses=poses.reshape(20, 72), trans=trans, betas=rng.normal(size=16), gender=np.array("neutral"),
             mocap_framerate=np.array(30.0))
    set_fps(30)
    bpy.context.scene.cursor.location = (1.0, -2.0, 0.25)
    arm = imported(path, floor="OFF")
    assert np.allclose(arm.smpl_ik.betas[:], 0.0)            # SMPL's betas do not carry to the open body
    j0 = load_body_model().rest_joints(np.zeros(10))[0]
    for f in range(20):
        local, _ = bones_as_smpl(arm, f + 1)
        head = np.array(arm.matrix_world @ arm.pose.bones["head"].head)
        pelvis = np.array(arm.matrix_world @ arm.pose.bones["pelvis"].head)
        assert head[2] - pelvis[2] > 0.2, f                               # upright in Blender's Z
        # AMASS: the pelvis is at rest pelvis + trans in the Z-up world, here from the cursor
        assert np.abs(pelvis - (np.array([1.0, -2.0, 0.25]) + j0 + trans[f])).max() < 1e-5, f
        assert geodesic_angle(local[1:], axis_angle_to_matrix(upright[f, 1:])).max() < ROT_TOL
        assert geodesic_angle(local[0], axis_angle_to_matrix(upright[f, 0])) < ROT_TOL   # turned upright


def test_the_up_axis_can_be_forced(tmp_path):
    """Forcing Y on an AMASS file lays the body down (its root orientation taken as is)."""
    rng = np.random.default_rng(9)
    poses = amass_root(standing_poses(rng, 3, scale=0.05))
    path = tmp_path / "z.npz"
    np.savez(path, poses=poses.reshape(3, 72), mocap_framerate=np.array(24.0))
    set_fps(24)
    arm = imported(path, up_axis="Y")
    local, _ = bones_as_smpl(arm, 1)
    assert geodesic_angle(local[0], axis_angle_to_matrix(poses[0, 0])) < ROT_TOL
    head, pelvis = (np.array(arm.pose.bones[n].head) for n in ("head", "pelvis"))
    assert abs(head[2] - pelvis[2]) < 0.15 and np.linalg.norm(head - pelvis) > 0.3   # lying


def write_clip(path, rng, frames, fps, width=72):
    poses = rng.normal(scale=0.3, size=(frames, width))
    poses[:, :3] = standing_poses(rng, frames)[:, 0]
    trans = np.cumsum(rng.normal(scale=0.02, size=(frames, 3)), axis=0)
    np.savez(path, poses=poses, trans=trans, mocap_framerate=np.array(float(fps)), gender=np.array("neutral"))
    return poses, trans


def test_120_fps_at_30_keeps_every_4th_frame(tmp_path):
    rng = np.random.default_rng(10)
    poses, trans = write_clip(tmp_path / "fast.npz", rng, 121, 120)
    set_fps(30)
    arm = imported(tmp_path / "fast.npz", floor="OFF")
    assert keyed_frames(arm) == (1, 31)
    for k in range(31):
        local, pelvis = bones_as_smpl(arm, k + 1)
        assert geodesic_angle(local, axis_angle_to_matrix(poses[4 * k].reshape(24, 3))).max() < ROT_TOL
        assert np.abs(pelvis - rest_pelvis(arm) - trans[4 * k]).max() < POS_TOL


def test_60_fps_at_25_slerps_between_source_frames(tmp_path):
    rng = np.random.default_rng(11)
    poses, trans = write_clip(tmp_path / "sixty.npz", rng, 61, 60)
    set_fps(25)
    arm = imported(tmp_path / "sixty.npz", floor="OFF")
    assert keyed_frames(arm) == (1, 26)
    times = np.arange(61) / 60.0
    for k in (3, 7, 12):                      # 0.12 s, 0.28 s, 0.48 s: between source frames
        t = k / 25.0
        local, pelvis = bones_as_smpl(arm, k + 1)
        for j in range(24):
            rot = Rotation.from_rotvec(poses[:, 3 * j:3 * j + 3])
            expected = Slerp(times, rot)([t]).as_matrix()[0]
            assert geodesic_angle(local[j], expected) < ROT_TOL, (k, j)
        expected_trans = [np.interp(t, times, trans[:, c]) for c in range(3)]
        assert np.abs(pelvis - rest_pelvis(arm) - expected_trans).max() < POS_TOL


def test_a_source_rate_overrides_a_files_wrong_one_and_the_report_says_so(tmp_path, capfd):
    """A file that says 120 fps of motion captured at 60 (as the aclstm salsa clips): with
    Source Rate 60 its 121 frames last 2 s, keyed at 30 fps as every 2nd frame (at the file's
    120 they would be 1 s, every 4th frame)."""
    rng = np.random.default_rng(14)
    poses, trans = write_clip(tmp_path / "salsa.npz", rng, 121, 120)
    set_fps(30)
    capfd.readouterr()
    arm = imported(tmp_path / "salsa.npz", source_fps=60.0, floor="OFF")
    assert keyed_frames(arm) == (1, 61)
    for k in (0, 1, 17, 60):
        local, pelvis = bones_as_smpl(arm, k + 1)
        assert geodesic_angle(local, axis_angle_to_matrix(poses[2 * k].reshape(24, 3))).max() < ROT_TOL
        assert np.abs(pelvis - rest_pelvis(arm) - trans[2 * k]).max() < POS_TOL
    said = capfd.readouterr().out
    assert "121 frames at 60 fps as 61 keys at 30 fps" in said
    assert "source rate 60 fps as given (the file says 120)" in said
    assert keyed_frames(imported(tmp_path / "salsa.npz", floor="OFF")) == (1, 31)   # 0: the file's own rate


@pytest.mark.parametrize("width", [156, 165])
def test_smplh_and_smplx_files_import_their_22_body_joints(tmp_path, width):
    rng = np.random.default_rng(width)
    poses, trans = write_clip(tmp_path / f"w{width}.npz", rng, 4, 30, width=width)
    set_fps(30)
    arm = imported(tmp_path / f"w{width}.npz", floor="OFF")
    for f in range(4):
        local, pelvis = bones_as_smpl(arm, f + 1)
        assert geodesic_angle(local[:22], axis_angle_to_matrix(poses[f, :66].reshape(22, 3))).max() < ROT_TOL
        assert geodesic_angle(local[22:], np.eye(3)).max() < ROT_TOL         # SMPL's hands: not in the file
        assert np.abs(pelvis - rest_pelvis(arm) - trans[f]).max() < POS_TOL


def test_frame_options_set_where_the_keys_go(tmp_path):
    rng = np.random.default_rng(12)
    write_clip(tmp_path / "take.npz", rng, 10, 60)
    set_fps(30)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 250
    arm = imported(tmp_path / "take.npz", keep_source_rate=True, frame_start=101, set_frame_range=False)
    fcurves = object_fcurves(arm)
    assert len(fcurves) == 24 * 4 + 3
    assert all(len(fc.keyframe_points) == 10 for fc in fcurves)
    assert {fc.keyframe_points[0].co[0] for fc in fcurves} == {101.0}
    assert (scene.frame_start, scene.frame_end) == (1, 250)
    # each bone's channels in a group of its name, as the Dope Sheet shows them
    assert all(fc.group is not None and fc.data_path == f'pose.bones["{fc.group.name}"].' + fc.data_path.split(".")[-1]
               for fc in fcurves)
    assert len({fc.group.name for fc in fcurves}) == 24


def test_a_user_smpl_file_of_the_gender_is_used_and_takes_the_betas(ext, tmp_path):
    folder = tmp_path / "bodies"
    folder.mkdir()
    arrays = dict(np.load(blender_session.ROOT / "models/body/open_smpl_neutral.npz"))
    arrays.pop("gender", None)
    np.savez(folder / "SMPL_FEMALE.npz", **dict(arrays, v_template=arrays["v_template"] * 0.95))
    np.savez(folder / "SMPL_MALE.npz", **arrays)
    bpy.context.preferences.addons[ext.__name__].preferences.body_folder = str(folder)
    try:
        rng = np.random.default_rng(13)
        betas = rng.normal(size=16)
        np.savez(tmp_path / "her.npz", poses=rng.normal(scale=0.2, size=(3, 156)), betas=betas,
                 gender=np.array(b"female"), mocap_frame_rate=np.array(30.0))
        set_fps(30)
        arm = imported(tmp_path / "her.npz")
        assert arm.smpl_ik.body_path == str(folder / "SMPL_FEMALE.npz")
        assert np.allclose(arm.smpl_ik.betas[:], betas[:10], atol=1e-6)     # the first 10 of 16
    finally:
        bpy.context.preferences.addons[ext.__name__].preferences.body_folder = ""


def test_onto_the_active_body(tmp_path):
    rng = np.random.default_rng(14)
    poses, trans = write_clip(tmp_path / "again.npz", rng, 5, 30)
    set_fps(30)
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    arm.location = (3.0, 0.0, 0.0)
    arm.smpl_ik.betas[0] = 1.0           # the file has no betas: the body keeps its shape
    where = tuple(arm.location)
    importlib.import_module(blender_session.MODULE + ".addon.motion.keys").keyframe_pose(arm, 1)
    previous = arm.animation_data.action
    before = data_counts()
    assert imported(tmp_path / "again.npz", target="ACTIVE", floor="OFF") == arm
    assert data_counts()[:3] == before[:3] and data_counts()[3] == before[3] + 1
    assert arm.animation_data.action.name == "again" and previous.use_fake_user   # the old one is kept
    for f in range(5):
        local, pelvis = bones_as_smpl(arm, f + 1)
        assert geodesic_angle(local, axis_angle_to_matrix(poses[f].reshape(24, 3))).max() < ROT_TOL
        assert np.abs(pelvis - rest_pelvis(arm) - trans[f]).max() < POS_TOL
    assert tuple(arm.location) == where and arm.smpl_ik.betas[0] == 1.0


# --- export ------------------------------------------------------------------------------------

@pytest.mark.parametrize("up", ["Z", "Y"])
def test_export_then_import_gives_the_file_back(tmp_path, retargeted, up):
    source, data = retargeted
    set_fps(30)
    arm = imported(source, keep_source_rate=True, floor="OFF")
    out = tmp_path / f"back_{up}.npz"
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.smpl_ik.export_motion(filepath=str(out), up_axis=up) == {"FINISHED"}
    with np.load(out, allow_pickle=False) as d:
        written = {k: d[k] for k in d.files}
    assert written["poses"].shape == data["poses"].shape and str(written["gender"]) == "neutral"
    assert float(written["mocap_framerate"]) == 30.0 and str(written["up_axis"]) == up
    assert np.allclose(written["betas"], data["betas"], atol=1e-6)
    if up == "Y":   # SMPL's frame: the numbers are the source file's
        assert geodesic_angle(axis_angle_to_matrix(written["poses"].reshape(-1, 24, 3)),
                              axis_angle_to_matrix(data["poses"].reshape(-1, 24, 3).astype(np.float64))).max() < ROT_TOL
        assert np.abs(written["trans"] - data["trans"]).max() < POS_TOL
    again = imported(out, keep_source_rate=True)
    assert again != arm
    for f in range(0, len(data["poses"]), 5):
        first, p1 = bones_as_smpl(arm, f + 1)
        second, p2 = bones_as_smpl(again, f + 1)
        assert geodesic_angle(first, second).max() < ROT_TOL and np.abs(p1 - p2).max() < POS_TOL


def test_export_of_hand_keyed_poses_includes_the_frames_between_keys(tmp_path):
    """Sparse keys (Bezier) are exported as Blender plays them, frame by frame."""
    keys_module = importlib.import_module(blender_session.MODULE + ".addon.motion.keys")
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    rng = np.random.default_rng(15)
    for frame in (1, 6, 11):
        for name in ("left_elbow", "spine2", "pelvis"):
            arm.pose.bones[name].rotation_quaternion = (
                Rotation.from_rotvec(rng.normal(scale=0.5, size=3)).as_quat()[[3, 0, 1, 2]])
        arm.pose.bones["pelvis"].location = rng.normal(scale=0.1, size=3)
        keys_module.keyframe_pose(arm, frame)
    shown = [bones_as_smpl(arm, f) for f in range(1, 12)]
    out = tmp_path / "keyed.npz"
    assert bpy.ops.smpl_ik.export_motion(filepath=str(out), frame_start=1, frame_end=11, up_axis="Y") == {"FINISHED"}
    with np.load(out) as d:
        poses, trans = d["poses"].reshape(-1, 24, 3), d["trans"]
    assert len(poses) == 11
    for f, (local, pelvis) in enumerate(shown):
        assert geodesic_angle(axis_angle_to_matrix(poses[f]), local).max() < ROT_TOL, f
        assert np.abs(trans[f] - (pelvis - rest_pelvis(arm))).max() < POS_TOL, f


def test_export_with_a_constraint_writes_what_blender_shows(tmp_path):
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    keys_module = importlib.import_module(blender_session.MODULE + ".addon.motion.keys")
    for frame, angle in ((1, 0.2), (5, 1.2)):
        arm.pose.bones["left_elbow"].rotation_quaternion = (np.cos(angle / 2), 0.0, 0.0, np.sin(angle / 2))
        keys_module.keyframe_pose(arm, frame)
    limit = arm.pose.bones["left_elbow"].constraints.new("LIMIT_ROTATION")
    limit.use_limit_z, limit.min_z, limit.max_z, limit.owner_space = True, -0.5, 0.5, "LOCAL"
    shown = [bones_as_smpl(arm, f)[0] for f in range(1, 6)]
    out = tmp_path / "limited.npz"
    assert bpy.ops.smpl_ik.export_motion(filepath=str(out), frame_start=1, frame_end=5) == {"FINISHED"}
    with np.load(out) as d:
        poses = d["poses"].reshape(-1, 24, 3)
    elbow = JOINT_NAMES.index("left_elbow")
    angles = [geodesic_angle(axis_angle_to_matrix(poses[f, elbow]), np.eye(3)) for f in range(5)]
    assert max(angles) < 0.5 + 1e-4 and angles[-1] > 0.5 - 1e-4             # the limit, not the key's 1.2
    for f in range(5):
        assert geodesic_angle(axis_angle_to_matrix(poses[f, 1:]), shown[f][1:]).max() < ROT_TOL


def test_export_of_a_still_body_writes_its_pose(tmp_path):
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    arm.pose.bones["right_knee"].rotation_quaternion = (0.8, 0.6, 0.0, 0.0)
    local, pelvis = bones_as_smpl(arm, 1)
    out = tmp_path / "pose.npz"
    assert bpy.ops.smpl_ik.export_motion(filepath=str(out), up_axis="Y") == {"FINISHED"}
    with np.load(out) as d:
        assert d["poses"].shape == (1, 72)
        assert geodesic_angle(axis_angle_to_matrix(d["poses"].reshape(24, 3)), local).max() < ROT_TOL


def test_a_failing_export_leaves_no_file_and_no_temporary(tmp_path, monkeypatch):
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    target = tmp_path / "motion.npz"
    target.write_bytes(b"the previous export")

    def half_then_fail(fh, **arrays):
        fh.write(b"PK\x03\x04 half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", half_then_fail)
    with pytest.raises(RuntimeError, match="motion.npz: No space left on device"):
        bpy.ops.smpl_ik.export_motion(filepath=str(target))
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["motion.npz"] and target.read_bytes() == b"the previous export"
    with pytest.raises(RuntimeError, match="cannot write"):
        bpy.ops.smpl_ik.export_motion(filepath=str(target / "inside_a_file.npz"))
    assert os.listdir(tmp_path) == ["motion.npz"]


def test_export_without_a_body_says_what_to_select(tmp_path):
    with pytest.raises(RuntimeError, match="select an SMPL-IK body"):
        bpy.ops.smpl_ik.export_motion(filepath=str(tmp_path / "x.npz"))
    assert not (tmp_path / "x.npz").exists()


# --- bad input ---------------------------------------------------------------------------------

def _bad(path, case):
    rng = np.random.default_rng(16)
    if case == "three values":
        np.savez(path, poses=rng.normal(size=(5, 3)), mocap_framerate=np.array(30.0))
    elif case == "nan":
        poses = rng.normal(size=(5, 72))
        poses[3, 10] = np.nan
        np.savez(path, poses=poses)
    elif case == "gender":
        np.savez(path, poses=rng.normal(size=(5, 72)), gender=np.array("alien"))
    elif case == "not npz":
        path.write_text("poses: 1 2 3\n")
    elif case == "jpeg":   # a photo picked by mistake: JPEG's start-of-image and JFIF header
        path.write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01" + bytes(200))
    elif case == "bvh":
        path.write_text("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 0\n  CHANNELS 3 Xposition Yposition Zposition\n}\n"
                        "MOTION\nFrames: 1\nFrame Time: 0.033\n0 0 0\n")
    elif case == "floor":
        np.savez(path, poses=rng.normal(size=(5, 72)), floor_height=np.array([0.0, np.nan]))


BAD = {"three values": r"array 'poses' has shape \(5, 3\); expected \(frames, 72\)",
       "floor": r"array 'floor_height' should be one finite number, the floor's height in metres",
       "nan": r"array 'poses' has nan at frame 3, joint 3 \(spine1\)",
       "gender": r"array 'gender' is 'alien'; expected one of neutral, female, male",
       "not npz": r"not a readable motion file \(not an \.npz archive\)$",
       "jpeg": r"not a readable motion file \(not an \.npz archive\)$",   # not "a pickle"
       "bvh": r"not a readable motion file \(not an \.npz archive\)$",
       "missing": r"no such file"}


@pytest.mark.parametrize("target", ["NEW", "ACTIVE"])
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_names_the_file_and_leaves_the_scene_untouched(tmp_path, case, target):
    path = tmp_path / f"bad_{case.replace(' ', '_')}.npz"
    _bad(path, case)
    refused_unchanged(lambda: bpy.ops.smpl_ik.import_motion(filepath=str(path), target=target),
                      f"{path.name}: {BAD[case]}", target)


def test_active_target_without_a_body_says_what_to_select(tmp_path):
    write_clip(tmp_path / "fine.npz", np.random.default_rng(17), 3, 30)
    with pytest.raises(RuntimeError, match="select an SMPL-IK body"):
        bpy.ops.smpl_ik.import_motion(filepath=str(tmp_path / "fine.npz"), target="ACTIVE")
    assert data_counts() == (0, 0, 0, 0)


def test_menus_offer_import_and_export():
    import_menu = bpy.types.TOPBAR_MT_file_import
    export_menu = bpy.types.TOPBAR_MT_file_export
    names = {getattr(f, "__name__", "") for f in import_menu._dyn_ui_initialize()}
    assert "_menu_import" in names
    assert "_menu_export" in {getattr(f, "__name__", "") for f in export_menu._dyn_ui_initialize()}


def test_the_bridges_quaternion_and_matrix_conversions_agree(bridge):
    """Two implementations, one answer: the import's quaternion algebra and the bridge's
    matrices (write_pose's path) give the same pose-bone rotations, and invert each other."""
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    axes = bridge.bone_axes(bpy.context.active_object)
    from models.core.rotations import axis_angle_to_quat_wxyz

    aa = np.random.default_rng(18).normal(size=(50, 24, 3))
    by_quats = bridge.smpl_quats_to_bone_quats(axis_angle_to_quat_wxyz(aa), axes)
    by_matrices = bridge.smpl_pose_to_bone_quats(axis_angle_to_matrix(aa), axes)
    assert np.allclose(np.abs(np.sum(by_quats * by_matrices, -1)), 1.0, atol=1e-12)
    back = bridge.bone_quats_to_smpl_quats(-3.0 * by_quats, axes)          # any scale and sign
    assert np.allclose(np.abs(np.sum(back * axis_angle_to_quat_wxyz(aa), -1)), 1.0, atol=1e-12)


@pytest.mark.parametrize("gender", ["female", "male"])
def test_a_file_of_a_gender_goes_on_the_open_body_of_that_gender(tmp_path, gender):
    from models.body.model import open_body_path

    rng = np.random.default_rng(19)
    poses = standing_poses(rng, 4).reshape(4, 72)
    np.savez(tmp_path / f"{gender}.npz", poses=poses, gender=np.array(gender), mocap_framerate=np.array(30.0),
             betas=rng.normal(size=10))
    set_fps(30)
    arm = imported(tmp_path / f"{gender}.npz")
    rest = load_body_model(open_body_path(gender)).rest_joints(np.zeros(10))
    heads = C.T @ np.array([arm.data.bones[n].head_local for n in JOINT_NAMES]).T
    assert np.abs(heads.T - rest).max() < POS_TOL                    # that body's skeleton, average shape
    out = tmp_path / "back.npz"
    assert bpy.ops.smpl_ik.export_motion(filepath=str(out)) == {"FINISHED"}
    with np.load(out) as d:
        assert str(d["gender"]) == gender and str(d["body_model"]) == f"open_smpl_{gender}"


# --- the floor ----------------------------------------------------------------------------------

FLOOR_TOL = 0.01   # metres: "on the floor" as the import's tests hold it (the measurement is within 5 mm)


def walking(frames=60, fps=30.0):
    """(poses (T, 24, 3), trans (T, 3)) of a smooth walking-like clip in SMPL's frame, one
    stride a second, walking 1.2 m/s along +Z, its lowest point not yet on any floor."""
    t = np.arange(frames) / fps
    phase = 2 * np.pi * t
    poses = np.zeros((frames, 24, 3))
    for hip, knee, sign in ((1, 4, 1.0), (2, 5, -1.0)):
        poses[:, hip, 0] = -0.45 * sign * np.sin(phase)
        poses[:, knee, 0] = 0.9 * np.clip(np.sin(phase + sign * np.pi / 2), 0, None)
    poses[:, 16, 2], poses[:, 17, 2] = -1.2, 1.2                   # arms down from the T
    trans = np.column_stack([np.zeros(frames), 0.02 * np.sin(2 * phase), 1.2 * t])
    return poses, trans


def with_lowest_at(poses, trans, height):
    """trans moved along SMPL's up so that the open body's whole mesh (average shape) has its
    lowest point over the clip at `height`, found here by skinning every vertex."""
    lowest = load_body_model().vertices(np.zeros(10), pose_rotvecs=poses, trans=trans)[..., 1].min()
    return trans + [0.0, height - lowest, 0.0]


def floor_clip(path, height, up="Y", **extra):
    """Write the walking clip with its lowest point `height` above its origin's floor (y = 0,
    or z = 0 for a Z-up file, as AMASS stores it); returns (poses, trans) in SMPL's frame."""
    from models.motion import amass

    poses, trans = walking()
    trans = with_lowest_at(poses, trans, height)
    stored = (poses, trans)
    if up == "Z":
        stored = amass.z_up_from_smpl_frame(poses, trans, load_body_model().rest_joints(np.zeros(10))[0])
    np.savez(path, poses=stored[0].reshape(len(poses), 72), trans=stored[1], gender=np.array("neutral"),
             mocap_framerate=np.array(30.0), **extra)
    return poses, trans


def mesh_lowest_z(arm):
    """(frames,) the lowest world Z of the body's mesh as Blender shows it (evaluated Armature
    modifier), at every keyed frame."""
    mesh = arm.smpl_ik.mesh
    start, end = keyed_frames(arm)
    low = []
    for frame in range(start, end + 1):
        bpy.context.scene.frame_set(frame)
        shown = mesh.evaluated_get(bpy.context.evaluated_depsgraph_get())
        data = shown.to_mesh()
        co = np.empty(3 * len(data.vertices))
        data.vertices.foreach_get("co", co)
        world = np.array(shown.matrix_world)
        low.append((co.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3])[:, 2].min())
        shown.to_mesh_clear()
    return np.array(low)


@pytest.mark.parametrize("up", ["Y", "Z"])
def test_feet_below_the_floor_come_in_on_it_and_the_report_says_so(tmp_path, capfd, up):
    poses, trans = floor_clip(tmp_path / "sunk.npz", -0.65, up)
    set_fps(30)
    bpy.context.scene.cursor.location = (0.5, -1.0, 0.2)          # a new body's floor: the cursor's height
    capfd.readouterr()
    arm = imported(tmp_path / "sunk.npz")
    assert "feet were 0.65 m below the floor: moved up 0.65 m" in capfd.readouterr().out
    assert abs(mesh_lowest_z(arm).min() - 0.2) < FLOOR_TOL
    assert arm.smpl_ik.floor_height == pytest.approx(0.2)          # the body's floor is where it was put
    for f in range(0, len(poses), 7):                              # only lifted: the same motion, 0.65 m up
        local, pelvis = bones_as_smpl(arm, f + 1)
        assert geodesic_angle(local, axis_angle_to_matrix(poses[f])).max() < ROT_TOL
        lift = pelvis - rest_pelvis(arm) - trans[f]
        assert np.abs(lift[[0, 2]]).max() < 1e-5 and abs(lift[1] - 0.65) < FLOOR_TOL


def test_with_the_floor_option_off_the_clip_stays_below_and_the_report_says_how_far(tmp_path, capfd):
    floor_clip(tmp_path / "sunk.npz", -0.65)
    set_fps(30)
    capfd.readouterr()
    arm = imported(tmp_path / "sunk.npz", floor="OFF")
    assert ("heights kept as in the file (floor option off): lowest point 0.65 m below the floor"
            in capfd.readouterr().out)
    assert abs(mesh_lowest_z(arm).min() + 0.65) < FLOOR_TOL


def test_a_clip_on_the_floor_is_left_where_it_is(tmp_path, capfd):
    _, trans = floor_clip(tmp_path / "level.npz", 0.0)
    set_fps(30)
    capfd.readouterr()
    arm = imported(tmp_path / "level.npz")
    out = capfd.readouterr().out
    assert "feet on the floor (lowest" in out and "left as they are" in out
    local, pelvis = bones_as_smpl(arm, 1)
    assert np.abs(pelvis - rest_pelvis(arm) - trans[0]).max() < POS_TOL   # not moved at all


def test_a_file_that_states_its_floor_keeps_its_place_on_that_floor(tmp_path, capfd):
    set_fps(30)
    # its floor is 0.65 m below its origin and the feet are on it: the file's floor goes on the floor
    floor_clip(tmp_path / "own_floor.npz", -0.65, floor_height=np.float64(-0.65))
    capfd.readouterr()
    arm = imported(tmp_path / "own_floor.npz")
    assert "the file states its floor (floor_height -0.65 m): moved up 0.65 m onto the floor" in capfd.readouterr().out
    assert abs(mesh_lowest_z(arm).min()) < FLOOR_TOL
    # a leap that never lands, 0.3 m above the floor it states: kept so (Put on Floor would lower it)
    floor_clip(tmp_path / "leap.npz", 0.3, up="Z", floor_height=np.float64(0.0))
    arm = imported(tmp_path / "leap.npz")
    assert "the file states its floor (floor_height 0 m): kept as in the file" in capfd.readouterr().out
    assert abs(mesh_lowest_z(arm).min() - 0.3) < FLOOR_TOL
    arm = imported(tmp_path / "leap.npz", floor="ON")
    assert "feet stayed 0.30 m above the floor" in capfd.readouterr().out
    assert abs(mesh_lowest_z(arm).min()) < FLOOR_TOL


def test_onto_the_active_body_the_floor_is_its_floor_height_and_an_export_says_where_it_is(tmp_path, capfd):
    floor_clip(tmp_path / "sunk.npz", -0.65)
    set_fps(30)
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    arm.location = (2.0, 1.0, 0.7)
    arm.smpl_ik.floor_height = 0.3                                 # its floor, world Z
    before = data_counts()
    capfd.readouterr()
    assert imported(tmp_path / "sunk.npz", target="ACTIVE") == arm
    assert "moved up" in capfd.readouterr().out
    assert np.allclose(arm.location, (2.0, 1.0, 0.7), rtol=0, atol=1e-6) and data_counts()[:3] == before[:3]
    assert abs(mesh_lowest_z(arm).min() - 0.3) < FLOOR_TOL
    out = tmp_path / "back.npz"
    assert bpy.ops.smpl_ik.export_motion(filepath=str(out), up_axis="Z") == {"FINISHED"}
    with np.load(out) as d:
        assert float(d["floor_height"]) == pytest.approx(0.3 - 0.7)   # its floor in the armature's numbers
    again = imported(out)                                          # a new body at the cursor: on its floor
    assert again != arm and abs(mesh_lowest_z(again).min()) < FLOOR_TOL


def test_a_tilted_active_body_keeps_the_files_heights(tmp_path, capfd):
    _, trans = floor_clip(tmp_path / "sunk.npz", -0.65)
    set_fps(30)
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    arm.rotation_euler = (0.3, 0.0, 0.0)
    capfd.readouterr()
    imported(tmp_path / "sunk.npz", target="ACTIVE")
    assert "tilted 17.2 degrees from upright, so no level floor lies under it: heights kept" in capfd.readouterr().out
    local, pelvis = bones_as_smpl(arm, 1)
    assert np.abs(pelvis - rest_pelvis(arm) - trans[0]).max() < POS_TOL


@pytest.mark.parametrize("target", ["NEW", "ACTIVE"])
def test_a_failure_while_placing_on_the_floor_leaves_nothing_behind(tmp_path, ext, monkeypatch, target):
    """Not even the active body's shape, which the file's betas (the open body's) change first."""
    floor_clip(tmp_path / "sunk.npz", -0.65, betas=np.full(10, 0.5), body_model=np.array("open_smpl_neutral"))
    if target == "ACTIVE":
        assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
        arm = bpy.context.active_object
        where = np.array(arm.location)
    motion_io = importlib.import_module(ext.__name__ + ".addon.motion.importer")

    def fails(*args, **kwargs):
        raise motion_io.SmplIkError("the floor could not be measured")

    monkeypatch.setattr(motion_io.floor, "lowest_point", fails)
    before = data_counts()
    with pytest.raises(RuntimeError, match="the floor could not be measured"):
        bpy.ops.smpl_ik.import_motion(filepath=str(tmp_path / "sunk.npz"), target=target)
    assert data_counts() == before
    if target == "ACTIVE":
        assert list(arm.smpl_ik.applied_betas) == [0.0] * 10 and list(arm.smpl_ik.betas) == [0.0] * 10
        assert np.abs(np.array(arm.location) - where).max() < 1e-6


def test_the_import_with_its_floor_is_one_undo_step(tmp_path):
    floor_clip(tmp_path / "sunk.npz", -0.65)
    set_fps(30)
    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    bpy.ops.ed.undo_push(message="before the import")
    before = data_counts()
    imported(tmp_path / "sunk.npz")
    bpy.ops.ed.undo_push(message="Import SMPL-IK Motion")          # as the operator's UNDO flag does in the UI
    assert data_counts() != before
    assert bpy.ops.ed.undo() == {"FINISHED"}
    assert data_counts() == before
