"""Generative SMPL-IK: the pose flow (numpy and torch), its solves, samples and continuity, and
the cost J."""
import numpy as np
import pytest
from conftest import measured_effector_errors, smoke_train

from models.core.errors import SmplIkError
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import JOINT_INDEX, NUM_JOINTS
from models.body.measure import DENSITY
from models.ik.cost import CostOptions, Segments, effort, pose_cost
from models.ik.effectors import Effector, encode_effectors
from models.ik.flow import DEFAULT_FLOW_WEIGHTS, DIMS, PoseFlow
from models.ik.nn import prepare, save_weights
from models.ik.options import SampleOptions, SolveOptions
from models.ik.smplik import DEFAULT_WEIGHTS, SmplIk

torch = pytest.importorskip("torch")
SHIPPED = pytest.mark.skipif(not (DEFAULT_WEIGHTS.exists() and DEFAULT_FLOW_WEIGHTS.exists()),
                             reason="models/ik/weights/smplik.npz or smplik_flow.npz not trained yet")


@pytest.fixture
def random_flow():
    """A torch flow with every layer random (a fresh one is the identity)."""
    from models.training.flow import PoseFlowTorch

    torch.manual_seed(0)
    flow = PoseFlowTorch(context=16, hidden=32, couplings=4)
    with torch.no_grad():
        for c in flow.couplings:
            c.out.weight.normal_(std=0.05)
            c.out.bias.normal_(std=0.05)
    return flow


def numpy_flow(flow):
    return PoseFlow(prepare(flow.numpy_params(), np.float64), flow.config)


def test_numpy_flow_matches_torch_both_ways(random_flow, rng):
    net = numpy_flow(random_flow)
    features = rng.normal(size=(5, 512))
    z = rng.normal(size=(5, DIMS))
    with torch.no_grad():
        ctx_t = random_flow.encode(torch.tensor(features, dtype=torch.float32))
        x_t = random_flow(torch.tensor(z, dtype=torch.float32), ctx_t).numpy()
        back_t, logdet_t = random_flow.inverse(torch.tensor(x_t), ctx_t)
    ctx = net.context(features)
    x = net.forward(z, ctx)
    back, logdet = net.inverse(x_t, ctx)
    assert np.abs(x - z).max() > 0.05            # the random flow does move the latents
    assert np.abs(x - x_t).max() < 1e-4
    assert np.abs(back - back_t.numpy()).max() < 1e-4
    assert np.abs(logdet - logdet_t.numpy()).max() < 1e-4


def test_inverse_undoes_forward(random_flow, rng):
    net = numpy_flow(random_flow)
    ctx = net.context(rng.normal(size=(7, 512)))
    z = rng.normal(size=(7, DIMS)) * 2
    back, logdet = net.inverse(net.forward(z, ctx), ctx)
    assert np.abs(back - z).max() < 1e-9
    # the log-determinant is that of the map's Jacobian, by finite differences
    eps, j = 1e-6, np.zeros((DIMS, DIMS))
    for i in range(DIMS):
        dz = np.zeros((1, DIMS))
        dz[0, i] = eps
        j[:, i] = ((net.forward(z[:1] + dz, ctx[:1]) - net.forward(z[:1] - dz, ctx[:1])) / (2 * eps))[0]
    assert abs(np.linalg.slogdet(j)[1] - logdet[0]) < 1e-5


def untrained_net(folder):
    """A small SmplIk with an untrained flow (the identity), both written to `folder` (s.npz, f.npz)."""
    from models.training.flow import PoseFlowTorch
    from models.training.smplik import SmplIkTorch

    base = SmplIkTorch(width=64, hidden=32, blocks=1)
    save_weights(folder / "s.npz", base.numpy_params(), base.config)
    flow = PoseFlowTorch(base_width=64, context=16, hidden=32, couplings=2)
    save_weights(folder / "f.npz", flow.numpy_params(), flow.config)
    return SmplIk.load(folder / "s.npz", flow_path=folder / "f.npz")


def test_an_untrained_flow_decodes_the_deterministic_answer(open_body, rng, tmp_path):
    net = untrained_net(tmp_path)
    rest = open_body.rest_joints(np.zeros(10))
    effectors = [Effector("pelvis", "position", (0, 0.9, 0)), Effector("left_wrist", "position", (0.4, 1.2, 0.1))]
    det = net.solve(effectors, rest, SolveOptions(refine=None, mode="deterministic"))
    nat = net.solve(effectors, rest, SolveOptions(refine=None, mode="natural"))
    assert np.abs(det.local_rot - nat.local_rot).max() < 1e-6 and np.abs(nat.latent).max() < 1e-6


