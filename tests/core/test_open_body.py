"""The shipped open bodies (neutral, female, male) keep SMPL's conventions and run unchanged
in smplx."""
import json
import os

import numpy as np
import pytest

from models.body.model import GENDERS, LANDMARK_NAMES, OPEN_BODY_PATH, load_body_model, open_body_path, smplx_arguments
from models.core.skeleton import JOINT_INDEX, JOINT_NAMES, PARENTS

J = JOINT_INDEX


def winding_numbers(points, verts, faces):
    """Generalised winding number of each point w.r.t. a triangle mesh (1 inside, 0 outside)."""
    tri = verts[faces]
    out = []
    for p in points:
        a, b, c = (tri - p).transpose(1, 0, 2)
        la, lb, lc = (np.linalg.norm(x, axis=1) for x in (a, b, c))
        num = np.einsum("ij,ij->i", a, np.cross(b, c))
        dot = lambda x, y: np.einsum("ij,ij->i", x, y)  # noqa: E731
        den = la * lb * lc + dot(a, b) * lc + dot(b, c) * la + dot(c, a) * lb
        out.append(np.arctan2(num, den).sum() / (2 * np.pi))
    return np.array(out)


@pytest.fixture(params=GENDERS)
def open_body(request):
    """Each shipped open body in turn (overrides conftest's neutral one)."""
    return load_body_model(open_body_path(request.param))


@pytest.mark.parametrize("gender", GENDERS)
def test_file_is_small_and_pickle_free(gender):
    path = open_body_path(gender)
    assert path.stat().st_size < 3e6   # the neutral body is 2.1 MB
    with np.load(path, allow_pickle=False) as npz:
        for key in npz.files:
            assert npz[key].dtype != object, key
        for key in ("v_template", "shapedirs", "posedirs", "J_regressor", "weights", "kintree_table", "f"):
            assert key in npz.files
        assert list(npz["kintree_table"][0][1:]) == list(PARENTS[1:])
        assert [str(n) for n in npz["joint_names"]] == list(JOINT_NAMES)
        assert npz["gender"].shape == () and str(npz["gender"]) == gender
        assert gender in str(npz["provenance"]) or gender == "neutral"
    body = load_body_model(path)
    assert body.gender == gender and body.label == f"Open body ({gender})"


def largest_principal_angle_deg(a, b):
    """The largest angle between the spans of two shape spaces (V, 3, 10) (0: the same space)."""
    qa, _ = np.linalg.qr(a.reshape(-1, a.shape[-1]))
    qb, _ = np.linalg.qr(b.reshape(-1, b.shape[-1]))
    cosines = np.linalg.svd(qa.T @ qb, compute_uv=False)
    return float(np.degrees(np.arccos(np.clip(cosines.min(), -1.0, 1.0))))


def test_each_gender_has_its_own_shape_space():
    bodies = {g: load_body_model(open_body_path(g)) for g in GENDERS}
    for a in GENDERS:
        for b in GENDERS:
            if a < b:
                assert np.abs(bodies[a].v_template - bodies[b].v_template).max() > 0.02, (a, b)
                # each population's principal shapes: they may share the leading (stature)
                # direction, but the ten-dimensional spaces part by more than 20 degrees
                # somewhere (a copied or rescaled shape space: 0)
                assert largest_principal_angle_deg(bodies[a].shapedirs, bodies[b].shapedirs) > 20.0, (a, b)
    # the mean female body is shorter than the mean male, the neutral one between them
    height = {g: np.ptp(bodies[g].v_template[:, 1]) for g in GENDERS}
    assert height["female"] + 0.08 < height["male"]
    assert height["female"] < height["neutral"] < height["male"]
    # the build populations say the same: the sampled women are shorter on average
    records = {g: json.loads(open_body_path(g).with_suffix(".json").read_text()) for g in GENDERS}
    assert records["female"]["height_m"]["mean"] + 0.08 < records["male"]["height_m"]["mean"]
    assert records["female"]["anny_gender"][0] > 0.5 > records["male"]["anny_gender"][1]   # anny: 1 is female


def test_frame_units_and_t_pose(open_body):
    j = open_body.rest_joints(np.zeros(10))
    v = open_body.v_template
    height = v[:, 1].max() - v[:, 1].min()
    assert 1.5 < height < 1.9  # metres, Y up
    assert j[J["head"], 1] > j[J["pelvis"], 1] > j[J["left_knee"], 1] > j[J["left_ankle"], 1]
    # facing +Z: the nose and the toes point forward
    nose = v[open_body.landmarks["nose"]]
    assert nose[2] > j[J["head"], 2] + 0.05
    assert j[J["left_foot"], 2] > j[J["left_ankle"], 2] + 0.08
    # the body's left is +X and mirrors its right
    for name in JOINT_NAMES:
        if name.startswith("left_"):
            left, right = j[J[name]], j[J[name.replace("left_", "right_")]]
            assert left[0] > 0.05
            assert np.allclose(left * [-1, 1, 1], right, atol=0.01), name
    # T-pose: arms along X, legs straight down
    for side, sign in (("left", 1), ("right", -1)):
        chain = [J[f"{side}_{n}"] for n in ("shoulder", "elbow", "wrist", "hand")]
        for a, b in zip(chain, chain[1:]):
            d = (j[b] - j[a]) / np.linalg.norm(j[b] - j[a])
            assert np.degrees(np.arccos(d @ [sign, 0, 0])) < 5
        d = j[J[f"{side}_ankle"]] - j[J[f"{side}_hip"]]
        assert np.degrees(np.arccos(d @ [0, -1, 0] / np.linalg.norm(d))) < 5


