"""BodyModel: SMPL / SMPL-H / SMPL-X files (.npz and official-style .pkl), against smplx, and
clear errors for bad files. SMPL's own files cannot ship, so the tests write files with the
official layouts from the open body's arrays."""
import pickle
import sys

import numpy as np
import pytest

from conftest import official_smpl_pickle
from models.body.model import BodyModel, OPEN_BODY_PATH, load_body_model
from models.core.errors import SmplIkError
from models.core.skeleton import PARENTS


@pytest.fixture(scope="module")
def smpl_arrays():
    """An SMPL-layout body with non-zero pose correctives, from the open body's arrays."""
    rng = np.random.default_rng(7)
    with np.load(OPEN_BODY_PATH) as npz:
        a = {k: npz[k] for k in ("v_template", "shapedirs", "J_regressor", "weights", "kintree_table", "f")}
    a["posedirs"] = rng.normal(scale=1e-3, size=(a["v_template"].shape[0], 3, 207))
    a["shapedirs"] = a["shapedirs"].astype(np.float64)
    return a


def family_arrays(smpl, kind):
    """SMPL-H or SMPL-X arrays that reduce exactly to `smpl` (fingers share the hand joint)."""
    nv = smpl["v_template"].shape[0]
    first_l, first_r, nj = (22, 37, 52) if kind == "smplh" else (25, 40, 55)
    parents = list(PARENTS[:22])
    jreg = np.zeros((nj, nv))
    jreg[:22] = smpl["J_regressor"][:22]
    w = np.zeros((nv, nj))
    w[:, :22] = smpl["weights"][:, :22]
    if kind == "smplx":
        parents += [15, 15, 15]  # jaw, eyes
        jreg[22:25] = smpl["J_regressor"][15]
        w[:, 15] *= 0.25
        w[:, 22:25] = smpl["weights"][:, 15:16] * 0.25
    for first, wrist, hand in ((first_l, 20, 22), (first_r, 21, 23)):
        for finger in range(5):
            for k in range(3):
                parents.append(wrist if k == 0 else first + finger * 3 + k - 1)
        jreg[first:first + 15] = smpl["J_regressor"][hand]
        w[:, first:first + 15] = smpl["weights"][:, hand:hand + 1] / 15.0
    posedirs = np.zeros((nv, 3, (nj - 1) * 9))
    posedirs[:, :, :189] = smpl["posedirs"][:, :, :189]
    posedirs[:, :, 189:] = 0.01  # finger correctives: dropped for the body-only model
    return {"v_template": smpl["v_template"], "shapedirs": np.concatenate([smpl["shapedirs"]] * 2, 2),
            "posedirs": posedirs, "J_regressor": jreg, "weights": w,
            "kintree_table": np.array([parents, range(nj)]), "f": smpl["f"]}


def body_only(smpl):
    out = dict(smpl)
    out["posedirs"] = smpl["posedirs"].copy()
    out["posedirs"][:, :, 189:] = 0.0  # hand joints carry no correctives in a reduced model
    return out


def test_matches_smplx_with_pose_correctives(smpl_arrays, tmp_path, rng):
    torch = pytest.importorskip("torch")
    smplx = pytest.importorskip("smplx")
    path = tmp_path / "SMPL_NEUTRAL.npz"
    np.savez(path, **smpl_arrays)
    body = BodyModel.from_file(path)
    assert body.kind == "smpl" and body.posedirs is not None
    model = smplx.SMPL(model_path=str(path), data_struct=smplx.utils.Struct(**smpl_arrays),
                       batch_size=3, dtype=torch.float64)
    betas, pose = rng.normal(size=(3, 10)), rng.normal(scale=0.5, size=(3, 72))
    with torch.no_grad():
        out = model(betas=torch.from_numpy(betas), global_orient=torch.from_numpy(pose[:, :3]),
                    body_pose=torch.from_numpy(pose[:, 3:]))
    ours = body.forward(betas, pose_rotvecs=pose)
    # smplx rounds its arrays to float32, hence micrometres rather than exact agreement
    assert np.abs(out.vertices.numpy() - ours.vertices).max() < 1e-6
    assert np.abs(out.joints.numpy()[:, :24] - ours.posed_joints).max() < 1e-6


