"""scripts/benchmark.py on two held-out clips: every method, key and the properties they promise."""
import json
import runpy
import shutil

import pytest
from conftest import ROOT, SHARED_MOCAP

from benchmarks.effectors import worst_errors
from models.ik.ikgat import DEFAULT_WEIGHTS as IKGAT_WEIGHTS
from models.ik.flow import DEFAULT_FLOW_WEIGHTS as FLOW_WEIGHTS
from models.ik.smplik import DEFAULT_WEIGHTS as SMPLIK_WEIGHTS

pytest.importorskip("scipy")


def run_benchmark(tmp_path, *options):
    """The report of scripts/benchmark.py on one held-out clip with these options."""
    clip = SHARED_MOCAP / "cmu_train" / "cmu_jumping_5.bvh"
    if not clip.exists():
        pytest.skip("../shared/data/mocap is not here (a held-out clip to benchmark on)")
    shutil.copy(clip, tmp_path / clip.name)
    main = runpy.run_path(str(ROOT / "scripts" / "benchmark.py"))["main"]   # scripts/ is not a package
    out = tmp_path / "bench.json"
    main(["--data", str(tmp_path), "--json", str(out), *options])
    return json.loads(out.read_text())


@pytest.mark.skipif(not (IKGAT_WEIGHTS.exists() and SMPLIK_WEIGHTS.exists()), reason="network weights not trained yet")
def test_benchmark_reports_every_method(tmp_path):
    report = run_benchmark(tmp_path, "--max-frames", "40", "--baseline-frames", "2", "--protocol-frames", "12",
                           "--balance-frames", "12")
    methods = report["methods"]
    assert report["frames"] == 40
    assert report["weights"] == "models/ik/weights"   # the shipped weights, named the same from any clone
    generative = {"smplik_protocol_deterministic", "smplik_protocol_natural", "smplik_protocol_best_of_8",
                  "smplik_protocol_mean_of_8", "smplik_protocol_best_of_8_principal",
                  "smplik_protocol_best_of_8_random", "smplik_6pt_natural", "smplik_alternatives", "smplik_path",
                  "smplik_balance", "smplik_collision", "smplik_protocol_best_of_8_hypotheses",
                  "smplik_protocol_best_of_8_library"}
    assert set(methods) == {"smplik_6pt", "smplik_6pt_one_pass", "smplik_6pt_refined", "smplik_random",
                            "smplik_random_refined", "ikgat", "ikgat_one_pass", "ikgat_noise", "analytic_full",
                            "baseline_6pt"} | \
        (generative if FLOW_WEIGHTS.exists() else set())
    for name, m in methods.items():
        if name in generative or name == "ikgat_noise":
            continue
        assert {"mpjpe_mm", "geodesic_deg", "ms_single", "per_s_batch"} <= set(m), name
        assert len(m["geodesic_deg_by_joint"]) == 24
    noise = methods["ikgat_noise"]
    assert set(noise) == {"1cm", "2cm", "5cm"}
    # more noise turns the analytic answer's bones further; clean it is what analytic_full scores
    analytic = [noise[k]["analytic_deg"] for k in ("1cm", "2cm", "5cm")]
    assert methods["analytic_full"]["geodesic_deg"] < analytic[0] < analytic[1] < analytic[2]
    assert all(noise[k]["geodesic_deg"] > methods["ikgat"]["geodesic_deg"] for k in noise)
    # over the joints with children the analytic answer has no constant leaves to lean on: it
    # grows faster with the noise than over all joints
    inner = [noise[k]["analytic_deg_inner"] for k in ("1cm", "2cm", "5cm")]
    assert inner[2] - inner[0] > analytic[2] - analytic[0] and all(noise[k]["geodesic_deg_inner"] > 0 for k in noise)
    # position-to-rotation methods keep every bone's direction: forward kinematics lands on the joints
    assert max(methods[m]["mpjpe_mm"] for m in ("ikgat", "ikgat_one_pass", "analytic_full")) < 1
    assert methods["smplik_6pt_refined"]["effector_mm"] < 1 < methods["smplik_6pt"]["effector_mm"]
    assert methods["smplik_random_refined"]["effector_mm"] < 1 < methods["smplik_random"]["effector_mm"]
    assert set(methods["smplik_random"]["mpjpe_mm_by_effector_count"]) == {"3-4", "5-8", "9-12"}
    assert methods["baseline_6pt"]["frames"] == 2
    # no refined pose bends a knee or an elbow beyond the documented ranges
    assert methods["smplik_6pt_refined"]["inside_limits"] == 1.0
    assert methods["smplik_random_refined"]["inside_limits"] == 1.0
    if FLOW_WEIGHTS.exists():
        protocol = {m: methods[f"smplik_protocol_{m}"] for m in ("deterministic", "natural", "best_of_8", "mean_of_8")}
        for m in protocol.values():
            assert {"mpjpe_aligned_mm", "pa_mpjpe_mm", "by_count"} <= set(m) and m["frames"] == 12
        # the nearest of 8 is no farther than their mean, and (the same 8) never worse than any
        assert protocol["best_of_8"]["mpjpe_aligned_mm"] <= protocol["mean_of_8"]["mpjpe_aligned_mm"]
        alt = methods["smplik_alternatives"]
        assert alt["effector_mm_max"] < 1 and alt["inside_limits"] == 1.0 and alt["apd_mm"]["six_points"] > 0
        path = methods["smplik_path"]
        assert {"jump_mm_deterministic", "jump_mm_keep", "foot_lift_mm_keep"} <= set(path)
        balance, collision = methods["smplik_balance"], methods["smplik_collision"]
        for key in ("natural", "deterministic"):
            assert 0 <= balance[f"inside_fraction_{key}"] <= 1 and f"inside_fraction_{key}_without_terms" in balance
        assert balance["effector_mm_max"] < 1 and collision["frames"] == 12
        for key in ("natural", "alternatives", "deterministic"):
            assert 0 <= collision[f"fraction_{key}"] <= 1 and f"fraction_{key}_without_terms" in collision
            # the collisions the pins do not force are some of all the collisions
            assert 0 <= collision[f"fraction_{key}_unforced"] <= collision[f"fraction_{key}"]


