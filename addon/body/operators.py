"""The body's operators (`smpl_ik.add_body`, `reset_shape`, `set_measurements`): add an open
or a user's body, and shape it."""
from pathlib import Path

import bpy
from bpy.props import EnumProperty, FloatProperty, StringProperty

from ...models.body.measure import fit_measurements
from ...models.body.model import GENDERS, NUM_BETAS, load_body_model, open_body_path
from ...models.core.errors import SmplIkError
from ..com.blender import object_mode, select_only, user_body_files
from ..com.operators import BodyOperator
from .build import BodySpec, body_model_of, create_body

OPEN_BODY = "OPEN"   # the neutral open body; OPEN_FEMALE and OPEN_MALE the others
OPEN_BODIES = {OPEN_BODY if g == "neutral" else f"{OPEN_BODY}_{g.upper()}": g for g in GENDERS}
_enum_cache = []  # Blender needs enum item strings kept alive by Python


def _body_items(self, context):
    items = [(key, f"Open body ({g})", f"The shipped open SMPL-layout body, {g} (CC0 data)")
             for key, g in OPEN_BODIES.items()]
    for path in user_body_files(context):
        items.append((str(path), path.name, f"Your body file {path}"))
    _enum_cache[:] = items
    return _enum_cache


class SMPL_IK_OT_add_body(bpy.types.Operator):
    """Add an SMPL-layout body (armature and skinned mesh) at the 3D cursor"""

    bl_idname = "smpl_ik.add_body"
    bl_label = "Add SMPL-IK Body"
    bl_options = {"REGISTER", "UNDO"}

    body: EnumProperty(name="Body", items=_body_items,
                       description="An open body (neutral, female or male), or one of your files from the "
                                   "preferences' folder")
    filepath: StringProperty(name="File", subtype="FILE_PATH",
                             description="An SMPL-family file to use instead of the choice above")

    def execute(self, context):
        gender = OPEN_BODIES.get(self.body, "neutral") if not self.filepath else "neutral"
        path = self.filepath or ("" if self.body in OPEN_BODIES else self.body)
        try:
            body = load_body_model(bpy.path.abspath(path) if path else open_body_path(gender))
        except SmplIkError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        object_mode(context)
        name = f"SMPL-IK {gender} body" if not path else f"SMPL-IK {Path(path).stem}"
        if not path and gender == "neutral":
            name = "SMPL-IK body"
        arm = create_body(context, body, BodySpec(body_path=path, name=name,
                                               location=context.scene.cursor.location.copy()))
        select_only(context, arm)
        self.report({"INFO"}, f"Added {body.label}")
        return {"FINISHED"}


class SMPL_IK_OT_reset_shape(BodyOperator, bpy.types.Operator):
    """Return the body to the average shape (all betas zero), keeping its pose"""

    bl_idname = "smpl_ik.reset_shape"
    bl_label = "Reset Shape"

    def run(self, context, arm):
        arm.smpl_ik.status = ""   # a refusal now is reported, not an old one
        arm.smpl_ik.betas = [0.0] * NUM_BETAS
        if arm.smpl_ik.status:
            raise SmplIkError(arm.smpl_ik.status)


class SMPL_IK_OT_set_measurements(BodyOperator, bpy.types.Operator):
    """Shape the body to a height and a weight (the average shape of its gender's population
    for them, met exactly on the rest mesh), keeping its pose"""

    bl_idname = "smpl_ik.set_measurements"
    bl_label = "Set Height and Weight"

    # No hard limits: Blender would clamp a bad value silently; the fit refuses it with a message.
    height: FloatProperty(name="Height", default=1.75, subtype="DISTANCE", unit="LENGTH", precision=3,
                          description="Metres, top of the head to the sole in the rest pose")
    weight: FloatProperty(name="Weight", default=75.0, unit="MASS", precision=1,
                          description="Kilograms (the mesh's volume times the body's density)")

    def run(self, context, arm):
        props = arm.smpl_ik
        if props.rig is not None:
            raise SmplIkError(f"{arm.name} is the proxy of rig {props.rig.name!r} and takes its shape "
                              "from it; change the rig and fit it again")
        betas = fit_measurements(body_model_of(arm), self.height, self.weight)   # refusals change nothing
        props.status = ""
        props.betas = betas.tolist()
        if props.status:
            raise SmplIkError(props.status)
        return f"{arm.name}: {self.height:.3f} m, {self.weight:.1f} kg"


classes = (SMPL_IK_OT_add_body, SMPL_IK_OT_reset_shape, SMPL_IK_OT_set_measurements)
register, unregister = bpy.utils.register_classes_factory(classes)
