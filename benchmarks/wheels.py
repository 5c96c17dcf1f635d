"""The photo packages' wheels for the platforms and Pythons a Blender extension is built for:
which (requirements-photo.txt), where they go, and `pip download` of them."""
import importlib.util
import subprocess
import sys
from pathlib import Path

from models.core.errors import SmplIkError

ROOT = Path(__file__).resolve().parents[1]
# loaded by its path: importing the addon package would import bpy
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
            raise SmplIkError(f"{path.name}: '{line}' is not pinned with ==")
        if name.strip().lower() not in SKIP:
            pins.append(line)
    return pins


def pip_download(pins, tags, python, dest):
    """`pip download` of the wheels of `pins` for wheel platform `tags` and Python `python`
    ("3.11") into `dest`, without dependencies; the finished subprocess.CompletedProcess."""
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
