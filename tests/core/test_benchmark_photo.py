"""scripts/benchmark_photo.py and benchmarks/photo_*: its measures on poses with known answers, its
reading of labels, and runs on a labels.json made here around shared photos (the fit path through
a stand-in)."""
import json
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks import photo_labels, photo_run, photo_score
from models.core.errors import SmplIkError
from models.core.kinematics import forward_kinematics
from models.core.rotations import axis_angle_to_matrix
from models.core.skeleton import PARENTS
from models.photo.camera import camera_for_image, default_camera
from models.photo.detect import box_iou

ROOT = Path(__file__).resolve().parents[2]

LABELLED = ROOT.parent / "shared" / "data" / "images" / "labelled" / "3dhp"
PYTHON = ROOT / ".venv" / "bin" / "python"
PYTHON = str(PYTHON) if PYTHON.exists() else sys.executable
CAMERA = default_camera(1000, 800)


def benchmark_photo(argv):
    """scripts/benchmark_photo.py's main(argv), run in this process (scripts/ is not a package)."""
    return runpy.run_path(str(ROOT / "scripts" / "benchmark_photo.py"))["main"](argv)


@pytest.fixture(scope="module")
def pose(open_body):
    """name -> (3,) of the open body at rest 3 m in front of a camera: the points the labels name."""
    rest = open_body.rest_joints(np.zeros(10))
    points = photo_run.smpl_points(rest, np.broadcast_to(np.eye(3), (24, 3, 3)),
                                   photo_run.head_offsets(open_body, rest))
    return {n: p + [0.0, -0.8, -3.0] for n, p in points.items()}


def frame_of(points_3d, points_2d=None, box=(300.0, 100.0, 700.0, 700.0)):
    return photo_labels.LabelledFrame(image=Path("x.jpg"), joints_3d=dict(points_3d),
                            joints_2d=dict(points_2d if points_2d is not None else
                                           photo_run.projected(points_3d, CAMERA)), box=box)


def turned(points, axis_angle, about):
    r = axis_angle_to_matrix(np.asarray(axis_angle, dtype=np.float64))
    return {n: about + r @ (p - about) for n, p in points.items()}


def test_a_pose_against_itself_scores_nothing(pose):
    s = photo_score.score(photo_score.Estimate(pose, photo_run.projected(pose, CAMERA)), frame_of(pose))
    assert s["mpjpe_mm"] == pytest.approx(0, abs=1e-9) and s["pa_mpjpe_mm"] == pytest.approx(0, abs=1e-6)
    assert s["limb_deg"] == pytest.approx(0, abs=1e-5) and s["head_deg"] == pytest.approx(0, abs=1e-5)
    assert s["pck2d_gt"] == 1.0 and s["err2d_px"] == 0 and s["head_construction"] == "face"
    assert len(s["limbs_deg"]) == 8


def test_a_turned_scaled_pose_has_no_procrustes_error_but_a_joint_error(pose):
    hips = 0.5 * (pose["left_hip"] + pose["right_hip"])
    # 40 degrees about the left-right axis (the head's forward is square to it), then scaled and moved
    other = {n: 1.2 * p + [0.3, 0.1, -1.0] for n, p in turned(pose, [np.radians(40), 0.0, 0.0], hips).items()}
    s = photo_score.score(photo_score.Estimate(other), frame_of(pose))
    assert s["pa_mpjpe_mm"] == pytest.approx(0, abs=1e-6)
    assert s["mpjpe_mm"] > 50 and s["limb_deg"] > 10
    assert s["head_deg"] == pytest.approx(40, abs=1e-3)
    assert "pck2d_gt" not in s   # no projection, no 2D figure


def test_a_forearm_bent_90_degrees_is_90_degrees_off(pose):
    bent = dict(pose)
    elbow, wrist = pose["left_elbow"], pose["left_wrist"]
    square = np.cross(wrist - elbow, [0.0, 1.0, 0.0])
    bent["left_wrist"] = elbow + np.linalg.norm(wrist - elbow) * square / np.linalg.norm(square)
    s = photo_score.score(photo_score.Estimate(bent), frame_of(pose))
    assert s["limbs_deg"]["left_forearm"] == pytest.approx(90, abs=1e-6)
    assert all(v == pytest.approx(0, abs=1e-5) for k, v in s["limbs_deg"].items() if k != "left_forearm")
    assert s["limb_deg"] == pytest.approx(90 / 8, abs=1e-6)


