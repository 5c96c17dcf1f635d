"""Small shared helpers of the bpy layer: the extension's package name and preferences."""

# Extensions load as bl_ext.<repo>.<id>; this module is <that>.addon.common.
PACKAGE = __package__.rpartition(".")[0]


def preferences(context):
    """The add-on preferences, or None when the add-on is registered without being enabled."""
    addon = context.preferences.addons.get(PACKAGE)
    return addon.preferences if addon else None
