"""Frame rates given for source files whose header states a wrong one: rules "[PATTERN=]RATE",
as scripts/retarget.py's --fps and scripts/build_dataset.py's --source-fps take them.

A rule is a frames-per-second number, for every file, or PATTERN=RATE for the files whose name
(not their folder) matches the fnmatch glob PATTERN, case sensitive: `salsa_*=60`. The first
rule that matches a file gives its rate; a file no rule matches keeps its header's.
"""
import math
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from ..core.errors import SmplIkError

# What a rules option means, for the --help of each script that takes one.
RULES_HELP = ("the source frame rate of files whose header states a wrong one: RATE for every file, or "
              "PATTERN=RATE for the files whose name matches the glob PATTERN ('salsa_*=60'); repeatable, "
              "the first match wins; default: each file's header")


@dataclass(frozen=True)
class RateRule:
    """The frame rate `fps` (frames per second, positive and finite) of the files whose name
    matches `pattern` (an fnmatch glob; "*": every file)."""

    pattern: str
    fps: float


def parse_rate_rule(text):
    """The RateRule that "[PATTERN=]RATE" says (a bare RATE: pattern "*"); SmplIkError naming
    the text when its pattern is empty or its rate is no positive, finite number."""
    text = str(text).strip()
    pattern, _, rate = text.rpartition("=")
    if "=" in text and not pattern.strip():
        raise SmplIkError(f"{text!r}: no file name pattern before '=' (PATTERN=RATE, or RATE for every file)")
    try:
        fps = float(rate)
    except ValueError:
        raise SmplIkError(f"{text!r}: the rate {rate.strip()!r} is not a number of frames per second") from None
    if not (fps > 0 and math.isfinite(fps)):
        raise SmplIkError(f"{text!r}: the rate must be a positive, finite number of frames per second, "
                          f"not {rate.strip()}")
    return RateRule(pattern=pattern.strip() or "*", fps=fps)


def rate_rules(rules):
    """A tuple of RateRules, in order, from `rules`: texts "[PATTERN=]RATE" (parse_rate_rule),
    RateRules, or a mix; None or () gives none. SmplIkError naming a bad text."""
    return tuple(r if isinstance(r, RateRule) else parse_rate_rule(r) for r in rules or ())


def given_fps(rules, path):
    """The frame rate the first of `rules` (RateRules) that matches `path`'s file name gives,
    in frames per second; 0.0 when none does (the file's header then says it)."""
    name = Path(path).name
    return next((r.fps for r in rules if fnmatchcase(name, r.pattern)), 0.0)
