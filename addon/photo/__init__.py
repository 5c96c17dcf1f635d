"""Pose from a photo (detect the person, pose the body, pin what was seen) and from a video
(track the person, key the body, the clip behind it); their operators."""
from ..com.blender import register_modules_factory
from . import operators

register, unregister = register_modules_factory((operators,))
