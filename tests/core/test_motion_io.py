"""The bpy-free side of AMASS motion in Blender: resampling, up axes, writing files, choosing
a body file by gender."""
import os

import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp

from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.core.rotations import (
    axis_angle_to_matrix, axis_angle_to_quat_wxyz, geodesic_angle, matrix_to_axis_angle, quat_wxyz_to_matrix,
)
from models.core.skeleton import PARENTS
from models.motion import amass
from models.motion.resample import continuous_quats, quat_slerp, resample_motion, resample_timing


def motion(rng, frames, joints=24):
    aa = rng.normal(scale=0.4, size=(frames, joints, 3))
    return axis_angle_to_quat_wxyz(aa), rng.normal(size=(frames, 3))


def test_120_to_30_fps_keeps_every_4th_frame_exactly(rng):
    quats, trans = motion(rng, 121)
    timing = resample_timing(121, 120.0, 30.0)
    q, t = resample_motion(quats, trans, timing)
    assert timing.num_frames == 31
    assert np.array_equal(q, quats[::4]) and np.array_equal(t, trans[::4])


def test_60_to_25_fps_slerps_rotations_and_lerps_translation(rng):
    quats, trans = motion(rng, 61, joints=3)
    q, t = resample_motion(quats, trans, resample_timing(61, 60.0, 25.0))
    times = np.arange(26) / 25.0
    assert len(q) == 26 and times[-1] <= 1.0
    source_times = np.arange(61) / 60.0
    for j in range(3):   # scipy's Slerp (x, y, z, w) as the reference
        rot = Rotation.from_quat(np.roll(quats[:, j], -1, axis=-1))
        expected = Slerp(source_times, rot)(times).as_matrix()
        got = Rotation.from_quat(np.roll(q[:, j], -1, axis=-1)).as_matrix()
        assert geodesic_angle(got, expected).max() < 1e-9
    for c in range(3):
        assert np.allclose(t[:, c], np.interp(times, source_times, trans[:, c]), atol=1e-12)


@pytest.mark.parametrize("source,target,frames", [(120, 30, 1000), (30, 120, 11), (59.94, 24, 500), (24, 24, 7),
                                                  (50, 24, 1)])
def test_resampled_frames_cover_the_source_time_and_no_more(source, target, frames):
    timing = resample_timing(frames, source, target)
    duration = (frames - 1) / source
    assert (timing.num_frames - 1) / target <= duration + 1e-9
    assert timing.num_frames / target > duration           # one more target frame would pass the end
    assert np.all((timing.weight >= 0) & (timing.weight < 1))
    assert np.all(timing.index + (timing.weight > 0) <= frames - 1)


def test_resampling_refuses_rates_that_are_not_positive():
    for bad in (0.0, -24.0, float("nan"), float("inf")):
        with pytest.raises(SmplIkError, match="frame rate must be a positive number"):
            resample_timing(10, bad, 24.0)


def test_slerp_takes_the_short_way_and_starts_exactly_at_its_first_rotation(rng):
    q0, q1 = axis_angle_to_quat_wxyz(rng.normal(size=(2, 50, 3)))
    assert np.array_equal(quat_slerp(q0, q1, np.zeros(50)), q0)
    half = quat_slerp(q0, q1, np.full(50, 0.5))
    assert np.allclose(np.abs(quat_slerp(q0, -q1, np.full(50, 0.5))), np.abs(half))
    m0, m1, mh = quat_wxyz_to_matrix(q0), quat_wxyz_to_matrix(q1), quat_wxyz_to_matrix(half)
    assert np.allclose(geodesic_angle(m0, mh), 0.5 * geodesic_angle(m0, m1), atol=1e-9)
    assert np.allclose(geodesic_angle(mh, m1), 0.5 * geodesic_angle(m0, m1), atol=1e-9)


def test_continuous_quaternions_keep_their_rotations_in_one_hemisphere(rng):
    quats, _ = motion(rng, 40, joints=5)
    signs = rng.choice([-1.0, 1.0], size=(40, 5, 1))
    out = continuous_quats(quats * signs)
    assert np.all(np.sum(out[1:] * out[:-1], -1) >= 0)
    assert np.allclose(np.abs(np.sum(out * quats, -1)), 1.0)      # each is +-the same quaternion


# --- up axes ------------------------------------------------------------------------------------

