"""Small shared helpers of the bpy layer: the extension's package name, its preferences, and
swapping in a new action without losing the old one."""
import bpy

# Extensions load as bl_ext.<repo>.<id>; this module is <that>.addon.common.
PACKAGE = __package__.rpartition(".")[0]


def preferences(context):
    """The add-on preferences, or None when the add-on is registered without being enabled."""
    addon = context.preferences.addons.get(PACKAGE)
    return addon.preferences if addon else None


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
