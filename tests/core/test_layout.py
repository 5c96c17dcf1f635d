"""Project rules that code review alone would let slip."""
import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
FORBIDDEN_IN_CORE = {"bpy", "mathutils", "bmesh", "addon", "addon_utils"}
# models/ packages in layers: each imports only from packages before it (and itself).
LAYERS = ("core", "body", "motion", "ik", "photo", "training")
TRAINING_ONLY = {"torch", "scipy", "smplx", "trimesh", "anny"}   # never imported by the runtime at top level


def imports_of(path):
    """(node, module) for every import; relative modules keep their leading dots."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name
        elif isinstance(node, ast.ImportFrom):
            yield node, ("." * node.level) + (node.module or "")


def package_of(path):
    return path.relative_to(MODELS).parts[0]


def imported_package(path, module):
    """The models/ package a relative import inside models/ reaches (None: the same one)."""
    level = len(module) - len(module.lstrip("."))
    if level == 1:
        return None
    assert level == 2, f"{path}: import {module} climbs out of models/"
    return module.lstrip(".").split(".")[0]


def test_models_top_level_holds_only_subpackages():
    loose = sorted(p.name for p in MODELS.iterdir() if p.is_file() and p.name != "__init__.py")
    assert not loose, f"models/ should hold only subpackages; found {loose}"
    for pkg in LAYERS:
        assert (MODELS / pkg / "__init__.py").is_file(), f"models/{pkg} is not a package"
    found = sorted(p.name for p in MODELS.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert found == sorted(LAYERS), f"models/ subpackages {found} differ from the layers {LAYERS}"


def test_core_never_imports_blender_or_the_addon_and_keeps_its_layers():
    for path in MODELS.rglob("*.py"):
        here = package_of(path) if path.parent != MODELS else None
        for node, module in imports_of(path):
            top = module.split(".")[0]
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            assert top not in FORBIDDEN_IN_CORE, f"{where} imports {module}"
            assert top != "models", f"{where}: use relative imports inside models/"
            if module.startswith(".") and here is not None:
                other = imported_package(path, module)
                if other is not None:
                    assert LAYERS.index(other) < LAYERS.index(here), \
                        f"{where}: models/{here} imports models/{other}, which sits above it"
            if top == "torch":
                assert here == "training", f"{where} imports torch outside models/training"


def test_runtime_never_imports_torch_or_the_training_package():
    """Every module the add-on can reach (all of models/ but training) at top level: no torch,
    scipy, smplx, trimesh or anny, and no models.training."""
    for path in MODELS.rglob("*.py"):
        if path.parent != MODELS and package_of(path) == "training":
            continue
        tree = ast.parse(path.read_text())
        for node in tree.body:   # module level; smplx is imported inside one helper for tests
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for name in names:
                    assert name.split(".")[0] not in TRAINING_ONLY, f"{path.relative_to(ROOT)}:{node.lineno} imports {name}"
                    assert "training" not in name.split("."), f"{path.relative_to(ROOT)}:{node.lineno} imports {name}"


def test_addon_imports_core_relatively_and_has_no_cycles():
    graph = {}
    for path in (ROOT / "addon").rglob("*.py"):
        graph[path.stem] = set()
        for node, module in imports_of(path):
            top = module.split(".")[0]
            assert top not in {"models", "torch", "scipy", "smplx"}, \
                f"{path.name}:{node.lineno} imports {module} (Blender ships numpy only; use ..models)"
            assert "training" not in module.split("."), f"{path.name}:{node.lineno} imports the training package"
            if module == ".":
                graph[path.stem] |= {a.name for a in node.names}
            elif module.startswith(".") and not module.startswith(".."):
                graph[path.stem].add(module[1:].split(".")[0])

    def reaches(start, goal, seen=()):
        return any(n == goal or (n not in seen and reaches(n, goal, seen + (n,))) for n in graph.get(start, ()))

    cycles = sorted(m for m in graph if m != "__init__" and reaches(m, m))
    assert not cycles, f"addon modules import each other in a circle: {cycles}"


def version_tuple(text):
    assert re.fullmatch(r"\d+\.\d+\.\d+", text), f"{text!r} is not a version x.y.z"
    return tuple(int(p) for p in text.split("."))


def test_version_tuple_compares_numbers_not_strings():
    assert version_tuple("4.10.0") > version_tuple("4.2.0")
    assert version_tuple("5.0.0") > version_tuple("4.2.0")


def test_manifest():
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
    assert manifest["id"] == "smpl_ik" and manifest["type"] == "add-on"
    assert version_tuple(manifest["blender_version_min"]) >= (4, 2, 0)
    assert version_tuple(manifest["blender_version_min"]) <= (5, 0, 0), "the tests run on Blender 5.0"


def test_numpy_runtime_never_imports_torch():
    import subprocess
    import sys

    code = ("import sys; sys.path.insert(0, %r)\n"
            "import models.ik.smplik, models.ik.ikgat, models.ik.refine, models.motion.retarget, "
            "models.motion.batch, models.motion.rig_fit, models.photo.detect, models.photo.fit, models.body.model\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in %r or m.startswith('models.training'))\n"
            "assert not bad, bad\n" % (str(ROOT), sorted(TRAINING_ONLY)))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_shipped_weights_are_small_and_pickle_free():
    import numpy as np

    files = sorted((MODELS / "ik" / "weights").glob("*.npz"))
    assert len(files) >= 2
    assert sum(f.stat().st_size for f in files) < 20e6
    for f in files:
        with np.load(f, allow_pickle=False) as npz:
            assert all(npz[k].dtype != object for k in npz.files)
        assert f.with_suffix(".json").exists(), f"{f.name} has no training record"
