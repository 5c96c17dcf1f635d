"""Posing: effectors (Empties that pin joints), solving (on demand and live, through depsgraph
handlers), alternatives, pose edits, baking, and their operators."""
from ..com.blender import register_modules_factory
from . import effectors, handlers, operators

register, unregister = register_modules_factory((effectors, handlers, operators))
