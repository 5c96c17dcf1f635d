"""SMPL-IK Blender extension entry point: everything lives in addon/ (bpy) and models/ (core)."""
from .addon import register, unregister  # noqa: F401
