"""The bpy layer of SMPL-IK, one package per feature above the shared `com`: body, motion,
pose, rig, photo, and the ui on top. Packages register in that order and unregister in
reverse (a feature's properties exist before the operators and panels that use them)."""
from .com.blender import register_modules_factory
from . import body, motion, photo, pose, rig, ui

register, unregister = register_modules_factory((body, motion, pose, rig, photo, ui))
