"""scripts/demo.py's scene builds on this Blender without deprecated calls of ours, and its
materials and world come out as set (the render itself is left to the script)."""
import importlib
import warnings

import bpy
import pytest

from benchmarks import blender_session
from conftest import ROOT


def test_demo_scene_builds_without_deprecated_calls():
    from benchmarks import demo_scene

    bridge = importlib.import_module(blender_session.MODULE + ".addon.com.bridge")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bodies = demo_scene.build(bpy, bridge, (160, 72), 1)
    ours = [f"{w.filename}:{w.lineno}: {w.message}" for w in caught
            if issubclass(w.category, DeprecationWarning) and str(ROOT) in w.filename]
    assert not ours, ours
    assert len(bodies) >= 4                       # three shapes and the effector-posed body
    for label, _betas, colour in demo_scene.SHAPES:
        bsdf = bpy.data.materials[label].node_tree.nodes["Principled BSDF"]
        assert tuple(bsdf.inputs["Base Color"].default_value) == pytest.approx((*colour, 1.0))
    background = bpy.context.scene.world.node_tree.nodes["Background"]
    assert background.inputs["Strength"].default_value == pytest.approx(0.35)
    assert bpy.context.scene.render.engine == "CYCLES"


def test_the_demo_file_is_saved_alone(tmp_path):
    """The .blend is written to a temporary name and renamed: no partial file, and no backup of
    the temporary file Blender saved over, is left beside it."""
    from benchmarks.render import save_blend

    bpy.ops.wm.read_homefile(use_empty=True)
    save_blend(bpy, tmp_path / "demo.blend")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.blend"]

