"""IK-GAT: numpy runtime vs torch, weight files, bad input, training, held-out accuracy."""

import numpy as np
import pytest
from conftest import smoke_train

from models.core.errors import SmplIkError
from models.core.kinematics import analytic_rotations
from models.ik.ikgat import DEFAULT_WEIGHTS, IkGat
from models.core.kinematics import forward_kinematics
from models.ik.nn import prepare, save_weights
from models.core.rotations import axis_angle_to_matrix, geodesic_angle
from models.core.skeleton import PARENTS, SINGLE

torch = pytest.importorskip("torch")


def poses(open_body, rng, n=16, scale=0.4):
    rest = open_body.rest_joints(rng.normal(size=(n, 10)))
    rot = axis_angle_to_matrix(rng.normal(scale=scale, size=(n, 24, 3)))
    pos = forward_kinematics(rot, rest, PARENTS, rng.normal(size=(n, 3))).positions
    return rot, rest, pos


@pytest.fixture
def random_model():
    from models.training.ikgat import IkGatTorch

    torch.manual_seed(0)
    model = IkGatTorch().double()
    for p in model.out.parameters():  # a model that predicts something
        torch.nn.init.normal_(p, std=0.2)
    return model


@pytest.mark.parametrize("symmetric", [False, True])
def test_numpy_matches_torch(random_model, open_body, rng, symmetric):
    _, rest, pos = poses(open_body, rng)
    net = IkGat(prepare(random_model.numpy_params()), random_model.config, symmetric=symmetric)
    ours = net(pos, rest)
    ref = random_model(torch.from_numpy(pos), torch.from_numpy(rest), symmetric=symmetric).detach().numpy()
    assert np.abs(ours - ref).max() < 1e-4
    # noisy positions, the bone directions corrected: half the poses flagged in torch, found by
    # their bone lengths in numpy
    shaken = pos.copy()
    shaken[::2] += rng.normal(scale=0.02, size=shaken[::2].shape)
    flags = torch.from_numpy(np.arange(len(pos)) % 2 == 0)
    ref = random_model(torch.from_numpy(shaken), torch.from_numpy(rest), symmetric=symmetric, noisy=flags)
    assert np.abs(net(shaken, rest) - ref.detach().numpy()).max() < 1e-4
    # any leading batch shape
    assert net(pos.reshape(4, 4, 24, 3), rest.reshape(4, 4, 24, 3)).shape == (4, 4, 24, 3, 3)


def test_mirrored_positions_give_the_mirrored_rotations(random_model, open_body, rng):
    from models.core.skeleton import MIRROR

    _, rest, pos = poses(open_body, rng)
    pos = pos + rng.normal(scale=0.01, size=pos.shape)   # noisy: the corrections mirror too
    m = np.diag([-1.0, 1.0, 1.0])
    for symmetric in (True, False):
        net = IkGat(prepare(random_model.numpy_params()), random_model.config, symmetric=symmetric)
        back = (m @ net((pos @ m)[:, list(MIRROR)], (rest @ m)[:, list(MIRROR)]) @ m)[:, list(MIRROR)]
        # an untrained network is not symmetric by itself; the symmetric solve is
        assert np.allclose(back, net(pos, rest), atol=1e-5) == symmetric


def test_bone_directions_are_exact_whatever_the_network(random_model, open_body, rng):
    """On exact positions (bone lengths as at rest) nothing is corrected, whatever the network
    says; noisy ones are corrected unless denoise=False."""
    _, rest, pos = poses(open_body, rng)
    net = IkGat(prepare(random_model.numpy_params()), random_model.config)
    for local in (net(pos, rest), analytic_rotations(pos, rest)):
        fk = forward_kinematics(local, rest, PARENTS, pos[:, 0] - rest[:, 0]).positions
        assert np.abs(fk - pos).max() < 1e-4
    shaken = pos + rng.normal(scale=0.01, size=pos.shape)
    exact = IkGat(prepare(random_model.numpy_params()), random_model.config, denoise=False)
    # the bones of one-child joints (the pelvis and spine3 take a rigid fit of three children)
    kids = [c for c in range(1, 24) if PARENTS[c] in SINGLE]
    parents = [PARENTS[c] for c in kids]
    bones = shaken[:, kids] - shaken[:, parents]

    def directions(local):
        fk = forward_kinematics(local, rest, PARENTS, shaken[:, 0] - rest[:, 0]).positions
        got = fk[:, kids] - fk[:, parents]
        cos = np.sum(got * bones, -1) / np.linalg.norm(got, axis=-1) / np.linalg.norm(bones, axis=-1)
        return np.degrees(np.arccos(np.clip(cos, -1, 1))).max()

    assert directions(exact(shaken, rest)) < 0.01
    # the random network's corrections (6D outputs of std 0.2) turn some bone by degrees
    assert directions(net(shaken, rest)) > 1.0
    with pytest.raises(SmplIkError, match="denoise must be 'auto', True or False"):
        IkGat(prepare(random_model.numpy_params()), random_model.config, denoise="yes")