@pytest.mark.parametrize("beta", [0, 1, 2, 3])
def test_joints_inside_the_body(open_body, beta):
    betas = np.zeros(10)
    betas[beta] = 3.0 if beta != 1 else -3.0
    w = winding_numbers(open_body.rest_joints(betas), open_body.shaped_vertices(betas), open_body.faces)
    assert np.all(w > 0.9), [JOINT_NAMES[i] for i in np.nonzero(w <= 0.9)[0]]


def test_shape_space_is_scaled_pca(open_body):
    sd = open_body.shapedirs.reshape(-1, 10)
    gram = sd.T @ sd
    norms = np.sqrt(np.diag(gram))
    assert np.all(np.diff(norms) <= 1e-9)  # ordered by variance
    off = gram / np.outer(norms, norms) - np.eye(10)
    assert np.abs(off).max() < 1e-4  # orthogonal components
    # beta 0 is stature: one unit is a plausible population standard deviation
    tall = open_body.shaped_vertices(np.eye(10)[0])
    grow = (tall[:, 1].max() - tall[:, 1].min()) - np.ptp(open_body.v_template[:, 1])
    assert 0.04 < grow < 0.15


def test_weights_and_landmarks(open_body):
    w = open_body.weights
    assert np.all(w >= 0) and np.allclose(w.sum(1), 1, atol=1e-5)
    assert np.all(w.max(0) > 0.4)  # every joint drives some vertices (collars blend most)
    lm = open_body.landmarks
    assert set(lm) == set(LANDMARK_NAMES)
    v = open_body.v_template
    j = open_body.rest_joints(np.zeros(10))
    for side, sign in (("l", 1), ("r", -1)):
        for finger in ("thumb", "index", "middle", "ring", "pinky"):
            tip = v[lm[side + finger]]
            assert sign * tip[0] > sign * j[J["left_hand" if sign > 0 else "right_hand"], 0] - 0.03
        up = side.upper()
        assert v[lm[f"{up}BigToe"], 2] > v[lm[f"{up}Heel"], 2] + 0.15
        assert sign * v[lm[f"{side}ear"], 0] > 0.05 and sign * v[lm[f"{side}eye"], 0] > 0.01
    assert abs(v[lm["nose"], 0]) < 0.01


def test_smplx_runs_the_open_body_unchanged(open_body, rng):
    torch = pytest.importorskip("torch")
    smplx = pytest.importorskip("smplx")
    model = smplx.SMPL(**smplx_arguments(open_body.path), batch_size=4, dtype=torch.float64)
    betas = rng.normal(size=(4, 10))
    pose = rng.normal(scale=0.5, size=(4, 72))
    trans = rng.normal(size=(4, 3))
    with torch.no_grad():
        out = model(betas=torch.from_numpy(betas), global_orient=torch.from_numpy(pose[:, :3]),
                    body_pose=torch.from_numpy(pose[:, 3:]), transl=torch.from_numpy(trans))
    ours = open_body.forward(betas, pose_rotvecs=pose, trans=trans)
    assert np.abs(out.vertices.numpy() - ours.vertices).max() < 1e-5
    assert np.abs(out.joints.numpy()[:, :24] - ours.posed_joints).max() < 1e-5
    ids = [open_body.landmarks[k] for k in ("nose", "reye", "leye", "rear", "lear")]
    assert np.abs(out.joints.numpy()[:, 24:29] - ours.vertices[:, ids]).max() < 1e-5


@pytest.mark.parametrize("gender", GENDERS)
def test_build_is_reproducible(tmp_path, gender):
    pytest.importorskip("anny", reason="anny is a maintainer dependency (requirements-build.txt)")
    if os.environ.get("SMPL_IK_TEST_BUILD") != "1":
        pytest.skip("rebuilding the body takes a minute; set SMPL_IK_TEST_BUILD=1 to run it")
    import subprocess
    import sys

    out = tmp_path / "body.npz"
    subprocess.run([sys.executable, str(OPEN_BODY_PATH.parents[2] / "scripts" / "build_open_body.py"),
                    "--gender", gender, "--out", str(out)], check=True, capture_output=True)
    with np.load(out) as new, np.load(open_body_path(gender)) as old:
        for key in ("v_template", "shapedirs", "J_regressor", "weights", "f", "landmark_vertex_ids",
                    "measure_prior_coef"):
            assert np.allclose(new[key], old[key], atol=1e-6), key
