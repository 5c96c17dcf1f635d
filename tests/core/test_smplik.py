"""SMPL-IK and the refinement: numpy vs torch, effector checks, exactness, far targets."""

import re

import numpy as np
import pytest
from conftest import assert_only_rows_changed, ROOT, measured_effector_errors, smoke_train

from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.ik.nn import prepare, save_weights
from models.ik.refine import RefineOptions, refine_pose
from models.ik.residuals import Targets, effector_residuals
from models.ik.solver import apply_step
from models.core.rotations import axis_angle_to_matrix, geodesic_angle
from models.core.skeleton import JOINT_INDEX, PARENTS, SIX_POINTS
from models.ik.effectors import SIX_POINT_INDICES, Effector, encode_effectors, six_point_effectors
from models.ik.options import SampleOptions, SolveOptions
from models.ik.smplik import DEFAULT_WEIGHTS, SmplIk

RAW = SolveOptions(refine=None)   # the network's pose as it is

torch = pytest.importorskip("torch")


@pytest.fixture
def random_model():
    from models.training.smplik import SmplIkTorch

    torch.manual_seed(0)
    model = SmplIkTorch(width=64, hidden=32, blocks=2).double()
    for p in model.out.parameters():
        torch.nn.init.normal_(p, std=0.05)
    return model


def true_pose(open_body, rng, scale=0.3):
    rest = open_body.rest_joints(rng.normal(size=10))
    rot = axis_angle_to_matrix(rng.normal(scale=scale, size=(24, 3)))
    fk = forward_kinematics(rot, rest, PARENTS, rng.normal(scale=0.3, size=3))
    return rot, rest, fk


def mixed_effectors(fk):
    return six_point_effectors(fk.positions) + [
        Effector("head", "rotation", fk.rotations[JOINT_INDEX["head"]]),
        Effector("left_hand", "look_at", tuple(fk.positions[22] + fk.rotations[22] @ [0.4, 0, 0]), (1, 0, 0), 0.5),
    ]


@pytest.mark.parametrize("symmetric", [False, True])
def test_numpy_matches_torch(random_model, open_body, rng, symmetric):
    _, rest, fk = true_pose(open_body, rng)
    enc = encode_effectors(mixed_effectors(fk))
    net = SmplIk(prepare(random_model.numpy_params()), random_model.config, symmetric=symmetric)
    local, trans = net.predict(enc, rest[None])
    ref_local, ref_trans = random_model(torch.from_numpy(enc.joints), torch.from_numpy(enc.rows),
                                        torch.from_numpy(enc.mask), torch.from_numpy(rest[None]),
                                        symmetric=symmetric)
    assert np.abs(local - ref_local.detach().numpy()).max() < 1e-4
    # orthonormal to float64 precision, which the refinement's convergence needs
    assert np.abs(local @ np.swapaxes(local, -1, -2) - np.eye(3)).max() < 1e-12
    assert np.abs(trans - ref_trans.detach().numpy()).max() < 1e-4


def mirrored(effectors):
    """The same effectors mirrored left-right (x -> -x): joints swapped, M v, M R M, M axis."""
    from models.core.skeleton import JOINT_NAMES, MIRROR

    m = np.diag([-1.0, 1.0, 1.0])
    out = []
    for e in effectors:
        j = JOINT_NAMES[MIRROR[JOINT_INDEX[e.joint]]]
        target = m @ np.asarray(e.target) @ m if e.kind == "rotation" else tuple(m @ np.asarray(e.target))
        out.append(Effector(j, e.kind, target, tuple(m @ np.asarray(e.axis)), e.weight))
    return out


