"""SMPL-IK's hypotheses head: numpy and torch agree, its poses are what `sample` gives by
default, it belongs to one deterministic network, and winner-takes-all training spreads it."""
import numpy as np
import pytest
from conftest import assert_only_rows_changed, measured_effector_errors, smoke_train

from models.core.errors import SmplIkError
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import JOINT_INDEX, NUM_JOINTS
from models.ik.effectors import Effector, EncodedEffectors, encode_effectors
from models.ik.hypotheses import DEFAULT_HYPOTHESES_WEIGHTS, DIMS, Hypotheses
from models.ik.nn import prepare, save_weights
from models.ik.options import SampleOptions, SolveOptions
from models.ik.smplik import DEFAULT_WEIGHTS, SmplIk

torch = pytest.importorskip("torch")


def random_head(base_width=64, count=4, seed=2, base_sha256=None, trunk_blocks=None):
    from models.training.hypotheses import HypothesesTorch

    torch.manual_seed(seed)
    head = HypothesesTorch(base_width=base_width, hidden=32, count=count, base_sha256=base_sha256,
                           trunk_blocks=trunk_blocks, trunk_hidden=32)
    with torch.no_grad():
        head.out.weight.normal_(std=0.1)   # a fresh head answers nearly the deterministic pose
        head.out.bias.normal_(std=0.1)
    return head


@pytest.mark.parametrize("trunk_blocks", [None, 2])
def test_numpy_head_matches_torch(trunk_blocks):
    head = random_head(trunk_blocks=trunk_blocks)
    if trunk_blocks:
        with torch.no_grad():   # block norms away from the identity, so folding them is checked
            for b in head.blocks:
                b.norm.weight.uniform_(0.5, 1.5)
                b.norm.bias.normal_(std=0.3)
    inputs = torch.randn(7, head.config.get("inputs", 64), dtype=torch.float64)
    hidden = torch.randn(7, 64, dtype=torch.float64)
    want = head.double()(inputs if trunk_blocks else hidden).detach().numpy()
    got = Hypotheses(prepare(head.numpy_params(), np.float64), head.config).residuals(inputs.numpy(), hidden.numpy())
    assert got.shape == (7, 4, DIMS)
    assert np.abs(got - want).max() < 1e-4
    assert np.abs(want).max() > 0.05          # not the trivial zero answer


def test_a_trunk_started_from_the_network_reads_what_the_v1_head_read(tmp_path):
    """A v2 head whose trunk is the deterministic network's and whose MLP is a v1 head's gives
    the v1 head's answers (the trainer's starting point): the trunk's features are the
    network's last hidden layer."""
    from models.training.smplik import SmplIkTorch

    torch.manual_seed(3)
    base = SmplIkTorch(width=64, hidden=32, blocks=2)
    with torch.no_grad():
        for b in base.blocks:
            b.norm.weight.uniform_(0.5, 1.5)
            b.norm.bias.normal_(std=0.3)
    save_weights(tmp_path / "s.npz", base.numpy_params(), base.config)
    net = SmplIk.load(tmp_path / "s.npz", flow_path=None, hypotheses_path=None)
    v1 = random_head()
    v2 = random_head(seed=5, trunk_blocks=2)
    v2.load_parts(base.numpy_params(), ["inp.", "blocks."])
    v2.load_parts(v1.numpy_params(), ["fc1.", "fc2.", "out."])
    rest = np.random.default_rng(0).normal(scale=0.3, size=(3, 24, 3))
    encoded = encode_effectors(EFFECTORS)
    encoded = EncodedEffectors(*(np.repeat(a, 3, axis=0) for a in (encoded.joints, encoded.rows, encoded.mask)))
    _, _, hidden, inputs = net.predict(encoded, rest, features=True)
    one = Hypotheses(prepare(v1.numpy_params(), np.float64), v1.config).residuals(inputs, hidden)
    two = Hypotheses(prepare(v2.numpy_params(), np.float64), v2.config).residuals(inputs, hidden)
    assert np.abs(one).max() > 0.05
    assert np.abs(one - two).max() < 1e-4
    with pytest.raises(ValueError, match="no inp.weight"):
        v2.load_parts({}, ["inp."])


def test_reorder_permutes_the_hypotheses():
    head = random_head()
    features = torch.randn(3, 64)
    before = head(features).detach()
    head.reorder([2, 0, 3, 1])
    after = head(features).detach()
    assert torch.allclose(after, before[:, [2, 0, 3, 1]])


def test_winner_takes_all_trains_only_the_nearest_much():
    from models.training.hypotheses import winner_takes_all

    errors = torch.tensor([[3.0, 1.0, 2.0], [0.5, 4.0, 1.0]], requires_grad=True)
    loss, winners = winner_takes_all(errors, relax=0.1)
    loss.backward()
    assert winners.tolist() == [1, 0]
    assert abs(loss.item() - 0.5 * ((1.0 + 0.1 * 2.0) + (0.5 + 0.1 * 5.5 / 3))) < 1e-6   # nearest + 0.1 x mean
    grad = errors.grad.numpy()
    # the winner's gradient is the nearest's share plus its relaxed share; the others' only the relaxed
    assert (np.allclose(grad[0], [0.1 / 6, 0.5 + 0.1 / 6, 0.1 / 6])
            and np.allclose(grad[1], [0.5 + 0.1 / 6, 0.1 / 6, 0.1 / 6]))