def test_decoding_under_a_condition_is_the_natural_solve(open_body, tmp_path):
    """condition holds the deterministic network's pose for each set, and decode at latent zero
    under it is what solve gives in the natural mode, bit for bit."""
    net = untrained_net(tmp_path)
    rest = open_body.rest_joints(np.zeros(10))
    effectors = [Effector("pelvis", "position", (0, 0.9, 0)), Effector("left_wrist", "position", (0.4, 1.2, 0.1))]
    encoded = encode_effectors(effectors)
    condition = net.condition(encoded, rest[None])
    det_local, det_trans = net.predict(encoded, rest[None])
    assert np.array_equal(condition.local_rot, det_local) and np.array_equal(condition.trans, det_trans)
    local, trans = net.decode(condition, np.zeros((1, 2, DIMS)))
    assert local.shape == (1, 2, NUM_JOINTS, 3, 3) and trans.shape == (1, 2, 3)
    natural = net.solve(effectors, rest, SolveOptions(mode="natural", refine=None))
    assert np.array_equal(local[0, 1], natural.local_rot) and np.array_equal(trans[0, 0], natural.trans)


def test_weights_load_without_pickle_and_refuse_another_architecture(random_flow, tmp_path):
    save_weights(tmp_path / "f.npz", random_flow.numpy_params(), random_flow.config)
    PoseFlow.load(tmp_path / "f.npz")
    with pytest.raises(SmplIkError, match="architecture 'smplik-flow-v1', not 'smplik-v2'"):
        SmplIk.load(tmp_path / "f.npz", flow_path=None)
    with pytest.raises(SmplIkError, match="not 'smplik-flow-v1'"):
        PoseFlow.load(DEFAULT_WEIGHTS)
    bad = dict(random_flow.numpy_params())
    bad["masks"] = bad["masks"][:, :10]
    save_weights(tmp_path / "g.npz", bad, random_flow.config)
    with pytest.raises(SmplIkError, match="wrong shape masks"):
        PoseFlow.load(tmp_path / "g.npz")


def test_a_flow_is_refused_over_another_deterministic_network(tmp_path):
    from models.ik.flow import file_sha256
    from models.training.flow import PoseFlowTorch
    from models.training.smplik import SmplIkTorch

    for name in ("a", "b"):
        save_weights(tmp_path / f"{name}.npz", SmplIkTorch(width=64, hidden=32, blocks=1).numpy_params(),
                     SmplIkTorch(width=64, hidden=32, blocks=1).config)
    flow = PoseFlowTorch(base_width=64, context=16, hidden=32, couplings=2, base_sha256=file_sha256(tmp_path / "a.npz"))
    save_weights(tmp_path / "f.npz", flow.numpy_params(), flow.config)
    assert SmplIk.load(tmp_path / "a.npz", flow_path=tmp_path / "f.npz").flow is not None
    with pytest.raises(SmplIkError, match="trained over other deterministic weights than"):
        SmplIk.load(tmp_path / "b.npz", flow_path=tmp_path / "f.npz")
    if DEFAULT_FLOW_WEIGHTS.exists():   # the shipped flow is simply left out for other weights
        assert SmplIk.load(tmp_path / "b.npz").flow is None


def test_a_flow_continues_over_another_network_only_when_rebased(tmp_path):
    """A trainer's --init may carry a flow over to a new deterministic network (the same
    features, a joint's rows mended): rebase loads it and the flow takes the new network's
    digest; without rebase the digests must agree."""
    import torch

    from models.ik.flow import file_sha256
    from models.training.flow import PoseFlowTorch
    from models.training.loop import initialise
    from models.training.smplik import SmplIkTorch

    for name in ("a", "b"):
        base = SmplIkTorch(width=64, hidden=32, blocks=1)
        save_weights(tmp_path / f"{name}.npz", base.numpy_params(), base.config)
    old = PoseFlowTorch(base_width=64, context=16, hidden=32, couplings=2, base_sha256=file_sha256(tmp_path / "a.npz"))
    with torch.no_grad():
        for p in old.parameters():
            p.normal_()
    save_weights(tmp_path / "f.npz", old.numpy_params(), old.config)
    new = PoseFlowTorch(base_width=64, context=16, hidden=32, couplings=2, base_sha256=file_sha256(tmp_path / "b.npz"))
    with pytest.raises(SmplIkError, match="weights are for"):
        initialise(new, tmp_path / "f.npz")
    initialise(new, tmp_path / "f.npz", rebase=True)
    assert new.config["base_sha256"] == file_sha256(tmp_path / "b.npz")
    for (name, a), b in zip(old.state_dict().items(), new.state_dict().values()):
        assert torch.equal(a, b), name


def test_smoke_training_lowers_the_loss(tmp_path, rng):
    from models.ik.flow import ARCH, file_sha256

    record, out = smoke_train("train_flow.py", tmp_path, rng)
    assert record["steps"] == 120 and record["config"]["arch"] == ARCH
    assert record["config"]["base_sha256"] == file_sha256(DEFAULT_WEIGHTS)
    assert record["validation"]["last_loss"] < record["validation"]["first_loss"] - 0.3
    PoseFlow.load(out)


