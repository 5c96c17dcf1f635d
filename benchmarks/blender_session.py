"""Start headless Blender (the bpy module) with this source tree enabled as the extension.

Used by the demo, the Blender tests and benchmarks (`from benchmarks import blender_session`).
Call `start()` before anything imports bpy: it points BLENDER_USER_RESOURCES at a temporary
folder (nothing touches the user's own Blender config), links the repository into the
`user_default` extension repository and enables it as `bl_ext.user_default.smpl_ik`.
"""
import os
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULE = "bl_ext.user_default.smpl_ik"


def start():
    """Import bpy with the extension enabled; returns the bpy module."""
    if "BLENDER_USER_RESOURCES" not in os.environ:
        os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="smpl_ik_blender_")
    import bpy
    import addon_utils  # importable once bpy has set up its script paths

    repo = Path(bpy.utils.user_resource("EXTENSIONS", path="user_default", create=True))
    link = repo / "smpl_ik"
    if not link.exists():
        link.symlink_to(ROOT, target_is_directory=True)

    def fail(exc):
        raise RuntimeError(f"could not enable the SMPL-IK extension: {exc}") from exc

    addon_utils.enable(MODULE, default_set=True, handle_error=fail)
    return bpy


def extension_tool():
    """Path of Blender's own extension validator/builder (blender_ext.py) inside bpy."""
    import bpy

    return Path(bpy.utils.system_resource("SCRIPTS")) / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"