def test_mirrored_effectors_give_the_mirrored_pose(random_model, open_body, rng):
    from models.core.skeleton import MIRROR

    _, rest, fk = true_pose(open_body, rng)
    effs = mixed_effectors(fk)
    m = np.diag([-1.0, 1.0, 1.0])
    mirror_rest = (rest @ m)[list(MIRROR)]
    for symmetric in (True, False):
        net = SmplIk(prepare(random_model.numpy_params()), random_model.config, symmetric=symmetric)
        a = net.solve(effs, rest, RAW)
        b = net.solve(mirrored(effs), mirror_rest, RAW)
        back = (m @ b.local_rot @ m)[list(MIRROR)]            # a mirrored local rotation is M R M
        exact = np.allclose(back, a.local_rot, atol=1e-6) and np.allclose(b.positions[list(MIRROR)] @ m, a.positions,
                                                                          atol=1e-6)
        assert exact == symmetric   # an untrained network is not symmetric by itself; the symmetric solve is


def test_order_of_effectors_does_not_matter(random_model, open_body, rng):
    _, rest, fk = true_pose(open_body, rng)
    net = SmplIk(prepare(random_model.numpy_params()), random_model.config)
    effs = mixed_effectors(fk)
    a = net.solve(effs, rest, RAW)
    b = net.solve(effs[::-1], rest, RAW)
    assert np.allclose(a.local_rot, b.local_rot, atol=1e-5) and np.allclose(a.trans, b.trans, atol=1e-5)


def test_a_repeated_effector_counts_once_and_weights_blend(random_model, open_body, rng):
    _, rest, fk = true_pose(open_body, rng)
    net = SmplIk(prepare(random_model.numpy_params()), random_model.config)
    effs = mixed_effectors(fk)
    once = net.solve(effs, rest, RAW)
    twice = net.solve(effs + effs[:2], rest, RAW)
    assert np.allclose(once.local_rot, twice.local_rot, atol=1e-5) and np.allclose(once.trans, twice.trans, atol=1e-5)
    # two targets on one joint act as their weighted mean
    p, q = np.array(effs[2].target), np.array(effs[2].target) + [0.3, 0.0, 0.0]
    split = effs[:2] + [Effector(effs[2].joint, "position", tuple(p), weight=0.5),
                        Effector(effs[2].joint, "position", tuple(q), weight=0.5)] + effs[3:]
    mean = effs[:2] + [Effector(effs[2].joint, "position", tuple((p + q) / 2))] + effs[3:]
    a, b = net.solve(split, rest, RAW), net.solve(mean, rest, RAW)
    assert np.allclose(a.local_rot, b.local_rot, atol=1e-5) and np.allclose(a.trans, b.trans, atol=1e-5)
    # the mean is 15 cm from the first target, half way to the second: a smooth network is
    # near linear over 30 cm, so the pose turns about half as far as for the second target
    # alone (the first alone: not at all; the second alone: all the way)
    at_q = net.solve(effs[:2] + [Effector(effs[2].joint, "position", tuple(q))] + effs[3:], rest, RAW)
    half = geodesic_angle(a.local_rot, once.local_rot).sum() / geodesic_angle(at_q.local_rot, once.local_rot).sum()
    assert 0.3 < half < 0.7, half


def test_batched_positions_match_single_solves(random_model, open_body, rng):
    net = SmplIk(prepare(random_model.numpy_params()), random_model.config)
    poses = [true_pose(open_body, rng) for _ in range(3)]
    rest = np.stack([r for _, r, _ in poses])
    targets = np.stack([fk.positions[list(SIX_POINT_INDICES)] for _, _, fk in poses])
    local, trans = net.solve_positions(SIX_POINTS, targets, rest)
    for n, (_, r, fk) in enumerate(poses):
        one = net.solve(six_point_effectors(fk.positions), r, RAW)
        assert np.allclose(local[n], one.local_rot, atol=1e-5) and np.allclose(trans[n], one.trans, atol=1e-5)
    targets[1, 3, 2] = np.nan
    with pytest.raises(SmplIkError, match="pose 1: the target of right_wrist is not a finite number"):
        net.solve_positions(SIX_POINTS, targets, rest)
    with pytest.raises(SmplIkError, match=r"targets must have shape \(poses, 6, 3\)"):
        net.solve_positions(SIX_POINTS, targets[:, :5], rest)
    with pytest.raises(SmplIkError, match="unknown SMPL joint 'nek'"):
        net.solve_positions(["nek"], targets[:, :1], rest)


