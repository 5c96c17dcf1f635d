"""The training set and bodies the trainers draw from: merged sources, equal shares, all three
open bodies, varied bone lengths."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from models.body.model import GENDERS, load_body_model, open_body_path  # noqa: E402
from models.core.skeleton import MIRROR, PARENTS  # noqa: E402


def small_set(n_clips, frames, value):
    return {"poses": np.full((n_clips * frames, 72), value, np.float32),
            "trans": np.zeros((n_clips * frames, 3), np.float32),
            "clip": np.repeat(np.arange(n_clips, dtype=np.int32), frames),
            "frame": np.tile(np.arange(frames, dtype=np.int32), n_clips),
            "betas": np.zeros((n_clips, 10), np.float32),
            "clips": np.array([f"c{i}.bvh" for i in range(n_clips)]),
            "fps": np.full(n_clips, 60.0), "source_fps": np.full(n_clips, 60.0),
            "limb_error_deg": np.zeros(n_clips, np.float32), "body_model": np.array("open")}


def test_merged_sources_are_named_and_drawn_in_equal_shares(tmp_path):
    from models.motion.batch import save_npz_atomically
    from models.training.batches import TorchBody, sample_batch
    from models.training.data import PoseData, load_pose_data, merge_datasets

    # 'big' has 9 times the frames of 'small'; each source's poses are told apart by their value
    merged = merge_datasets([("big", small_set(3, 300, 0.1)), ("small", small_set(2, 50, 0.4))])
    assert list(merged["clips"]) == ["big/c0.bvh", "big/c1.bvh", "big/c2.bvh", "small/c0.bvh", "small/c1.bvh"]
    assert list(merged["source"]) == ["big"] * 3 + ["small"] * 2
    assert set(merged["clip"][merged["poses"][:, 0] > 0.2]) == {3, 4}     # the second set's clips offset
    path = tmp_path / "merged.npz"
    save_npz_atomically(path, **merged)
    train, _ = load_pose_data(path, validation=("c1.bvh",))   # holds out big/c1 and small/c1
    assert len(train.poses) == 2 * 300 + 50
    assert isinstance(train, PoseData) and abs(float(train.weight.sum()) - 1.0) < 1e-9
    rot, _ = sample_batch(train, TorchBody(), 4000, torch.Generator().manual_seed(0))
    from_small = (rot[:, 3, 1, 1] < np.cos(0.2)).float().mean()   # spine1 turned 0.4 rad, not 0.1
    assert 0.45 < from_small < 0.55, from_small                 # uniform frames would give 50 / 650 = 8%


def test_training_bodies_are_the_three_open_bodies():
    from models.training.batches import TorchBody

    body = TorchBody()
    assert len(body) == len(GENDERS) == 3
    betas = torch.tensor(np.random.default_rng(0).normal(size=(3, 10)), dtype=torch.float32)
    rest = body.rest_joints(betas, torch.arange(3))
    for k, gender in enumerate(GENDERS):
        want = load_body_model(open_body_path(gender)).rest_joints(betas[k].double().numpy())
        assert np.abs(rest[k].numpy() - want).max() < 1e-5, gender
    assert np.abs(rest[1] - rest[2]).max() > 0.01    # the female and male skeletons differ


def test_bone_lengths_vary_alike_left_and_right_and_keep_directions():
    from models.training.batches import TorchBody, sample_batch, vary_bones
    from models.training.data import PoseData

    rest = TorchBody().rest_joints(torch.zeros(1, 10))
    scale = torch.ones(1, 24)
    scale[0, 18] = 1.1                                 # the left elbow's bone (shoulder to elbow)
    out = vary_bones(rest, scale)
    bone = lambda r, j: r[0, j] - r[0, PARENTS[j]]     # noqa: E731
    assert torch.allclose(bone(out, 18), 1.1 * bone(rest, 18), atol=1e-6)
    assert torch.allclose(bone(out, 20), bone(rest, 20), atol=1e-6)      # the forearm keeps its length...
    assert torch.allclose(out[0, 20] - out[0, 18], rest[0, 20] - rest[0, 18], atol=1e-6)   # ...and moves along
    assert torch.allclose(out[0, :18], rest[0, :18], atol=1e-6)   # joints above the elbow stay

    data = PoseData(torch.zeros(1, 24, 3), np.zeros(1, int), ["a"], "")
    _, rests = sample_batch(data, TorchBody(), 500, torch.Generator().manual_seed(0))
    lengths = torch.stack([(rests[:, j] - rests[:, PARENTS[j]]).norm(dim=-1) for j in range(1, 24)], 1)
    mirrored = lengths[:, [MIRROR[j] - 1 for j in range(1, 24)]]
    assert torch.allclose(lengths, mirrored, atol=2e-3)          # left and right bones alike (shapes are symmetric)
    ratio = lengths[:, 17] / lengths[:, 15]                       # left upper arm against the collar bone
    assert ratio.std() / ratio.mean() > 0.02                      # proportions vary across the batch


def test_a_pose_carried_to_another_body_keeps_its_bones_world_directions_and_its_leaves():
    from models.training.batches import TorchBody, fk, transfer_pose
    from models.training.rotations import axis_angle_to_matrix
    from models.core.skeleton import CHILDREN

    gen = torch.Generator().manual_seed(0)
    body = TorchBody()
    rest_from = body.rest_joints(torch.randn(64, 10, generator=gen), torch.zeros(64, dtype=torch.long))
    rest_to = body.rest_joints(3 * torch.randn(64, 10, generator=gen), torch.full((64,), 2))   # the male body
    rot = axis_angle_to_matrix(0.6 * torch.randn(64, 24, 3, generator=gen))
    moved = transfer_pose(rot, rest_from, rest_to)
    w_from, p_from = fk(rot, rest_from)
    w_to, p_to = fk(moved, rest_to)
    direction = lambda p, j, k: torch.nn.functional.normalize(p[:, k] - p[:, j], dim=-1)   # noqa: E731
    for j in range(24):
        if len(CHILDREN[j]) == 1:    # a chain's bone points where it pointed on the first body
            k = CHILDREN[j][0]
            cos = (direction(p_from, j, k) * direction(p_to, j, k)).sum(-1)
            assert cos.min() > 1 - 1e-6, (j, cos.min())
        if not CHILDREN[j]:          # the head, hands and feet keep their world orientation
            assert (w_from[:, j] - w_to[:, j]).abs().max() < 1e-5, j
    changed = np.degrees(torch.arccos(((rot[:, 3] * moved[:, 3]).sum((-1, -2)) - 1).clamp(-2, 2) / 2)).mean()
    assert changed > 2.0, changed    # spine1's rotation did change: the two spines differ
    same = transfer_pose(rot, rest_from, rest_from)
    assert (same - rot).abs().max() < 1e-5


def test_carrying_a_retargeted_pose_to_another_body_agrees_with_retargeting_onto_it():
    from tests.core.conftest import SHARED_MOCAP
    from models.motion.bvh import read_bvh
    from models.motion.retarget import retarget
    from models.core.rotations import axis_angle_to_matrix, geodesic_angle
    from models.training.batches import transfer_pose

    clip = SHARED_MOCAP / "cmu_train" / "cmu_walking_20.bvh"
    if not clip.exists():
        pytest.skip("../shared/data/mocap is not here (a real clip to retarget onto two bodies)")
    motion = read_bvh(clip)
    out = {}
    for gender in ("neutral", "male"):
        body = load_body_model(open_body_path(gender))
        r = retarget(motion, body)
        rot = axis_angle_to_matrix(r.poses[1::8])
        out[gender] = rot, np.broadcast_to(body.rest_joints(r.betas), (len(rot), 24, 3)).copy()
    (rot_n, rest_n), (rot_m, rest_m) = out["neutral"], out["male"]
    moved = transfer_pose(*(torch.tensor(a) for a in (rot_n, rest_n, rest_m))).numpy()
    before = np.degrees(geodesic_angle(rot_n, rot_m)).mean()
    after = np.degrees(geodesic_angle(moved, rot_m)).mean()
    # the retarget also turns knees and elbows by their hinges, which this does not: a degree is left
    assert before > 4.0 and after < 1.0, (before, after)


def test_training_batches_carry_each_pose_from_its_clips_body():
    from models.training.batches import Augmentation, TorchBody, sample_batch, transfer_pose
    from models.training.data import PoseData

    body = TorchBody()
    source = body.rest_joints(2 * torch.ones(1, 10), torch.zeros(1, dtype=torch.long))   # the clip's own body
    poses = 0.3 * torch.randn(50, 24, 3, generator=torch.Generator().manual_seed(1))
    data = PoseData(poses, np.zeros(50, int), ["a"], "", rest=source)
    plain, rest = sample_batch(data, body, 200, torch.Generator().manual_seed(0))
    carried, rest_2 = sample_batch(data, body, 200, torch.Generator().manual_seed(0), Augmentation(transfer=True))
    assert torch.equal(rest, rest_2)
    mirrored = source[:, list(MIRROR)] * torch.tensor([-1.0, 1.0, 1.0])
    err = torch.stack([(transfer_pose(plain, s.expand(200, 24, 3), rest) - carried).abs().amax((1, 2, 3))
                       for s in (source, mirrored)])
    assert err.min(0).values.max() < 1e-5           # each pose carried from its clip's body (mirrored when it is)
    assert (carried - plain).abs().max() > 0.05     # and that did change the rotations


def test_a_trunk_leaned_at_the_hips_keeps_the_legs_and_leans_forward():
    from models.core.skeleton import JOINT_INDEX
    from models.training.batches import Augmentation, TorchBody, fk, lean_at_hips, sample_batch
    from models.training.data import PoseData
    from models.training.rotations import axis_angle_to_matrix

    gen = torch.Generator().manual_seed(1)
    rot = axis_angle_to_matrix(0.3 * torch.randn(4, 24, 3, generator=gen))
    rest = TorchBody().rest_joints(torch.zeros(4, 10))
    angle = torch.tensor([0.0, 0.5, 1.2, -0.3])
    world, pos = fk(rot, rest)
    leaned_world, leaned = fk(lean_at_hips(rot, angle), rest)
    legs = [JOINT_INDEX[f"{s}_{j}"] for s in ("left", "right") for j in ("hip", "knee", "ankle", "foot")]
    assert torch.allclose(leaned_world[:, legs], world[:, legs], atol=1e-5)     # the legs keep their turn
    assert torch.allclose(leaned_world[0], world[0], atol=1e-6)                 # no lean: no change
    # the neck moves about the pelvis's left-right axis by the angle, forward for a positive one
    axis = world[:, 0, :, 0]
    up = lambda p: p[:, JOINT_INDEX["neck"]] - p[:, 0]                          # noqa: E731
    before, after = up(pos), up(leaned)
    cos = (before * after).sum(-1) / (before.norm(dim=-1) * after.norm(dim=-1))
    forward = torch.cross(axis, before, dim=-1)                                 # the way a forward lean goes
    assert torch.allclose(torch.acos(cos.clamp(-1, 1))[1:], angle.abs()[1:], atol=0.05)
    assert ((after - before) * forward).sum(-1)[1:3].min() > 0 and ((after - before) * forward).sum(-1)[3] < 0
    # as an augmentation: its share of a batch leans, the rest is as drawn without it
    data = PoseData(torch.zeros(1, 24, 3), np.zeros(1, int), ["a"], "")
    plain, _ = sample_batch(data, TorchBody(), 400, torch.Generator().manual_seed(2))
    some, _ = sample_batch(data, TorchBody(), 400, torch.Generator().manual_seed(2), Augmentation(lean=0.25))
    changed = (some - plain).abs().amax((1, 2, 3)) > 1e-6
    assert 0.15 < changed.float().mean() < 0.35
