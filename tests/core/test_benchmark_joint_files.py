"""scripts/benchmark_joint_files.py and benchmarks/joint_files.py: joint files with gaps cut into
a real clip, converted as shipped, by SMPL-IK alone and by straight lines."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks import joint_files as bench

ROOT = Path(__file__).resolve().parents[2]

CLIP = ROOT.parent / "shared" / "data" / "mocap" / "cmu_train" / "cmu_walking_20.bvh"


def test_gaps_are_cut_where_the_mask_says_with_a_frame_either_side():
    truth = np.random.default_rng(0).normal(size=(40, 24, 3))
    for kind in bench.KINDS:
        gaps, missing = bench.cut_gaps(truth, kind, 5, np.random.default_rng(1))
        assert (np.isnan(gaps).all(-1) == missing).all() and missing.any()
        assert not missing[0].any() and not missing[-1].any()
        assert np.array_equal(gaps[~missing], truth[~missing])
        if kind == "limb_end":
            ends = {j for pair in bench.LIMB_ENDS for j in pair}
            assert set(np.flatnonzero(missing.any(0))) <= ends
        if kind == "frame":
            assert (missing.all(1) == missing.any(1)).all()       # whole frames


def test_the_straight_line_fill_is_exact_for_a_joint_moving_steadily():
    t = np.arange(12.0)
    truth = np.stack([np.stack([t, 2 * t, -t], -1)] * 24, 1)
    missing = np.zeros((12, 24), bool)
    missing[3:8, 5] = True
    gaps = truth.copy()
    gaps[missing] = np.nan
    assert np.allclose(bench.linear_fill(gaps, missing), truth)


@pytest.mark.skipif(not CLIP.exists(), reason="../shared/data/mocap is not here (a held-out clip to cut gaps into)")
def test_the_benchmark_writes_every_case_and_the_curve_beats_the_guess_on_a_short_limb_gap(tmp_path):
    out = tmp_path / "joint_files.json"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "benchmark_joint_files.py"), str(CLIP),
                        "--frames", "96", "--lengths", "6", "--json", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(out.read_text())
    assert data["clips"] == {"given": ["cmu_walking_20.bvh"]} and data["gap_lengths_frames"] == [6]
    assert data["complete"]["given"]["error_mm"] < 0.1          # IK-GAT: a whole file comes back
    for kind in ("joint", "limb_end", "frame"):
        entry = data["gaps"][kind]["6"]["given"]
        assert set(entry) == {"shipped_mm", "smplik_alone_mm", "linear_mm", "given_mm", "frames_per_s"}
        assert entry["given_mm"] < 5.0
    limb = data["gaps"]["limb_end"]["6"]["given"]
    assert limb["shipped_mm"] < limb["smplik_alone_mm"]          # the curve through a lost hand or foot counts
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "benchmark_joint_files.py"), str(CLIP),
                          "--frames", "20", "--lengths", "6"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--frames must be at least 4 times the longest gap (24)" in bad.stderr