def test_refinement_makes_effectors_exact_and_stays_close(open_body, rng):
    rot, rest, fk = true_pose(open_body, rng)
    effs = mixed_effectors(fk)
    start = axis_angle_to_matrix(rng.normal(scale=0.05, size=(24, 3))) @ rot
    for options in (RefineOptions(), RefineOptions(balance=False, self_collision=False)):
        out = refine_pose(start, fk.positions[0] - rest[0] + 0.03, rest, effs, options)
        local, trans = out.local_rot, out.trans
        errors = measured_effector_errors(effs, local, trans, rest)
        assert errors.max() < 2e-5, errors   # the refinement stops once each residual is under 1e-5 (0.01 mm)
    # joints no effector pins stay near where the start put them (balance aside: the random
    # pose stands off balance on its pinned ankles, and balance bends the free joints to mend it)
    free = [JOINT_INDEX[n] for n in ("left_knee", "right_knee", "spine2")]
    moved = np.degrees(geodesic_angle(local[free], start[free]))
    assert moved.max() < 15, moved


def test_refinement_jacobian_matches_finite_differences(open_body, rng):
    rot, rest, fk = true_pose(open_body, rng)
    effs = mixed_effectors(fk)
    effs = [e if e.kind == "rotation" else type(e)(e.joint, e.kind, tuple(np.asarray(e.target) + 0.05), e.axis, 0.7)
            for e in effs]  # off target, so every residual is non-zero
    targets = Targets(effs)
    trans = fk.positions[0] - rest[0]
    r0, jac = effector_residuals(targets, fk.rotations, fk.positions, True)
    eps = 1e-6
    numeric = np.zeros_like(jac)
    for i in range(jac.shape[1]):
        step = np.zeros(jac.shape[1])
        step[i] = eps
        local, tr = apply_step(rot, trans, fk, step)
        moved = forward_kinematics(local, rest, PARENTS, tr)
        numeric[:, i] = (effector_residuals(targets, moved.rotations, moved.positions, False)[0] - r0) / eps
    assert np.abs(jac - numeric).max() < 1e-4, np.abs(jac - numeric).max()


def test_far_targets_give_a_finite_stretched_pose(open_body, rng):
    rot, rest, fk = true_pose(open_body, rng)
    effs = [Effector("left_wrist", "position", (8.0, 1.0, 0.0)), Effector("pelvis", "position", tuple(fk.positions[0]))]
    out = refine_pose(rot, fk.positions[0] - rest[0], rest, effs)
    local, trans = out.local_rot, out.trans
    assert np.all(np.isfinite(local)) and np.all(np.isfinite(trans))
    assert np.allclose(local @ np.swapaxes(local, -1, -2), np.eye(3), atol=1e-6)
    pos = forward_kinematics(local, rest, PARENTS, trans).positions
    # the arm reaches straight at the target: the wrist is nearer it than the shoulder by
    # nearly the arm's whole length (a bent arm, or one aimed elsewhere, falls well short)
    shoulder, elbow, wrist = (JOINT_INDEX[n] for n in ("left_shoulder", "left_elbow", "left_wrist"))
    arm = np.linalg.norm(rest[elbow] - rest[shoulder]) + np.linalg.norm(rest[wrist] - rest[elbow])
    target = np.array([8.0, 1.0, 0.0])
    assert np.linalg.norm(pos[wrist] - target) < np.linalg.norm(pos[shoulder] - target) - 0.95 * arm