def test_cost_prefers_a_hanging_arm_and_counts_the_body_mass(open_body):
    seg = Segments.from_body(open_body)
    volume = open_body.shaped_vertices(np.zeros(10))[open_body.faces]
    total = np.einsum("fi,fi->f", volume[:, 0], np.cross(volume[:, 1], volume[:, 2])).sum() / 6 * DENSITY
    assert abs(seg.mass.sum() - total) < 1e-6 * total and 40 < total < 120
    rest = open_body.rest_joints(np.zeros(10))
    t_pose = np.tile(np.eye(3), (NUM_JOINTS, 1, 1))
    arms_down = t_pose.copy()
    for side, sign in (("left", 1), ("right", -1)):   # SMPL's rest arms point along +-x
        arms_down[JOINT_INDEX[f"{side}_shoulder"]] = axis_angle_to_matrix(np.array([0, 0, -sign * 1.45]))
    held, hanging = effort(t_pose, np.zeros(3), rest, seg), effort(arms_down, np.zeros(3), rest, seg)
    assert held - hanging > 10   # two arms of 3-4 kg held out: over 10 newton-metres more
    mean, std = np.zeros(DIMS - 3), np.ones(DIMS - 3)
    costs = pose_cost(np.stack([t_pose, arms_down]), np.zeros(3), rest, CostOptions(seg, mean, std))
    assert costs["cost"][1] < costs["cost"][0] and np.all(costs["limit_excess"] == 0)
    bent_back = t_pose.copy()
    bent_back[JOINT_INDEX["left_knee"]] = axis_angle_to_matrix(np.array([-0.6, 0, 0]))   # 34 degrees past straight
    assert pose_cost(bent_back, np.zeros(3), rest, CostOptions(seg, mean, std))["limit_excess"] > 0.05


@pytest.fixture(scope="module")
def shipped():
    return SmplIk.load()


def three_pins(pos):
    return [Effector("pelvis", "position", tuple(pos[0])), Effector("left_wrist", "position", tuple(pos[20])),
            Effector("right_ankle", "position", tuple(pos[8]))]


@SHIPPED
def test_natural_is_deterministic_and_meets_the_effectors(shipped, held_out_poses):
    _, rest, _, pos = held_out_poses
    effectors = three_pins(pos[3])
    a, b = (shipped.solve(effectors, rest[3], SolveOptions(mode="natural")) for _ in range(2))
    assert np.array_equal(a.local_rot, b.local_rot) and np.array_equal(a.trans, b.trans)
    assert measured_effector_errors(effectors, a.local_rot, a.trans, rest[3]).max() < 1e-3


@SHIPPED
def test_samples_differ_and_all_meet_the_effectors(shipped, held_out_poses):
    _, rest, _, pos = held_out_poses
    effectors = three_pins(pos[5])
    samples = shipped.sample(effectors, rest[5], SampleOptions(count=6, seed=3))
    positions = np.stack([s.positions for s in samples])
    spread = [np.linalg.norm(positions[i] - positions[j], axis=-1).mean() for i in range(6) for j in range(i)]
    assert min(spread) > 0.005                      # no two alike: at least 5 mm apart on average
    for s in samples:
        assert measured_effector_errors(effectors, s.local_rot, s.trans, rest[5]).max() < 1e-3
    again = shipped.sample(effectors, rest[5], SampleOptions(count=6, seed=3))
    assert all(np.array_equal(x.local_rot, y.local_rot) for x, y in zip(samples, again))   # a seed repeats
    cool = shipped.sample(effectors, rest[5], SampleOptions(count=6, seed=3, temperature=0.2))
    cool_pos = np.stack([s.positions for s in cool])
    assert np.mean([np.linalg.norm(cool_pos[i] - cool_pos[j], axis=-1).mean() for i in range(6) for j in range(i)]) \
        < 0.5 * np.mean(spread)                     # temperature narrows the spread


@SHIPPED
def test_keeping_an_unchanged_problem_returns_the_current_pose(shipped, held_out_poses):
    _, rest, _, pos = held_out_poses
    effectors = three_pins(pos[7])
    current = shipped.sample(effectors, rest[7], SampleOptions(count=1, seed=11))[0]     # an alternative on screen
    for keep in (current, (current.local_rot, current.trans)):
        kept = shipped.solve(effectors, rest[7], SolveOptions(keep=keep))
        assert np.abs(kept.local_rot - current.local_rot).max() < 1e-5
        assert np.abs(kept.trans - current.trans).max() < 1e-6
    natural = shipped.solve(effectors, rest[7], SolveOptions(mode="natural"))
    assert np.abs(natural.positions - current.positions).max() > 0.01   # it was not the natural pose