def test_grown_network_computes_what_the_smaller_one_did(open_body, rng):
    """ikgat-v1 weights grown into ikgat-v2 (more hidden units, a third layer, correction
    outputs): the same rotations, noisy input included, so training continues from them."""
    from models.training.ikgat import IkGatTorch, grown_from_v1

    torch.manual_seed(1)
    small = IkGatTorch(hidden=64, layers=2, arch="ikgat-v1").double()
    for p in small.parameters():   # every parameter away from its initial value
        torch.nn.init.normal_(p, std=0.2)
    big = IkGatTorch().double()
    big.load_state_dict(grown_from_v1(small.numpy_params(), big))
    assert big.config["layers"] > small.config["layers"] and big.config["hidden"] > small.config["hidden"]
    _, rest, pos = poses(open_body, rng)
    pos = pos + rng.normal(scale=0.02, size=pos.shape)
    before = IkGat(prepare(small.numpy_params()), small.config)(pos, rest)
    after = IkGat(prepare(big.numpy_params()), big.config, denoise=True)(pos, rest)
    assert np.abs(before).max() > 0.1 and np.abs(after - before).max() < 1e-5


def test_weights_round_trip_and_architecture_check(random_model, tmp_path, open_body, rng):
    path = tmp_path / "w.npz"
    save_weights(path, random_model.numpy_params(), random_model.config)
    with np.load(path, allow_pickle=False) as npz:
        assert "__config__" in npz.files
    _, rest, pos = poses(open_body, rng, n=2)
    direct = IkGat(prepare(random_model.numpy_params()), random_model.config)
    assert np.allclose(IkGat.load(path)(pos, rest), direct(pos, rest), atol=1e-6)
    params = random_model.numpy_params()
    save_weights(tmp_path / "other.npz", params, dict(random_model.config, arch="smplik-v2"))
    with pytest.raises(SmplIkError,
                       match="other.npz: weights are for architecture 'smplik-v2', not 'ikgat-v1' or 'ikgat-v2'"):
        IkGat.load(tmp_path / "other.npz")
    params.pop("out.bias")
    save_weights(tmp_path / "cut.npz", params, dict(random_model.config, dim=48))
    with pytest.raises(SmplIkError, match="cut.npz: weights do not fit the ikgat-v2 architecture"):
        IkGat.load(tmp_path / "cut.npz")
    (tmp_path / "junk.npz").write_bytes(b"junk")
    with pytest.raises(SmplIkError, match="junk.npz: not a readable weights file"):
        IkGat.load(tmp_path / "junk.npz")


def test_bad_input(random_model, open_body, rng):
    net = IkGat(prepare(random_model.numpy_params()), random_model.config)
    _, rest, pos = poses(open_body, rng, n=1)
    pos[0, 5, 1] = np.nan
    with pytest.raises(SmplIkError, match="NaN or infinite"):
        net(pos, rest)
    with pytest.raises(SmplIkError, match=r"positions of shape \(..., 24, 3\)"):
        net(np.zeros((1, 22, 3)), rest)


def test_smoke_training_reduces_loss(tmp_path, rng):
    record, out = smoke_train("train_ikgat.py", tmp_path, rng)
    assert record["steps"] == 150
    assert record["validation"]["last_loss"] < 0.9 * record["validation"]["first_loss"]
    assert record["config"]["arch"] == "ikgat-v2" and len(record["data_sha256"]) == 64
    assert record["noise"] == 0.6 and "geodesic_deg_noise_2cm" in record["validation"]
    IkGat.load(out)  # allow_pickle=False and the architecture check


def test_continued_training_starts_from_the_weights_and_keeps_the_history(tmp_path, rng):
    first, out = smoke_train("train_ikgat.py", tmp_path, rng, ("--bend", "0.3", "--bend-joints", "neck,spine1"))
    again, _ = smoke_train("train_ikgat.py", tmp_path, rng, ("--init", str(out), "--lr", "3e-4"), name="again")
    assert first["bend"] == 0.3 and first["bend_joints"] == ["neck", "spine1"] and again["bend"] == 0.0
    assert again["continued_from"]["bend_joints"] == ["neck", "spine1"]   # the earlier run's augmentation is kept
    assert again["continued_from"]["steps"] == first["steps"]
    assert again["continued_from"]["validation"] == first["validation"]
    assert again["schedule"]["lr"] == 3e-4 and first["schedule"]["lr"] != 3e-4
    # it starts where the first run ended, not from scratch
    assert again["validation"]["first_loss"] < 0.8 * first["validation"]["first_loss"]


@pytest.mark.skipif(not DEFAULT_WEIGHTS.exists(), reason="models/weights/ikgat.npz not trained yet")
def test_shipped_weights_beat_the_analytic_answer(held_out_poses):
    """Held-out clips (walking, jumping): measured 4.69 degrees mean local rotation error, 0.31x
    the analytic answer's 15.4 (the ikgat-v1 weights before noise training: 4.22); bounded 13%
    above what is measured. With 2 cm of Gaussian noise on every joint: 12.7 degrees against
    the analytic answer's 27.6 (0.46x; ikgat-v1, which follows every noisy bone, 23.9: 0.86x),
    held to the 0.6x that issue 27 asks for."""
    rot, rest, _, pos = held_out_poses
    net = IkGat.load()
    ours = np.degrees(geodesic_angle(net(pos, rest), rot)).mean()
    classic = np.degrees(geodesic_angle(analytic_rotations(pos, rest), rot)).mean()
    assert ours < 0.34 * classic, (ours, classic)
    assert ours < 5.3
    noisy = pos + np.random.default_rng(0).normal(scale=0.02, size=pos.shape)
    ours = np.degrees(geodesic_angle(net(noisy, rest), rot)).mean()
    classic = np.degrees(geodesic_angle(analytic_rotations(noisy, rest), rot)).mean()
    assert ours < 0.6 * classic, (ours, classic)