@pytest.mark.parametrize("effectors,message", [
    ([], "no effectors"),
    ([Effector("left_wirst", "position", (0, 0, 0))], "unknown SMPL joint 'left_wirst'"),
    ([Effector("head", "position", (0, np.nan, 0))], "effector on head: target, axis and weight must be finite"),
    ([Effector("head", "position", (0, np.inf, 0))], "must be finite"),
    ([Effector("head", "teleport", (0, 0, 0))], "unknown kind 'teleport'"),
    ([Effector("head", "rotation", np.eye(3) * 2)], "must be a 3x3 rotation matrix"),
    ([Effector("head", "look_at", (0, 0, 1), (0, 0, 0))], "non-zero local axis"),
    ([Effector("head", "position", (0, 0, 0), weight=0.0)], r"weight must be in \(0, 1\]"),
])
def test_bad_effectors(effectors, message):
    with pytest.raises(SmplIkError, match=message):
        encode_effectors(effectors)


def test_weights_from_another_architecture_are_refused(random_model, tmp_path):
    from models.ik.ikgat import IkGat

    save_weights(tmp_path / "s.npz", random_model.numpy_params(), random_model.config)
    SmplIk.load(tmp_path / "s.npz")
    with pytest.raises(SmplIkError, match="architecture 'smplik-v2', not 'ikgat-v1'"):
        IkGat.load(tmp_path / "s.npz")


def test_smoke_training_reduces_loss(tmp_path, rng):
    record, out = smoke_train("train_smplik.py", tmp_path, rng)
    assert record["steps"] == 150
    assert record["validation"]["last_loss"] < 0.9 * record["validation"]["first_loss"]
    assert record["config"]["arch"] == "smplik-v2" and len(record["data_sha256"]) == 64
    SmplIk.load(out)  # allow_pickle=False and the architecture check


def test_only_joints_trains_those_rows_and_keeps_every_other_weight(tmp_path, rng):
    """--only-joints: the toes' output rows move; every other weight is bit-identical, so the
    flow and hypotheses heads still read the same hidden layer."""
    import subprocess
    import sys

    record, out = smoke_train("train_smplik.py", tmp_path, rng,
                              ("--init", str(DEFAULT_WEIGHTS), "--only-joints", "left_foot,right_foot"))
    assert record["only_joints"] == ["left_foot", "right_foot"]
    rows = [JOINT_INDEX[n] * 6 + c for n in ("left_foot", "right_foot") for c in range(6)]
    assert_only_rows_changed(DEFAULT_WEIGHTS, out, rows)
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "train_smplik.py"), "--only-joints", "left_foot"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "--only-joints needs --init" in run.stderr
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "train_smplik.py"), "--only-joints", "left_toe"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "'left_toe' is not an SMPL joint name" in run.stderr


@pytest.mark.skipif(not DEFAULT_WEIGHTS.exists(), reason="models/weights/smplik.npz not trained yet")
def test_shipped_model_solves_six_points(held_out_poses):
    """Held-out clips (walking, jumping): measured 15.9 mm mean joint error with six points and
    0.010 mm worst effector after refinement; bounded 25% above what is measured."""
    rot, rest, world, pos = held_out_poses
    net = SmplIk.load()
    errors, refined = [], []
    for n in range(0, len(pos), 4):
        effs = six_point_effectors(pos[n])
        sol = net.solve(effs, rest[n], RAW)
        errors.append(np.linalg.norm(sol.positions - pos[n], axis=-1).mean())
        ref = net.solve(effs, rest[n])
        refined.append(measured_effector_errors(effs, ref.local_rot, ref.trans, rest[n]).max())
    assert np.mean(errors) < 0.020, np.mean(errors)  # an untrained model is 20+ cm off
    assert max(refined) < 2e-5, max(refined)


