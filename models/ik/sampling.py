"""SMPL-IK's alternatives: `sample` draws poses for the same effectors from the flow's latents,
each refined to meet them, retried from nearer the natural pose where it stalls; mixed into
SmplIk."""
import itertools
from dataclasses import replace

import numpy as np

from ..core.errors import SmplIkError
from .effectors import encode_effectors
from .flow import DIMS, check_samples
from .hypotheses import DEFAULT_HYPOTHESES_WEIGHTS
from .library import DEFAULT_LIBRARY
from .options import SPREADS, SampleOptions, checked
from .refine import arm_in_body, refine_many, refine_pose
from .solution import IkSolution, miss_total, pins_met, same_misses, stretched, with_reason
from .solving import root_turned, turnable
from .spreads import PRINCIPAL_STEP

LIBRARY_SPARES = 2   # the head's unused poses a library alternative that misses a pin may be replaced by, at most
SAMPLE_RETRIES = (0.5, 0.25, 0.0)   # latent scales a sample that misses a pin is refined again from
COLLISION_RETRIES = (0.5, 0.25)     # latent scales a sample with an arm in the body is refined again from


class Sampling:
    """SmplIk's `sample` (needs `condition`, `decode`, `encode`, the spreads' latents and the
    solve strategy's `planted_effectors` and `range_reason`)."""

    def sample(self, effectors, rest_joints, options=SampleOptions()):
        """options.count alternative poses (`options`, a SampleOptions) for the same effectors
        on a body with rest joints (24, 3), in one batched pass of the networks, decoded from
        latents of the flow and, with options.refine, each made to meet
        the effectors (as `solve`; a sample whose refinement stalls short of a pin, or leaves an
        arm in the body, is refined again from nearer the natural pose,
        and one that still misses a pin with the root turned, solving.ROOT_TURNS, the turn that worked
        first. Once no start or turn meets the pins, they are out of reach: the later samples
        keep their first refinement, and every miss says why where the joint ranges are the
        cause).
        Temperature 0 gives the latent origin's pose every time;
        the default suits most problems. options.spread (None: "mixed" when the hypotheses head
        and the pose library are there, else "hypotheses" when the head is, else "principal"):
        - "mixed": the hypotheses head's and the pose library's in turn, the head's first, half
          each (the head's fill in where the library holds too few distinct poses, and stand in,
          up to LIBRARY_SPARES, for a library pose the pins are not reached from);
        - "library": the poses of the pose library (`library.py`) that meet the pins best,
          each turned and placed by them and MIN_APART from the others, as the flow's latents
          scaled by temperature / DEFAULT_TEMPERATURE; principal ones fill in beyond those
          the library holds;
        - "hypotheses": the hypotheses head's poses (`hypotheses.py`), likeliest first, their
          latents scaled by temperature / DEFAULT_TEMPERATURE (so the default gives them as
          trained, 0 the natural pose); beyond the head's count, principal ones follow; seed
          None or 0 gives them as they are, another int turns the principal ones;
        - "principal": the latent directions that move the joints without effectors
          most (`principal_latents`), a step of temperature x PRINCIPAL_STEP each way along
          each, the strongest first; seed None or 0 gives those directions, another int a
          repeatable turn of them within the same subspace (another set as likely);
        - "random": latents drawn from N(0, temperature^2) (seed: an int for a repeatable set).
        Returns a list of IkSolution, each with the latent of its refined pose
        (`SolveOptions(keep=solution)` carries it on). SmplIkError for a spread this model lacks
        the weights for, or options that are not a SampleOptions."""
        options = checked(options, SampleOptions)
        count, seed, spread = options.count, options.seed, options.spread
        t = check_samples(count, options.temperature)
        if spread is None:
            spread = ("principal" if self.hypotheses is None else
                      "mixed" if self.library_path is not None else "hypotheses")
        if spread not in SPREADS:
            raise SmplIkError(f"spread must be one of {', '.join(SPREADS)}, not {spread!r}")
        if spread in ("hypotheses", "mixed") and self.hypotheses is None:
            raise SmplIkError(f"no hypotheses head for these SMPL-IK weights ({DEFAULT_HYPOTHESES_WEIGHTS} is missing "
                              "or belongs to other weights): use spread='principal' or 'random'")
        if spread in ("library", "mixed") and self.library_path is None:
            raise SmplIkError(f"no pose library ({DEFAULT_LIBRARY} is missing; scripts/build_pose_library.py "
                              "makes it): use spread='hypotheses', 'principal' or 'random'")
        refine = options.refine
        rest = np.asarray(rest_joints, dtype=np.float64)[None]
        encoded = encode_effectors(effectors)
        condition = self.condition(encoded, rest)
        places = np.full((count, 3), np.nan)   # a library pose's own root translation (NaN: the network's)
        if spread == "random":
            latents = np.random.default_rng(seed).standard_normal((1, count, DIMS)) * t
        elif spread == "hypotheses":
            latents = self.hypothesis_latents(condition, count, t, effectors, rest[0], seed)[None]
        elif spread == "library":
            latents, found = self.library_latents(condition, count, t, effectors, rest[0])
            more = self.principal_latents(condition, effectors, rest[0], count - len(latents), t * PRINCIPAL_STEP, seed)
            places[:len(found)] = found
            latents = np.concatenate([latents, more])[None]
        elif spread == "mixed":
            latents, places = self.mixed_latents(condition, count, t, effectors, rest[0], seed)
            latents = latents[None]
        else:
            latents = self.principal_latents(condition, effectors, rest[0], count, t * PRINCIPAL_STEP, seed)[None]
        local, trans = (x[0] for x in self.decode(condition, latents))
        if t > 0:   # at temperature 0 every sample is the latent origin's pose, where the network puts it
            trans = np.where(np.isnan(places), trans, places)
        if refine is None:
            return [IkSolution(local_rot=local[k], trans=trans[k], rest=rest[0], latent=latents[0, k],
                               condition=condition) for k in range(count)]
        effectors = list(effectors)
        extra = self.planted_effectors(effectors, rest[0], refine, options.current_pose)
        out = []
        # the root turn that met every pin for one sample (ROOT_TURNS), tried first for the next;
        # False once none did (or restarts are off)
        turn = None if options.restarts else False
        reason = ""   # why the pins cannot all be met, once no turn meets them (range_reason)
        exhausted = False   # no start or turn met them for an earlier sample: they are out of reach
        spares = None   # the head's poses a library pose that misses is replaced by (found on first need)
        for k, refined in enumerate(refine_many(local, trans, rest[0], effectors + extra, refine)):
            # from some starts the refinement stalls (a limb folded against its range): try again
            # nearer the natural pose, which the same pins reach, and last from the network's guess.
            # Where another start misses the same pins as far, the problem is out of reach, not
            # the start stuck: the sample stays (else every sample would become the same retry)
            starts = [latents[0, k] * shrink for shrink in SAMPLE_RETRIES] + [None]
            for retry in starts:
                if pins_met(refined) or stretched(refined) or exhausted:
                    break
                start = self.network_pose(encoded, rest) if retry is None else self.decoded_pose(condition, retry)
                again = refine_pose(*start, rest[0], effectors + extra, refine)
                if same_misses(again.misses, refined.misses):
                    break
                if miss_total(again) < miss_total(refined):
                    refined = again
            if t > 0 and not np.isnan(places[k, 0]) and not pins_met(refined) and self.hypotheses is not None:
                # a library pose the pins do not reach from (captured motion unlike this one):
                # the head's unused poses instead, before the root turns or a verdict of out of reach
                if spares is None:
                    used = count - int(np.count_nonzero(~np.isnan(places[:, 0])))
                    spares = iter(self.hypothesis_latents(condition, 2 * count, t, effectors, rest[0], seed)[used:])
                for latent in itertools.islice(spares, LIBRARY_SPARES):
                    again = refine_pose(*self.decoded_pose(condition, latent), rest[0], effectors + extra, refine)
                    if miss_total(again) < miss_total(refined):
                        refined, latents[0, k] = again, latent
                    if pins_met(refined):
                        break
            if turn is not False and turnable(refined, refine):
                # every start fell in the same basin: try the root turned, once per call (a set
                # out of reach would cost every sample the turns); the turn that worked is the
                # first the next missing sample tries
                strict = replace(refine, give_way=False)
                again, found = root_turned((local[k], trans[k]),
                                            lambda s: refine_pose(*s, rest[0], effectors + extra, strict), turn)
                if again is not None:
                    refined, turn = again, found
                elif turn is None:
                    turn, exhausted = False, True
                    reason = self.range_reason(effectors + extra, refined, rest[0], refine)
            if reason and not pins_met(refined):
                refined = with_reason(refined, reason)
            out.append(self._arm_out(refined, condition, latents[0, k], rest[0], effectors + extra, refine))
        final = self.encode(condition, np.stack([r.local_rot for r in out]))
        return [IkSolution(local_rot=r.local_rot, trans=r.trans, rest=rest[0], errors=r.errors[:len(effectors)],
                           misses=r.misses, latent=final[k], condition=condition)
                for k, r in enumerate(out)]

    def _arm_out(self, refined, condition, latent, rest, effectors, options):
        """A refined sample, or where the collision term left an arm in the body the first
        refinement from nearer the natural pose (the latent times each of COLLISION_RETRIES)
        with the arm out and every pin met, where the arm mostly is out. A sample that misses a
        pin, or whose retries do no better (its pins hold the arm in), stays as it is."""
        if not pins_met(refined) or not arm_in_body(refined.local_rot, refined.trans, rest, effectors, options):
            return refined
        for shrink in COLLISION_RETRIES:
            again = refine_pose(*self.decoded_pose(condition, latent * shrink), rest, effectors, options)
            if pins_met(again) and not arm_in_body(again.local_rot, again.trans, rest, effectors, options):
                return again
        return refined
