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
