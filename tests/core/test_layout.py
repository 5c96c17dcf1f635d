"""Project rules that code review alone would let slip."""
import ast
import re
import tomllib
from pathlib import Path

import pytest

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
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    assert name.split(".")[0] not in TRAINING_ONLY, f"{where} imports {name}"
                    assert "training" not in name.split("."), f"{where} imports {name}"


ADDON = ROOT / "addon"
# addon/ packages in layers: each imports only from packages before it (and itself); the shared
# helpers at the bottom, the panels and preferences on top.
ADDON_LAYERS = ("com", "body", "motion", "pose", "rig", "photo", "ui")


def addon_module(path):
    """'pose.solving' for addon/pose/solving.py, 'pose' for addon/pose/__init__.py."""
    parts = path.relative_to(ADDON).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def addon_imports(path):
    """(node, addon module imported) for every relative import inside addon/ in `path`."""
    here = addon_module(path).split(".") if addon_module(path) else []
    package = here if path.name == "__init__.py" else here[:-1]
    for node, module in imports_of(path):
        if not module.startswith("."):
            continue
        level = len(module) - len(module.lstrip("."))
        if level > len(package) + 1:
            continue   # climbs out of addon/ (to ../models)
        base = package[:len(package) - (level - 1)]
        name = module.lstrip(".")
        targets = [".".join(base + name.split("."))] if name else []
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:   # `from . import bridge` imports a module
                candidate = ".".join(base + (name.split(".") if name else []) + [alias.name])
                if (ADDON / candidate.replace(".", "/")).with_suffix(".py").is_file() or \
                        (ADDON / candidate.replace(".", "/") / "__init__.py").is_file():
                    targets.append(candidate)
        for target in targets:
            yield node, target