@SHIPPED
def test_keep_carries_an_alternative_through_a_moved_target(shipped, held_out_poses):
    """With an alternative on screen, moving one pin 2 cm and keeping its latent moves the
    joints without effectors far less than solving afresh, which goes back to the natural pose."""
    _, rest, _, pos = held_out_poses
    jumps_keep, jumps_fresh = [], []
    free = [j for j in range(NUM_JOINTS) if j not in (0, 20, 8)]
    for n in range(0, 40, 4):
        effectors = three_pins(pos[n])
        current = shipped.sample(effectors, rest[n], SampleOptions(count=1, seed=n))[0]
        moved = list(effectors)
        moved[1] = Effector("left_wrist", "position", tuple(pos[n, 20] + [0.02, 0.0, 0.0]))
        kept = shipped.solve(moved, rest[n], SolveOptions(keep=current))
        fresh = shipped.solve(moved, rest[n], SolveOptions(mode="natural"))
        assert measured_effector_errors(moved, kept.local_rot, kept.trans, rest[n]).max() < 1e-3
        jumps_keep.append(np.linalg.norm(kept.positions[free] - current.positions[free], axis=-1).mean())
        jumps_fresh.append(np.linalg.norm(fresh.positions[free] - current.positions[free], axis=-1).mean())
    assert np.median(jumps_keep) < 0.5 * np.median(jumps_fresh)


def counting(monkeypatch, owner, name):
    """Replace owner.name with a wrapper counting its calls: returns the list of calls."""
    calls, original = [], getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)
    monkeypatch.setattr(owner, name, counted)
    return calls


def six_points(pos):
    from models.ik.effectors import six_point_effectors

    return six_point_effectors(pos)


def wrist_moved(effectors, target):
    """The six points with the left wrist (soft, as a drag moves it) at target."""
    moved = list(effectors)
    moved[2] = Effector("left_wrist", "position", tuple(target), soft=True)
    return moved


@SHIPPED
def test_a_solution_finds_its_latent_only_when_it_is_read(shipped, held_out_poses, monkeypatch):
    """The flow runs backwards for a solution's latent the first time it is read, never in the
    solve itself (the natural pose, a kept drag step), and the latent found decodes to the pose."""
    _, rest, _, pos = held_out_poses
    effectors = six_points(pos[3])
    inverse = counting(monkeypatch, shipped.flow, "inverse")
    natural = shipped.solve(effectors, rest[3], SolveOptions(mode="natural"))
    moved = wrist_moved(effectors, pos[3, 20] + [0.0, 0.01, 0.0])
    step = shipped.solve(moved, rest[3], SolveOptions(mode="natural", current_pose=(natural.local_rot, natural.trans),
                                                      keep=natural))
    assert not inverse
    latent = step.latent
    assert len(inverse) == 1 and step.latent is latent and len(inverse) == 1   # found once, then kept
    decoded = shipped.decode(step.condition, latent[None, None])[0][0, 0]
    assert np.abs(decoded - step.local_rot).max() < 1e-6


@SHIPPED
def test_a_kept_drag_step_within_reach_runs_the_network_but_not_the_flow(shipped, held_out_poses, monkeypatch):
    """Keeping the last solution (as a drag with Keep Pose does), a 1 cm step within reach runs
    the deterministic network once and neither direction of the flow, and meets every
    effector within 1 mm."""
    _, rest, _, pos = held_out_poses
    effectors = six_points(pos[5])
    last = shipped.solve(effectors, rest[5], SolveOptions(mode="natural"))
    forward, inverse = counting(monkeypatch, shipped.flow, "forward"), counting(monkeypatch, shipped.flow, "inverse")
    network = counting(monkeypatch, shipped, "network")
    for k in range(1, 6):
        moved = wrist_moved(effectors, pos[5, 20] + [0.0, 0.01 * k, 0.0])
        last = shipped.solve(moved, rest[5], SolveOptions(mode="natural", current_pose=(last.local_rot, last.trans),
                                                          keep=last))
        assert measured_effector_errors(moved, last.local_rot, last.trans, rest[5]).max() < 1e-3
    assert not forward and not inverse and len(network) == 5