def test_part_swaps_mix_whole_limbs_between_frames():
    from models.training.batches import PARTS, Augmentation, TorchBody, sample_batch
    from models.training.data import PoseData

    still, bent = np.zeros((24, 3)), np.tile([0.5, 0.0, 0.0], (24, 1))   # both unchanged by mirroring
    data = PoseData(torch.tensor(np.stack([still, bent]), dtype=torch.float32), np.zeros(2, int), ["a"], "")
    body = TorchBody()

    def part_sources(swap):
        """(N, parts) which frame each limb came from; checks each limb came whole from one."""
        rot, _ = sample_batch(data, body, 400, torch.Generator().manual_seed(0), Augmentation(swap=swap))
        is_bent = (rot[:, :, 1, 1] < 0.99).numpy()       # R_x(0.5) has cos(0.5) there, the identity 1
        for part in PARTS:
            assert (is_bent[:, list(part)] == is_bent[:, [part[0]]]).all()   # a limb comes whole from one frame
        return is_bent[:, [part[0] for part in PARTS]]

    whole = part_sources(0.0)
    assert (whole == whole[:, :1]).all()                     # no swaps: every limb from the pose's own frame
    mixed = part_sources(0.5)
    assert (mixed != mixed[:, :1]).any(axis=1).mean() > 0.3   # swaps: many poses mix frames


def test_jitter_rests_or_turns_single_joints_and_never_the_pelvis():
    from models.core.rotations import geodesic_angle
    from models.training.batches import Augmentation, TorchBody, sample_batch
    from models.training.data import PoseData

    bent = np.tile([0.5, 0.0, 0.0], (24, 1))     # every joint turned 0.5 rad about x (mirroring keeps it)
    data = PoseData(torch.tensor(bent[None], dtype=torch.float32), np.zeros(1, int), ["a"], "")
    body = TorchBody()
    plain, _ = sample_batch(data, body, 500, torch.Generator().manual_seed(0))
    rot, _ = sample_batch(data, body, 500, torch.Generator().manual_seed(0), Augmentation(jitter=0.1))
    assert np.allclose(rot[:, 0], plain[:, 0], atol=1e-6)      # the pelvis (heading) is left alone
    moved = geodesic_angle(rot[:, 1:].double().numpy(), plain[:, 1:].double().numpy())
    rested = np.abs(rot[:, 1:] - torch.eye(3)).amax((-1, -2)).numpy() < 1e-6
    assert 0.07 < rested.mean() < 0.13                         # set to rest about 10% of the time
    turned = (moved > 1e-2) & ~rested                         # float32 rotations: arccos noise ~1e-3
    assert 0.07 < turned.mean() < 0.13                         # turned further about 10% of the time
    assert moved[turned].max() <= np.radians(45.0) + 1e-4      # by at most 45 degrees
    assert np.allclose(moved[~rested & ~turned], 0.0, atol=1e-2)


def test_bend_turns_one_child_bones_and_keeps_their_twist():
    from models.core.rotations import geodesic_angle, shortest_arc, unit
    from models.core.skeleton import SINGLE
    from models.core.skeleton import CHILDREN
    from models.training.batches import Augmentation, TorchBody, sample_batch
    from models.training.data import PoseData

    poses = torch.from_numpy(np.random.default_rng(0).normal(scale=0.3, size=(50, 24, 3))).float()
    data = PoseData(poses, np.zeros(50, int), ["a"], "")
    body = TorchBody()
    plain, rest = sample_batch(data, body, 500, torch.Generator().manual_seed(0))
    rot, rest2 = sample_batch(data, body, 500, torch.Generator().manual_seed(0), Augmentation(bend=0.3))
    assert torch.equal(rest, rest2)
    others = [j for j in range(24) if j not in SINGLE]
    assert torch.equal(rot[:, others], plain[:, others])         # pelvis, spine3 and the leaves untouched
    plain, rot, rest = plain.double().numpy(), rot.double().numpy(), rest.double().numpy()
    joints, kids = list(SINGLE), [CHILDREN[j][0] for j in SINGLE]
    b = unit(rest[:, kids] - rest[:, joints])
    d0, d1 = (plain[:, joints] @ b[..., None])[..., 0], (rot[:, joints] @ b[..., None])[..., 0]
    turn = np.degrees(np.arccos(np.clip((d0 * d1).sum(-1), -1, 1)))
    bent = turn > 0.5
    assert 0.25 < bent.mean() < 0.35 and turn.max() <= 40.01     # about 30% of the bones, by at most 40 degrees
    twist0 = np.swapaxes(shortest_arc(b, d0), -1, -2) @ plain[:, joints]
    twist1 = np.swapaxes(shortest_arc(b, d1), -1, -2) @ rot[:, joints]
    assert np.degrees(geodesic_angle(twist0, twist1)).max() < 0.1   # the twist about the rest bone is kept


