"""Motion: the body's keys, AMASS-style `.npz` import and export, and their operators."""
from ..com.blender import register_modules_factory
from . import operators

register, unregister = register_modules_factory((operators,))
