"""The photo lifter (2D keypoints to 3D joints): numpy and torch agree, its input forgets the
person's distance and the lens, the shipped weights put held-out poses' joints at their depths,
and too few keypoints are refused by name."""
import numpy as np
import pytest
from conftest import smoke_train

from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.core.metrics import procrustes_error
from models.core.skeleton import PARENTS
from models.photo import lifter
from models.photo.camera import default_camera
from models.photo.detect import Detection
from models.photo.keypoints import KEYPOINTS

torch = pytest.importorskip("torch")


def random_views(b=5, seed=0):
    rng = np.random.default_rng(seed)
    rays = rng.normal(scale=0.1, size=(b, lifter.NUM_KEYPOINTS, 2))
    seen = (rng.random((b, lifter.NUM_KEYPOINTS)) > 0.3).astype(np.float64)
    seen[:, :lifter.MIN_SEEN] = 1.0
    return rays, seen


def test_numpy_lifter_matches_torch():
    from models.training.lifter import LifterTorch, features

    torch.manual_seed(3)
    net = LifterTorch(width=32, blocks=2).double()
    rays, seen = random_views()
    x_torch = features(torch.from_numpy(rays), torch.from_numpy(seen))
    x_numpy = lifter.features(rays, seen)
    assert np.abs(x_torch.numpy() - x_numpy).max() < 1e-9
    want = net(x_torch).detach().numpy()
    from models.ik.nn import prepare
    got = lifter.PhotoLifter(prepare(net.numpy_params(), np.float64), net.config, mirror=False)(x_numpy)
    assert got.shape == (5, 24, 3)
    assert np.abs(got - want).max() < 1e-4 and np.abs(want).max() > 1e-3


def test_mirrored_picture_gets_the_mirrored_joints():
    from models.core.skeleton import JOINT_INDEX, MIRROR
    from models.ik.nn import prepare
    from models.training.lifter import LifterTorch

    torch.manual_seed(4)
    net = LifterTorch(width=32, blocks=1).double()
    params = prepare(net.numpy_params(), np.float64)
    rays, seen = random_views(b=3)
    # the picture mirrored about its principal point: every keypoint on the other side
    names = [n for _, n, _ in KEYPOINTS]
    assert names[lifter.KEYPOINT_MIRROR[names.index("left_elbow")]] == "right_elbow"
    assert names[lifter.KEYPOINT_MIRROR[names.index("nose")]] == "nose"
    flipped = rays[:, list(lifter.KEYPOINT_MIRROR)] * np.array([-1.0, 1.0])
    x, x_flipped = lifter.features(rays, seen), lifter.features(flipped, seen[:, list(lifter.KEYPOINT_MIRROR)])
    assert np.allclose(lifter.mirrored(x), x_flipped)
    sym = lifter.PhotoLifter(params, net.config)
    a, b = sym(x), sym(x_flipped)
    back = b[:, list(MIRROR)] * np.array([-1.0, 1.0, 1.0])
    assert np.abs(a - back).max() < 1e-6
    assert np.allclose(a[:, JOINT_INDEX["left_wrist"], 0], -b[:, JOINT_INDEX["right_wrist"], 0], atol=1e-6)
    # the plain network is not symmetric, so the test above is not met by chance
    raw = lifter.PhotoLifter(params, net.config, mirror=False)
    assert np.abs(raw(x) - raw(x_flipped)[:, list(MIRROR)] * np.array([-1.0, 1.0, 1.0])).max() > 1e-3


def test_features_forget_distance_and_ignore_unseen_rays():
    rays, seen = random_views(b=1)
    rays[..., 0] += 0.05                                   # the person off the camera's axis
    centre = (rays * seen[..., None]).sum(-2) / seen.sum(-1, keepdims=True)
    further = centre[:, None] + 0.5 * (rays - centre[:, None])   # the same person twice as far
    a, b = lifter.features(rays, seen), lifter.features(further, seen)
    assert np.allclose(a, b)
    moved = rays.copy()
    moved[seen == 0] += 7.0                                # a keypoint not seen carries nothing
    assert np.allclose(lifter.features(moved, seen), a)


def detection_of(points, camera):
    """A Detection whose KEYPOINT_LANDMARKS are `points` (K, 3, camera frame) projected."""
    xy = np.zeros((33, 2))
    vis = np.zeros(33)
    xy[list(lifter.KEYPOINT_LANDMARKS)] = camera.project(points)
    vis[list(lifter.KEYPOINT_LANDMARKS)] = 0.95
    seen = xy[vis > 0]
    return Detection(world=np.zeros((33, 3)), image_xy=xy, visibility=vis, bbox=(*seen.min(0), *seen.max(0)))


def test_shipped_lifter_puts_held_out_joints_at_their_depths(open_body, held_out_poses):
    """Held-out capture on the open body, 4 m in front of a level camera: the lifted joints'
    depths (from the pelvis) are nearer the truth than a flat body's (all at the pelvis's
    depth), and the lifted shape is near the true one."""
    from models.photo.keypoints import body_points

    rot, rest, _, _ = held_out_poses
    camera = default_camera(1920, 1080)
    points_on, _ = body_points(rest[0], open_body, None)
    depth_err, flat_err, pa = [], [], []
    for t in range(0, len(rot), max(len(rot) // 40, 1)):
        fk = forward_kinematics(rot[t], rest[t], PARENTS)
        place = np.array([0.3, 0.1, -4.0]) - fk.positions[0]
        truth = fk.positions + place
        lifted = lifter.lift_detection(detection_of(points_on.positions(fk) + place, camera), camera)
        rel = truth[:, 2] - truth[0, 2]
        depth_err.append(np.abs(lifted[:, 2] - lifted[0, 2] - rel).mean())
        flat_err.append(np.abs(rel).mean())
        pa.append(procrustes_error(lifted, truth - truth[0]))
    assert len(depth_err) >= 20
    assert np.mean(depth_err) < 0.8 * np.mean(flat_err), (np.mean(depth_err), np.mean(flat_err), np.mean(pa))
    assert 1e3 * np.mean(pa) < 80.0, np.mean(pa)


def test_too_few_keypoints_are_refused_by_count():
    camera = default_camera(640, 480)
    det = detection_of(np.tile([0.0, 0.0, -3.0], (lifter.NUM_KEYPOINTS, 1)), camera)
    vis = np.zeros(33)
    vis[list(lifter.KEYPOINT_LANDMARKS[:lifter.MIN_SEEN - 1])] = 0.9
    det = Detection(world=det.world, image_xy=det.image_xy, visibility=vis, bbox=det.bbox)
    with pytest.raises(SmplIkError, match=f"only {lifter.MIN_SEEN - 1} keypoints"):
        lifter.lift_detection(det, camera)


def test_weights_of_another_network_are_refused(tmp_path):
    from models.ik.nn import save_weights

    save_weights(tmp_path / "w.npz", {"x": np.zeros(2, np.float32)}, {"arch": "smplik-v9"})
    with pytest.raises(SmplIkError, match="photo-lifter"):
        lifter.PhotoLifter.load(tmp_path / "w.npz")


def test_smoke_training_lowers_the_loss(tmp_path, rng):
    record, out = smoke_train("train_lifter.py", tmp_path, rng, ("--width", "64", "--blocks", "1"))
    assert record["validation"]["last_loss"] < 0.7 * record["validation"]["first_loss"]
    net = lifter.PhotoLifter.load(out)          # allow_pickle=False inside load_weights
    assert net(np.zeros(lifter.INPUT_DIM)).shape == (1, 24, 3)
