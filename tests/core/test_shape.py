"""The person's proportions over many frames (models.photo.shape.clip_shape), on keypoints
projected from a body of known shape through a known camera."""
from types import SimpleNamespace

import numpy as np
import pytest

from models.body.measure import measure
from models.core.kinematics import forward_kinematics
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import PARENTS
from models.photo import shape
from models.photo.camera import default_camera
from models.photo.detect import Detection
from models.photo.keypoints import KEYPOINTS, body_points

TRUE_BETAS = np.array([0.0, 1.5, -1.2, 0.8, 0.0, 0.6, 0.0, 0.0, -0.8, 0.0])


def seen_frames(body, betas, count, rng):
    """(fits, detections, camera): `count` poses of the body of `betas`, 4 m before a 720p
    camera and turned every way, their keypoints projected exactly; the fits stand for a
    first pass made with the average body (its pelvis where the true one is)."""
    camera = default_camera(1280, 720)
    rest, neutral = body.rest_joints(betas), body.rest_joints(np.zeros(10))
    points, kept = body_points(rest, body, betas)
    fits, detections = [], []
    for _ in range(count):
        turn = rng.normal(0.0, 0.35, (24, 3))
        turn[0] = [0.0, rng.uniform(-np.pi, np.pi), 0.0]
        local = axis_angle_to_matrix(turn)
        trans = np.array([rng.uniform(-0.5, 0.5), -0.2, -4.0]) - rest[0]
        pixels = camera.project(points.positions(forward_kinematics(local, rest, PARENTS, trans)))
        image_xy = np.full((33, 2), np.nan)
        image_xy[[KEYPOINTS[k][0] for k in kept]] = pixels
        lo, hi = pixels.min(axis=0), pixels.max(axis=0)
        detections.append(Detection(world=np.zeros((33, 3)), image_xy=image_xy, visibility=np.ones(33),
                                    bbox=(lo[0], lo[1], hi[0], hi[1])))
        fits.append(SimpleNamespace(local_rot=local, trans=trans + rest[0] - neutral[0]))
    return fits, detections, camera


def proportion_error(body, betas, truth):
    return float(np.mean(np.abs(shape.proportions(body, betas) / shape.proportions(body, truth) - 1.0)))


def test_the_proportions_come_back_at_the_starting_height(open_body, rng):
    """From 20 frames of exact keypoints of a body far from the average one, the bones'
    proportions land less than a third as far from the truth as the average body's, and the
    body keeps the height it started with (one camera cannot see the size)."""
    fits, detections, camera = seen_frames(open_body, TRUE_BETAS, 20, rng)
    fitted, note = shape.clip_shape(fits, detections, camera, open_body, np.zeros(10))
    assert note == ""
    before = proportion_error(open_body, np.zeros(10), TRUE_BETAS)
    assert before > 0.02
    assert proportion_error(open_body, fitted, TRUE_BETAS) < before / 3
    assert measure(open_body, fitted).height == pytest.approx(measure(open_body, np.zeros(10)).height, abs=1e-3)


def test_too_few_frames_keep_the_shape(open_body, rng):
    fits, detections, camera = seen_frames(open_body, TRUE_BETAS, shape.MIN_SHAPE_FRAMES - 1, rng)
    start = np.full(10, 0.3)
    fitted, note = shape.clip_shape(fits, detections, camera, open_body, start)
    assert np.array_equal(fitted, start) and f"needs {shape.MIN_SHAPE_FRAMES}" in note
    with pytest.raises(ValueError):
        shape.clip_shape(fits[:3], detections, camera, open_body, start)


def test_a_known_height_is_kept_with_the_proportions(open_body, rng):
    """Told the person's height, the fitted body has that height (to 1 mm) and the proportions
    it has without it (bone by bone within 0.5% on average): height and proportions are
    fitted apart."""
    fits, detections, camera = seen_frames(open_body, TRUE_BETAS, 20, rng)
    tall, _ = shape.clip_shape(fits, detections, camera, open_body, np.zeros(10), height=1.85)
    plain, _ = shape.clip_shape(fits, detections, camera, open_body, np.zeros(10))
    assert measure(open_body, tall).height == pytest.approx(1.85, abs=1e-3)
    assert abs(measure(open_body, plain).height - 1.85) > 0.05
    assert proportion_error(open_body, tall, plain) < 0.005
