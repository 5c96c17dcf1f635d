"""Two runs of a benchmark side by side: which of their figures are equal, timings set apart."""
import re
from dataclasses import dataclass

# A figure is a timing when its own key names one (ms, seconds, a rate per second) or it sits in a
# "speed" or "timing" group: those change from run to run and machine to machine.
TIMING_KEY = re.compile(r"(^|_)(ms|seconds)($|_)|per_s($|_)|^s_per_|(^|_)speed($|_)")
TIMING_GROUPS = {"speed", "timing"}


@dataclass(frozen=True)
class Comparison:
    """figures: how many non-timing figures either run has; equal: how many are the same in both;
    timings: how many timing figures were left out; differ: 'path: before -> after' of the rest."""

    figures: int
    equal: int
    timings: int
    differ: tuple


def figures_of(value, path=()):
    """{path tuple: leaf} of a benchmark's JSON; a list of dicts or lists counts by position."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in figures_of(item, path + (str(key),)).items()}
    if isinstance(value, list) and value and all(isinstance(v, (dict, list)) for v in value):
        return {k: v for i, item in enumerate(value) for k, v in figures_of(item, path + (str(i),)).items()}
    return {path: value}


def is_timing(path):
    """Whether the figure at `path` (a tuple of keys) is a timing."""
    return bool(TIMING_KEY.search(path[-1])) or any(key in TIMING_GROUPS for key in path)


def compare(before, after):
    """Comparison of two benchmark JSON values (dicts as json.load gives them)."""
    old, new = figures_of(before), figures_of(after)
    paths = set(old) | set(new)
    kept = [p for p in paths if p and not is_timing(p)]
    equal = [p for p in kept if p in old and p in new and old[p] == new[p]]
    differ = tuple(f"{'/'.join(p)}: {old.get(p)!r} -> {new.get(p)!r}" for p in sorted(set(kept) - set(equal)))
    return Comparison(len(kept), len(equal), len(paths) - len(kept), differ)