def test_pck_counts_the_joints_within_a_tenth_of_the_box_diagonal(pose):
    frame = frame_of(pose)
    flat = dict(frame.joints_2d)
    radius = photo_score.PCK_FRACTION * frame.box_diagonal_px
    assert frame.box_diagonal_px == pytest.approx(np.hypot(400, 600))
    flat["left_wrist"] = flat["left_wrist"] + [1.5 * radius, 0.0]    # out
    flat["right_knee"] = flat["right_knee"] + [0.0, 0.9 * radius]    # still in
    flat["neck"] = np.array([np.nan, np.nan])                        # not projected: out
    s = photo_score.score(photo_score.Estimate(pose, flat), frame)
    assert s["pck2d_gt"] == pytest.approx((len(photo_labels.COMPARED) - 2) / len(photo_labels.COMPARED))
    assert s["err2d_px"] == pytest.approx(2.4 * radius / (len(photo_labels.COMPARED) - 1))   # the neck has none


def test_only_visible_labelled_joints_count(pose):
    labels = {n: p for n, p in pose.items() if n != "left_wrist"}
    bent = dict(pose, left_wrist=pose["left_wrist"] + [0.0, 0.5, 0.0])
    s = photo_score.score(photo_score.Estimate(bent), frame_of(labels))
    assert s["mpjpe_mm"] == pytest.approx(0, abs=1e-9) and "left_forearm" not in s["limbs_deg"]
    no_hips = {n: p for n, p in pose.items() if n != "left_hip"}
    s = photo_score.score(photo_score.Estimate(pose), frame_of(no_hips))
    assert "mpjpe_mm" not in s and "pa_mpjpe_mm" not in s and "left_thigh" not in s["limbs_deg"]


def test_the_head_faces_by_nose_and_ears_where_the_labels_have_them(pose):
    head = pose["head_top"]
    assert {"nose", "left_ear", "right_ear"} <= set(pose)
    nodding = turned(pose, [np.radians(25), 0.0, 0.0], head)   # the whole pose: face and crown alike
    s = photo_score.score(photo_score.Estimate(nodding), frame_of(pose))
    assert s["head_construction"] == "face" and s["head_deg"] == pytest.approx(25, abs=1e-3)
    no_face = {n: p for n, p in pose.items() if n != "nose"}
    s = photo_score.score(photo_score.Estimate(nodding), frame_of(no_face))
    assert s["head_construction"] == "crown" and s["head_deg"] == pytest.approx(25, abs=1e-3)
    # the crown figure sees a bow: only the head top moves forward, 30 degrees about the neck
    bowed = dict(pose, head_top=turned({"t": pose["head_top"]}, [np.radians(30), 0.0, 0.0], pose["neck"])["t"])
    s = photo_score.score(photo_score.Estimate(bowed), frame_of(no_face))
    assert s["head_deg"] == pytest.approx(30, abs=1e-3)
    s = photo_score.score(photo_score.Estimate({n: p for n, p in pose.items() if n != "head_top"}), frame_of(no_face))
    assert "head_deg" not in s   # a method without a head top gets no crown figure


def test_labels_in_any_order_with_unknown_names(tmp_path):
    names = ["left_knee", "tail", "head_top", "right_hip", "nose", "left_ankle"]
    j3 = np.arange(18, dtype=float).reshape(6, 3)
    j2 = np.arange(12, dtype=float).reshape(6, 2)
    (tmp_path / "labels.json").write_text(json.dumps({"joint_names": names, "frames": [
        {"image": "a.jpg", "joints_3d_camera_m": j3.tolist(), "visible_3d": [1, 1, 1, 0, 1, 1],
         "joints_2d_px": j2.tolist(), "bbox_center_px": [100, 200], "bbox_scale_200px": 0.5},
        {"image": "b.jpg", "joints_2d_px": j2.tolist(), "visible_2d": [0, 1, 1, 1, 1, 1],
         "bbox_center_px": [0, 0], "bbox_scale_200px": 1.0}]}))
    a, b = photo_labels.read_labels(tmp_path)
    assert a.image == tmp_path / "a.jpg" and a.box == (50.0, 150.0, 150.0, 250.0)
    assert set(a.joints_3d) == {"left_knee", "head_top", "nose", "left_ankle"}   # tail unknown, hip hidden
    np.testing.assert_array_equal(a.joints_3d["head_top"], [6.0, -7.0, -8.0])    # OpenCV -> camera axes
    np.testing.assert_array_equal(a.joints_2d["left_ankle"], [10.0, 11.0])
    assert b.joints_3d == {} and "left_knee" not in b.joints_2d and "right_hip" in b.joints_2d
    (tmp_path / "labels.json").write_text(json.dumps({"joint_names": names, "frames": [
        {"image": "a.jpg", "joints_2d_px": j2[:5].tolist(), "bbox_center_px": [0, 0], "bbox_scale_200px": 1}]}))
    with pytest.raises(SmplIkError, match="joints_2d_px"):
        photo_labels.read_labels(tmp_path)