@SHIPPED
def test_keep_falls_back_to_the_kept_latent_decoded_not_to_the_natural_pose(shipped, held_out_poses, monkeypatch):
    """The start a kept step falls back on (when small steps cannot reach its targets) is the
    kept alternative's own latent decoded under the moved effectors: the alternative's
    character, not the natural pose's."""
    from models.ik import smplik

    _, rest, _, pos = held_out_poses
    effectors = three_pins(pos[9])
    alternative = shipped.sample(effectors, rest[9], SampleOptions(count=1, seed=4))[0]
    moved = list(effectors)
    moved[1] = Effector("left_wrist", "position", tuple(pos[9, 20] + [0.03, 0.0, 0.0]), soft=True)
    fallbacks = []
    refine_from = smplik.SmplIk.refine_from

    def spying(self, effectors, start, rest, options=None, current_pose=None, fallback=None):
        fallbacks.append(fallback)
        return refine_from(self, effectors, start, rest, options, current_pose, fallback)
    monkeypatch.setattr(smplik.SmplIk, "refine_from", spying)
    kept = shipped.solve(moved, rest[9], SolveOptions(keep=alternative))
    condition = kept.condition
    own = shipped.decode(condition, alternative.latent[None, None])[0][0, 0]
    natural = shipped.decode(condition, np.zeros((1, 1, DIMS)))[0][0, 0]
    assert np.abs(own - natural).max() > 0.05                  # the two starts tell apart
    assert np.abs(fallbacks[0]()[0] - own).max() < 1e-12


@SHIPPED
def test_kept_steps_move_the_free_joints_less_than_warm_starts(shipped, held_out_poses):
    """The left wrist dragged round a 5 cm circle in 24 steps from the natural pose on six
    points: kept steps (the pose carried along the network's answer) move the joints without
    effectors less a step than warm starts from the pose before, and hold every pin within
    1 mm."""
    from models.ik.effectors import SIX_POINT_INDICES

    _, rest, _, pos = held_out_poses
    free = [j for j in range(NUM_JOINTS) if j not in SIX_POINT_INDICES]
    jumps = {"keep": [], "warm": []}
    for n in range(0, 40, 7):
        effectors = six_points(pos[n])
        start = shipped.solve(effectors, rest[n], SolveOptions(mode="natural"))
        for how, moves in jumps.items():
            last, steps = start, []
            for k in range(1, 25):
                turn = 2 * np.pi * k / 24
                moved = wrist_moved(effectors, pos[n, 20] + 0.05 * np.array([np.cos(turn) - 1, np.sin(turn), 0.0]))
                on_screen = (last.local_rot, last.trans)
                options = (SolveOptions(mode="natural", current_pose=on_screen, keep=last) if how == "keep"
                           else SolveOptions(current_pose=on_screen, warm_start=True))
                now = shipped.solve(moved, rest[n], options)
                pins = [e for e in moved if not e.soft]
                assert measured_effector_errors(pins, now.local_rot, now.trans, rest[n]).max() < 1e-3, (n, how, k)
                steps.append(np.linalg.norm(now.positions[free] - last.positions[free], axis=-1).mean())
                last = now
            moves.append(np.mean(steps))
    keep, warm = np.array(jumps["keep"]), np.array(jumps["warm"])
    # with the weights trained onto each body (--transfer) the margin is a few percent on average
    # and not every problem's (3 of 6): kept steps must not move more than warm starts overall
    assert keep.mean() < warm.mean() and (keep < warm).sum() >= len(keep) // 2, (keep, warm)


# a drag step from the last one's solution: with Keep Pose (kept) or without (a warm start from it)
DRAG_STEPS = {"keep": lambda last: SolveOptions(mode="natural", current_pose=(last.local_rot, last.trans), keep=last),
              "warm_start": lambda last: SolveOptions(current_pose=last, warm_start=True)}


@SHIPPED
@pytest.mark.parametrize("step", sorted(DRAG_STEPS))
def test_a_drag_out_of_reach_refines_briefly_and_comes_back_within_reach(shipped, held_out_poses, monkeypatch, step):
    """The left wrist dragged 2 cm a step straight out along the arm until it is out of reach,
    with Keep Pose and without: every step holds the pins within 1 mm; a step after one that
    missed refines CREEP_ITERATIONS at most, once, without decoding a fallback start, and ends
    within 2 mm of where a full solve from the same pose gets; one move back to the start goes
    on refining until it meets the wrist within 1 mm."""
    from models.ik import solving
    from models.ik.refine import RefineOptions
    from models.ik.solution import kept_missed, no_nearer

    _, rest, _, pos = held_out_poses
    n = 12
    effectors = six_points(pos[n])
    last = shipped.solve(effectors, rest[n], SolveOptions(mode="natural"))
    outward = pos[n, 20] - pos[n, 16]     # from the shoulder to the wrist
    outward /= np.linalg.norm(outward)
    iterations = []
    refine_pose = solving.refine_pose

    def spying(local, trans, rest, effectors, options=RefineOptions()):
        iterations.append(options.iterations)
        return refine_pose(local, trans, rest, effectors, options)
    monkeypatch.setattr(solving, "refine_pose", spying)
    decoded = []   # latents decoded: the fallback start (the kept pose's latent under the moved pins)
    decode = shipped.decoded_pose
    monkeypatch.setattr(shipped, "decoded_pose", lambda *args: decoded.append(1) or decode(*args))
    creeping = 0
    for k in range(1, 17):
        moved = wrist_moved(effectors, pos[n, 20] + 0.02 * k * outward)
        missed = kept_missed(last)
        on_screen = (last.local_rot, last.trans)
        iterations.clear(), decoded.clear()
        now = shipped.solve(moved, rest[n], DRAG_STEPS[step](last))
        pins = [e for e in moved if not e.soft]
        assert measured_effector_errors(pins, now.local_rot, now.trans, rest[n]).max() < 1e-3, k
        if missed and no_nearer(now, last):
            creeping += 1
            assert iterations[0] == solving.CREEP_ITERATIONS < RefineOptions().iterations, (k, iterations)
            assert len(iterations) == 1 and not decoded, (k, iterations)   # no fallback start: the arm stays straight
            full = shipped.refine_from(moved, on_screen, rest[n], RefineOptions(), on_screen)
            assert now.errors[2] < full.errors[2] + 2e-3, k
        last = now
    assert creeping >= 5 and now.errors[2] > 0.05             # the last steps went on out of reach
    back = shipped.solve(effectors, rest[n], DRAG_STEPS[step](now))
    assert measured_effector_errors(effectors, back.local_rot, back.trans, rest[n]).max() < 1e-3


