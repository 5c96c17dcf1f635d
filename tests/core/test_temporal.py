"""Temporal smoothing of solved poses."""
import numpy as np

from models.core.rotations import axis_angle_to_matrix, geodesic_angle
from models.motion.temporal import smooth_poses


def test_smoothing_removes_jitter_and_keeps_a_steady_motion(rng):
    t = np.linspace(0, 1, 60)
    aa = np.zeros((60, 24, 3))
    aa[:, 5, 0] = 1.2 * t                                   # a steady bend
    clean = axis_angle_to_matrix(aa)
    noisy = axis_angle_to_matrix(aa + rng.normal(scale=0.05, size=aa.shape))
    trans = np.stack([t, 0 * t, 0 * t], -1)
    smooth, smooth_trans = smooth_poses(noisy, trans + rng.normal(scale=0.01, size=trans.shape), sigma=2.0)
    before = geodesic_angle(noisy, clean).mean()
    after = geodesic_angle(smooth, clean)[5:-5].mean()
    assert after < 0.5 * before
    assert np.abs(smooth_trans - trans)[5:-5].max() < 0.02
    assert np.allclose(smooth @ np.swapaxes(smooth, -1, -2), np.eye(3), atol=1e-9)  # still rotations
    same, same_trans = smooth_poses(clean, trans, sigma=0.0)
    assert same is not None and np.array_equal(same, clean) and np.array_equal(same_trans, trans)


def test_turning_past_half_a_turn_does_not_average_through_the_wrong_way(rng):
    aa = np.zeros((40, 24, 3))
    aa[:, 0, 1] = np.linspace(2.8, 3.6, 40)   # crosses pi: quaternion signs flip on the way
    rot = axis_angle_to_matrix(aa)
    smooth, _ = smooth_poses(rot, np.zeros((40, 3)), sigma=1.5)
    assert np.degrees(geodesic_angle(smooth, rot)).max() < 1.0


def test_local_line_keeps_a_drift_to_the_ends_and_calms_an_excursion():
    """A steady drift (a walk toward the camera, 3 cm a frame) comes out unchanged to the last
    frame, where a Gaussian average of the same width (ends held) trails it by centimetres; a
    0.4 m excursion over 5 frames comes out under a third as deep."""
    from models.motion.temporal import filter_in_time, gaussian_kernel, local_linear

    drift = 2.0 + 0.03 * np.arange(60)
    assert np.abs(local_linear(drift, 6.0) - drift).max() < 1e-9
    assert abs(filter_in_time(drift, gaussian_kernel(6.0))[-1] - drift[-1]) > 0.05
    bent = drift.copy()
    bent[28:33] -= 0.4
    assert np.abs(local_linear(bent, 6.0) - drift).max() < 0.4 / 3
    assert np.array_equal(local_linear(drift[:2], 6.0), drift[:2])