def test_the_up_figure_is_the_angle_to_the_labelled_up(tmp_path, pose):
    names = ["left_knee"]
    (tmp_path / "labels.json").write_text(json.dumps({"joint_names": names, "frames": [
        {"image": "a.jpg", "joints_2d_px": [[1, 2]], "bbox_center_px": [0, 0], "bbox_scale_200px": 1,
         "up_camera": [0.0, -2.0, 0.0]},
        {"image": "b.jpg", "joints_2d_px": [[1, 2]], "bbox_center_px": [0, 0], "bbox_scale_200px": 1}]}))
    a, b = photo_labels.read_labels(tmp_path)
    np.testing.assert_array_equal(a.up, [0.0, 1.0, 0.0])      # OpenCV's -Y is up, made unit
    assert b.up is None
    tilted = [0.0, np.cos(np.radians(20)), np.sin(np.radians(20))]
    frame = photo_labels.LabelledFrame(image=Path("x.jpg"), joints_3d=pose, joints_2d={}, box=(0, 0, 1, 1), up=a.up)
    assert photo_score.score(photo_score.Estimate(pose, up=np.array(tilted)), frame)["up_deg"] == pytest.approx(20.0)
    assert "up_deg" not in photo_score.score(photo_score.Estimate(pose), frame)     # no estimate, no figure
    (tmp_path / "labels.json").write_text(json.dumps({"joint_names": names, "frames": [
        {"image": "a.jpg", "joints_2d_px": [[1, 2]], "bbox_center_px": [0, 0], "bbox_scale_200px": 1,
         "up_camera": [0, 0]}]}))
    with pytest.raises(SmplIkError, match="up_camera"):
        photo_labels.read_labels(tmp_path)


def test_the_labelled_person_is_the_best_overlapping_detection():
    box = (100.0, 100.0, 300.0, 500.0)
    near, far, beside = (SimpleNamespace(bbox=b) for b in
                         ((120.0, 150.0, 280.0, 480.0), (700.0, 100.0, 900.0, 500.0), (250.0, 100.0, 450.0, 500.0)))
    person, overlap = photo_run.labelled_person([far, beside, near], box)
    assert person is near and overlap == pytest.approx(160 * 330 / (200 * 400))
    assert photo_run.labelled_person([far], box) == (None, 0.0)
    assert photo_run.labelled_person([], box) == (None, 0.0)


def test_coco_keypoints_read_as_one_2d_frame_per_person(tmp_path):
    """COCO's layout: crowds and people with no keypoint are left out, hidden keypoints (v = 1)
    count as placed, unlabelled ones (v = 0) do not; the box is x, y, w, h; people count per image."""
    kp = np.zeros((17, 3))
    kp[5] = (10, 20, 2)     # left_shoulder, visible
    kp[8] = (30, 40, 1)     # right_elbow, hidden but placed
    kp[15] = (50, 60, 0)    # left_ankle, not labelled
    note = {"image_id": 7, "iscrowd": 0, "num_keypoints": 2, "keypoints": kp.ravel().tolist(), "bbox": [5, 6, 100, 200]}
    (tmp_path / "keypoints.json").write_text(json.dumps({
        "images": [{"id": 7, "file_name": "a.jpg"}, {"id": 8, "file_name": "b.jpg"}],
        "annotations": [note, {**note, "iscrowd": 1}, {**note, "num_keypoints": 0},
                        {**note, "bbox": [0, 0, 10, 10]}, {**note, "image_id": 8}]}))
    frames = photo_labels.read_labels(tmp_path)
    assert [(f.image.name, f.person) for f in frames] == [("a.jpg", 0), ("a.jpg", 1), ("b.jpg", 0)]
    a = frames[0]
    assert a.joints_3d == {} and a.box == (5.0, 6.0, 105.0, 206.0)
    assert set(a.joints_2d) == {"left_shoulder", "right_elbow"}
    np.testing.assert_array_equal(a.joints_2d["right_elbow"], [30.0, 40.0])
    assert frames[1].box == (0.0, 0.0, 10.0, 10.0)


