"""Properties stored on objects: `obj.smpl_ik` marks an SMPL-IK body and holds its shape."""
import logging

import bpy
from bpy.props import (
    BoolProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from ...models.body.model import NUM_BETAS
from ...models.ik.flow import DEFAULT_TEMPERATURE
from ...models.core.errors import SmplIkError
from ..com.blender import object_properties_factory
from .build import SHAPE_KEY_RANGE, apply_shape

log = logging.getLogger(__name__)
_updating = False  # apply_shape writes betas back on refusal; that must not recurse


def _betas_changed(self, context):
    global _updating
    if _updating or not self.is_body or self.betas[:] == self.applied_betas[:]:
        return  # re-entry, not a body, or nothing changed (also after a refused value)
    _updating = True
    try:
        apply_shape(context, self.id_data)
        self.status = ""
    except SmplIkError as exc:
        self.status = str(exc)
        log.warning("SMPL-IK: %s", exc)
    finally:
        _updating = False


class SmplIkBodyProperties(bpy.types.PropertyGroup):
    is_body: BoolProperty(name="SMPL-IK body", default=False, options={"HIDDEN"})
    body_path: StringProperty(
        name="Body file", subtype="FILE_PATH",
        description="SMPL-family file this body was built from (empty: the open body of its gender)")
    gender: StringProperty(name="Gender", default="neutral",
                           description="The body's gender (neutral, female or male); with no body file "
                                       "it names the open body")
    target_height: FloatProperty(name="Height", default=1.75, subtype="DISTANCE", unit="LENGTH", precision=3,
                                 description="Height to give the body (metres, top of the head to the sole "
                                             "in the rest pose) with Set Height and Weight")
    target_weight: FloatProperty(name="Weight", default=75.0, unit="MASS", precision=1,
                                 description="Weight to give the body (kilograms) with Set Height and Weight")
    mesh: PointerProperty(name="Mesh", type=bpy.types.Object, description="The body's skinned mesh")
    betas: FloatVectorProperty(
        name="Shape", size=NUM_BETAS, default=[0.0] * NUM_BETAS,
        min=-SHAPE_KEY_RANGE, max=SHAPE_KEY_RANGE, soft_min=-5.0, soft_max=5.0, precision=3,
        description="SMPL shape coefficients (betas); each is about one standard deviation "
                    "of the adult population per unit",
        update=_betas_changed)
    applied_betas: FloatVectorProperty(size=NUM_BETAS, default=[0.0] * NUM_BETAS, options={"HIDDEN"})
    status: StringProperty(name="Status", description="The last problem with this body, if any: a refused "
                                                       "value, or an effector its last solve did not meet")
    rig: PointerProperty(name="Rig", type=bpy.types.Object,
                         description="The custom rig this body is the proxy of (it drives that rig)")
    live: BoolProperty(name="Live Solving", default=True,
                       description="Solve the body whenever one of its enabled effectors moves")
    refine: BoolProperty(name="Exact Effectors", default=True,
                         description="Refine the network's pose so every effector is met exactly "
                                     "(off: the raw network output, faster and looser)")
    plant_feet: BoolProperty(name="Plant Feet", default=True,
                             description="An ankle pinned by position keeps its foot turned as it is "
                                         "now (unless a rotation effector pins it), so the toes stay put")
    use_floor: BoolProperty(name="Floor", default=False,
                            description="Keep the soles of the feet (heels, balls, toes and edges) "
                                        "above a floor height")
    # No hard min/max: Blender would clamp a script's bad value silently; solving refuses it with a message.
    floor_height: FloatProperty(name="Floor Height", default=0.0, subtype="DISTANCE", unit="LENGTH",
                                soft_min=-10.0, soft_max=10.0,
                                description="The floor's height (world Z) that the feet stay above")
    keep_pose: BoolProperty(name="Keep Pose While Dragging", default=True,
                            description="While an effector is dragged, keep the character of the pose on "
                                        "screen (carried along the network's answer, its latent in the generative "
                                        "model the fallback); off, or without the generative weights: refine "
                                        "the pose on screen as it is")
    # Alternatives: no hard limits either (a script's bad value is refused with a message)
    alternatives_count: IntProperty(name="Alternatives", default=8, soft_min=2, soft_max=32,
                                    description="How many alternative poses Next and Previous step through "
                                                "(2 to 32)")
    variation: FloatProperty(name="Variation", default=DEFAULT_TEMPERATURE, soft_min=0.0, soft_max=2.0, precision=2,
                             description="How far the alternatives may stray from the natural pose (the "
                                         "sampling temperature, 0 to 2; 0: all one pose, the model's least-effort one)")
    alternative_index: IntProperty(default=0, options={"HIDDEN"},
                                   description="Which alternative is on screen (0: the pose before them)")


classes = (SmplIkBodyProperties,)
register, unregister = object_properties_factory(classes, "smpl_ik", SmplIkBodyProperties)
