"""The detector: single-shot decoding and rotated squares (models/photo/ssd.py) on constructed
inputs, the model files' checks (models/photo/runtime.py), and the landmarker against MediaPipe
0.10.21's own landmarks of real photos (tests/core/data/legacy_pose_landmarks.npz, written by
scripts/benchmark_detector.py --reference with the legacy solution)."""
import shutil
from pathlib import Path

import numpy as np
import pytest

from models.core.errors import SmplIkError
from models.photo import blazepose, runtime, ssd

DATA = Path(__file__).resolve().parent / "data"
IMAGES = Path(__file__).resolve().parents[3] / "shared" / "data" / "images"


# --- anchors, decoding, suppression ---------------------------------------------------------
def test_the_pose_detectors_anchors_match_its_outputs():
    """2254 anchors (the model's output rows): a 28 x 28 grid with two anchors a cell, 14 x 14
    with two, then 7 x 7 with six (three layers of stride 32), each cell's centre."""
    centers = ssd.anchor_centers(blazepose.ANCHORS)
    assert centers.shape == (2254, 2)
    np.testing.assert_allclose(centers[:4], [[0.5 / 28, 0.5 / 28]] * 2 + [[1.5 / 28, 0.5 / 28]] * 2)
    np.testing.assert_allclose(centers[1568], [0.5 / 14, 0.5 / 14])
    np.testing.assert_allclose(centers[1568 + 392:1568 + 392 + 6], [[0.5 / 7, 0.5 / 7]] * 6)
    np.testing.assert_allclose(centers[-1], [6.5 / 7, 6.5 / 7])


def test_decode_places_boxes_and_keypoints_relative_to_their_anchor():
    anchors = np.array([[0.25, 0.5], [0.75, 0.5]])
    raw = np.zeros((2, 4 + 2 * 2))
    raw[1] = [22.4, -11.2, 44.8, 22.4, 0.0, 0.0, 11.2, 22.4]    # pixels of a 224 input
    found = ssd.decode(raw, [-5.0, 3.0], anchors, 224, ssd.Decoding(num_keypoints=2, min_score=0.5))
    assert len(found) == 1 and found[0].score == pytest.approx(1 / (1 + np.exp(-3.0)))
    np.testing.assert_allclose(found[0].box, [0.75 + 0.1 - 0.1, 0.5 - 0.05 - 0.05, 0.75 + 0.1 + 0.1, 0.5 - 0.05 + 0.05])
    np.testing.assert_allclose(found[0].keypoints, [[0.75, 0.5], [0.8, 0.6]])


def test_weighted_suppression_merges_overlaps_by_score_and_keeps_the_rest():
    def cand(score, x, kp):
        return ssd.Candidate(score, np.array([x, 0.0, x + 1.0, 1.0]), np.array([[kp, 0.0]]))

    merged = ssd.weighted_nms([cand(0.6, 0.1, 1.0), cand(0.9, 0.0, 0.0), cand(0.7, 5.0, 7.0)], 0.3)
    assert [m.score for m in merged] == [0.9, 0.7]
    np.testing.assert_allclose(merged[0].box[0], (0.9 * 0.0 + 0.6 * 0.1) / 1.5)
    np.testing.assert_allclose(merged[0].keypoints[0, 0], 0.6 / 1.5)
    np.testing.assert_allclose(merged[1].keypoints, [[7.0, 0.0]])


def test_letterbox_round_trip():
    for width, height in ((800, 600), (600, 800), (500, 500)):
        left, top = ssd.letterbox(width, height)
        assert min(left, top) == 0.0
        side = max(width, height)
        pixel = np.array([[123.0, 45.0]])
        boxed = (pixel + ((side - width) / 2, (side - height) / 2)) / side   # where the square shows it
        np.testing.assert_allclose(ssd.unletterbox(boxed, width, height) * (width, height), pixel)


# --- rotated squares ------------------------------------------------------------------------
def test_aligned_rect_turns_the_size_point_upright():
    width, height = 400, 200
    up = ssd.aligned_rect((0.5, 0.5), (0.5, 0.3), width, height, scale=1.0)   # straight above
    assert up.rotation == pytest.approx(0.0)
    assert up.size[0] * width == pytest.approx(2 * 40) and up.size[1] * height == pytest.approx(2 * 40)
    right = ssd.aligned_rect((0.5, 0.5), (0.6, 0.5), width, height, scale=1.25)   # to the right
    assert right.rotation == pytest.approx(np.pi / 2)
    assert right.size[0] * width == pytest.approx(2 * 40 * 1.25)


@pytest.mark.parametrize("rotation", [0.0, 0.7, -2.0])
def test_a_point_in_the_crop_maps_back_to_where_it_is_in_the_image(rotation):
    """A bright dot drawn in a photo-sized image, cropped through a turned square, is found in
    the crop; to_image puts it back where it was drawn (within half a pixel; pixel centres at
    whole coordinates in both, as OpenCV places them)."""
    pytest.importorskip("cv2", reason="the crop needs OpenCV (requirements-photo.txt)")
    rgb = np.zeros((300, 400, 3), np.uint8)
    rgb[118:121, 248:251] = 255                      # centred on pixel (249, 119)
    rect = ssd.Rect(center=(0.55, 0.45), size=(120 / 400, 120 / 300), rotation=rotation)
    tensor = ssd.crop(rgb, rect, 64, (0.0, 1.0), border_zero=True)
    assert tensor.shape == (64, 64, 3) and tensor.dtype == np.float32 and tensor.max() <= 1.0
    weight = tensor[..., 0]
    rows, cols = np.mgrid[:64, :64]
    in_crop = np.array([(cols * weight).sum(), (rows * weight).sum()]) / weight.sum()
    back = ssd.to_image(in_crop / 64, rect) * (400, 300)
    np.testing.assert_allclose(back, [249.0, 119.0], atol=0.5)


