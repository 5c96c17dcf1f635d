"""On top of every feature: the sidebar panels, the shortcut, and the add-on preferences."""
from ..com.blender import register_modules_factory
from . import panels, preferences

register, unregister = register_modules_factory((preferences, panels))
