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
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

import blender_session  # noqa: E402
import fetch_wheels  # noqa: E402
from models.core.files import write_json  # noqa: E402
from models.core.errors import SmplIkError  # noqa: E402
from models.photo.runtime import model_path, record  # noqa: E402

builds = fetch_wheels.builds

# Never copied into the staging folder (large, or not part of the extension).
STAGE_IGNORE = shutil.ignore_patterns(".git", ".venv", "out", "dist", "wheels", "__pycache__",
                                      ".pytest_cache", ".hypothesis", ".ruff_cache", "tests", "scripts", "docs")


def blender_ext(*args):
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
            raise SystemExit(f"building the platform zips for {python.says} failed:\n{run.stdout}{run.stderr}")
        return [Path(shutil.move(Path(tmp) / builder_name(platform), Path(out) / builds.zip_name(platform, python)))
                for platform in platforms]


def builder_name(platform):
    """The name Blender's builder gives a platform's zip: <id>-<version>-<platform, '_' for '-'>.zip."""
    return builds.zip_name().removesuffix(".zip") + f"-{platform.replace('-', '_')}.zip"


def build_plain(out):
    run = blender_ext("build", "--source-dir", ROOT, "--output-dir", out)
    if run.returncode:
        raise SystemExit(f"building the plain extension failed:\n{run.stdout}{run.stderr}")


def build_platforms(out, wheels_dir, platforms, python):
    """The photo builds of `platforms` for one BlenderPython; returns their paths."""
    try:
        for name in record():
            model_path(name)
    except SmplIkError as e:
        raise SystemExit(f"{e} (fetch the model files with `make detector`)") from None
    pins = fetch_wheels.read_pins()
    with tempfile.TemporaryDirectory(prefix="smpl_ik_stage_") as tmp:
        stage = Path(tmp) / "smpl_ik"
        shutil.copytree(ROOT, stage, ignore=STAGE_IGNORE)
        (stage / "wheels").mkdir()
        names = set()
        for platform in platforms:
            folder = fetch_wheels.folder(wheels_dir, platform, python.python)
            if len(list(folder.glob("*.whl"))) < len(pins):
                missing = fetch_wheels.fetch(platform, python.python, pins, wheels_dir)
                if missing:
                    raise SystemExit(f"{platform}, Python {python.python}: no wheel for {', '.join(missing)}")
            for wheel in folder.glob("*.whl"):
                shutil.copy2(wheel, stage / "wheels" / wheel.name)
                names.add(wheel.name)
        manifest = stage / "blender_manifest.toml"
        manifest.write_text(staged_manifest(manifest.read_text(), sorted(names), platforms, python))
        return build_split(stage, out, python, platforms)


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
    build_plain(args.out)
    if not args.no_photo:
        for python in builds.BLENDER_PYTHONS:
            build_platforms(args.out, args.wheels, list(fetch_wheels.PLATFORMS), python)
    sizes = {}
    for zip_path in sorted(args.out.glob("smpl_ik-*.zip")):
        sizes[zip_path.name] = zip_path.stat().st_size
        print(f"{sizes[zip_path.name] / 1e6:8.1f} MB  {zip_path.name}")
    changed = write_sizes(args.sizes_json, sizes, keep_others=args.no_photo)
    print(f"wrote {args.sizes_json}" if changed else f"{args.sizes_json}: the sizes are as recorded")
    return 0


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


if __name__ == "__main__":
    sys.exit(main())