@SHIPPED
def test_an_alternative_left_with_an_arm_in_the_body_is_refined_again_nearer_the_natural_pose(shipped, open_body,
                                                                                                monkeypatch):
    """The first alternative's refinement is made to end with the left forearm through the
    chest, its pins met (the pins leave the arms free): sample refines it again from
    nearer the natural pose and returns a pose with the arm out and the pins met. With no
    COLLISION_RETRIES the pose in the body would be returned."""
    from scipy.spatial.transform import Rotation

    from models.core.kinematics import forward_kinematics
    from models.core.skeleton import PARENTS
    from models.ik import sampling
    from models.ik.refine import Refined, arm_in_body

    rest = open_body.rest_joints(np.zeros(10))
    through = np.tile(np.eye(3), (24, 1, 1))
    through[JOINT_INDEX["right_shoulder"]] = Rotation.from_euler("z", 60, degrees=True).as_matrix()
    through[JOINT_INDEX["left_shoulder"]] = Rotation.from_euler("zy", [-40, -90], degrees=True).as_matrix()
    through[JOINT_INDEX["left_elbow"]] = Rotation.from_euler("y", -140, degrees=True).as_matrix()
    p = forward_kinematics(through, rest, PARENTS, np.zeros(3)).positions
    effectors = [Effector(n, "position", tuple(p[JOINT_INDEX[n]]))
                 for n in ("pelvis", "head", "left_ankle", "right_ankle")]
    assert arm_in_body(through, np.zeros(3), rest, effectors)
    refine_many = sampling.refine_many

    def first_in_body(*args, **kwargs):
        out = refine_many(*args, **kwargs)
        return [Refined(local_rot=through, trans=np.zeros(3), errors=np.zeros(len(effectors)), misses=())] + out[1:]
    monkeypatch.setattr(sampling, "refine_many", first_in_body)
    first = shipped.sample(effectors, rest, SampleOptions(count=2))[0]
    assert not arm_in_body(first.local_rot, first.trans, rest, effectors)
    assert measured_effector_errors(effectors, first.local_rot, first.trans, rest).max() < 1e-3
    monkeypatch.setattr(sampling, "COLLISION_RETRIES", ())
    kept = shipped.sample(effectors, rest, SampleOptions(count=2))[0]
    np.testing.assert_array_equal(kept.local_rot, through)


def test_bad_sample_and_keep_requests_are_refused(open_body, tmp_path):
    net = untrained_net(tmp_path)
    rest = open_body.rest_joints(np.zeros(10))
    effectors = [Effector("pelvis", "position", (0, 0.9, 0))]
    for kwargs, message in ((dict(count=0), "count must be a whole number from 1 to 1000, not 0"),
                            (dict(count=10_000), "not 10000"), (dict(count=2.5), "not 2.5"),
                            (dict(temperature=float("nan")), "finite number >= 0"),
                            (dict(temperature=-0.5), "not -0.5"), (dict(temperature="warm"), "must be a number")):
        with pytest.raises(SmplIkError, match=message):
            net.sample(effectors, rest, SampleOptions(**kwargs))
    for keep, message in (((np.eye(3), np.zeros(3)), r"got \(3, 3\) and \(3,\)"),
                          ((np.full((24, 3, 3), np.nan), np.zeros(3)), "NaN"), (5, "got int")):
        with pytest.raises(SmplIkError, match=message):
            net.solve(effectors, rest, SolveOptions(keep=keep))
    with pytest.raises(SmplIkError, match="mode must be one of deterministic, natural, not 'best'"):
        SolveOptions(mode="best")
    no_flow = SmplIk.load(tmp_path / "s.npz", flow_path=None)
    with pytest.raises(SmplIkError, match="only the deterministic solve is available"):
        no_flow.sample(effectors, rest)
    assert no_flow.solve(effectors, rest).misses == ()


