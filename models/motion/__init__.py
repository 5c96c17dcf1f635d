"""Motion in and out: BVH files, joint-name mapping, retargeting, batch jobs, smoothing, rig fitting."""
