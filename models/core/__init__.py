"""Joint names and the kinematic tree, rotations, forward kinematics, the error type."""
