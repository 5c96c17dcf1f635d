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
from models.core.skeleton import PARENTS

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
    # any leading batch shape
    assert net(pos.reshape(4, 4, 24, 3), rest.reshape(4, 4, 24, 3)).shape == (4, 4, 24, 3, 3)


def test_mirrored_positions_give_the_mirrored_rotations(random_model, open_body, rng):
    from models.core.skeleton import MIRROR

    _, rest, pos = poses(open_body, rng)
    m = np.diag([-1.0, 1.0, 1.0])
    for symmetric in (True, False):
        net = IkGat(prepare(random_model.numpy_params()), random_model.config, symmetric=symmetric)
        back = (m @ net((pos @ m)[:, list(MIRROR)], (rest @ m)[:, list(MIRROR)]) @ m)[:, list(MIRROR)]
        # an untrained network is not symmetric by itself; the symmetric solve is
        assert np.allclose(back, net(pos, rest), atol=1e-5) == symmetric


def test_bone_directions_are_exact_whatever_the_network(random_model, open_body, rng):
    _, rest, pos = poses(open_body, rng)
    net = IkGat(prepare(random_model.numpy_params()), random_model.config)
    for local in (net(pos, rest), analytic_rotations(pos, rest)):
        fk = forward_kinematics(local, rest, PARENTS, pos[:, 0] - rest[:, 0]).positions
        assert np.abs(fk - pos).max() < 1e-4


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
    with pytest.raises(SmplIkError, match="other.npz: weights are for architecture 'smplik-v2', not 'ikgat-v1'"):
        IkGat.load(tmp_path / "other.npz")
    params.pop("out.bias")
    save_weights(tmp_path / "cut.npz", params, dict(random_model.config, dim=48))
    with pytest.raises(SmplIkError, match="cut.npz: weights do not fit the ikgat-v1 architecture"):
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
    assert record["config"]["arch"] == "ikgat-v1" and len(record["data_sha256"]) == 64
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
    """Held-out clips (walking, jumping): measured 4.22 degrees mean local rotation error, 0.27x
    the analytic answer's 15.4 (the weights trained on locomotion alone were at 2.8, 0.17x;
    training on the varied motion too halved the error on dance and punching and cost this);
    bounded 25% above what is measured."""
    rot, rest, _, pos = held_out_poses
    ours = np.degrees(geodesic_angle(IkGat.load()(pos, rest), rot)).mean()
    classic = np.degrees(geodesic_angle(analytic_rotations(pos, rest), rot)).mean()
    assert ours < 0.34 * classic, (ours, classic)
    assert ours < 5.3
