"""Blender tests run on the bpy module, headless, with a throw-away user folder and the
extension enabled from this source tree; every test starts from an empty scene."""
import importlib
import os
import sys
import tempfile
from pathlib import Path

import pytest

from benchmarks import blender_session

ROOT = Path(__file__).resolve().parents[2]
os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="smpl_ik_test_user_")
bpy = blender_session.start()


def pytest_report_header(config):
    """The Blender these tests run on, and whether its photo detector can run, in the log."""
    from models.photo.runtime import unavailable

    problem = unavailable("the photo and video tests")
    return [f"Blender {bpy.app.version_string} (Python {sys.version.split()[0]}, numpy "
            f"{importlib.import_module('numpy').__version__}); photo detector: {problem or 'ready'}"]


@pytest.fixture(autouse=True)
def empty_scene():
    bpy.ops.wm.read_homefile(use_empty=True)
    yield


@pytest.fixture
def ext():
    """The enabled extension's package (bl_ext.user_default.smpl_ik)."""
    return importlib.import_module(blender_session.MODULE)


@pytest.fixture
def bridge(ext):
    return importlib.import_module(blender_session.MODULE + ".addon.com.bridge")


@pytest.fixture
def posed():
    """The open body (moved and turned, so axes matter) with the six default effectors:
    (armature, {joint: effector})."""
    from scene import effectors, update

    assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    arm = bpy.context.active_object
    arm.location = (1.0, 2.0, 0.5)
    arm.rotation_euler = (0.0, 0.0, 0.6)
    update()
    assert bpy.ops.smpl_ik.add_default_effectors() == {"FINISHED"}
    update()
    return arm, effectors(arm)


_status = []


def pytest_sessionfinish(session, exitstatus):
    _status.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Leave without the bpy module's own teardown, with pytest's exit status: after every test
    has passed, bpy 4.2 can crash (SIGSEGV) and bpy 4.5 hang at interpreter exit once Rigify
    has been enabled. Blender the application never runs that teardown."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_status[-1] if _status else 0)
