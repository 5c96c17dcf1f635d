"""bpy-free core of the SMPL-IK extension: body model, kinematics, rotations.

Everything in this package runs on numpy alone (torch only in `*_torch` twins used for
training), so the same code serves Blender, scripts, tests and batch jobs.
"""
