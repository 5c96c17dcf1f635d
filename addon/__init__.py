"""The bpy layer of SMPL-IK: preferences, properties, operators and panels.

Modules register in order and unregister in reverse.
"""
from . import effectors, motion_io, operators, panels, preferences, properties, rig, solving

_modules = (preferences, properties, effectors, rig, solving, operators, motion_io, panels)


def register():
    for module in _modules:
        module.register()


def unregister():
    for module in reversed(_modules):
        module.unregister()
