"""Code the benchmark and rendering programs in scripts/ share: data loading, effector sets,
timing, reports, label readers and scene building. Never shipped in the extension."""