def test_batched_refinement_meets_the_effectors_like_the_single_one(open_body, rng):
    from models.core.kinematics import forward_kinematics
    from models.core.skeleton import PARENTS
    from models.ik.limits import JOINT_LIMITS
    from models.ik.refine import refine_many, refine_pose
    from models.ik.residuals import Targets, effector_residuals

    rest = open_body.rest_joints(np.zeros(10))
    truth = axis_angle_to_matrix(rng.normal(scale=0.3, size=(24, 3)))
    fk = forward_kinematics(truth, rest, PARENTS, np.zeros(3))
    effectors = [Effector("pelvis", "position", tuple(fk.positions[0])),
                 Effector("left_wrist", "position", tuple(fk.positions[20])),
                 Effector("right_ankle", "rotation", fk.rotations[8]),
                 Effector("head", "look_at", tuple(fk.positions[15] + fk.rotations[15] @ [0, 0, 1.0]),
                          axis=(0, 0, 1.0))]
    starts = axis_angle_to_matrix(rng.normal(scale=0.3, size=(5, 24, 3)))
    trans = rng.normal(scale=0.05, size=(5, 3))
    # the batched residuals are the single ones, pose by pose
    batch_fk = forward_kinematics(starts, rest, PARENTS, trans)
    r, j = effector_residuals(Targets(effectors), batch_fk.rotations, batch_fk.positions, True)
    r1, j1 = effector_residuals(Targets(effectors), batch_fk.rotations[3], batch_fk.positions[3], True)
    assert np.abs(r[3] - r1).max() < 1e-12 and np.abs(j[3] - j1).max() < 1e-12
    out = refine_many(starts, trans, rest, effectors)
    for k, refined in enumerate(out):
        assert not refined.misses
        assert measured_effector_errors(effectors, refined.local_rot, refined.trans, rest).max() < 1e-3
        single = refine_pose(starts[k], trans[k], rest, effectors)
        # it stays about as close to its start as the single solve does
        moved = np.linalg.norm(forward_kinematics(refined.local_rot, rest, PARENTS, refined.trans).positions
                               - batch_fk.positions[k], axis=-1).mean()
        moved_single = np.linalg.norm(forward_kinematics(single.local_rot, rest, PARENTS, single.trans).positions
                                      - batch_fk.positions[k], axis=-1).mean()
        assert moved < 1.5 * moved_single + 0.005
    from scipy.spatial.transform import Rotation

    for lim in JOINT_LIMITS:   # and inside the joint ranges
        for refined in out:
            angles = Rotation.from_matrix(refined.local_rot[JOINT_INDEX[lim.joint]]).as_euler(lim.order, degrees=True)
            assert np.all(angles >= np.array(lim.low) - 1e-6) and np.all(angles <= np.array(lim.high) + 1e-6)


@SHIPPED
def test_following_a_path_meets_every_frame_and_smoothness_steadies_it(shipped, held_out_poses):
    from models.ik.path import PathFollower

    _, rest, _, pos = held_out_poses
    free = [j for j in range(NUM_JOINTS) if j not in (0, 20, 8)]
    noise = np.random.default_rng(5).normal(scale=0.01, size=(30, 24, 3))
    frames = [three_pins(pos[12] + noise[t]) for t in range(30)]   # pins held still, with 1 cm of jitter
    jumps = {}
    for mu in (0.0, 0.8):
        follow = PathFollower(shipped, rest[0], smoothness=mu)
        poses = []
        for effectors in frames:
            s = follow.step(effectors)
            assert measured_effector_errors(effectors, s.local_rot, s.trans, rest[0]).max() < 1e-3
            assert np.array_equal(s.latent, np.zeros(DIMS))   # one latent for the whole path
            assert s.errors.shape == (len(effectors),)       # the frame's effectors', not the steadying targets'
            poses.append(s.positions)
        poses = np.stack(poses)
        jumps[mu] = np.linalg.norm(np.diff(poses[:, free], axis=0), axis=-1).mean()
    # smoothness 0.8 holds the free joints 80% of the way to where they were on the frame
    # before, as far as the pins let: against pins that only jitter, that cuts the free joints'
    # frame-to-frame motion by well over a quarter (a follower that ignored it: not at all)
    assert jumps[0.8] < 0.75 * jumps[0.0], jumps
    for bad in (1.0, -0.1, float("nan")):
        with pytest.raises(SmplIkError, match="smoothness must be a number from 0"):
            PathFollower(shipped, rest[0], smoothness=bad)
    with pytest.raises(SmplIkError, match="72 finite numbers"):
        PathFollower(shipped, rest[0], latent=np.zeros(5))


