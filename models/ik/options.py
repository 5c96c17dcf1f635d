"""How SmplIk is asked for poses: SolveOptions for `solve`, SampleOptions for `sample`."""
from dataclasses import dataclass, field

from ..core.errors import SmplIkError
from .flow import DEFAULT_TEMPERATURE
from .refine import RefineOptions

MODES = ("deterministic", "natural")
DEFAULT_MODE = "deterministic"   # the baseline, until the natural pose beats it on every benchmark figure
SPREADS = ("mixed", "hypotheses", "library", "principal", "random")   # how `sample` picks its latents
ALTERNATIVES_SEED = 0   # the add-on's Alternatives (and benchmark.py's): one repeatable set per problem


@dataclass(frozen=True)
class SolveOptions:
    """How `SmplIk.solve` poses a body.

    refine: how the effectors are made exact (a refine.RefineOptions: the hard ones held, the
    soft ones as close as they come), or None for the networks' pose as it is.
    mode: "deterministic" (the network's one answer) or "natural" (the flow's latent
    origin: the least-cost pose the flow knows for these effectors).
    current_pose: (local_rot (24, 3, 3), trans (3,)) of the pose on screen, if any, or the
    IkSolution that put it there: with refine.plant_feet, ankles pinned by position keep its
    foot orientation.
    warm_start (with current_pose and refine): refine from the pose on screen instead of
    the network's guess, as a drag does from one step to the next: what nothing asks to move
    stays where it was, and a few steps suffice. Where current_pose is a solution that missed
    an effector, the step creeps on as a kept one does (solving.CREEP_ITERATIONS).
    keep (needs the flow): continuity with a pose, (local_rot, trans) or an IkSolution
    of an earlier solve, as a drag with Keep Pose does. The refinement starts from the kept
    pose itself; when it is a solution that met its effectors (within CARRY_MET) on this body
    and carries its `condition`, every joint is first turned as the network's answer turned
    from that solution's effectors to these (and the root moved as the answer's moved), so
    the pose's own character (its offset from the network's answer) is carried, not just
    left where it was. The kept pose's latent (the solution's own, or the pose's under these
    effectors, found only when needed), decoded under these effectors, is the fallback start
    (`SmplIk.refine_from`) for a step that small steps cannot make. An unchanged problem
    gives the kept pose back.
    restarts: a fresh solve (neither warm_start nor keep) that still misses a pin is refined
    again with the root turned (solving.ROOT_TURNS) and, where no turn meets the pins, looks
    for the reason (about half a second in all); False skips both, for a caller solving many
    like problems in a row that already found them out of reach (Bake, after a frame no turn
    mended)."""

    refine: RefineOptions = field(default_factory=RefineOptions)
    mode: str = DEFAULT_MODE
    current_pose: tuple = None
    warm_start: bool = False
    keep: object = None
    restarts: bool = True

    def __post_init__(self):
        if self.mode not in MODES:
            raise SmplIkError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.refine is not None and not isinstance(self.refine, RefineOptions):
            raise SmplIkError(f"SolveOptions.refine must be a RefineOptions or None, not {type(self.refine).__name__}")


@dataclass(frozen=True)
class SampleOptions:
    """How `SmplIk.sample` draws alternative poses.

    count: how many (check_samples bounds it). seed: None or an int, for the spread's
    repeatable choice (see spread). temperature: how far from the natural pose (0: the
    flow's latent origin every time; the default suits most problems). spread: how the
    latents are picked, one of SPREADS, None for "mixed" when the hypotheses head and the pose
    library are there, else "hypotheses" when the head is, else "principal" (`SmplIk.sample`).
    refine, current_pose: as SolveOptions'. restarts: a set of samples that still misses a pin
    is refined again with the root turned (solving.ROOT_TURNS) and, where no turn meets the
    pins, looks for the reason; False skips both."""

    count: int = 8
    seed: int = None
    temperature: float = DEFAULT_TEMPERATURE
    spread: str = None
    refine: RefineOptions = field(default_factory=RefineOptions)
    current_pose: tuple = None
    restarts: bool = True

    def __post_init__(self):
        if self.refine is not None and not isinstance(self.refine, RefineOptions):
            raise SmplIkError(f"SampleOptions.refine must be a RefineOptions or None, not {type(self.refine).__name__}")


def checked(options, kind):
    """options if it is a `kind` (SolveOptions or SampleOptions), else a clear error (refine
    options go in its `refine`)."""
    if not isinstance(options, kind):
        raise SmplIkError(f"options must be a {kind.__name__} (RefineOptions go in its `refine`), "
                          f"not {type(options).__name__}")
    return options
