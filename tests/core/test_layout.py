"""Project rules that code review alone would let slip."""
import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_IN_CORE = {"bpy", "mathutils", "bmesh", "addon", "addon_utils"}
TORCH_SUFFIX = "_torch.py"  # training-only twins may import torch


def imports_of(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            yield node, ("." * node.level) + (node.module or "").split(".")[0]


def test_core_never_imports_blender_or_the_addon():
    for path in (ROOT / "models").rglob("*.py"):
        for node, name in imports_of(path):
            assert name not in FORBIDDEN_IN_CORE, f"{path.name}:{node.lineno} imports {name}"
            assert name != "models", f"{path.name}:{node.lineno}: use relative imports inside models/"
            if name == "torch" and not path.name.endswith(TORCH_SUFFIX):
                raise AssertionError(f"{path.name}:{node.lineno} imports torch; the runtime must not")


def test_addon_imports_core_relatively():
    for path in (ROOT / "addon").rglob("*.py"):
        for node, name in imports_of(path):
            assert name not in {"models", "torch", "scipy", "smplx"}, \
                f"{path.name}:{node.lineno} imports {name} (Blender ships numpy only; use ..models)"


def test_manifest():
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
    assert manifest["id"] == "smpl_ik" and manifest["type"] == "add-on"
    assert manifest["blender_version_min"] >= "4.2.0"


def test_numpy_runtime_never_imports_torch():
    import subprocess
    import sys

    code = ("import sys; sys.path.insert(0, %r)\n"
            "import models.smplik, models.ikgat, models.refine, models.retarget, models.body_model\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n" % str(ROOT))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_shipped_weights_are_small_and_pickle_free():
    import numpy as np

    files = sorted((ROOT / "models" / "weights").glob("*.npz"))
    assert sum(f.stat().st_size for f in files) < 20e6
    for f in files:
        with np.load(f, allow_pickle=False) as npz:
            assert all(npz[k].dtype != object for k in npz.files)
        assert f.with_suffix(".json").exists(), f"{f.name} has no training record"