def random_flow_net(folder):
    """A small SmplIk with a random flow (not the identity), written to `folder`."""
    from models.training.flow import PoseFlowTorch
    from models.training.smplik import SmplIkTorch

    torch.manual_seed(1)
    base = SmplIkTorch(width=64, hidden=32, blocks=1)
    save_weights(folder / "s.npz", base.numpy_params(), base.config)
    flow = PoseFlowTorch(base_width=64, context=16, hidden=32, couplings=4)
    with torch.no_grad():
        for c in flow.couplings:
            c.out.weight.normal_(std=0.05)
            c.out.bias.normal_(std=0.05)
    save_weights(folder / "f.npz", flow.numpy_params(), flow.config)
    return SmplIk.load(folder / "s.npz", flow_path=folder / "f.npz")


def free_joint_move(net, condition, effectors, rest, latents):
    """Mean distance (m) the joints without an effector move from the natural pose, per latent."""
    from models.core.kinematics import forward_kinematics
    from models.core.skeleton import PARENTS

    pinned = {JOINT_INDEX[e.joint] for e in effectors}
    free = [j for j in range(NUM_JOINTS) if j not in pinned]
    lat = np.concatenate([np.zeros((1, DIMS)), latents])[None]
    local, trans = (x[0] for x in net.decode(condition, lat))
    pos = forward_kinematics(local, np.broadcast_to(rest, (len(local),) + rest.shape), PARENTS, trans).positions
    return np.linalg.norm(pos[1:, free] - pos[:1, free], axis=-1).mean(-1)


def test_principal_alternatives_step_both_ways_along_the_directions_that_show_most(open_body, rng, tmp_path):
    net = random_flow_net(tmp_path)
    rest = open_body.rest_joints(np.zeros(10))
    effectors = [Effector("pelvis", "position", (0, 0.9, 0)), Effector("left_wrist", "position", (0.4, 1.2, 0.1))]
    condition = net.condition(encode_effectors(effectors), rest[None])
    lat = net.principal_latents(condition, effectors, rest, 7, 0.5)
    assert lat.shape == (7, DIMS)
    assert np.allclose(lat[0::2][:3], -lat[1::2][:3])                      # +step, -step pairs
    directions = lat[0::2] / 0.5                                            # 4 directions (7 = 3 pairs and one)
    assert np.allclose(directions @ directions.T, np.eye(4), atol=1e-9)     # unit and orthogonal
    assert np.array_equal(lat, net.principal_latents(condition, effectors, rest, 7, 0.5, seed=0))
    # the leading direction moves the free joints more than any random direction of the same length
    small = 1e-3
    lead = free_joint_move(net, condition, effectors, rest, directions[:1] * small)[0]
    random_dirs = rng.normal(size=(50, DIMS))
    random_dirs /= np.linalg.norm(random_dirs, axis=1, keepdims=True)
    assert lead > free_joint_move(net, condition, effectors, rest, random_dirs * small).max()
    # and each later one less than the one before, within the numerical difference
    moves = free_joint_move(net, condition, effectors, rest, directions * small)
    assert moves[0] >= moves[1] * 0.99 >= moves[3] * 0.98
    # another seed turns the directions within the same subspace
    turned = net.principal_latents(condition, effectors, rest, 8, 0.5, seed=3)[0::2] / 0.5
    assert np.abs(turned - directions).max() > 0.1
    inside = turned @ directions.T                                          # coordinates in the seed-0 span
    assert np.allclose(np.linalg.norm(inside, axis=1), 1.0, atol=1e-9)


def test_sample_spreads_are_checked_and_temperature_scales_the_principal_step(open_body, tmp_path):
    net = random_flow_net(tmp_path)
    rest = open_body.rest_joints(np.zeros(10))
    effectors = [Effector("pelvis", "position", (0, 0.9, 0)), Effector("left_wrist", "position", (0.4, 1.2, 0.1))]
    with pytest.raises(SmplIkError, match="spread must be one of mixed, hypotheses, library, principal, random"):
        net.sample(effectors, rest, SampleOptions(spread="widest"))
    a = net.sample(effectors, rest, SampleOptions(count=4, temperature=0.4, refine=None))
    b = net.sample(effectors, rest, SampleOptions(count=4, temperature=0.2, refine=None))
    lengths = [np.linalg.norm(s.latent) for s in a] + [2 * np.linalg.norm(s.latent) for s in b]
    assert np.allclose(lengths, 0.4 * 2.5, atol=1e-9)     # PRINCIPAL_STEP 2.5 latent units per unit of temperature
    assert all(np.linalg.norm(s.latent) == 0
               for s in net.sample(effectors, rest, SampleOptions(count=3, temperature=0, refine=None)))
    drawn = net.sample(effectors, rest, SampleOptions(count=4, seed=5, spread="random", refine=None))
    assert not np.allclose(np.linalg.norm(drawn[0].latent), np.linalg.norm(drawn[1].latent))
