"""The extension's manifest, and scripts/build_extension.py recording the zips' sizes without
dirtying the work tree."""
import json
import re
import tomllib

from benchmarks.extension import write_sizes
from conftest import ROOT

PLAIN, LINUX = "smpl_ik-0.1.0.zip", "smpl_ik-0.1.0-linux_x64.zip"


def test_sizes_are_written_only_when_a_recorded_size_changes(tmp_path):
    path = tmp_path / "extension_sizes.json"
    assert write_sizes(path, {PLAIN: 14_882_739, LINUX: 125_893_101}, keep_others=False)
    first = path.read_text()
    assert json.loads(first) == {"zips": {LINUX: {"mb": 125.9}, PLAIN: {"mb": 14.9}}}
    stamp = path.stat().st_mtime_ns
    # an edit to a shipped file moves a zip by some bytes: the README's 14.9 MB stands
    assert not write_sizes(path, {PLAIN: 14_882_761, LINUX: 125_893_000}, keep_others=False)
    assert path.read_text() == first and path.stat().st_mtime_ns == stamp
    # a size the README would quote differently is written
    assert write_sizes(path, {PLAIN: 15_010_000, LINUX: 125_893_101}, keep_others=False)
    assert json.loads(path.read_text())["zips"][PLAIN] == {"mb": 15.0}


def test_a_plain_build_keeps_the_platform_sizes(tmp_path):
    path = tmp_path / "extension_sizes.json"
    write_sizes(path, {PLAIN: 14_882_739, LINUX: 125_893_101}, keep_others=False)
    assert write_sizes(path, {PLAIN: 16_000_000}, keep_others=True)
    assert json.loads(path.read_text())["zips"] == {LINUX: {"mb": 125.9}, PLAIN: {"mb": 16.0}}
    # a full build drops a zip that is no longer built
    assert write_sizes(path, {PLAIN: 16_000_000}, keep_others=False)
    assert json.loads(path.read_text())["zips"] == {PLAIN: {"mb": 16.0}}


def test_the_committed_sizes_are_as_the_builder_records_them():
    """The tracked file is in the builder's own form, so the first build after a clean clone
    rewrites it only if a size really changed."""
    path = ROOT / "docs" / "figures" / "extension_sizes.json"
    zips = json.loads(path.read_text())["zips"]
    assert zips and all(set(entry) == {"mb"} for entry in zips.values()), zips
    assert all(entry["mb"] == round(entry["mb"], 1) for entry in zips.values()), zips


def test_the_manifest_asks_to_read_and_write_files():
    """Import reads motion, SMPL files and photos; Export Motion writes .npz files. Blender shows
    the reason when installing, at most 64 characters with no closing punctuation (its
    validator's rule, which `make validate` applies too)."""
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
    reason = manifest["permissions"]["files"]
    assert re.search(r"\bread\b", reason, re.I) and re.search(r"\bwrite\b", reason, re.I), reason
    assert len(reason) <= 64 and (reason[-1].isalnum() or reason[-1] in ")]}"), reason
