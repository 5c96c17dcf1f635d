"""The idioms every feature of the bpy layer shares, one copy each: the extension's package
name and preferences, registering modules in order, making one object the selection, leaving
edit and pose mode, removing what a failed step made, the F-curves of an action across
Blender 4.2-5.0 (with and without slotted actions), and the progress bar."""
import contextlib
from pathlib import Path

import bpy

# Extensions load as bl_ext.<repo>.<id>; this module is <that>.addon.com.blender.
PACKAGE = __package__.rsplit(".", 2)[0]
BODY_SUFFIXES = (".npz", ".pkl")


def register_modules_factory(modules):
    """(register, unregister) that register `modules` in order and unregister them in reverse."""
    def register():
        for module in modules:
            module.register()

    def unregister():
        for module in reversed(modules):
            module.unregister()

    return register, unregister


def object_properties_factory(classes, attribute, group):
    """(register, unregister) for a feature's property groups `classes`, whose `group` is
    stored on every object as `bpy.types.Object.<attribute>` (added after the classes are
    registered, removed before they are unregistered)."""
    register_classes, unregister_classes = bpy.utils.register_classes_factory(classes)

    def register():
        register_classes()
        setattr(bpy.types.Object, attribute, bpy.props.PointerProperty(type=group))

    def unregister():
        delattr(bpy.types.Object, attribute)
        unregister_classes()

    return register, unregister


def preferences(context):
    """The add-on preferences, or None when the add-on is registered without being enabled."""
    addon = context.preferences.addons.get(PACKAGE)
    return addon.preferences if addon else None


def user_body_files(context):
    """Sorted SMPL-family candidate files in the preferences' body folder ([] when unset)."""
    prefs = preferences(context)
    folder = bpy.path.abspath(prefs.body_folder) if prefs and prefs.body_folder else ""
    if not folder or not Path(folder).is_dir():
        return []
    return sorted(p for p in Path(folder).iterdir() if p.suffix.lower() in BODY_SUFFIXES and p.is_file())


def object_mode(context):
    """Leave edit or pose mode (a new object or a bone edit needs object mode)."""
    if context.mode != "OBJECT" and context.view_layer.objects.active is not None:
        bpy.ops.object.mode_set(mode="OBJECT")


def select_only(context, obj):
    """Make `obj` the only selected object and the active one."""
    for other in context.selected_objects:
        other.select_set(False)
    obj.select_set(True)
    context.view_layer.objects.active = obj


def remove_created(created):
    """Remove what a failed step made (objects, then their data left without users: meshes,
    armatures, cameras; actions; images; movie clips), in the order given, so nothing is
    orphaned. None entries are skipped."""
    for item in created:
        if item is None:
            continue
        if isinstance(item, bpy.types.Action):
            bpy.data.actions.remove(item)
        elif isinstance(item, bpy.types.Image):
            bpy.data.images.remove(item)
        elif isinstance(item, bpy.types.MovieClip):
            bpy.data.movieclips.remove(item)
        else:
            data = item.data
            bpy.data.objects.remove(item)
            for kind, collection in ((bpy.types.Mesh, bpy.data.meshes), (bpy.types.Armature, bpy.data.armatures),
                                     (bpy.types.Camera, bpy.data.cameras)):
                if isinstance(data, kind) and data.users == 0:
                    collection.remove(data)


def assign_new_action(obj, name):
    """Assign a new action named `name` to `obj` (with a slot of its own where actions have
    slots, Blender 4.4+). The action it replaces is kept: when `obj` was its only user it gets
    a fake user. Returns (the new action, the replaced action when it got that fake user,
    else None)."""
    anim = obj.animation_data or obj.animation_data_create()
    previous = anim.action
    kept = None
    if previous is not None and previous.users == 1 and not previous.use_fake_user:
        previous.use_fake_user = True
        kept = previous
    action = bpy.data.actions.new(name)
    anim.action = action
    if hasattr(action, "slots") and anim.action_slot is None:
        anim.action_slot = action.slots.new(id_type="OBJECT", name=obj.name)
    return action, kept


def action_curves(action, obj):
    """The F-curves `obj`'s slot of `action` holds, or None when there are none; before
    Blender 4.4, the action's own."""
    if not hasattr(action, "layers"):
        return action.fcurves
    slot = obj.animation_data.action_slot if obj.animation_data is not None else None
    if slot is None:
        return None
    from bpy_extras import anim_utils

    bag = anim_utils.action_get_channelbag_for_slot(action, slot)
    return bag.fcurves if bag is not None else None


def curve_maker(action, obj):
    """A function (data path, index, group name) -> a new F-curve of `obj`'s slot of `action`
    in that group (the slot's layer, strip and channel bag are made when missing). Blender 4.4
    and 4.5 make a channel bag's F-curve without a group and take the group after; 5.0 can do
    both in one call, and before 4.4 the action's own F-curves take `action_group`."""
    if not hasattr(action, "layers"):
        return lambda path, index, group: action.fcurves.new(path, index=index, action_group=group)
    slot = obj.animation_data.action_slot
    layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
    strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type="KEYFRAME")
    bag = strip.channelbag(slot, ensure=True)
    groups = {g.name: g for g in bag.groups}

    def new(path, index, group):
        curve = bag.fcurves.new(path, index=index)
        if group not in groups:
            groups[group] = bag.groups.new(group)
        curve.group = groups[group]
        return curve

    return new


@contextlib.contextmanager
def progress_bar(context):
    """The window manager's progress bar while the block runs; yields a callable taking the
    fraction done (0-1)."""
    wm = context.window_manager
    wm.progress_begin(0, 1000)
    try:
        yield lambda fraction: wm.progress_update(int(1000 * min(max(fraction, 0.0), 1.0)))
    finally:
        wm.progress_end()
