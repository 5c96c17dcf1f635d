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
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("builds", ROOT / "addon" / "com" / "builds.py")
builds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(builds)
REQUIREMENTS = ROOT / "requirements-photo.txt"
SKIP = {"numpy"}   # Blender bundles its own numpy
# Blender's platform names -> the wheel platform tags pip may take. pip matches --platform
# exactly for manylinux (no older tags implied), so every accepted glibc level is listed;
# for macOS it also takes older versions and universal2. LiteRT's macOS wheels need macOS 12.
PLATFORMS = {
    "linux-x64": ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                  "manylinux2014_x86_64"),
    "windows-x64": ("win_amd64",),
    "macos-arm64": ("macosx_12_0_arm64",),
}
PYTHONS = tuple(b.python for b in builds.BLENDER_PYTHONS)


def read_pins(path=REQUIREMENTS):
    """['name==version', ...] from a requirements file, comments and SKIP left out."""
    pins = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, _ = line.partition("==")
        if not sep:
            raise SystemExit(f"{path.name}: '{line}' is not pinned with ==")
        if name.strip().lower() not in SKIP:
            pins.append(line)
    return pins


def pip_download(pins, tags, python, dest):
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--no-deps",
           "--python-version", python, "--dest", str(dest)]
    for tag in tags:
        cmd += ["--platform", tag]
    return subprocess.run(cmd + list(pins), capture_output=True, text=True)


def folder(dest, platform, python):
    """Where one platform's wheels for one Python go."""
    return dest / python / platform


def fetch(platform, python, pins, dest):
    """Download one platform's wheels for one Python ("3.11"); returns the pins that have no wheel."""
    tags = PLATFORMS[platform]
    where = folder(dest, platform, python)
    where.mkdir(parents=True, exist_ok=True)
    for old in where.glob("*.whl"):   # wheels of older pins must not ship alongside
        old.unlink()
    if pip_download(pins, tags, python, where).returncode == 0:
        return []
    return [pin for pin in pins if pip_download([pin], tags, python, where).returncode != 0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=ROOT / "wheels")
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORMS),
                        help="a Blender platform (repeatable; default: all)")
    parser.add_argument("--python", action="append", choices=PYTHONS,
                        help="a Python that Blender runs (repeatable; default: all)")
    args = parser.parse_args(argv)
    pins = read_pins()
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