@pytest.mark.parametrize("kind", ["smplh", "smplx"])
def test_family_files_reduce_to_the_body(smpl_arrays, tmp_path, rng, kind):
    ref_path = tmp_path / "ref.npz"
    np.savez(ref_path, **body_only(smpl_arrays))
    path = tmp_path / f"{kind.upper()}_FEMALE.npz"
    np.savez(path, **family_arrays(smpl_arrays, kind))
    body, ref = BodyModel.from_file(path), BodyModel.from_file(ref_path)
    assert body.kind == kind and body.gender == "female"
    betas, pose = rng.normal(size=(2, 10)), rng.normal(scale=0.4, size=(2, 24, 3))
    assert np.allclose(body.rest_joints(betas), ref.rest_joints(betas), atol=1e-10)
    assert np.allclose(body.vertices(betas, pose_rotvecs=pose), ref.vertices(betas, pose_rotvecs=pose), atol=1e-10)


def test_expecting_smpl_rejects_smplx(smpl_arrays, tmp_path):
    path = tmp_path / "SMPLX_NEUTRAL.npz"
    np.savez(path, **family_arrays(smpl_arrays, "smplx"))
    with pytest.raises(SmplIkError, match=r"SMPLX_NEUTRAL.npz: this is an SMPL-X model \(55 joints\) "
                                          r"but an SMPL model was expected"):
        BodyModel.from_file(path, expect="smpl")


def test_official_pkl_without_chumpy(smpl_arrays, tmp_path, rng):
    path = tmp_path / "basicModel_neutral_lbs_10_207_0_v1.0.0.pkl"
    path.write_bytes(official_smpl_pickle(smpl_arrays))
    assert "chumpy" not in sys.modules  # the loader must not need it
    npz_path = tmp_path / "same.npz"
    np.savez(npz_path, **smpl_arrays)
    body, ref = BodyModel.from_file(path), BodyModel.from_file(npz_path)
    betas, pose = rng.normal(size=10), rng.normal(scale=0.5, size=72)
    assert np.allclose(body.vertices(betas, pose_rotvecs=pose), ref.vertices(betas, pose_rotvecs=pose), atol=1e-12)


class _Evil:
    def __reduce__(self):
        import os

        return (os.system, ("touch PWNED",))


def test_pickle_loader_refuses_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps({"v_template": _Evil()}))
    with pytest.raises(SmplIkError, match="evil.pkl: not a readable body model file.*refusing to load"):
        BodyModel.from_file(path)
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("change,message", [
    (lambda a: a.update(weights=a["weights"][:, :23]),
     r"array 'weights' has shape \(13718, 23\), expected \(13718, 24\)"),
    (lambda a: a.pop("J_regressor"), "missing arrays: J_regressor"),
    (lambda a: a["shapedirs"].__setitem__((5, 1, 2), np.nan), "array 'shapedirs' contains NaN"),
    (lambda a: a["f"].__setitem__((0, 0), 10 ** 6), "array 'f' indexes vertices outside"),
    (lambda a: a.update(J_regressor=np.zeros((30, 13718))), "has 30 joints; SMPL has 24"),
])
def test_bad_arrays_are_named(smpl_arrays, tmp_path, change, message):
    arrays = {k: v.copy() for k, v in smpl_arrays.items()}
    change(arrays)
    path = tmp_path / "broken.npz"
    np.savez(path, **arrays)
    with pytest.raises(SmplIkError, match="broken.npz: .*" + message):
        BodyModel.from_file(path)


def test_corrupt_and_missing_files(tmp_path):
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(OPEN_BODY_PATH.read_bytes()[:5000])
    with pytest.raises(SmplIkError, match="corrupt.npz: not a readable body model file"):
        BodyModel.from_file(corrupt)
    with pytest.raises(SmplIkError, match="nothere.npz: body model file not found"):
        load_body_model(tmp_path / "nothere.npz")
    odd = tmp_path / "model.obj"
    odd.write_text("v 0 0 0\n")
    with pytest.raises(SmplIkError, match="unsupported body model format '.obj'"):
        BodyModel.from_file(odd)
    objects = tmp_path / "objects.npz"
    np.savez(objects, v_template=np.array([{"a": 1}], dtype=object))
    with pytest.raises(SmplIkError, match="objects.npz: a required array is stored as pickled objects"):
        BodyModel.from_file(objects)


