"""Pose from a photo: detect the person, pose the body, pin what was seen; its operator."""
from ..com.blender import register_modules_factory
from . import operators

register, unregister = register_modules_factory((operators,))