@pytest.mark.skipif(not (IKGAT_WEIGHTS.exists() and SMPLIK_WEIGHTS.exists()), reason="network weights not trained yet")
def test_zero_frames_for_the_slow_figures_leaves_them_out(tmp_path):
    methods = run_benchmark(tmp_path, "--max-frames", "8", "--baseline-frames", "0",
                            "--protocol-frames", "0")["methods"]
    assert "baseline_6pt" not in methods and not any(m.startswith("smplik_protocol") for m in methods)
    assert methods["smplik_6pt_refined"]["effector_mm"] < 1


def test_procrustes_error_removes_exactly_a_similarity_transform(rng):
    import numpy as np

    from models.core import metrics
    from models.core.rotations import axis_angle_to_matrix

    g = rng.normal(size=(24, 3))
    r = axis_angle_to_matrix(rng.normal(size=3))
    assert metrics.procrustes_error(1.3 * g @ r.T + [0.5, -2.0, 1.0], g) < 1e-12
    mirrored = g * [-1.0, 1.0, 1.0]     # a reflection is not a rotation: it is not removed
    assert metrics.procrustes_error(mirrored, g) > 0.1
    p = g + rng.normal(scale=0.05, size=g.shape)
    assert metrics.procrustes_error(p, g) <= np.linalg.norm((p - p.mean(0)) - (g - g.mean(0)), axis=-1).mean() + 0.01
    assert metrics.aligned_error(p[None] + 5.0, g)[0] == pytest.approx(
        np.linalg.norm((p - p[0]) - (g - g[0]), axis=-1).mean())


def test_worst_errors_keeps_metres_and_radians_apart():
    import numpy as np

    from models.ik.effectors import Effector, EffectorKind

    effs = [Effector("left_wrist", EffectorKind.POSITION, np.zeros(3)),
            Effector("head", EffectorKind.LOOK_AT, np.ones(3)),
            Effector("pelvis", EffectorKind.POSITION, np.zeros(3)),
            Effector("neck", EffectorKind.ROTATION, np.eye(3))]
    mm, deg = worst_errors(effs, [0.002, 0.3, 0.001, 0.1])   # metres, radians, metres, radians
    assert mm == pytest.approx(2.0) and deg == pytest.approx(np.degrees(0.3))
    assert worst_errors(effs[:1], [0.004]) == (pytest.approx(4.0), 0.0)


def test_compare_counts_equal_figures_and_sets_timings_apart():
    from benchmarks.compare import compare

    before = {"frames": 10, "methods": {"a": {"mpjpe_mm": 1.5, "ms_single": 0.4, "per_s_batch": 900}},
              "speed": {"photo_ratio": 0.5}, "rows": [{"x": 1}, {"x": 2}]}
    after = {"frames": 10, "methods": {"a": {"mpjpe_mm": 1.6, "ms_single": 0.9, "per_s_batch": 100}},
             "speed": {"photo_ratio": 0.7}, "rows": [{"x": 1}, {"x": 3}], "new": True}
    result = compare(before, after)
    assert (result.figures, result.equal, result.timings) == (5, 2, 3)
    assert result.differ == ("methods/a/mpjpe_mm: 1.5 -> 1.6", "new: None -> True", "rows/1/x: 2 -> 3")
    assert compare(before, before).equal == compare(before, before).figures == 4