def test_mpii_keypoints_read_with_their_joint_order_and_box(tmp_path):
    joints = np.arange(32, dtype=float).reshape(16, 2)
    vis = [1] * 16
    vis[10] = 0             # right_wrist not labelled
    (tmp_path / "keypoints.json").write_text(json.dumps([
        {"image": "m.jpg", "joints": joints.tolist(), "joints_vis": vis, "center": [300, 400], "scale": 2.0}]))
    (frame,) = photo_labels.read_labels(tmp_path)
    assert frame.box == (100.0, 200.0, 500.0, 600.0) and frame.person is None
    np.testing.assert_array_equal(frame.joints_2d["right_ankle"], joints[0])
    np.testing.assert_array_equal(frame.joints_2d["left_wrist"], joints[15])
    assert "right_wrist" not in frame.joints_2d and "pelvis" not in frame.joints_2d   # pelvis: not used
    (tmp_path / "keypoints.json").write_text(json.dumps([{"image": "m.jpg", "joints": joints[:15].tolist(),
                                                          "joints_vis": vis, "center": [0, 0], "scale": 1}]))
    with pytest.raises(SmplIkError, match="keypoints.json.*joints"):
        photo_labels.read_labels(tmp_path)


def test_each_labelled_person_gets_a_detection_of_their_own():
    """Two people side by side, one detection's box covering both and one on the right person:
    the right person takes their own (the larger overlap, taken first), the left the wide one;
    a box nobody overlaps gets none."""
    wide, right = SimpleNamespace(bbox=(0.0, 0.0, 300.0, 400.0)), SimpleNamespace(bbox=(180.0, 0.0, 300.0, 400.0))
    left_box, right_box, empty = (0.0, 0.0, 150.0, 400.0), (160.0, 0.0, 300.0, 400.0), (900.0, 0.0, 950.0, 50.0)
    assert box_iou(wide.bbox, right_box) < box_iou(right.bbox, right_box)
    (left, l_iou), (r, r_iou), (e, e_iou) = photo_run.match_people([wide, right], [left_box, right_box, empty])
    assert left is wide and r is right and e is None and e_iou == 0.0
    assert l_iou == pytest.approx(150 / 300) and r_iou == pytest.approx(120 / 140)
    # one detection, two people overlapping it: the one it overlaps most has it, the other
    # none (with their best overlap), not the same detection twice
    (first, first_iou), (second, _) = photo_run.match_people([wide], [left_box, (0.0, 0.0, 290.0, 400.0)])
    assert first is None and first_iou == pytest.approx(0.5) and second is wide


def test_the_overlay_counts_visible_keypoints_within_five_percent_of_the_box_diagonal():
    from models.photo.keypoints import DIRECT

    xy = np.zeros((33, 2))
    for k, i in enumerate(DIRECT.values()):
        xy[i] = (10.0 * k, 20.0 * k)
    vis = np.ones(33)
    names = list(DIRECT)
    vis[DIRECT[names[0]]] = 0.2                                   # not counted
    detection = SimpleNamespace(image_xy=xy, visibility=vis, bbox=(0.0, 0.0, 300.0, 400.0))   # diagonal 500
    points = {n: xy[i].copy() for n, i in DIRECT.items()}
    points[names[0]] += 100.0                                     # off, but not seen
    points[names[1]] += (24.0, 0.0)                               # 4.8%: in
    points[names[2]] += (0.0, 26.0)                               # 5.2%: out
    assert photo_run.overlay_share(points, detection) == pytest.approx((len(DIRECT) - 2) / (len(DIRECT) - 1))
    vis[:] = 0.0
    assert photo_run.overlay_share(points, detection) is None