def test_addon_is_one_package_per_feature_in_layers():
    loose = sorted(p.name for p in ADDON.iterdir() if p.is_file() and p.suffix == ".py" and p.name != "__init__.py")
    assert not loose, f"addon/ should hold only its __init__.py and feature packages; found {loose}"
    found = sorted(p.name for p in ADDON.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert found == sorted(ADDON_LAYERS), f"addon/ packages {found} differ from the layers {ADDON_LAYERS}"
    for path in ADDON.rglob("*.py"):
        here = addon_module(path).split(".")[0] if path.parent != ADDON else None
        for node, target in addon_imports(path):
            other = target.split(".")[0]
            if here is None or not target:
                continue
            assert ADDON_LAYERS.index(other) <= ADDON_LAYERS.index(here), \
                f"{path.relative_to(ROOT)}:{node.lineno}: addon/{here} imports addon/{other}, which sits above it"


def test_addon_imports_core_relatively():
    for path in ADDON.rglob("*.py"):
        for node, module in imports_of(path):
            top = module.split(".")[0]
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            assert top not in {"models", "torch", "scipy", "smplx"}, \
                f"{where} imports {module} (Blender ships numpy only; use the relative ...models)"
            assert "training" not in module.split("."), f"{where} imports the training package"


def test_addon_layout_test_sees_imports():
    """The layer test above would pass on an import graph it failed to read: check it reads a
    known arrow of each kind."""
    edges = {t for _, t in addon_imports(ADDON / "pose" / "solving.py")}
    assert {"com.bridge", "com.live", "pose.effectors"} <= edges, edges
    assert "com.bridge" in {t for _, t in addon_imports(ADDON / "pose" / "edits.py")}


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


def runtime_modules():
    """'models.x.y' for every module the add-on can reach (all of models/ but training)."""
    for path in sorted(MODELS.rglob("*.py")):
        if path.parent != MODELS and package_of(path) == "training":
            continue
        yield python_module(path)


def test_numpy_runtime_never_imports_torch():
    import subprocess
    import sys

    code = ("import importlib, sys\n"
            "for name in %r: importlib.import_module(name)\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in %r or m.startswith('models.training'))\n"
            "assert not bad, bad\n" % (list(runtime_modules()), sorted(TRAINING_ONLY)))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
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


PROGRAMS = ROOT / "scripts"
LIBRARIES = (MODELS, ADDON, ROOT / "benchmarks")   # code that is imported, not run
MAX_MODULE_LINES = 500


def python_module(path):
    """'models.ik.refine' for models/ik/refine.py, 'models.ik' for models/ik/__init__.py."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name):
    base = ROOT / name.replace(".", "/")
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imported_modules(path):
    """(node, module) for every import of this project's own modules in `path`, relative ones
    resolved: 'models.core.skeleton' for `from ..core.skeleton import X` in models/ik/x.py, and
    the module itself for `from . import bridge`."""
    package = python_module(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node, module in imports_of(path):
        level = len(module) - len(module.lstrip("."))
        if level:
            if level - 1 >= len(package):
                continue
            base = package[:len(package) - (level - 1)] + [p for p in module.lstrip(".").split(".") if p]
        else:
            base = module.split(".")
        name = ".".join(base)
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if is_module(f"{name}.{alias.name}"):
                    yield node, f"{name}.{alias.name}"
        if is_module(name):
            yield node, name


def import_graph(root):
    graph = {}
    for path in root.rglob("*.py"):
        here = python_module(path)
        graph[here] = {t for _, t in imported_modules(path)
                       if t != here and not (path.name == "__init__.py" and t.startswith(here + "."))}
    return graph


@pytest.mark.parametrize("root", LIBRARIES, ids=lambda root: root.name)
def test_no_import_circle(root):
    graph = import_graph(root)
    # a package's own __init__ is a name space, not a concern: it may be reached through its modules
    graph = {m: {t for t in ts if (ROOT / t.replace(".", "/")).with_suffix(".py").is_file()}
             for m, ts in graph.items()}

    def reaches(start, goal, seen):
        for n in graph.get(start, ()):
            if n == goal:
                return True
            if n not in seen:
                seen.add(n)
                if reaches(n, goal, seen):
                    return True
        return False

    cycles = sorted(m for m in graph if reaches(m, m, set()))
    assert not cycles, f"modules of {root.name}/ that import each other in a circle: {cycles}"


def test_import_graph_sees_imports():
    """The circle test would pass on a graph it failed to read: check known arrows of each form."""
    graph = import_graph(MODELS)
    assert "models.core.skeleton" in graph["models.core.kinematics"], graph["models.core.kinematics"]
    assert "models.core.errors" in graph["models.core.skeleton"]
    assert any(t.startswith("models.core.") for t in graph["models.ik.ikgat"])
    addon = import_graph(ADDON)
    assert {"addon.com.bridge", "addon.com.live", "addon.pose.effectors"} <= addon["addon.pose.solving"]


def private_imports(path):
    """'file:line name' for every private name (one leading underscore) taken from another module:
    `from x import _name`, or `mod._name` where `mod` is a module this file imported."""
    tree = ast.parse(path.read_text())
    modules = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {alias.name}")
                if node.level or (node.module or "").split(".")[0] in {"models", "benchmarks"}:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in {"models", "benchmarks"}:
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                and isinstance(node.value, ast.Name) and node.value.id in modules:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value.id}.{node.attr}")
    return found


def test_no_private_name_crosses_modules():
    found = [f for root in LIBRARIES + (PROGRAMS,) for path in sorted(root.rglob("*.py"))
             for f in private_imports(path)]
    assert not found, "private names used outside their module (make them public where they belong): " + \
        "; ".join(found)


def test_private_import_scan_sees_both_forms(tmp_path):
    sample = ROOT / "tests" / "core" / "_private_scan_sample.py"
    sample.write_text("from models.ik import refine\nfrom ..core.x import _hidden\nrefine._step(1)\n")
    try:
        found = private_imports(sample)
    finally:
        sample.unlink()
    assert [f.split(" ")[1] for f in found] == ["_hidden", "refine._step"], found


def test_scripts_are_thin_programs():
    """No sys.path edits and no program importing another program: shared code is a library."""
    programs = {p.stem for p in PROGRAMS.glob("*.py")}
    edits = ("sys.path." + "insert", "sys.path." + "append")   # spelled so this file passes its own test
    for root in LIBRARIES + (PROGRAMS, ROOT / "tests"):
        for path in sorted(root.rglob("*.py")):
            text = path.read_text()
            where = path.relative_to(ROOT)
            assert not any(e in text for e in edits), \
                f"{where} edits sys.path (the editable install, pyproject.toml, makes imports work)"
            for node, module in imports_of(path):
                top = module.split(".")[0]
                assert top not in programs and top != "scripts", f"{where}:{node.lineno} imports the program {module}"


def calls_that_print_or_exit(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"print", "exit", "quit"}:
            yield node.lineno, node.func.id
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "exit" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in {"sys", "os"}:
            yield node.lineno, f"{node.func.value.id}.exit"
        elif isinstance(node, ast.Name) and node.id == "SystemExit":
            yield node.lineno, "SystemExit"


def test_library_code_logs_or_raises_never_prints_or_exits():
    found = [f"{path.relative_to(ROOT)}:{line} {what}" for root in LIBRARIES
             for path in sorted(root.rglob("*.py")) for line, what in calls_that_print_or_exit(path)]
    assert not found, "library code prints or exits (log with `logging`, or raise SmplIkError): " + "; ".join(found)


def test_modules_stay_small():
    big = {}
    for root in LIBRARIES:
        for path in root.rglob("*.py"):
            lines = len(path.read_text().splitlines())
            if lines > MAX_MODULE_LINES:
                big[str(path.relative_to(ROOT))] = lines
    assert not big, f"modules over {MAX_MODULE_LINES} lines (split them where their jobs part): {big}"


def test_programs_stay_thin():
    lines = sum(len(p.read_text().splitlines()) for p in PROGRAMS.glob("*.py"))
    assert lines < 2500, f"scripts/ holds {lines} lines: library code belongs in models/ or benchmarks/"
