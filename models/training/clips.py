"""The motion-capture clips every network is held out from, whole: validation while training,
and the benchmarks' test clips. No torch here: benchmarks of the numpy runtime read them too."""

# One or more per kind of motion in cmu_train (locomotion and sport), and in cmu_varied
# punching, walking on uneven ground and two modern dances.
VALIDATION_LOCOMOTION = ("cmu_basketball_5.bvh", "cmu_basketball_signal_5.bvh",
                         "cmu_directing_traffic_4.bvh", "cmu_jumping_5.bvh", "cmu_running_5.bvh",
                         "cmu_soccer_5.bvh", "cmu_walking_20.bvh", "cmu_walking_40.bvh")
VALIDATION_VARIED = ("002_05.bvh", "003_02.bvh", "005_07.bvh", "005_16.bvh")
VALIDATION_CLIPS = VALIDATION_LOCOMOTION + VALIDATION_VARIED
