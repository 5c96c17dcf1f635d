import pickle
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_report_header(config):
    """numpy's version in the log (tests/core runs on numpy 1.26 and 2.x), and whether torch is
    here (make test installs it with Python 3.11 only, where its CPU build is)."""
    import importlib.util

    import numpy as np

    torch = "installed" if importlib.util.find_spec("torch") else "not installed: the torch tests run in .venv/py311"
    return [f"numpy {np.__version__}; torch {torch}"]


@pytest.fixture(scope="session")
def open_body():
    from models.body.model import load_body_model

    return load_body_model()


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(1234)


SHARED_MOCAP = ROOT.parent / "shared" / "data" / "mocap"


@pytest.fixture(scope="session")
def detector():
    """Skips a test when the photo detector cannot run here: its packages are not installed
    (requirements-photo.txt) or its model files not fetched (make detector)."""
    from models.photo.runtime import unavailable

    reason = unavailable("this test")
    if reason is not None:
        pytest.skip(f"{reason} (requirements-photo.txt; make detector)")


@pytest.fixture(scope="session")
def held_out_poses(open_body):
    """Real poses from two clips the networks never saw: (local rotations, rest, world, positions)."""
    import numpy as np

    from models.motion.bvh import read_bvh
    from models.core.kinematics import forward_kinematics
    from models.motion.retarget import retarget
    from models.core.rotations import axis_angle_to_matrix
    from models.core.skeleton import PARENTS

    clips = [SHARED_MOCAP / "cmu_train" / n for n in ("cmu_walking_20.bvh", "cmu_jumping_5.bvh")]
    if not all(c.exists() for c in clips):
        pytest.skip("../shared/data/mocap is not here (held-out clips for the trained models)")
    rots, rests, worlds, poss = [], [], [], []
    for clip in clips:
        r = retarget(read_bvh(clip), open_body)
        rot = axis_angle_to_matrix(r.poses[1::10])
        rest = np.broadcast_to(open_body.rest_joints(r.betas), (len(rot), 24, 3))
        fk = forward_kinematics(rot, rest, PARENTS, r.trans[1::10])
        rots.append(rot), rests.append(rest), worlds.append(fk.rotations), poss.append(fk.positions)
    return tuple(np.concatenate(x) for x in (rots, rests, worlds, poss))


def smoke_train(script, tmp_path, rng, extra_args=(), name="weights"):
    """Run a trainer's smoke preset on a small learnable pose set; returns (record, weights path)."""
    import json
    import subprocess
    import sys

    import numpy as np

    data = tmp_path / "poses.npz"
    if not data.exists():   # a second run in the same folder trains on the same poses
        n = 400  # a one-parameter family of poses: learnable in seconds
        aa = (rng.uniform(-1, 1, size=(n, 1)) * rng.normal(scale=0.6, size=(1, 72))).astype(np.float32)
        np.savez(data, poses=aa, clip=np.repeat(np.arange(8), n // 8).astype(np.int32),
                 clips=np.array([f"clip{i}.bvh" for i in range(8)]))
    out = tmp_path / f"{name}.npz"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--preset", "smoke",
                          "--data", str(data), "--out", str(out), "--threads", "1", *extra_args],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return json.loads(out.with_suffix(".json").read_text()), out


def assert_only_rows_changed(before_path, after_path, rows, names=("out.weight", "out.bias")):
    """Weights files alike but for `rows` of the arrays `names`, which must all have moved."""
    import numpy as np

    with np.load(before_path) as before, np.load(after_path) as after:
        assert before.files == after.files
        for name in before.files:
            if name in names:
                other = np.setdiff1d(np.arange(len(before[name])), rows)
                assert np.array_equal(before[name][other], after[name][other]), name
                assert not np.array_equal(before[name][rows], after[name][rows]), name
            elif name != "__config__":
                assert np.array_equal(before[name], after[name]), name


def measured_effector_errors(effectors, local_rot, trans, rest):
    """Per effector, measured on the posed body by forward kinematics, independently of the
    solver's residuals: metres from a position target; radians from a rotation target (geodesic);
    radians between a look-at's posed axis and the direction to its target."""
    import numpy as np

    from models.core.kinematics import forward_kinematics
    from models.core.rotations import geodesic_angle
    from models.core.skeleton import JOINT_INDEX, PARENTS

    fk = forward_kinematics(local_rot, rest, PARENTS, trans)
    out = []
    for e in effectors:
        j = JOINT_INDEX[e.joint] if isinstance(e.joint, str) else int(e.joint)
        target = np.asarray(e.target, dtype=float)
        if e.kind == "position":
            out.append(np.linalg.norm(fk.positions[j] - target))
        elif e.kind == "rotation":
            out.append(geodesic_angle(fk.rotations[j], target))
        else:
            axis = fk.rotations[j] @ (np.asarray(e.axis, float) / np.linalg.norm(e.axis))
            to = (target - fk.positions[j]) / np.linalg.norm(target - fk.positions[j])
            out.append(np.arccos(np.clip(axis @ to, -1.0, 1.0)))
    return np.array(out)


def official_smpl_pickle(arrays, **extra):
    """Bytes laid out like the official SMPL .pkl (protocol 2): chumpy objects holding
    v_template and shapedirs, a scipy sparse regressor, plain arrays otherwise, plus `extra`
    keys. chumpy is faked in sys.modules for the pickling only (restored after); the reader
    never imports it."""
    import scipy.sparse

    class Ch:
        pass

    Ch.__module__, Ch.__qualname__ = "chumpy.ch", "Ch"
    fake = {"chumpy": types.ModuleType("chumpy"), "chumpy.ch": types.ModuleType("chumpy.ch")}
    fake["chumpy.ch"].Ch = Ch

    def ch(x):
        obj = Ch()
        obj.__dict__.update({"x": x, "_dirty_vars": set()})
        return obj

    raw = {"v_template": ch(arrays["v_template"]), "shapedirs": ch(arrays["shapedirs"]),
           "posedirs": arrays["posedirs"], "J_regressor": scipy.sparse.csc_matrix(arrays["J_regressor"]),
           "weights": arrays["weights"], "kintree_table": arrays["kintree_table"], "f": arrays["f"],
           "bs_style": "lbs", **extra}
    saved = {k: sys.modules.get(k) for k in fake}
    sys.modules.update(fake)
    try:
        return pickle.dumps(raw, protocol=2)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k)
            else:
                sys.modules[k] = v