def net_with_head(folder, head_base=None, trunk_blocks=1):
    """A small random SmplIk with a random flow and a random hypotheses head over it."""
    from models.ik.flow import file_sha256
    from models.training.flow import PoseFlowTorch
    from models.training.smplik import SmplIkTorch

    torch.manual_seed(1)
    base = SmplIkTorch(width=64, hidden=32, blocks=1)
    save_weights(folder / "s.npz", base.numpy_params(), base.config)
    flow = PoseFlowTorch(base_width=64, context=16, hidden=32, couplings=4)
    save_weights(folder / "f.npz", flow.numpy_params(), flow.config)
    head = random_head(base_sha256=head_base or file_sha256(folder / "s.npz"), trunk_blocks=trunk_blocks)
    save_weights(folder / "h.npz", head.numpy_params(), head.config)
    return folder / "s.npz", folder / "f.npz", folder / "h.npz"


EFFECTORS = [Effector("pelvis", "position", (0, 0.9, 0)), Effector("left_wrist", "position", (0.4, 1.2, 0.1))]


def test_sample_gives_the_heads_poses_likeliest_first(open_body, tmp_path):
    s, f, h = net_with_head(tmp_path)
    net = SmplIk.load(s, flow_path=f, hypotheses_path=h, library_path=None)
    rest = open_body.rest_joints(np.zeros(10))
    samples = net.sample(EFFECTORS, rest, SampleOptions(count=3, refine=None))   # the head's by default (no library)
    condition = net.condition(encode_effectors(EFFECTORS), rest[None])
    x = net.hypotheses.residuals(condition.inputs, condition.hidden)[0]
    want = condition.local_rot[0] @ axis_angle_to_matrix(x.reshape(-1, NUM_JOINTS, 3))
    for k, sample in enumerate(samples):                                    # the first three, in order
        assert np.abs(sample.local_rot - want[k]).max() < 1e-6, k
        assert np.abs(sample.trans - condition.trans[0]).max() < 1e-9
    # beyond the head's four, principal alternatives follow
    six = net.sample(EFFECTORS, rest, SampleOptions(count=6, refine=None))
    assert all(np.abs(a.local_rot - b.local_rot).max() < 1e-9 for a, b in zip(six[:3], samples))
    principal = net.sample(EFFECTORS, rest, SampleOptions(count=2, refine=None, spread="principal"))
    assert np.abs(six[4].local_rot - principal[0].local_rot).max() < 1e-9
    # temperature scales their latents toward the natural pose, which 0 gives
    half = net.sample(EFFECTORS, rest, SampleOptions(count=3, refine=None, temperature=0.3))
    assert np.allclose([np.linalg.norm(a.latent) for a in half],
                       [0.5 * np.linalg.norm(b.latent) for b in samples], rtol=1e-6)
    natural = net.solve(EFFECTORS, rest, SolveOptions(mode="natural", refine=None))
    zero = net.sample(EFFECTORS, rest, SampleOptions(count=2, refine=None, temperature=0))
    assert all(np.abs(z.local_rot - natural.local_rot).max() < 1e-9 for z in zero)
    # refined, each meets the pins
    for sample in net.sample(EFFECTORS, rest, SampleOptions(count=4)):
        assert measured_effector_errors(EFFECTORS, sample.local_rot, sample.trans, rest).max() < 1e-3


def test_a_head_belongs_to_its_deterministic_network(tmp_path):
    s, f, h = net_with_head(tmp_path, head_base="0" * 64)
    with pytest.raises(SmplIkError, match="hypotheses head was trained over other deterministic weights"):
        SmplIk.load(s, flow_path=f, hypotheses_path=h)
    net = SmplIk.load(s, flow_path=f, hypotheses_path=None)
    with pytest.raises(SmplIkError, match="no hypotheses head"):
        net.sample(EFFECTORS, np.zeros((24, 3)), SampleOptions(spread="hypotheses"))
    with pytest.raises(SmplIkError, match="weights are for architecture"):
        Hypotheses.load(f)


def test_smoke_training_spreads_the_hypotheses_over_the_poses(tmp_path, rng):
    """On poses that vary along one direction, trained winner-takes-all, the nearest of the
    hypotheses is much nearer the truth than the deterministic answer (a head that had not
    learned would sit on that answer), and they are stored likeliest first."""
    record, out = smoke_train("train_hypotheses.py", tmp_path, rng, ("--base", str(DEFAULT_WEIGHTS)))
    v = record["validation"]
    assert v["last_loss"] < v["first_loss"]
    for sets in ("six_points", "random"):
        assert v[f"{sets}_nearest_of_8_mpjpe_mm"] < 0.9 * v[f"{sets}_deterministic_mpjpe_mm"], v
    assert v["nearest_share"] == sorted(v["nearest_share"], reverse=True)
    assert Hypotheses.load(out).count == 8


def test_only_joints_trains_those_rows_of_every_hypothesis_and_keeps_the_rest(tmp_path, rng):
    """--only-joints: the toes' residual rows of each of the 8 hypotheses move; every other
    weight, and the hypotheses' order, stay exactly as in --init."""
    record, out = smoke_train("train_hypotheses.py", tmp_path, rng,
                              ("--base", str(DEFAULT_WEIGHTS), "--init", str(DEFAULT_HYPOTHESES_WEIGHTS),
                               "--only-joints", "left_foot,right_foot"))
    assert record["only_joints"] == ["left_foot", "right_foot"]
    toes = [JOINT_INDEX["left_foot"], JOINT_INDEX["right_foot"]]
    rows = [k * DIMS + j * 3 + c for k in range(8) for j in toes for c in range(3)]
    assert_only_rows_changed(DEFAULT_HYPOTHESES_WEIGHTS, out, rows)
