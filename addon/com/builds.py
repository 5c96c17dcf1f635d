"""The extension's builds, named in one place: the platforms and the Blender releases that get a
zip bundling the photo packages, and the name of each zip. Plain Python (no bpy), so a script
can load this file by its path.
"""
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

# Blender's platform names, as a manifest's `platforms` lists them.
PHOTO_PLATFORMS = ("linux-x64", "windows-x64", "macos-arm64")
MANIFEST = Path(__file__).resolve().parents[2] / "blender_manifest.toml"


@dataclass(frozen=True)
class BlenderPython:
    """The Python that a span of Blender releases runs: the photo packages' wheels are built for
    one Python, so each span gets zips of its own. blender_min: the first release; blender_max:
    the first release after the span (None: every release since), as a manifest's
    blender_version_min and blender_version_max take them; label: how the zips' names say it."""

    python: str
    blender_min: str
    blender_max: str | None
    label: str

    @property
    def says(self):
        """The span in words: 'Blender 4.2 to 5.0', 'Blender 5.1 or newer'."""
        first = ".".join(self.blender_min.split(".")[:2])
        if self.blender_max is None:
            return f"Blender {first} or newer"
        return f"Blender {first} to {self.label.rpartition('-')[2]}"


BLENDER_PYTHONS = (BlenderPython("3.11", "4.2.0", "5.1.0", "blender_4.2-5.0"),
                   BlenderPython("3.13", "5.1.0", None, "blender_5.1+"))


def blender_python(version=sys.version_info):
    """The BlenderPython of a Python version (this one by default); None for a Python that no
    Blender this extension supports runs."""
    return next((b for b in BLENDER_PYTHONS if b.python == f"{version[0]}.{version[1]}"), None)


def zip_name(platform=None, python=None, manifest=MANIFEST):
    """A zip's file name: <id>-<version>.zip for the build without the photo packages (every
    platform, every Blender), <id>-<version>-<platform with '-' as '_'>-<python's label>.zip
    for one platform and one BlenderPython."""
    with open(manifest, "rb") as f:
        info = tomllib.load(f)
    tail = f"-{platform.replace('-', '_')}-{python.label}" if platform else ""
    return f"{info['id']}-{info['version']}{tail}.zip"
