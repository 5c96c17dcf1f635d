"""Download the photo-detection wheels (requirements-photo.txt, without numpy, which Blender
ships) for the platforms a Blender extension is built for, and print their sizes.

    python scripts/fetch_wheels.py [--dest wheels] [--platform linux-x64 ...]

Wheels go to DEST/<blender platform>/ (its old wheels are removed first); the folder is
ignored by git. Each platform is one `pip download --only-binary=:all: --no-deps` for
CPython 3.11 (Blender 4.2-5.x's Python); when that fails, each package is tried alone to name
the ones without a wheel.
The exit status is 1 if any package has no wheel for a platform.
"""
import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements-photo.txt"
SKIP = {"numpy"}   # Blender bundles its own numpy
# Blender's platform names -> the wheel platform tags pip may take. pip matches --platform
# exactly for manylinux (no older tags implied), so every accepted glibc level is listed;
# for macOS it also takes older versions and universal2. macOS 11 is Blender 4.2's floor.
PLATFORMS = {
    "linux-x64": ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"),
    "windows-x64": ("win_amd64",),
    "macos-arm64": ("macosx_11_0_arm64",),
}
PYTHON_VERSION = "3.11"


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


def pip_download(pins, tags, dest):
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--no-deps",
           "--python-version", PYTHON_VERSION, "--dest", str(dest)]
    for tag in tags:
        cmd += ["--platform", tag]
    return subprocess.run(cmd + list(pins), capture_output=True, text=True)


def fetch(platform, pins, dest):
    """Download one platform's wheels; returns the names of pins that have no wheel."""
    tags = PLATFORMS[platform]
    folder = dest / platform
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.whl"):   # wheels of older pins must not ship alongside
        old.unlink()
    if pip_download(pins, tags, folder).returncode == 0:
        return []
    return [pin for pin in pins if pip_download([pin], tags, folder).returncode != 0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=ROOT / "wheels")
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORMS),
                        help="a Blender platform (repeatable; default: all)")
    args = parser.parse_args(argv)
    pins = read_pins()
    missing_any = False
    for platform in args.platform or list(PLATFORMS):
        missing = fetch(platform, pins, args.dest)
        wheels = sorted((args.dest / platform).glob("*.whl"))
        total = sum(w.stat().st_size for w in wheels)
        print(f"{platform} ({', '.join(PLATFORMS[platform])}): {len(wheels)} wheels, {total / 1e6:.1f} MB")
        for w in wheels:
            print(f"  {w.stat().st_size / 1e6:7.1f} MB  {w.name}")
        for pin in missing:
            print(f"  NO WHEEL: {pin}")
        missing_any |= bool(missing)
    return 1 if missing_any else 0


if __name__ == "__main__":
    sys.exit(main())
