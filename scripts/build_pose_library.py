"""Build the pose library SMPL-IK's alternatives start from (models/ik/library.py): every
--every-th pose of the training motion, without the clips the networks hold out, and a JSON
record beside it.

    python scripts/build_pose_library.py [--data FILE] [--out FILE] [--every 2]

--data is the trainers' file (default out/training_smpl.npz, built from ../shared/data/mocap
when missing, as every trainer does). The clips held out from training
(models.training.clips.VALIDATION_CLIPS) stay out of the library too, so the benchmarks'
held-out clips are held out from it. The poses are CMU motion capture (free to use, credited
to the CMU Graphics Lab Motion Capture Database; ../shared/data/README.md).
"""
import argparse
import logging
import time
from pathlib import Path

import numpy as np

from models.core.files import write_json
from models.ik.library import ARCH, DEFAULT_LIBRARY, PoseLibrary
from models.ik.nn import save_weights
from models.training.clips import VALIDATION_CLIPS
from models.training.data import DEFAULT_DATA, ensure_data, load_pose_data


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="training poses from scripts/build_dataset.py")
    ap.add_argument("--out", type=Path, default=DEFAULT_LIBRARY, help="library file to write")
    ap.add_argument("--every", type=int, default=2, help="keep every N-th training pose (default 2)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.every < 1:
        raise SystemExit("--every: 1 or more")
    train, _ = load_pose_data(ensure_data(args.data))
    # float16: a rotation to within 0.001 rad (0.06 degrees), half the size; the refinement
    # moves every start anyway
    poses = train.poses.numpy()[::args.every].astype(np.float16)
    config = {"arch": ARCH, "count": len(poses)}
    PoseLibrary(poses, config)   # refuses a malformed library before anything is written
    save_weights(args.out, {"poses": poses}, config, dtype=np.float16)
    write_json(args.out.with_suffix(".json"), {
        "config": config, "data_sha256": train.sha256, "every": args.every,
        "train_clips": sorted({train.clips[c] for c in np.unique(train.clip)}),
        "validation_clips": list(VALIDATION_CLIPS), "date": time.strftime("%Y-%m-%d"),
        "licence": "CMU Graphics Lab Motion Capture Database: free to use, including in commercial products; "
                   "not to be resold as data. The data used in this project was obtained from mocap.cs.cmu.edu. "
                   "The database was created with funding from NSF EIA-0196217.",
        "why": "alternatives from real poses beside the hypotheses head's (issue 26, samples near the truth)"})
    print(f"wrote {args.out}: {len(poses)} poses from {len(np.unique(train.clip))} clips")


if __name__ == "__main__":
    main()