def test_bend_joints_limits_the_bend_and_names_a_bad_joint():
    import argparse

    from models.training.batches import Augmentation, TorchBody, sample_batch
    from models.training.data import PoseData
    from models.training.loop import bend_joint_list

    assert bend_joint_list("neck, spine1") == (12, 3)
    for bad, says in (("nose", "not an SMPL joint"), ("head", "exactly one child"), ("pelvis", "exactly one child")):
        with pytest.raises(argparse.ArgumentTypeError, match=says):
            bend_joint_list(bad)
    poses = torch.from_numpy(np.random.default_rng(1).normal(scale=0.3, size=(20, 24, 3))).float()
    data = PoseData(poses, np.zeros(20, int), ["a"], "")
    plain, _ = sample_batch(data, TorchBody(), 200, torch.Generator().manual_seed(0))
    rot, _ = sample_batch(data, TorchBody(), 200, torch.Generator().manual_seed(0),
                          Augmentation(bend=0.5, bend_joints=(12,)))
    changed = (rot - plain).abs().amax((-1, -2)) > 1e-6
    assert changed[:, 12].float().mean() > 0.3 and not changed[:, [j for j in range(24) if j != 12]].any()


def test_joint_weight_scales_only_the_joint_position_term(random_model):
    from models.training.effectors import make_effectors
    from models.training.batches import TorchBody, fk, placed_batch
    from models.training.data import PoseData
    from models.training.smplik import training_loss

    poses = torch.from_numpy(np.random.default_rng(0).normal(scale=0.3, size=(8, 24, 3))).float()
    data = PoseData(poses, np.zeros(8, int), ["a"], "")
    gen = torch.Generator().manual_seed(0)
    batch = placed_batch(data, TorchBody(), 16, gen)
    rot, rest, _, world, pos = batch
    model = random_model.float()
    eff = make_effectors(world, pos, gen)
    local, trans = model(*eff[:3], rest)
    mpjpe = (fk(local, rest, trans)[1] - pos).norm(dim=-1).mean()
    gap = training_loss(model, batch, eff, 20.0) - training_loss(model, batch, eff, 5.0)
    assert mpjpe > 0.01 and torch.isclose(gap, 15.0 * mpjpe, rtol=1e-3)


SHIPPED_SMPLIK = pytest.mark.skipif(not DEFAULT_WEIGHTS.exists(), reason="models/ik/weights/smplik.npz not trained yet")


def a_posed_problem(open_body, rng):
    """A random pose on the open body and four of its effectors (two soft), with the pose."""
    rest = open_body.rest_joints(np.zeros(10))
    truth = axis_angle_to_matrix(rng.normal(scale=0.3, size=(24, 3)))
    fk = forward_kinematics(truth, rest, PARENTS, np.array([0.0, 0.05, 0.0]))
    effs = [Effector("pelvis", "position", tuple(fk.positions[0])),
            Effector("left_ankle", "position", tuple(fk.positions[7])),
            Effector("right_ankle", "position", tuple(fk.positions[8] + [0.0, 0.0, 0.04]), soft=True),
            Effector("left_wrist", "position", tuple(fk.positions[20] + [1.2, 0.0, 0.0]), soft=True)]   # out of reach
    return rest, effs, (truth, fk.positions[0] - rest[0])


