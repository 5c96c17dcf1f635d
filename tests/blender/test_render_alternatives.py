"""scripts/render_alternatives.py: every body meets its pins and has a sphere on each, every
alternative differs from its row's natural pose where the pins leave it free, the labels name
the pin sets and the poses, a target hidden inside a body is drawn over it, and the PNG is
written at the size asked."""
import bpy
import numpy as np
import pytest
from scene import effectors, joint_world

from models.core.skeleton import JOINT_NAMES
from models.ik.flow import DEFAULT_FLOW_WEIGHTS
from models.photo.image_size import PNG_SIGNATURE, image_size_from_header

pytestmark = pytest.mark.skipif(not DEFAULT_FLOW_WEIGHTS.exists(),
                                reason="the generative weights models/ik/weights/smplik_flow.npz are not trained yet")
SIZE = (240, 300)   # pixels: a target sphere is a few pixels wide
ALTERNATIVES = 2
MET = 1e-3          # metres: a pin is met
DIFFERENT = 0.01    # metres: an alternative moves some free joint this far from the natural pose


@pytest.fixture(scope="module")
def picture(tmp_path_factory):
    """The picture rendered small, and what the scene held, as plain data (every test starts
    from an empty scene): {path, cells: [(pin set, label, {joint: (target, joint) world (3,)},
    joints in the body's frame (24, 3))], spheres (N, 3), texts, hidden: the crouch's pelvis
    target's pixel (x, y) from the bottom left}."""
    from bpy_extras.object_utils import world_to_camera_view

    from benchmarks import alternatives_scene as render_alternatives

    path = tmp_path_factory.mktemp("alternatives") / "alternatives.png"
    cells, spheres = render_alternatives.build(bpy, SIZE, 4, ALTERNATIVES)
    render_alternatives.render(bpy, path, spheres)
    scene = bpy.context.scene
    out = {"path": path, "cells": [], "spheres": np.array([s.matrix_world.translation for s in spheres]),
           "texts": [o.data.body for o in scene.objects if o.type == "FONT"]}
    for cell in cells:
        to_body = np.array(cell.arm.matrix_world.inverted())
        world = np.array([joint_world(cell.arm, n) for n in JOINT_NAMES])
        pins = {joint: (np.array(obj.matrix_world.translation), joint_world(cell.arm, joint))
                for joint, obj in effectors(cell.arm).items()}
        out["cells"].append((cell.pin_set, cell.label, pins, world @ to_body[:3, :3].T + to_body[:3, 3]))
        if cell.pin_set == "crouch" and cell.label == "natural":
            view = world_to_camera_view(scene, scene.camera, effectors(cell.arm)["pelvis"].matrix_world.translation)
            out["hidden"] = (int(view.x * SIZE[0]), int(view.y * SIZE[1]))
    return out


def test_every_body_meets_its_pins_and_each_pin_has_a_sphere(picture):
    from benchmarks import alternatives_scene as render_alternatives

    assert len(picture["cells"]) == len(render_alternatives.PIN_SETS) * (ALTERNATIVES + 1)
    targets = []
    for (pin_set, label, pins, _joints), (name, _what, moves) in zip(
            picture["cells"], [s for s in render_alternatives.PIN_SETS for _ in range(ALTERNATIVES + 1)]):
        assert pin_set == name and set(pins) == set(moves)
        for joint, (target, at) in pins.items():
            assert np.linalg.norm(at - target) < MET, (pin_set, label, joint)
            targets.append(target)
    spheres = picture["spheres"]
    assert len(spheres) == len(targets)
    assert np.abs(np.sort(spheres, axis=0) - np.sort(np.array(targets), axis=0)).max() < 1e-6


def test_alternatives_differ_from_the_natural_pose_on_a_free_joint(picture):
    rows = {}
    for pin_set, label, pins, joints in picture["cells"]:
        rows.setdefault(pin_set, {})[label] = (pins, joints)
    for pin_set, row in rows.items():
        pins, natural = row["natural"]
        free = [i for i, n in enumerate(JOINT_NAMES) if n not in pins]
        for k in range(1, ALTERNATIVES + 1):
            moved = np.linalg.norm(row[f"alternative {k}"][1][free] - natural[free], axis=1)
            assert moved.max() > DIFFERENT, (pin_set, k)


def test_labels_name_the_pin_sets_and_the_poses(picture):
    from benchmarks import alternatives_scene as render_alternatives

    texts = picture["texts"]
    rows = len(render_alternatives.PIN_SETS)
    for name, _what, _moves in render_alternatives.PIN_SETS:
        assert name in texts
    assert texts.count("natural") == rows
    for k in range(1, ALTERNATIVES + 1):
        assert texts.count(f"alternative {k}") == rows


def test_the_png_has_the_size_asked_and_shows_a_hidden_target(picture):
    path = picture["path"]
    assert path.read_bytes().startswith(PNG_SIGNATURE)
    assert image_size_from_header(path) == SIZE
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]   # no partial file beside it
    image = bpy.data.images.load(str(path))
    pixels = np.empty(SIZE[0] * SIZE[1] * 4, np.float32)
    image.pixels.foreach_get(pixels)
    x, y = picture["hidden"]
    r, g, b, _a = pixels.reshape(SIZE[1], SIZE[0], 4)[y, x]
    assert r > g + 0.25 and r > b + 0.25, (r, g, b)   # the red sphere, not the body round it
