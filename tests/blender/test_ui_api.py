"""Every panel, menu entry and operator layout the add-on draws uses only what this Blender's
UILayout has (functions, keywords, icons, operators and properties): `make test` runs this on
Blender 5.0, 4.2, 4.4 and 4.5, so a call that one of them lacks fails here, not in an artist's sidebar."""
import bpy
from mathutils import Vector

from scene import DrawnLayout, draw_into, update


def make_active(obj):
    bpy.context.view_layer.objects.active = obj


def all_drawn():
    """Problems of every sidebar panel, the File menus' entries and the preferences, as drawn now."""
    problems = []
    for panel in ("SMPL_IK_PT_body", "SMPL_IK_PT_pose", "SMPL_IK_PT_rig"):
        problems += [f"{panel}: {p}" for p in draw_into(getattr(bpy.types, panel).draw).problems]
    for menu in (bpy.types.TOPBAR_MT_file_import, bpy.types.TOPBAR_MT_file_export):
        ours = [f for f in menu.draw._draw_funcs if "smpl_ik" in getattr(f, "__module__", "")]
        assert ours, f"{menu.__name__} has no SMPL-IK entry"
        for draw in ours:
            problems += [f"{menu.__name__}: {p}" for p in draw_into(draw).problems]
    return problems


def test_the_checker_catches_what_a_layout_lacks():
    layout = DrawnLayout()
    layout.label(text="x", icon="NO_SUCH_ICON")
    layout.row(align=True).prop(bpy.context.scene, "no_such_property")
    layout.operator("smpl_ik.no_such_operator")
    layout.operator("smpl_ik.bake").no_such_setting = 1
    layout.column(no_such_keyword=True)
    layout.no_such_function()
    layout.no_such_attribute = True
    assert len(layout.problems) == 7, layout.problems


def test_every_panel_and_menu_entry_draws_with_this_blenders_layout(posed, ext):
    assert all_drawn() == []                              # a body with effectors, the body active
    arm, effs = posed
    make_active(effs["left_wrist"])                          # an effector active
    effs["left_wrist"].location += Vector((0.0, -3.0, 0.0))  # out of reach: the status in red
    update()
    assert arm.smpl_ik.status
    assert all_drawn() == []
    bpy.ops.object.select_all(action="DESELECT")
    make_active(None)                                        # nothing selected
    assert all_drawn() == []
    rig = bpy.data.objects.new("rig", bpy.data.armatures.new("rig"))
    bpy.context.collection.objects.link(rig)
    make_active(rig)                                         # an armature that is not a body
    assert all_drawn() == []
    prefs = bpy.context.preferences.addons[ext.__name__].preferences
    assert draw_into(type(prefs).draw, prefs).problems == []
    bake = type("Bake", (), {"bl_rna": bpy.ops.smpl_ik.bake.get_rna_type(), "follow_path": False})()
    drawn = draw_into(bpy.types.SMPL_IK_OT_bake.draw, bake)
    assert drawn.problems == [] and "Holder.path_smoothness" in drawn.log


def test_the_mapping_list_draws_its_items(ext):
    from test_rig import a_pose_rig

    rig = a_pose_rig()
    make_active(rig)
    assert bpy.ops.smpl_ik.map_rig() == {"FINISHED"}
    assert all_drawn() == []
    item = rig.smpl_ik_rig.mapping[0]
    layout = DrawnLayout()
    bpy.types.SMPL_IK_UL_mapping.draw_item(None, bpy.context, layout, rig.smpl_ik_rig, item, 0, None, "", 0)
    assert layout.problems == [] and f"{type(item).__name__}.bone" in layout.log