# --- runs on photos -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def photo_set(tmp_path_factory, detector):
    """A labels.json around one shared 3DHP photo (its joints reordered, an unknown name added),
    the same photo with its box on an empty corner, and a grey image with nobody in it."""
    import cv2

    if not (LABELLED / "labels.json").exists():
        pytest.skip("../shared/data/images/labelled/3dhp is not here (labelled photos)")
    source = json.loads((LABELLED / "labels.json").read_text())
    entry = next(f for f in source["frames"] if f["image"] == "TS1_002001.jpg")
    folder = tmp_path_factory.mktemp("labelled")
    shutil.copy(LABELLED / entry["image"], folder / "person.jpg")
    cv2.imwrite(str(folder / "nobody.jpg"), np.full((480, 640, 3), 128, np.uint8))
    order = np.random.default_rng(0).permutation(len(source["joint_names"]))
    names = [source["joint_names"][i] for i in order] + ["tail"]

    def relabelled(image, **changes):
        out = {k: v for k, v in entry.items() if k != "camera"}   # the script must not need them
        for key, width in (("joints_3d_camera_m", 3), ("joints_2d_px", 2)):
            out[key] = [entry[key][i] for i in order] + [[0.0] * width]
        for key in ("visible_3d", "visible_2d"):
            out[key] = [entry[key][i] for i in order] + [1.0]
        return {**out, "image": image, **changes}

    frames = [relabelled("person.jpg"),
              relabelled("person.jpg", bbox_center_px=[150.0, 150.0], bbox_scale_200px=1.0),
              relabelled("nobody.jpg", bbox_center_px=[320.0, 240.0], bbox_scale_200px=2.0)]
    (folder / "labels.json").write_text(json.dumps({"joint_names": names, "frames": frames}))
    return folder