@SHIPPED_SMPLIK
def test_solve_options_whole_give_the_default_pose_as_the_network_guess_refined(open_body, rng):
    """A plain solve, a default SolveOptions and the one spelled out are the same pose, bit for
    bit; and it is the network's guess refined by refine_from (the public steps solve takes)."""
    from models.ik.refine import RefineOptions

    net = SmplIk.load()
    rest, effs, _ = a_posed_problem(open_body, rng)
    plain = net.solve(effs, rest)
    for options in (SolveOptions(), SolveOptions(refine=RefineOptions(), mode="deterministic", current_pose=None,
                                                 warm_start=False, keep=None)):
        again = net.solve(effs, rest, options)
        assert np.array_equal(again.local_rot, plain.local_rot) and np.array_equal(again.trans, plain.trans)
        assert np.array_equal(again.errors, plain.errors) and again.misses == plain.misses
    guess = [x[0] for x in net.predict(encode_effectors(effs), rest[None])]
    stepwise = net.refine_from(effs, guess, rest)
    assert np.array_equal(stepwise.local_rot, plain.local_rot) and np.array_equal(stepwise.errors, plain.errors)
    assert plain.misses and plain.misses[0].joint == "left_wrist"   # the far target is reported, not met
    raw = net.solve(effs, rest, RAW)
    assert np.array_equal(raw.local_rot, guess[0]) and raw.errors is None


@SHIPPED_SMPLIK
def test_refine_from_reports_the_given_effectors_and_plants_the_feet(open_body, rng):
    """With a pose on screen, refine_from adds planted-feet effectors: its errors are still one
    per given effector (as measured on the pose), and the feet keep the screen's orientation."""
    net = SmplIk.load()
    rest, effs, on_screen = a_posed_problem(open_body, rng)
    out = net.refine_from(effs, on_screen, rest, current_pose=on_screen)
    assert out.errors.shape == (len(effs),) and out.latent is None and np.array_equal(out.rest, rest)
    assert np.abs(out.errors - measured_effector_errors(effs, out.local_rot, out.trans, rest)).max() < 1e-9
    screen = forward_kinematics(on_screen[0], rest, PARENTS, on_screen[1]).rotations
    left_foot = [JOINT_INDEX[j] for j in ("left_ankle", "left_foot")]   # the hard ankle pin plants its foot

    def foot_turn(solution):
        posed = forward_kinematics(solution.local_rot, rest, PARENTS, solution.trans).rotations
        return max(geodesic_angle(posed[j], screen[j]) for j in left_foot)

    assert foot_turn(out) < np.radians(0.5)
    assert foot_turn(net.refine_from(effs, on_screen, rest)) > np.radians(2.0)   # unplanted, the far pull turns it


def test_solve_and_sample_take_only_whole_solve_options(random_model, open_body):
    """Refine options passed where the SolveOptions go, a bare flag for refine or an unknown
    mode are refused with a message that says where they go."""
    from models.ik.refine import RefineOptions

    net = SmplIk(prepare(random_model.numpy_params()), random_model.config)
    rest = open_body.rest_joints(np.zeros(10))
    effs = [Effector("pelvis", "position", (0.0, 0.9, 0.0))]
    with pytest.raises(SmplIkError, match="options must be a SolveOptions \\(RefineOptions go in its `refine`\\)"):
        net.solve(effs, rest, RefineOptions())
    with pytest.raises(SmplIkError, match="must be a RefineOptions or None, not bool"):
        SolveOptions(refine=True)
    with pytest.raises(SmplIkError, match="mode must be one of deterministic, natural"):
        SolveOptions(mode=None)
    with pytest.raises(SmplIkError, match="options must be a SampleOptions \\(RefineOptions go in its `refine`\\)"):
        net.sample(effs, rest, SolveOptions(warm_start=True))
    with pytest.raises(SmplIkError, match="must be a RefineOptions or None, not bool"):
        SampleOptions(refine=True)


def test_path_follower_and_the_benchmarks_use_only_the_public_solver():
    """PathFollower and the benchmark scripts call SmplIk's public methods, never a private one."""
    private = re.compile(r"\b(?:net|model|self\.net)\._[a-z]\w*\(")
    for path in (ROOT / "models" / "ik" / "path.py", ROOT / "scripts" / "benchmark.py",
                 ROOT / "scripts" / "benchmark_drag.py"):
        calls = private.findall(path.read_text())
        assert not calls, f"{path.name} calls private solver methods: {calls}"
