"""The extension's builds, named in one place: the platforms that get a zip bundling the photo
packages, and the file name Blender's builder gives each zip. Plain Python (no bpy), so a
script can load this file by its path.
"""
import tomllib
from pathlib import Path

# Blender's platform names, as a manifest's `platforms` lists them.
PHOTO_PLATFORMS = ("linux-x64", "windows-x64", "macos-arm64")
MANIFEST = Path(__file__).resolve().parents[2] / "blender_manifest.toml"


def zip_name(platform=None, manifest=MANIFEST):
    """The zip `blender -c extension build [--split-platforms]` writes for this extension:
    <id>-<version>.zip, or <id>-<version>-<platform with '-' as '_'>.zip for one platform."""
    with open(manifest, "rb") as f:
        info = tomllib.load(f)
    tail = f"-{platform.replace('-', '_')}" if platform else ""
    return f"{info['id']}-{info['version']}{tail}.zip"
