"""Download the photo-detection wheels (requirements-photo.txt, without numpy, which Blender
ships) for the platforms and the Pythons a Blender extension is built for, and print their sizes.

    python scripts/fetch_wheels.py [--dest wheels] [--platform linux-x64 ...] [--python 3.13 ...]

Wheels go to DEST/<python>/<blender platform>/ (its old wheels are removed first); the folder
is ignored by git. Each platform and Python is one `pip download --only-binary=:all: --no-deps`
(Python 3.11 for Blender 4.2-5.0, 3.13 for 5.1 and newer: addon/com/builds.py); when that
fails, each package is tried alone to name the ones without a wheel.
The exit status is 1 if any package has no wheel for a platform.
"""
import argparse
import sys
from pathlib import Path

from benchmarks.wheels import PLATFORMS, PYTHONS, ROOT, fetch, folder, read_pins
from models.core.errors import SmplIkError


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=ROOT / "wheels")
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORMS),
                        help="a Blender platform (repeatable; default: all)")
    parser.add_argument("--python", action="append", choices=PYTHONS,
                        help="a Python that Blender runs (repeatable; default: all)")
    args = parser.parse_args(argv)
    try:
        pins = read_pins()
    except SmplIkError as exc:
        raise SystemExit(str(exc)) from None
    missing_any = False
    for python in args.python or PYTHONS:
        for platform in args.platform or list(PLATFORMS):
            missing = fetch(platform, python, pins, args.dest)
            wheels = sorted(folder(args.dest, platform, python).glob("*.whl"))
            total = sum(w.stat().st_size for w in wheels)
            print(f"{platform}, Python {python} ({', '.join(PLATFORMS[platform])}): {len(wheels)} wheels, "
                  f"{total / 1e6:.1f} MB")
            for w in wheels:
                print(f"  {w.stat().st_size / 1e6:7.1f} MB  {w.name}")
            for pin in missing:
                print(f"  NO WHEEL: {pin}")
            missing_any |= bool(missing)
    return 1 if missing_any else 0


if __name__ == "__main__":
    sys.exit(main())
