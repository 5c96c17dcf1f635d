"""What an object is to the extension: an SMPL-IK body (its armature), a body's mesh, an
effector, or a custom rig; and the body an operator acts on. Each kind is recognised by the
property group its feature registers (`obj.smpl_ik`, `obj.smpl_ik_effector`)."""
from ...models.core.errors import SmplIkError


def is_body(obj):
    return obj is not None and obj.type == "ARMATURE" and obj.smpl_ik.is_body


def body_of(obj):
    """The SMPL-IK armature for an object: itself, or the armature parenting its mesh."""
    if is_body(obj):
        return obj
    if obj is not None and is_body(obj.parent):
        return obj.parent
    return None


def is_effector(obj):
    return obj is not None and obj.type == "EMPTY" and obj.smpl_ik_effector.is_effector


def is_custom_rig(obj):
    return obj is not None and obj.type == "ARMATURE" and not is_body(obj)


def rig_of(obj):
    """The object a custom-rig action applies to: a proxy body stands for the rig it drives;
    any other object for itself."""
    if is_body(obj) and obj.smpl_ik.rig is not None:
        return obj.smpl_ik.rig
    return obj


def target_body(context):
    """The body an operator acts on: the active body, its mesh, or an active effector's body.

    Raises SmplIkError saying what to select (or that an effector's body is gone)."""
    obj = context.active_object
    if is_effector(obj):
        arm = body_of(obj.smpl_ik_effector.body)
        if arm is None or not arm.users_scene:
            raise SmplIkError(f"effector {obj.name!r}: its body was deleted; point it at another body "
                              "in the SMPL-IK panel, or delete the effector")
        return arm
    arm = body_of(obj)
    if arm is None:
        raise SmplIkError("select an SMPL-IK body (its armature or mesh) or one of its effectors")
    return arm
