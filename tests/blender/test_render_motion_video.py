"""scripts/render_motion_video.py renders what its truth says: on a small render of a held-out
clip every true joint, projected through the truth's camera, lands on the body's silhouette,
the silhouette's box is the joints' box grown by no more than the body's flesh beyond its
joints, and the video has the frames, size and rate the truth gives."""
from pathlib import Path

import numpy as np
import pytest

from benchmarks import render as rmv

CLIP = Path(__file__).resolve().parents[3] / "shared" / "data" / "mocap" / "cmu_varied" / "002_05.bvh"
SIZE = (480, 270)
FRAMES = 3
# The body's colour is warm, the floor and background grey or cool: a pixel is the body's where
# red exceeds blue by this much (the body's darkest shading keeps 25 or more, the greys 0 or less)
WARM = 15
# A joint may land this close to the silhouette: anti-aliased, MPEG-4-coded edges, and a hand
# seen edge-on is a few pixels wide at this size (its joint lands 2 px out on Blender 5.0, 3 on 4.4)
NEAR_PX = 3
# No point of the body lies further than this beyond its joints' box: the crown above the head
# joint (about 0.2 m on the open body), the soles below the ankles and the fingertips past the hand
# joints (0.1 m), the flesh outside the outermost joints (0.1 m)
FLESH_M = 0.25


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    if not CLIP.is_file():
        pytest.skip(f"the shared motion capture ({CLIP}) is absent")
    cv2 = pytest.importorskip("cv2")
    video = tmp_path_factory.mktemp("video") / "clip.mp4"
    truth = rmv.render_clip(CLIP, video, rmv.RenderOptions(frames=FRAMES, resolution=SIZE), reuse=False)
    capture = cv2.VideoCapture(str(video))
    frames = []
    while True:
        ok, bgr = capture.read()
        if not ok:
            break
        frames.append(bgr.astype(int))
    rate = capture.get(cv2.CAP_PROP_FPS)
    capture.release()
    return truth, frames, rate


def silhouette(bgr):
    return bgr[..., 2] - bgr[..., 0] > WARM


def test_the_video_has_the_frames_size_and_rate_of_the_truth(clip):
    truth, frames, rate = clip
    assert len(frames) == len(truth.frames) == FRAMES
    assert frames[0].shape == (SIZE[1], SIZE[0], 3)
    assert (truth.camera.width, truth.camera.height) == SIZE
    assert rate == pytest.approx(truth.fps, rel=1e-3)


def test_every_joint_lands_on_the_rendered_body(clip):
    from scipy.ndimage import binary_dilation

    truth, frames, _ = clip
    for t, bgr in enumerate(frames):
        body = binary_dilation(silhouette(bgr), iterations=NEAR_PX)
        assert body.mean() < 0.2                      # the body, not the picture
        px = np.rint(truth.camera.project(truth.joints[t])).astype(int)
        assert (px >= 0).all() and (px < SIZE).all()
        on = body[px[:, 1], px[:, 0]]
        assert on.all(), f"frame {t}: joints {np.flatnonzero(~on)} off the body"
        # the check can tell: the joints mirrored left-right about the body's middle miss it
        xs = np.nonzero(body)[1]
        mirrored = np.clip(np.rint(2 * xs.mean() - px[:, 0]).astype(int), 0, SIZE[0] - 1)
        assert not body[px[:, 1], mirrored].all()


def test_the_silhouette_is_the_joints_box_and_the_flesh_around_it(clip):
    truth, frames, _ = clip
    for t, bgr in enumerate(frames):
        ys, xs = np.nonzero(silhouette(bgr))
        px = truth.camera.project(truth.joints[t])
        depth = -truth.joints[t, 0, 2]
        flesh = FLESH_M * truth.camera.focal_px / depth + NEAR_PX   # pixels at the pelvis's depth
        inner = np.concatenate([px.min(0) - [xs.min(), ys.min()], [xs.max(), ys.max()] - px.max(0)])
        assert (inner >= -NEAR_PX).all(), inner        # the joints lie inside the silhouette's box
        assert (inner <= flesh).all(), (inner, flesh)  # ... which reaches no further than the flesh