AMASS_UP = np.array([np.pi / 2, 0.0, 0.0])   # AMASS's root orientations carry +90 degrees about X


def standing(rng, frames):
    aa = rng.normal(scale=0.2, size=(frames, 24, 3))
    aa[:, 0] = rng.normal(scale=0.2, size=(frames, 3)) + [0, rng.uniform(-3, 3), 0]   # turning about up
    return aa


def amass_style(aa):
    """The same motion as AMASS stores it: the root orientation turned upright in a Z-up world."""
    out = aa.copy()
    out[:, 0] = matrix_to_axis_angle(axis_angle_to_matrix(AMASS_UP) @ axis_angle_to_matrix(aa[:, 0]))
    return out


def test_up_axis_is_found_from_the_root_orientation(rng):
    aa = standing(rng, 30)
    assert amass.detect_up_axis(aa).axis == "Y"
    choice = amass.detect_up_axis(amass_style(aa))
    assert choice.axis == "Z" and "median" in choice.reason
    assert amass.detect_up_axis(aa, stated="Z").axis == "Z"        # the file's own word wins


def test_z_up_motion_lands_in_smpl_frame_joint_for_joint(rng, open_body):
    """Posed joints of the converted motion, turned back to the Z-up world, are the Z-up
    file's joints (SMPL's pelvis at rest + trans in world coordinates)."""
    rest = open_body.rest_joints(rng.normal(size=10))
    upright = standing(rng, 12)
    aa = amass_style(upright)
    trans_z = rng.normal(size=(12, 3))
    poses_y, trans_y = amass.smpl_frame_from_z_up(aa, trans_z, rest[0])
    world_z = forward_kinematics(axis_angle_to_matrix(aa), rest, PARENTS, trans_z).positions
    in_y = forward_kinematics(axis_angle_to_matrix(poses_y), rest, PARENTS, trans_y).positions
    assert np.abs(in_y @ amass.SMPL_FROM_Z_UP - world_z).max() < 1e-12
    assert np.allclose(poses_y[:, 1:], aa[:, 1:])
    # AMASS's +90 degrees about X undone: the body stands in SMPL's frame as it was made
    assert geodesic_angle(axis_angle_to_matrix(poses_y[:, 0]), axis_angle_to_matrix(upright[:, 0])).max() < 1e-7
    back_p, back_t = amass.z_up_from_smpl_frame(poses_y, trans_y, rest[0])
    # arccos: 1e-8 is its noise
    assert geodesic_angle(axis_angle_to_matrix(back_p), axis_angle_to_matrix(aa)).max() < 1e-7
    assert np.abs(back_t - trans_z).max() < 1e-12


# --- writing ----------------------------------------------------------------------------------

def still(frames, **change):
    """A MotionFile to write: `frames` frames of the rest pose at the origin, 24 fps."""
    fields = dict(poses=np.zeros((frames, 72)), trans=np.zeros((frames, 3)), betas=np.zeros(10), gender="neutral",
                  fps=24.0)
    return amass.MotionFile(**(fields | change))


def test_written_motion_reads_back_with_amass_keys(tmp_path, rng):
    poses = rng.normal(scale=0.3, size=(9, 24, 3))
    trans = rng.normal(size=(9, 3))
    path = tmp_path / "clip.npz"
    amass.write_motion_npz(path, amass.MotionFile(poses=poses, trans=trans, betas=np.arange(10) * 0.1, gender="female",
                                                  fps=30.0, body_model="open_smpl_female", up_axis="Z"))
    m = amass.read_motion_npz(path)
    assert np.array_equal(m.poses, poses) and np.array_equal(m.trans, trans)
    assert m.gender == "female" and m.fps == 30.0 and m.body_model == "open_smpl_female" and m.up_axis == "Z"
    with np.load(path, allow_pickle=False) as d:
        assert np.array_equal(d["root_orient"], poses[:, 0]) and d["pose_body"].shape == (9, 63)
        assert np.array_equal(d["pose_body"], poses[:, 1:22].reshape(9, 63))
        assert float(d["mocap_frame_rate"]) == float(d["mocap_framerate"]) == 30.0


def test_a_failing_write_leaves_no_file_and_no_temporary(tmp_path, rng, monkeypatch):
    path = tmp_path / "clip.npz"

    def half_then_fail(fh, **arrays):
        fh.write(b"PK\x03\x04 half an archive")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(amass.np, "savez", half_then_fail)
    with pytest.raises(SmplIkError, match="cannot write .*clip.npz: No space left on device"):
        amass.write_motion_npz(path, still(2))
    assert os.listdir(tmp_path) == []