def test_the_script_writes_every_method_over_the_found_frames(photo_set, tmp_path):
    out = tmp_path / "photo.json"
    run = subprocess.run([PYTHON, str(ROOT / "scripts" / "benchmark_photo.py"), "--data", str(photo_set),
                          "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["frames"] == 3 and report["found"] == 1 and report["data"] == str(photo_set)
    assert set(report["methods"]) == {"fit", "lift", "lifter", "mediapipe_raw"}
    for name in ("lift", "lifter", "mediapipe_raw"):
        r = report["methods"][name]
        assert r["frames"] == 1 and {"mpjpe_mm", "pa_mpjpe_mm", "limb_deg"} <= set(r)
        assert 0 < r["pa_mpjpe_mm"] < 1000 and 0 < r["mpjpe_mm"] < 1000 and 0 < r["limb_deg"] < 180
    assert "head_deg" in report["methods"]["lift"]
    fit = report["methods"]["fit"]
    assert "skipped" in fit or {"mpjpe_mm", "pa_mpjpe_mm", "limb_deg", "pck2d_gt", "overlay_mp", "head_deg"} <= set(fit)
    assert 0.5 < report["methods"]["mediapipe_raw"]["pck2d_gt"] <= 1.0   # the detector's own keypoints
    first, corner, grey = report["per_frame"]
    assert first["found"] and not corner["found"] and not grey["found"]
    assert set(first["methods"]) == {"fit", "lift", "lifter", "mediapipe_raw"}
    assert "lift" in run.stdout and "mediapipe_raw" in run.stdout


def fake_fit(calls, lifters=None):
    """A stand-in for fit_to_image: the lift, its pelvis on the ray through the detected hips'
    midpoint, as deep as makes a 1.7 m person as tall as the detection's box (the cameras it
    is given go to `calls`, the lifters to `lifters`)."""
    from models.photo.start import pose_from_detection

    def fit_to_image(detection, rest, camera, body=None, options=None):
        calls.append(camera)
        if lifters is not None:
            lifters.append(options.lifter)
        pose = pose_from_detection(detection, rest)
        fk = forward_kinematics(pose.local_rot, rest, PARENTS, pose.trans)
        u, v = detection.image_xy[[23, 24]].mean(0)
        depth = camera.focal_px * 1.7 / (detection.bbox[3] - detection.bbox[1])
        pelvis = depth * np.array([(u - camera.cx) / camera.focal_px, -(v - camera.cy) / camera.focal_px, -1.0])
        shift = pelvis - fk.positions[0]
        joints = fk.positions + shift
        return SimpleNamespace(local_rot=pose.local_rot, trans=pose.trans + shift, joints=joints,
                               camera=camera, projected=camera.project(joints), confident=pose.confident)
    return fit_to_image


def test_the_fit_path_through_the_photos_camera(photo_set, tmp_path, monkeypatch):
    from models.photo import fit

    calls = []
    monkeypatch.setattr(fit, "fit_to_image", fake_fit(calls))
    benchmark_photo(["--data", str(photo_set), "--json", str(tmp_path / "a.json")])
    report = json.loads((tmp_path / "a.json").read_text())
    methods = report["methods"]
    # the camera a user gets, not the labels' intrinsics
    expected = camera_for_image(photo_set / "person.jpg", 2048, 2048)
    assert calls == [expected] and calls[0].focal_px != pytest.approx(1500, rel=0.01)
    # the stand-in is the lift placed in depth: the same pose, the same figures, the same projection
    for key in ("mpjpe_mm", "pa_mpjpe_mm", "limb_deg", "head_deg", "pck2d_gt", "err2d_px"):
        assert methods["fit"][key] == pytest.approx(methods["lift"][key], abs=2e-3), key
    assert methods["fit"]["pck2d_gt"] > 0.5   # placed over the person, the projection lands on them

    def failing_fit(*_args, **_kwargs):
        raise SmplIkError("cannot fit a body to this person")
    monkeypatch.setattr(fit, "fit_to_image", failing_fit)
    benchmark_photo(["--data", str(photo_set), "--json", str(tmp_path / "b.json")])
    methods = json.loads((tmp_path / "b.json").read_text())["methods"]
    assert methods["fit"] == {"frames": 0, "skipped": "cannot fit a body to this person"}
    assert "pck2d_gt" not in methods["lift"] and "pck2d_gt_missing" in methods["lift"]
    assert methods["lift"]["mpjpe_mm"] > 0


def test_a_given_lifter_is_the_one_the_fit_and_the_lifter_row_use(photo_set, tmp_path, monkeypatch):
    from models.photo import fit
    from models.photo.lifter import DEFAULT_LIFTER_WEIGHTS

    calls, lifters = [], []
    monkeypatch.setattr(fit, "fit_to_image", fake_fit(calls, lifters))
    benchmark_photo(["--data", str(photo_set), "--json", str(tmp_path / "shipped.json")])
    assert lifters == [None]   # the shipped one, loaded where it is used
    # the shipped weights with their output layer halved: every lifted joint comes out half as far from the pelvis
    halved = tmp_path / "halved.npz"
    with np.load(DEFAULT_LIFTER_WEIGHTS, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["out.weight"] = 0.5 * arrays["out.weight"]
    arrays["out.bias"] = 0.5 * arrays["out.bias"]
    np.savez(halved, **arrays)
    benchmark_photo(["--data", str(photo_set), "--json", str(tmp_path / "halved.json"), "--lifter", str(halved)])
    assert len(lifters) == 2 and lifters[1] is not None
    assert np.array_equal(lifters[1].p["out.weight"], arrays["out.weight"])
    report = json.loads((tmp_path / "halved.json").read_text())
    shipped = json.loads((tmp_path / "shipped.json").read_text())
    assert report["lifter"] == str(halved) and "lifter" not in shipped
    # PA-MPJPE scales the answer: the halved lifter's pose scores as the shipped one's; MPJPE does not
    ours, theirs = report["methods"]["lifter"], shipped["methods"]["lifter"]
    assert ours["pa_mpjpe_mm"] == pytest.approx(theirs["pa_mpjpe_mm"], abs=0.01)
    assert ours["mpjpe_mm"] != pytest.approx(theirs["mpjpe_mm"], abs=1.0)
    not_weights = tmp_path / "notes.npz"
    not_weights.write_text("not weights")
    with pytest.raises(SystemExit, match="notes.npz"):
        benchmark_photo(["--data", str(photo_set), "--json", str(tmp_path / "c.json"), "--lifter", str(not_weights)])
    assert not (tmp_path / "c.json").exists()
