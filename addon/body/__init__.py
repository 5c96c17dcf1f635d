"""The body: an SMPL-layout armature with its skinned mesh (build), the shape stored on it
(properties) and the operators that add and shape one."""
from ..com.blender import register_modules_factory
from . import operators, properties

register, unregister = register_modules_factory((properties, operators))