def test_values_that_are_not_numbers_are_refused_before_writing(tmp_path):
    poses = np.zeros((3, 72))
    poses[1, 5] = np.nan
    with pytest.raises(SmplIkError, match="poses to write are not all finite"):
        amass.write_motion_npz(tmp_path / "x.npz", still(3, poses=poses))
    with pytest.raises(SmplIkError, match="gender 'robot'"):
        amass.write_motion_npz(tmp_path / "x.npz", still(3, gender="robot"))
    assert os.listdir(tmp_path) == []


def test_optional_text_that_is_not_text_is_ignored(tmp_path):
    path = tmp_path / "odd.npz"
    np.savez(path, poses=np.zeros((2, 72)), body_model=np.zeros(3), up_axis=np.array("sideways"))
    m = amass.read_motion_npz(path)
    assert m.body_model is None and m.up_axis is None


def test_extras_are_written_beside_the_motion_but_never_replace_it(tmp_path):
    path = tmp_path / "clip.npz"
    amass.write_motion_npz(path, still(2), extras={"source": np.array("walk.bvh"), "height_m": np.float64(1.7)})
    with np.load(path, allow_pickle=False) as d:
        assert str(d["source"]) == "walk.bvh" and float(d["height_m"]) == 1.7 and str(d["up_axis"]) == "Y"
        assert d["poses"].dtype == d["trans"].dtype == d["betas"].dtype == np.float64
    for extras, says in (({"poses": np.zeros((2, 72))}, r"extra arrays \['poses'\] would replace"),
                         ({"up_axis": np.array("Z")}, r"extra arrays \['up_axis'\] would replace"),
                         ({"notes": np.array([{"a": 1}], dtype=object)}, r"\['notes'\] hold Python objects")):
        with pytest.raises(SmplIkError, match=says):
            amass.write_motion_npz(tmp_path / "x.npz", still(2), extras=extras)
    with pytest.raises(SmplIkError, match="needs its frame rate"):
        amass.write_motion_npz(tmp_path / "x.npz", still(2, fps=None))
    assert sorted(os.listdir(tmp_path)) == ["clip.npz"]


# --- files written before ------------------------------------------------------------------

def test_files_written_before_up_axis_existed_still_read(tmp_path, rng):
    """One file of each kind this project wrote before every writer went through
    write_motion_npz: scripts/retarget.py's (models/motion/batch.py: float32, no up_axis,
    root_orient or pose_body; SMPL's Y-up frame) and the Blender export's (amass: float64,
    every key). Both read, and Auto finds each one's up axis."""
    upright = standing(rng, 6)
    old_batch = tmp_path / "old_batch.npz"
    np.savez(old_batch, poses=upright.reshape(6, 72).astype(np.float32),
             trans=rng.normal(size=(6, 3)).astype(np.float32), betas=np.arange(10, dtype=np.float32) * 0.1,
             mocap_framerate=np.float64(120.0), gender=np.array("neutral"), body_model=np.array("open_smpl_neutral"),
             source=np.array("walk.bvh"), limb_error_deg=np.float32(1.5), length_unit=np.array("cm"),
             height_m=np.float32(1.75), max_abs_beta=np.float32(1.2), length_residual_pct=np.float32(0.8),
             torso_lean_deg=np.array([3.0, 4.0], np.float32), warnings=np.array([], dtype=str))
    m = amass.read_motion_npz(old_batch)
    assert m.up_axis is None and m.fps == 120.0 and m.gender == "neutral" and m.body_model == "open_smpl_neutral"
    assert m.poses.dtype == np.float64 and np.array_equal(m.poses, upright.astype(np.float32).astype(np.float64))
    assert m.betas.shape == (10,) and not m.notes and not (m.trans_missing or m.betas_missing or m.fps_missing)
    assert amass.detect_up_axis(m.poses, m.up_axis).axis == "Y"

    z_up = amass_style(upright)
    old_export = tmp_path / "old_export.npz"
    poses = z_up.reshape(6, 72)
    np.savez(old_export, poses=poses, trans=rng.normal(size=(6, 3)), betas=np.zeros(10), gender=np.array("female"),
             mocap_framerate=np.float64(30.0), mocap_frame_rate=np.float64(30.0), root_orient=poses[:, :3],
             pose_body=poses[:, 3:66], surface_model_type=np.array("smpl"), body_model=np.array("open_smpl_female"),
             up_axis=np.array("Z"))
    m = amass.read_motion_npz(old_export)
    assert m.up_axis == "Z" and m.gender == "female" and np.array_equal(m.poses, z_up)
    assert amass.detect_up_axis(m.poses, m.up_axis).reason == "the file says its up axis is Z"


