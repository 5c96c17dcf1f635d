"""Small helpers the Blender tests share: evaluate the scene, find a body's effectors, read joints."""
import bpy
import numpy as np

from models.core.skeleton import JOINT_NAMES


def update():
    """Evaluate the depsgraph (the live-solving handler runs)."""
    bpy.context.view_layer.update()


def effectors(arm):
    """{joint name: effector object} of a body."""
    return {o.smpl_ik_effector.joint: o for o in bpy.data.objects
            if o.type == "EMPTY" and o.smpl_ik_effector.body == arm}


def joint_world(arm, joint):
    """(3,) world position of a joint in the pose on screen."""
    return np.array(arm.matrix_world @ arm.pose.bones[joint].head)


def quats(arm):
    """(24, 4) the pose bones' quaternions."""
    return np.array([arm.pose.bones[n].rotation_quaternion[:] for n in JOINT_NAMES])


def largest_turn_deg(arm):
    """Degrees: the largest rotation of any pose bone away from its rest (0 in the rest pose)."""
    w = np.clip(np.abs(quats(arm)[:, 0]), 0.0, 1.0)
    return float(np.degrees(2 * np.arccos(w)).max())


def fcurves(action):
    """An action's F-curves (Blender 5 keeps them in layers, strips and channel bags)."""
    if getattr(action, "layers", None):
        return [fc for layer in action.layers for strip in layer.strips for bag in strip.channelbags
                for fc in bag.fcurves]
    return list(action.fcurves)


def object_fcurves(obj):
    """The F-curves animating `obj`: its action slot's channel bag where actions have slots
    (Blender 4.4+; the slot must be set), the action's own F-curves before."""
    action = obj.animation_data.action
    if not hasattr(action, "layers"):
        return list(action.fcurves)
    from bpy_extras import anim_utils

    slot = obj.animation_data.action_slot
    assert slot is not None, f"{obj.name}'s action has no slot"
    return list(anim_utils.action_get_channelbag_for_slot(action, slot).fcurves)


def keys(action):
    """{(data path, index): [(frame, value), ...]} of an action."""
    return {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points] for fc in fcurves(action)}


def fit(rig):
    """Fit an SMPL-IK proxy to a rig (Fit Rig); returns the proxy."""
    bpy.context.view_layer.objects.active = rig
    assert bpy.ops.smpl_ik.fit_rig() == {"FINISHED"}
    update()
    return rig.smpl_ik_rig.proxy


def data_counts():
    """How many objects, meshes, armatures and actions the file holds."""
    return (len(bpy.data.objects), len(bpy.data.meshes), len(bpy.data.armatures), len(bpy.data.actions))


def refused_unchanged(call, message, target):
    """Run `call` (an operator call that must fail) on a new body when target is 'ACTIVE'
    (nothing selected otherwise): it raises with `message` (a regex) and leaves every data
    block and the scene's frame range as they were."""
    import pytest

    if target == "ACTIVE":
        assert bpy.ops.smpl_ik.add_body() == {"FINISHED"}
    scene = bpy.context.scene
    frames, before = (scene.frame_start, scene.frame_end), data_counts()
    with pytest.raises(RuntimeError, match=message):
        call()
    assert data_counts() == before and (scene.frame_start, scene.frame_end) == frames


def undo_restores(call, operator, state):
    """`call` (an operator call that succeeds) changes `state()`; one undo brings it back, and
    the operator class `operator` is an undo step in the UI."""
    bpy.ops.ed.undo_push(message="before")
    before = state()
    assert call() == {"FINISHED"}
    bpy.ops.ed.undo_push(message="after")        # as the operator's UNDO flag does in the UI
    assert state() != before
    assert bpy.ops.ed.undo() == {"FINISHED"}
    assert state() == before
    assert "UNDO" in operator.bl_options


class DrawnLayout:
    """Stands in for bpy.types.UILayout while a panel, menu or operator draws. `log` records
    the operators ("smpl_ik.solve"), properties ("SmplIkBodyProperties.live") and labels
    (("label", text, alert)) asked for. `problems` collects what this Blender's own UILayout
    would refuse: a function it lacks, a keyword a function does not take, an icon it does not
    have, an operator not registered, a property (or operator property) its data lacks."""

    def __init__(self, log=None, problems=None, alert=False):
        object.__setattr__(self, "log", [] if log is None else log)
        object.__setattr__(self, "problems", [] if problems is None else problems)
        object.__setattr__(self, "alert", alert)

    def __setattr__(self, name, value):   # row.alert = True, row.active = ..., row.enabled = ...
        if name not in bpy.types.UILayout.bl_rna.properties:
            self.problems.append(f"UILayout has no attribute {name!r}")
        object.__setattr__(self, name, value)

    def __getattr__(self, name):
        function = bpy.types.UILayout.bl_rna.functions.get(name)
        if function is None:
            self.problems.append(f"UILayout has no function {name}()")
            return lambda *a, **k: DrawnLayout(self.log, self.problems, self.alert)
        return lambda *args, **kwargs: self._call(name, function, args, kwargs)

    def _call(self, name, function, args, kwargs):
        params = [p.identifier for p in function.parameters if not p.is_output]
        given = dict(zip(params, args), **kwargs)
        if len(args) > len(params):
            self.problems.append(f"UILayout.{name}() takes {len(params)} arguments, got {len(args)}")
        for key in kwargs:
            if key not in params:
                self.problems.append(f"UILayout.{name}() takes no keyword {key!r}")
        if "icon" in given and given["icon"] not in function.parameters["icon"].enum_items:
            self.problems.append(f"UILayout.{name}(): no icon {given['icon']!r} in this Blender")
        for data, prop in (("data", "property"), ("search_data", "search_property")):
            if data in given:
                self.log.append(f"{type(given[data]).__name__}.{given[prop]}")
                if given[prop] not in given[data].bl_rna.properties:
                    self.problems.append(f"UILayout.{name}(): {type(given[data]).__name__} has no {given[prop]!r}")
        if name == "label":
            self.log.append(("label", given.get("text", ""), self.alert))
        if name in ("operator", "operator_menu_enum"):
            return self._operator(given["operator"], given.get("property"))
        return DrawnLayout(self.log, self.problems, self.alert)

    def _operator(self, idname, enum_property):
        self.log.append(idname)
        problems = self.problems
        try:
            module, op = idname.split(".")
            properties = getattr(getattr(bpy.ops, module), op).get_rna_type().properties
        except (ValueError, AttributeError, KeyError):
            problems.append(f"no operator {idname!r} registered")
            return None
        if enum_property is not None and enum_property not in properties:
            problems.append(f"{idname} has no property {enum_property!r}")

        class Properties:
            def __setattr__(self, key, value):
                if key not in properties:
                    problems.append(f"{idname} has no property {key!r}")

        return Properties()


def draw_into(draw, owner=None):
    """Call a `draw(self, context)` function (a panel's, a menu entry's, an operator's) with a
    DrawnLayout; the `self` it gets is `owner` (for its properties) with that layout. Returns
    the layout: its `log` and `problems`."""
    layout = DrawnLayout()
    holder = type("Holder", (), {"layout": layout, "__getattr__": lambda _s, name: getattr(owner, name)})()
    draw(holder, bpy.context)
    return layout
