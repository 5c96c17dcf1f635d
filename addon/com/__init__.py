"""What every feature of the bpy layer uses: the bridge between arrays and Blender data, live
solving's shared state, what an object is, and the common Blender idioms. Registers nothing."""
