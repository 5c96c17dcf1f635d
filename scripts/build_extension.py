"""Build the extension's zips: one without the photo packages (every platform) and, unless
--no-photo, one per platform (linux-x64, windows-x64, macos-arm64) and Blender Python (3.11 for
Blender 4.2-5.0, 3.13 for 5.1 and newer; addon/com/builds.py) that bundles them with the
detector's model files.

    python scripts/build_extension.py [--out dist] [--wheels wheels] [--no-photo]
        [--sizes-json docs/figures/extension_sizes.json]

The per-platform builds need the wheels from scripts/fetch_wheels.py (missing ones are
downloaded first, from PyPI) and the model files of scripts/fetch_detector_models.py (`make
detector`). They are built from a staged copy of the source whose manifest lists the wheels,
the platforms and the Blender releases that run that Python, so the committed manifest stays
wheel-free and a zip refuses to install in a Blender it does not fit. Prints each zip's
size and records them in --sizes-json (zip name -> MB to one decimal, as the README quotes
them); the file is rewritten only when a recorded size changes, so a build leaves the work
tree clean. With --no-photo only the plain zip's entry can change. Exit status 1 if a build
fails.
"""
import argparse
import sys
from pathlib import Path

from benchmarks.extension import build_plain, build_platforms, builds, write_sizes
from benchmarks.wheels import PLATFORMS, ROOT
from models.core.errors import SmplIkError


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--wheels", type=Path, default=ROOT / "wheels", help="scripts/fetch_wheels.py's folder")
    parser.add_argument("--no-photo", action="store_true", help="only the zip without the photo packages")
    parser.add_argument("--sizes-json", type=Path, default=ROOT / "docs" / "figures" / "extension_sizes.json",
                        help="where the zips' sizes are written (default docs/figures/extension_sizes.json)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("smpl_ik-*.zip"):
        old.unlink()
    try:
        build_plain(args.out)
        if not args.no_photo:
            for python in builds.BLENDER_PYTHONS:
                build_platforms(args.out, args.wheels, list(PLATFORMS), python)
    except SmplIkError as exc:
        raise SystemExit(str(exc)) from None
    sizes = {}
    for zip_path in sorted(args.out.glob("smpl_ik-*.zip")):
        sizes[zip_path.name] = zip_path.stat().st_size
        print(f"{sizes[zip_path.name] / 1e6:8.1f} MB  {zip_path.name}")
    changed = write_sizes(args.sizes_json, sizes, keep_others=args.no_photo)
    print(f"wrote {args.sizes_json}" if changed else f"{args.sizes_json}: the sizes are as recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