def test_world_points_turn_with_the_square_about_z_only():
    p = np.array([[1.0, 0.0, 0.3]])
    np.testing.assert_allclose(ssd.rotate_xy(p, np.pi / 2), [[0.0, 1.0, 0.3]], atol=1e-12)


def test_heatmap_refinement_moves_a_point_to_its_peak_only_when_confident():
    heat = np.full((64, 64, 2), -10.0)
    heat[20, 30, 0] = heat[20, 30, 1] = 10.0           # a sure peak for both points
    heat[20, 31, 1] = 10.0
    points = np.array([[29.0 / 64, 21.0 / 64], [32.0 / 64, 19.0 / 64]])
    out = ssd.refine_with_heatmap(points, heat)
    np.testing.assert_allclose(out[0], [30 / 64, 20 / 64], atol=1e-3)
    np.testing.assert_allclose(out[1], [30.5 / 64, 20 / 64], atol=1e-3)
    unsure = np.full((64, 64, 2), -10.0)
    np.testing.assert_array_equal(ssd.refine_with_heatmap(points, unsure), points)
    outside = np.array([[-0.2, 0.5], [1.2, 0.5]])
    np.testing.assert_array_equal(ssd.refine_with_heatmap(outside, heat), outside)
    edge = np.full((64, 64, 2), -10.0)
    edge[62, 10, :] = 10.0                              # a peak on the heatmap's last rows
    below = np.array([[10.5 / 64, 65.5 / 64], [10.5 / 64, 1.5]])   # 3 rows past the edge; far past it
    out = ssd.refine_with_heatmap(below, edge)
    np.testing.assert_allclose(out[0], [10 / 64, 62 / 64], atol=1e-3)   # the window reaches back in
    np.testing.assert_array_equal(out[1], below[1])


# --- model files ----------------------------------------------------------------------------
@pytest.fixture
def weights_copy(tmp_path, monkeypatch):
    """The model files copied to a folder the test may damage, the runtime pointed at it."""
    if any(not (runtime.WEIGHTS / name).is_file() for name in runtime.record()):
        pytest.skip("the detector's model files are not fetched (make detector)")
    for name in runtime.record():
        shutil.copy(runtime.WEIGHTS / name, tmp_path / name)
    monkeypatch.setattr(runtime, "WEIGHTS", tmp_path)
    runtime.shared_model.cache_clear()
    yield tmp_path
    runtime.shared_model.cache_clear()


def test_a_missing_or_damaged_model_file_is_named(weights_copy):
    name = blazepose.LANDMARK_MODEL
    assert runtime.model_path(name) == weights_copy / name
    data = (weights_copy / name).read_bytes()
    (weights_copy / name).write_bytes(data[:-1] + bytes([data[-1] ^ 1]))        # one bit flipped
    with pytest.raises(SmplIkError, match=rf"model file {name} is damaged .*reinstall the extension"):
        runtime.model_path(name)
    (weights_copy / name).unlink()
    with pytest.raises(SmplIkError, match=rf"model file {name} is missing .*reinstall the extension"):
        runtime.model_path(name)
    problem = runtime.unavailable()
    assert problem is not None and name in str(problem)
    with pytest.raises(SmplIkError, match="not one of the detector's models"):
        runtime.model_path("other.tflite")


def test_every_recorded_model_loads_and_takes_a_square_rgb_input(weights_copy, detector):
    for name, entry in runtime.record().items():
        model = runtime.Model(name)
        batch, height, width, channels = model.input_shape
        assert (batch, channels) == (1, 3) and height == width and str(height) in entry["what"]
        outputs = model.run(np.zeros(model.input_shape, np.float32))
        assert all(np.isfinite(o).all() for o in outputs)


# --- against MediaPipe 0.10.21 on real photos -----------------------------------------------
def test_the_landmarker_finds_what_mediapipe_found_on_real_photos(detector):
    """Each photo's single pass (the best-scored person) against the legacy solution's own
    output: 2D keypoints within 1% of the person's box diagonal (median over the 33, on every
    photo), 3D landmarks within 1 cm (median) and visibility within 0.02."""
    from models.photo.detect import read_image

    reference = np.load(DATA / "legacy_pose_landmarks.npz")
    if not IMAGES.is_dir():
        pytest.skip(f"{IMAGES} is not here (the shared photos)")
    landmarker = blazepose.PoseLandmarker()
    for k, name in enumerate(reference["images"]):
        path = next(p for p in (IMAGES.parent / str(name), IMAGES / "labelled" / str(name)) if p.exists())
        rgb = read_image(path)
        found = landmarker(rgb)
        assert found is not None, name
        size = np.array(rgb.shape[1::-1], dtype=np.float64)
        old = reference["xy"][k] * size
        diagonal = np.hypot(*(old.max(0) - old.min(0)))
        gap = np.median(np.linalg.norm(found.xy * size - old, axis=1)) / diagonal
        assert gap < 0.01, (name, gap)
        assert np.median(np.linalg.norm(found.world - reference["world"][k], axis=1)) < 0.01, name
        assert np.median(np.abs(found.visibility - reference["visibility"][k])) < 0.02, name
