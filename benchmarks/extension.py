"""The extension's zips (scripts/build_extension.py): the plain one, the per-platform photo builds
from a staged copy of the source, and the record of their sizes."""
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from models.core.errors import SmplIkError
from models.core.files import write_json
from models.photo.runtime import model_path, record

from . import blender_session
from .wheels import ROOT, builds, fetch, folder, read_pins

# Never copied into the staging folder (large, or not part of the extension).
STAGE_IGNORE = shutil.ignore_patterns(".git", ".venv", "out", "dist", "wheels", "__pycache__",
                                      ".pytest_cache", ".hypothesis", ".ruff_cache", "tests", "scripts", "docs")


def blender_ext(*args):
    """Blender's own extension tool (blender_ext.py) run with `args`; the CompletedProcess."""
    tool = blender_session.extension_tool()
    return subprocess.run([sys.executable, str(tool), *map(str, args)], capture_output=True, text=True)


def staged_manifest(text, wheels, platforms, python):
    """The manifest of a photo build: `platforms` and `wheels` added (before any [table]), the
    Blender releases of BlenderPython `python` as its version range, and the detector's model
    files no longer left out."""
    extra = (f"platforms = [{', '.join(repr(p) for p in platforms)}]\n"
             f"wheels = [\n" + "".join(f'  "./wheels/{w}",\n' for w in wheels) + "]\n")
    if python.blender_max:
        extra += f'blender_version_max = "{python.blender_max}"\n'
    text = re.sub(r'^blender_version_min = ".*"$', f'blender_version_min = "{python.blender_min}"', text, flags=re.M)
    text = text.replace(' "/models/photo/weights/",', "")
    first_table = re.search(r"^\[", text, flags=re.M)
    cut = first_table.start() if first_table else len(text)
    return text[:cut] + extra + "\n" + text[cut:]


def build_split(source, out, python, platforms):
    """Blender's builder on a staged photo build: one zip for each of `platforms`, named as
    builds.zip_name names them for BlenderPython `python`, into `out`; returns their paths."""
    with tempfile.TemporaryDirectory(prefix="smpl_ik_split_") as tmp:
        run = blender_ext("build", "--split-platforms", "--source-dir", source, "--output-dir", tmp)
        if run.returncode:
            raise SmplIkError(f"building the platform zips for {python.says} failed:\n{run.stdout}{run.stderr}")
        return [Path(shutil.move(Path(tmp) / builder_name(platform), Path(out) / builds.zip_name(platform, python)))
                for platform in platforms]


def builder_name(platform):
    """The name Blender's builder gives a platform's zip: <id>-<version>-<platform, '_' for '-'>.zip."""
    return builds.zip_name().removesuffix(".zip") + f"-{platform.replace('-', '_')}.zip"


def build_plain(out):
    """The zip without the photo packages, built from this source tree into `out`."""
    run = blender_ext("build", "--source-dir", ROOT, "--output-dir", out)
    if run.returncode:
        raise SmplIkError(f"building the plain extension failed:\n{run.stdout}{run.stderr}")


def build_platforms(out, wheels_dir, platforms, python):
    """The photo builds of `platforms` for one BlenderPython; returns their paths."""
    try:
        for name in record():
            model_path(name)
    except SmplIkError as e:
        raise SmplIkError(f"{e} (fetch the model files with `make detector`)") from None
    pins = read_pins()
    with tempfile.TemporaryDirectory(prefix="smpl_ik_stage_") as tmp:
        stage = Path(tmp) / "smpl_ik"
        shutil.copytree(ROOT, stage, ignore=STAGE_IGNORE)
        (stage / "wheels").mkdir()
        names = set()
        for platform in platforms:
            where = folder(wheels_dir, platform, python.python)
            if len(list(where.glob("*.whl"))) < len(pins):
                missing = fetch(platform, python.python, pins, wheels_dir)
                if missing:
                    raise SmplIkError(f"{platform}, Python {python.python}: no wheel for {', '.join(missing)}")
            for wheel in where.glob("*.whl"):
                shutil.copy2(wheel, stage / "wheels" / wheel.name)
                names.add(wheel.name)
        manifest = stage / "blender_manifest.toml"
        manifest.write_text(staged_manifest(manifest.read_text(), sorted(names), platforms, python))
        return build_split(stage, out, python, platforms)


def recorded_mb(size):
    """A zip's size as recorded: MB (10**6 bytes) to one decimal, the README's precision. Finer
    would change with every edit to a shipped file."""
    return round(size / 1e6, 1)


def write_sizes(path, sizes, keep_others):
    """Record sizes ({zip name: bytes}) in `path` as {"zips": {name: {"mb": MB}}}
    (`recorded_mb`); keep_others keeps the entries of zips not built this time (a --no-photo
    build leaves the platform zips' sizes standing). The file is written only when what it
    records changes; returns whether it was."""
    old = None
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except ValueError:
            old = None
    zips = dict(old.get("zips", {})) if keep_others and isinstance(old, dict) else {}
    zips.update({name: {"mb": recorded_mb(size)} for name, size in sizes.items()})
    new = {"zips": dict(sorted(zips.items()))}
    if new == old:
        return False
    write_json(path, new)
    return True