# --- what a file lacks: flags for code, notes for people -----------------------------------

def test_what_a_file_lacks_is_a_flag_and_a_note(tmp_path, rng):
    bare = tmp_path / "bare.npz"
    np.savez(bare, poses=rng.normal(size=(3, 156)))
    m = amass.read_motion_npz(bare)
    assert m.hands_dropped and m.trans_missing and m.betas_missing and m.gender_missing and m.fps_missing
    assert m.notes == ("smplh file: finger, jaw and eye rotations are not kept (SMPL's hand joints are zero)",
                       *amass.ABSENT_NOTES.values())
    assert m.notes_except("fps_missing", "betas_missing") == m.notes[:2] + m.notes[3:4]
    with pytest.raises(ValueError, match="'mocap_framerate'.* not MotionFile flags"):
        m.notes_except("mocap_framerate")
    full = tmp_path / "full.npz"
    amass.write_motion_npz(full, still(3))
    m = amass.read_motion_npz(full)
    assert not any(getattr(m, flag) for flag in amass.FLAGS) and m.notes == ()
    np.savez(full, poses=np.zeros((3, 72)), betas=np.zeros(0))   # present but empty is not missing
    m = amass.read_motion_npz(full)
    assert not m.betas_missing and m.betas.shape == (0,) and m.trans_missing


@pytest.mark.parametrize("name,data", [
    ("photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + bytes(64)),
    ("walk.bvh", b"HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 0 0\n\tCHANNELS 3 Xposition Yposition Zposition\n}\n"),
])
def test_a_jpeg_or_a_bvh_is_not_an_npz_archive_and_not_a_pickle(tmp_path, name, data):
    from models.body.model import read_body_arrays

    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(SmplIkError) as raised:
        amass.read_motion_npz(path)
    assert str(raised.value) == f"{path}: not a readable motion file (not an .npz archive)"
    as_body = path.with_suffix(".npz")
    path.rename(as_body)
    with pytest.raises(SmplIkError) as raised:
        read_body_arrays(as_body)
    assert "not an .npz archive" in str(raised.value) and "pickle" not in str(raised.value)
    as_body.write_bytes(b"\x80\x04\x95" + bytes(16))    # a pickle's own opening is still called one
    with pytest.raises(SmplIkError, match=r"\(a pickle, not an .npz archive\)"):
        amass.read_motion_npz(as_body)


# --- which body file ------------------------------------------------------------------------

def test_body_file_gender_reads_the_array_or_the_name(tmp_path):
    named = tmp_path / "model.npz"
    np.savez(named, gender=np.array("female"), v_template=np.zeros((3, 3)))
    assert amass.body_file_gender(named) == "female"
    for name, gender in (("SMPL_MALE.pkl", "male"), ("SMPLX_FEMALE.npz", "female"),
                         ("basicModel_f_lbs_10_207_0_v1.0.0.pkl", "female"),
                         ("basicmodel_m_lbs_10_207_0_v1.1.0.pkl", "male"), ("smpl.pkl", "neutral")):
        (tmp_path / name).write_bytes(b"not read for a .pkl; a broken .npz falls back to its name")
        assert amass.body_file_gender(tmp_path / name) == gender, name


def test_a_body_file_of_the_motions_gender_and_kind_is_preferred(tmp_path):
    files = [tmp_path / n for n in ("SMPL_NEUTRAL.pkl", "SMPLX_FEMALE.pkl", "SMPL_FEMALE.pkl", "SMPLH_female.pkl")]
    assert amass.choose_body_file(files, "female", "smplh").name == "SMPLH_female.pkl"
    assert amass.choose_body_file(files, "female", "smpl").name == "SMPL_FEMALE.pkl"
    assert amass.choose_body_file(files[:2], "female", "smplh").name == "SMPLX_FEMALE.pkl"
    assert amass.choose_body_file(files, "male", "smpl") is None