def test_bad_betas_and_pose(open_body):
    with pytest.raises(SmplIkError, match="beta 3 is nan"):
        open_body.rest_joints([0, 0, 0, np.nan, 0, 0, 0, 0, 0, 0])
    with pytest.raises(SmplIkError, match="10 values"):
        open_body.rest_joints(np.zeros(9))
    with pytest.raises(SmplIkError, match=r"pose_rotvecs must have shape \(\.\.\., 72\)"):
        open_body.vertices(np.zeros(10), pose_rotvecs=np.zeros(70))
    with pytest.raises(SmplIkError, match="pose_rotvecs contains NaN"):
        open_body.vertices(np.zeros(10), pose_rotvecs=np.full(72, np.inf))
    with pytest.raises(SmplIkError, match="not both"):
        open_body.vertices(np.zeros(10), pose_rotvecs=np.zeros(72), rel_rotmats=np.tile(np.eye(3), (24, 1, 1)))
    with pytest.raises(SmplIkError, match=r"rel_rotmats must have shape"):
        open_body.vertices(np.zeros(10), rel_rotmats=np.zeros((24, 3)))


def test_rest_floor_point_is_under_the_pelvis_at_the_lowest_vertex(open_body, rng):
    betas = rng.normal(scale=2.0, size=(4, 10))
    points = open_body.rest_floor_point(betas)
    assert points.shape == (4, 3)
    for b, point in zip(betas, points):   # batched = one by one, by the plain definition
        verts, pelvis = open_body.shaped_vertices(b), open_body.rest_joints(b)[0]
        assert np.allclose(point, [pelvis[0], verts[:, 1].min(), pelvis[2]])
        assert point[1] < pelvis[1] - 0.5     # the feet, well below the pelvis
    # a shape that moves the feet (betas[1] on the open body, 8.5 cm at 3): the point follows
    up, down = open_body.rest_floor_point(np.eye(10)[[1, 1]] * [[3.0], [-3.0]])
    assert abs(up[1] - down[1]) > 0.1


def test_cache_reloads_changed_files(smpl_arrays, tmp_path):
    import os

    path = tmp_path / "body.npz"
    np.savez(path, **smpl_arrays)
    first = load_body_model(path)
    assert load_body_model(path) is first
    shifted = dict(smpl_arrays, v_template=smpl_arrays["v_template"] + [0, 1.0, 0])
    np.savez(path, **shifted)
    os.utime(path, ns=(first_ns := path.stat().st_mtime_ns + 10 ** 9, first_ns))
    assert np.allclose(load_body_model(path).rest_joints(np.zeros(10)) - first.rest_joints(np.zeros(10)), [0, 1, 0])


@pytest.mark.parametrize("name, gender", [("basicModel_f_lbs_10_207_0_v1.0.0.pkl", "female"),
                                          ("basicmodel_m_lbs_10_207_0_v1.0.0.pkl", "male"),
                                          ("SMPL_FEMALE.pkl", "female"), ("model.pkl", "neutral")])
def test_a_pickle_without_a_gender_takes_it_from_its_name(smpl_arrays, tmp_path, name, gender):
    path = tmp_path / name
    path.write_bytes(official_smpl_pickle(smpl_arrays))
    assert BodyModel.from_file(path).gender == gender


def test_open_body_name_names_the_shipped_bodies_only(tmp_path):
    from models.body.model import open_body_name, open_body_path

    assert open_body_name(None, "female") == "open_smpl_female"
    assert open_body_name(open_body_path("male")) == "open_smpl_male"
    assert open_body_name(tmp_path / "open_smpl_male.npz") is None      # a copy elsewhere is a user's file
    assert open_body_name(tmp_path / "SMPL_MALE.npz") is None
