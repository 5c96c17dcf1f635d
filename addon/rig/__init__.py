"""Custom rigs: map a humanoid armature's bones to SMPL's joints, fit an SMPL proxy body to it,
drive the rig from the proxy, and bake the result back onto the rig's own bones."""
from ..com.blender import register_modules_factory
from . import mapping, operators

register, unregister = register_modules_factory((mapping, operators))
