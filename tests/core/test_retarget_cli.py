"""scripts/retarget.py and scripts/build_dataset.py as a technical artist runs them."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from models.body.measure import measure
from models.body.model import load_body_model
from models.motion.bvh import read_bvh, write_smpl_bvh
from models.core.kinematics import forward_kinematics
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import JOINT_NAMES, PARENTS

ROOT = Path(__file__).resolve().parents[2]
# what amass.write_motion_npz writes for every motion, then the retargeting report beside it
KEYS = {"poses", "trans", "betas", "mocap_framerate", "mocap_frame_rate", "gender", "body_model", "up_axis",
        "root_orient", "pose_body", "surface_model_type"}
REPORT_KEYS = {"source", "limb_error_deg", "length_unit", "height_m", "max_abs_beta", "length_residual_pct",
               "torso_lean_deg", "warnings"}


def run(script, *args, cwd=None):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / script), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    """A folder of small valid clips and one of broken ones."""
    root = tmp_path_factory.mktemp("clips")
    good, bad = root / "good", root / "bad"
    good.mkdir()
    bad.mkdir()
    body = load_body_model()
    rng = np.random.default_rng(5)
    for name, beta0 in (("walk", 0.0), ("run", 1.5)):
        rot = axis_angle_to_matrix(rng.normal(scale=0.2, size=(12, 24, 3)))
        trans = np.cumsum(rng.normal(scale=0.01, size=(12, 3)), axis=0)
        write_smpl_bvh(good / f"{name}.bvh", rot, trans, body.rest_joints(np.eye(10)[0] * beta0), 30.0)
    text = (good / "walk.bvh").read_text()
    lines = text.splitlines()
    (bad / "truncated.bvh").write_text("\n".join(lines[:-3]) + "\n")
    (bad / "short_line.bvh").write_text("\n".join(lines[:-1] + [lines[-1].rsplit(" ", 1)[0]]) + "\n")
    (bad / "nan.bvh").write_text(text.replace(lines[-2], "nan " + lines[-2].split(" ", 1)[1]))
    (bad / "dragon.bvh").write_text(text.replace("left_", "wing_l_").replace("right_", "wing_r_"))
    fingers = "".join(f"  JOINT f{k}\n  {{\n    OFFSET 4 {k - 2} 0\n    CHANNELS 3 Zrotation Xrotation Yrotation\n"
                      f"    End Site\n    {{\n      OFFSET 3 0 0\n    }}\n  }}\n" for k in range(5))
    (bad / "hand.bvh").write_text("HIERARCHY\nROOT wrist\n{\n  OFFSET 0 0 0\n  CHANNELS 6 Xposition Yposition "
                                  "Zposition Zrotation Xrotation Yrotation\n" + fingers + "}\nMOTION\nFrames: 2\n"
                                  "Frame Time: 0.0333333\n" + ("0 " * 21 + "\n") * 2)
    return good, bad


def test_folder_in_npz_out(clips, tmp_path):
    good, _ = clips
    out = tmp_path / "out"
    r = run("retarget.py", good, "--out", out, "--bvh-out")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 of 2 files retargeted" in r.stdout
    body = load_body_model()
    for name in ("walk", "run"):
        d = np.load(out / f"{name}.npz")
        assert set(d.files) == KEYS | REPORT_KEYS and str(d["up_axis"]) == "Y"
        assert d["poses"].shape == (12, 72) and d["trans"].shape == (12, 3) and d["betas"].shape == (10,)
        assert d["poses"].dtype == np.float64 and np.array_equal(d["pose_body"], d["poses"][:, 3:66])
        assert str(d["source"]) == f"{name}.bvh" and d["torso_lean_deg"].shape == (2,)
        assert float(d["mocap_framerate"]) == pytest.approx(30.0, rel=1e-4)
        assert str(d["body_model"]) == "open_smpl_neutral" and str(d["gender"]) == "neutral"
        # the SMPL-skeleton BVH reads back to the same joints as the npz (within 0.1 mm)
        back = read_bvh(out / f"{name}_smpl.bvh")
        idx = [back.skeleton.names.index(n) for n in JOINT_NAMES]
        rot = axis_angle_to_matrix(d["poses"].astype(np.float64).reshape(-1, 24, 3))
        want = forward_kinematics(rot, body.rest_joints(d["betas"]), PARENTS, d["trans"]).positions
        assert np.abs(back.forward().positions[:, idx] / 100 - want).max() < 1e-4


def test_an_implausible_body_is_a_warning_in_the_table_the_npz_and_the_report(clips, tmp_path):
    """walk.bvh given in CMU units (it is in centimetres): a 30 m body, betas at their bound."""
    good, _ = clips
    out = tmp_path / "out"
    r = run("retarget.py", good, "--out", out, "--unit", "cmu", "--report", tmp_path / "report.json")
    assert r.returncode == 0, r.stdout + r.stderr   # retargeted, with warnings, not failed
    lines = {line.split()[0]: line for line in r.stdout.splitlines() if line.endswith(("ok",)) or "WARNING" in line}
    assert "WARNING: betas" in lines["walk.bvh"] and "at their bound" in lines["walk.bvh"]
    assert "2 with warnings" in r.stdout
    d = np.load(out / "walk.npz")
    assert str(d["length_unit"]) == "cmu" and any("at their bound" in str(w) for w in d["warnings"])
    assert float(d["max_abs_beta"]) > 4.8
    report = json.loads((tmp_path / "report.json").read_text())
    walk = next(f for f in report["files"] if f["source"].endswith("walk.bvh"))
    assert walk["ok"] and walk["unit"] == "cmu" and any("at their bound" in w for w in walk["warnings"])
    # inferred units: plausible bodies, "ok", heights from the report
    r = run("retarget.py", good, "--out", tmp_path / "out2", "--report", tmp_path / "report2.json")
    assert r.returncode == 0 and "WARNING" not in r.stdout
    files = json.loads((tmp_path / "report2.json").read_text())["files"]
    body = load_body_model()
    for f in files:
        assert f["unit"] == "cm" and f["warnings"] == []
        betas = np.load(f["output"])["betas"]
        assert f["body"]["height_m"] == pytest.approx(measure(body, betas).height, abs=1e-3)
        assert 1.4 < f["body"]["height_m"] < 2.1


def test_an_unknown_unit_is_refused():
    r = run("retarget.py", "x.bvh", "--out", "o", "--unit", "cubit")
    assert r.returncode == 2 and "unit 'cubit'" in r.stderr and "cmu" in r.stderr


def test_bad_files_fail_alone_and_leave_nothing(clips, tmp_path):
    good, bad = clips
    out = tmp_path / "out"
    r = run("retarget.py", good / "walk.bvh", bad, tmp_path / "missing.bvh", "--out", out)
    assert r.returncode == 1
    report = r.stdout
    assert "truncated.bvh" in report and "truncated: the header says 12 frames" in report
    assert "short_line.bvh:" in report and "expected 75 channel values, found 74" in report
    assert "nan.bvh:" in report and "pelvis Xposition is nan in frame 10" in report
    assert "hand.bvh: not a humanoid skeleton: no legs found" in report and "hand-only" in report
    assert "missing.bvh" in report and "no such file or folder" in report
    # a humanoid whose joints have names no table knows maps from its structure
    assert "2 of 7 files retargeted" in report
    assert sorted(p.name for p in out.iterdir()) == ["dragon.npz", "walk.npz"]  # no partial files


def test_never_overwrites_without_flag(clips, tmp_path):
    """An existing output is kept and its file reported as skipped, not failed: running a
    batch again finishes what it left (exit 0)."""
    good, _ = clips
    out = tmp_path / "out"
    out.mkdir()
    (out / "walk.npz").write_bytes(b"precious")
    r = run("retarget.py", good, "--out", out, "--report", tmp_path / "report.json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAILED" not in r.stdout + r.stderr and "walk.npz exists; pass --overwrite" in r.stdout
    assert "1 of 2 files retargeted" in r.stdout and "1 skipped" in r.stdout
    assert (out / "walk.npz").read_bytes() == b"precious" and (out / "run.npz").exists()
    walk = next(f for f in json.loads((tmp_path / "report.json").read_text())["files"]
                if f["source"].endswith("walk.bvh"))
    assert not walk["ok"] and "exists" in walk["skipped"] and walk["error"] == ""
    r = run("retarget.py", good, "--out", out)          # again: everything there, nothing failed
    assert r.returncode == 0 and "0 of 2 files retargeted" in r.stdout and "2 skipped" in r.stdout
    r = run("retarget.py", good, "--out", out, "--overwrite")
    assert r.returncode == 0 and "poses" in np.load(out / "walk.npz").files


def test_an_output_says_its_up_axis_which_auto_trusts_over_the_root_orientation(tmp_path):
    """A clip of a body lying on its back: its root orientation sends the body's up along the
    world's Z, which read alone looks like an AMASS Z-up file. The file's up_axis ('Y': it is
    in SMPL's frame) decides, so an import with Up Axis Auto keeps the body as retargeted."""
    from models.motion import amass

    body = load_body_model()
    aa = np.zeros((6, 24, 3))
    aa[:, 0] = [np.pi / 2, 0.0, 0.0]               # lying down: body +Y along world +Z
    src = tmp_path / "lying.bvh"
    write_smpl_bvh(src, axis_angle_to_matrix(aa), np.zeros((6, 3)), body.rest_joints(np.zeros(10)), 30.0)
    r = run("retarget.py", src, "--out", tmp_path / "out")
    assert r.returncode == 0, r.stdout + r.stderr
    m = amass.read_motion_npz(tmp_path / "out" / "lying.npz")
    assert m.up_axis == "Y" and amass.detect_up_axis(m.poses).axis == "Z"   # the pose alone misleads
    choice = amass.detect_up_axis(m.poses, m.up_axis)
    assert choice.axis == "Y" and choice.reason == "the file says its up axis is Y"


def test_unwritable_output_folder(clips, tmp_path):
    good, _ = clips
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    r = run("retarget.py", good, "--out", blocker / "out")
    assert r.returncode == 1
    assert r.stdout.count("cannot write to") == 2 and "0 of 2 files retargeted" in r.stdout


def test_parallel_and_dask_give_the_same_result(clips, tmp_path):
    pytest.importorskip("distributed")
    good, _ = clips
    local, dask = tmp_path / "local", tmp_path / "dask"
    assert run("retarget.py", good, "--out", local, "--jobs", "2").returncode == 0
    r = run("retarget.py", good, "--out", dask, "--executor", "dask", "--jobs", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("walk.npz", "run.npz"):
        a, b = np.load(local / name), np.load(dask / name)
        assert np.array_equal(a["poses"], b["poses"]) and np.array_equal(a["betas"], b["betas"])


def test_build_dataset(clips, tmp_path):
    good, _ = clips
    out = tmp_path / "set.npz"
    r = run("build_dataset.py", good, "--out", out, "--fps", "15", "--skip-first", "1", "--jobs", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    d = np.load(out)
    assert list(d["clips"]) == ["run.bvh", "walk.bvh"]
    # 12 frames at 30 fps, first dropped, every second kept: frames 1, 3, ..., 11
    assert list(d["frame"][d["clip"] == 0]) == [1, 3, 5, 7, 9, 11]
    assert d["poses"].shape == (12, 72) and d["betas"].shape == (2, 10)
    assert np.allclose(d["fps"], 15.0, rtol=1e-4)
    assert run("build_dataset.py", good, "--out", out).returncode != 0  # exists, no --overwrite


@pytest.fixture(scope="module")
def lying_headers(tmp_path_factory):
    """Two clips whose headers say 120 fps (Frame Time 0.00833333), as aclstm's do: salsa_01
    was really captured at 60, martial_03 at 120."""
    folder = tmp_path_factory.mktemp("lying")
    body = load_body_model()
    rng = np.random.default_rng(9)
    for name in ("salsa_01", "martial_03"):
        rot = axis_angle_to_matrix(rng.normal(scale=0.2, size=(12, 24, 3)))
        trans = np.cumsum(rng.normal(scale=0.01, size=(12, 3)), axis=0)
        write_smpl_bvh(folder / f"{name}.bvh", rot, trans, body.rest_joints(np.zeros(10)), 120.0)
    assert "Frame Time: 0.00833333" in (folder / "salsa_01.bvh").read_text()
    return folder


def table_line(stdout, name):
    return next(line for line in stdout.splitlines() if line.startswith(name))


def test_fps_patterns_give_the_rate_of_the_files_whose_header_lies(lying_headers, tmp_path):
    out = tmp_path / "out"
    r = run("retarget.py", lying_headers, "--out", out, "--fps", "salsa_*=60", "--fps", "indian_*=24",
            "--bvh-out", "--report", tmp_path / "report.json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "60 (given; header says 120)" in table_line(r.stdout, "salsa_01.bvh")
    martial = table_line(r.stdout, "martial_03.bvh")      # no pattern matches it: its header's rate
    assert "  120  " in martial and "given" not in martial
    for name, fps in (("salsa_01", 60.0), ("martial_03", 120.0)):
        d = np.load(out / f"{name}.npz")
        assert float(d["mocap_framerate"]) == pytest.approx(fps, rel=1e-4)
        assert float(d["mocap_frame_rate"]) == pytest.approx(fps, rel=1e-4)
        assert read_bvh(out / f"{name}_smpl.bvh").fps == pytest.approx(fps, rel=1e-4)
    files = {Path(f["source"]).name: f for f in json.loads((tmp_path / "report.json").read_text())["files"]}
    salsa, martial = files["salsa_01.bvh"], files["martial_03.bvh"]
    assert salsa["fps"] == 60.0 and salsa["fps_given"] and salsa["header_fps"] == pytest.approx(120.0, rel=1e-4)
    assert martial["fps"] == pytest.approx(120.0, rel=1e-4) and not martial["fps_given"]
    # a plain rate is every file's; the first rule that matches wins
    r = run("retarget.py", lying_headers, "--out", out, "--fps", "martial_*=120", "--fps", "60", "--overwrite")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "120 (given; header says 120)" in table_line(r.stdout, "martial_03.bvh")
    assert float(np.load(out / "salsa_01.npz")["mocap_framerate"]) == 60.0


@pytest.mark.parametrize("value,said", [("sixty", "the rate 'sixty' is not a number"),
                                        ("salsa_*=0", "must be a positive, finite number"),
                                        ("-30", "must be a positive, finite number"),
                                        ("inf", "not inf"), ("nan", "not nan"),
                                        ("=60", "no file name pattern")])
def test_a_bad_fps_is_refused_naming_it(value, said):
    r = run("retarget.py", "x.bvh", "--out", "o", "--fps", value)
    assert r.returncode == 2 and f"--fps '{value}'" in r.stderr and said in r.stderr, r.stderr


def test_build_dataset_source_fps_sets_the_source_rate_before_down_sampling(lying_headers, tmp_path):
    out = tmp_path / "set.npz"
    r = run("build_dataset.py", lying_headers, "--out", out, "--source-fps", "salsa_*=60", "--fps", "30")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 of 2 clips (1 at a given source frame rate)" in r.stdout
    d = np.load(out)
    assert list(d["clips"]) == ["martial_03.bvh", "salsa_01.bvh"]
    assert np.allclose(d["source_fps"], [120.0, 60.0], rtol=1e-4) and np.allclose(d["fps"], 30.0, rtol=1e-4)
    assert list(d["frame"][d["clip"] == 0]) == [0, 4, 8] and list(d["frame"][d["clip"] == 1]) == [0, 2, 4, 6, 8, 10]
    r = run("build_dataset.py", lying_headers, "--out", tmp_path / "b.npz", "--source-fps", "salsa_*=")
    assert r.returncode == 2 and "--source-fps 'salsa_*='" in r.stderr and "is not a number" in r.stderr


def test_help_is_true():
    r = run("retarget.py", "--help")
    assert r.returncode == 0
    for flag in ("--out", "--body", "--mapping", "--bvh-out", "--overwrite", "--jobs", "--executor", "--scheduler",
                 "--unit", "--report", "--fps"):
        assert flag in r.stdout
    r = run("build_dataset.py", "--help")
    assert r.returncode == 0 and "--source-fps [PATTERN=]RATE" in r.stdout and "down-sample" in r.stdout
