"""The least-squares solver under the refinement: damped prioritised (null-space) steps on
forward kinematics, a hard level held first and a soft one in the freedom it leaves, with
joint ranges held as an active set and contact points kept above a floor."""
from dataclasses import dataclass, replace

import numpy as np

from ..core.kinematics import forward_kinematics
from ..core.rotations import axis_angle_to_matrix
from ..core.skeleton import NUM_JOINTS, PARENT_OR_SELF, PARENTS
from .residuals import ANCESTOR, effector_residuals
from .soft_terms import SoftTerms

_STOP = 1e-5   # residuals this small are met (0.01 mm)
_SLACK = 1e-4  # how far a step toward a soft target may disturb a met hard level (0.1 mm)
_CREEP = 1e-4  # a soft level gaining less than this a step (0.1 mm), under 1% of its miss, has settled
_GIVE_UP = 1e5   # damping this many times its start with the hard level met: no step helps
_MAX_TURN = 0.5   # the longest step: radians per joint, metres for the root (a trust region)
_SHORTER = 3      # a longer step is solved again with 10x the damping, at most this many times
FLOOR_PASSES = 3  # a step is solved again with the contact points it takes under the floor, at most this often
FLOOR_ON = 1e-6   # metres: a contact point this little under the floor is on it
TERM_GATE = 0.01  # metres (radians): the terms join once every hard residual is within this


def apply_step(local_rot, trans, fk, step):
    """Turn every joint k's subtree by the world-frame rotation step[3k:3k+3] (axis-angle,
    about the joint) and move the root by step[-3:]; fk is the pose's forward kinematics.
    Poses may carry leading batch dimensions (step (..., 75))."""
    turn = axis_angle_to_matrix(step[..., :-3].reshape(step.shape[:-1] + (NUM_JOINTS, 3)))
    wp = fk.rotations[..., list(PARENT_OR_SELF), :, :]      # a joint turns in its parent's frame
    wp[..., 0, :, :] = np.eye(3)
    return np.swapaxes(wp, -1, -2) @ turn @ wp @ local_rot, trans + step[..., -3:]


@dataclass(frozen=True)
class _State:
    """A pose in the descent and its two levels there: local (24, 3, 3), trans (3,), the held
    range components (joint limit number, component, Euler angles), its forward kinematics,
    the hard level's residuals rh (H,) and rows jh (H, 75) (effectors, held limits, floor),
    the soft level's rs (S,) and js (S, 75), and `above`: the heights and rows of the contact
    points above the floor (`_floor_rows`)."""

    local: np.ndarray
    trans: np.ndarray
    held: list
    fk: object
    rh: np.ndarray
    jh: np.ndarray
    rs: np.ndarray
    js: np.ndarray
    above: tuple = (np.zeros(0), np.zeros((0, 3 * NUM_JOINTS + 3)))   # contact points above the floor


class Problem:
    """The two levels at one pose: hard residuals and rows (effectors, held limits, floor), soft ones."""

    def __init__(self, hard, soft, limits, options, rest):
        self.hard, self.soft, self.limits, self.options, self.rest = hard, soft, limits, options, rest
        self.terms = SoftTerms(options, hard, rest) if options.balance or options.self_collision else None

    def evaluate(self, local, trans, held):
        """The _State of the pose (local, trans) with these range components held."""
        fk = forward_kinematics(local, self.rest, PARENTS, trans)
        rh, jh = effector_residuals(self.hard, fk.rotations, fk.positions, True)
        parts_r, parts_j = [rh], [jh]
        if held:
            parts_r.append(np.zeros(len(held)))
            parts_j.append(self.limits.rows(held, fk))
        above = _State.above
        if self.options.floor is not None and self.options.contacts is not None:
            (fr, fj), above = _floor_rows(self.options.contacts, self.options.floor, fk)
            parts_r.append(fr)
            parts_j.append(fj)
        rh, jh = np.concatenate(parts_r), np.concatenate(parts_j)
        rs, js = effector_residuals(self.soft, fk.rotations, fk.positions, True)
        if self.terms is not None:   # balance and self-collision: soft, after the soft effectors
            tr, tj = self.terms.rows(fk, not len(rh) or np.abs(rh).max() < TERM_GATE)
            if len(tr):
                rs, js = np.concatenate([rs, tr]), np.concatenate([js, tj])
        return _State(local, trans, held, fk, rh, jh, rs, js, above)


def _prioritised_step(rh, jh, rs, js, lam):
    """The hard level's damped least-squares step, plus the soft level's within the hard
    level's null space (J_s N)^+ (-r_s - J_s dx_h)."""
    step = np.zeros(js.shape[1] if len(rs) else jh.shape[1])
    null = None
    if len(rh):
        gram = jh @ jh.T
        step = -jh.T @ np.linalg.solve(gram + lam * np.eye(len(rh)), rh)
        scale = max(np.trace(gram) / len(rh), 1e-12)
        null = np.eye(jh.shape[1]) - jh.T @ np.linalg.solve(gram + 1e-9 * scale * np.eye(len(rh)), jh)
    if len(rs):
        a = js if null is None else js @ null
        step = step - a.T @ np.linalg.solve(a @ a.T + lam * np.eye(len(rs)), rs + js @ step)
    return step


def _floor_step(state, soft, lam):
    """The prioritised step from a _State (soft: the soft level's (rs, js), or none), with
    every contact point above the floor that the step would take below it joining the hard
    level, landing on the floor, and the step solved again, until it takes none below (at most
    FLOOR_PASSES times), so no step takes a point through the floor for the hard level to refuse."""
    step = _prioritised_step(state.rh, state.jh, *soft, lam)
    gap, rows = state.above
    joined = np.zeros(len(gap), bool)
    for _ in range(FLOOR_PASSES if len(gap) else 0):
        crossing = ~joined & (gap + rows @ step < 0.0)
        if not crossing.any():
            break
        joined |= crossing
        step = _prioritised_step(np.concatenate([state.rh, gap[joined]]), np.concatenate([state.jh, rows[joined]]),
                                 *soft, lam)
    return step


def _better(new_rh, new_rs, rh, rs):
    """Lexicographic acceptance with slack: while the hard level is off by more than _SLACK,
    only a step that improves it; once within, a step that improves the soft level without
    taking the hard one beyond _SLACK, or improves the hard one without worsening the soft.
    The slack counts the rows of either pose: a step can bring rows of its own (contact points
    it takes under the floor), and with none before, no slack would let them be put back."""
    h, s = float(rh @ rh), float(rs @ rs)
    new_h, new_s = float(new_rh @ new_rh), float(new_rs @ new_rs)
    slack = max(len(rh), len(new_rh)) * _SLACK ** 2
    if h > slack:
        return new_h < h
    return (new_s < s and new_h <= slack) or (new_h < h and new_s <= s * (1 + 1e-9))


def _floor_rows(contacts, floor, fk):
    """The contact points' heights above the floor and their Jacobian rows, split in two:
    (residuals, rows) of the points under it (by more than FLOOR_ON), each its height (< 0),
    so the hard level lifts them; and (heights, rows) of those on or above it, which join the
    hard level only where a step would take them below (`_floor_step`): a foot on the floor
    may lift off it."""
    points = contacts.positions(fk)                                         # (K, 3)
    rows = np.zeros((len(points), 3 * NUM_JOINTS + 3))
    # a point's height under joint a's turn w: (w x (p - p_a)) . up = w . ((p - p_a) x up)
    turn = np.cross(points[:, None] - fk.positions, [0.0, 1.0, 0.0]) * ANCESTOR[contacts.joints][..., None]
    rows[:, :3 * NUM_JOINTS] = turn.reshape(len(points), -1)
    rows[:, 3 * NUM_JOINTS + 1] = 1.0
    gap = points[:, 1] - floor
    low = gap < -FLOOR_ON
    return (gap[low], rows[low]), (gap[~low], rows[~low])


def descend(problem, limits, state, iterations, damping, use_soft):
    """Damped prioritised steps from a _State to the _State they stop at; with use_soft False
    only the hard level moves and only its cost decides."""
    lam = damping
    none = np.zeros(0), np.zeros((0, state.jh.shape[1]))
    for _ in range(iterations):
        hard_met = not len(state.rh) or np.abs(state.rh).max() < _STOP
        if hard_met and (not use_soft or not len(state.rs) or np.abs(state.rs).max() < _STOP):
            break
        soft = (state.rs, state.js) if use_soft else none
        if state.held:   # release the held range components that this step would turn back inside
            held, rh, jh = _release(problem, state.held, state.rh, state.jh, soft, lam)
            state = replace(state, held=held, rh=rh, jh=jh)
        step = _floor_step(state, soft, lam)
        longest = np.abs(step).max()
        if not np.isfinite(longest):
            lam *= 10.0
            continue
        for _ in range(_SHORTER):   # too long: a damped step, not a cut near-singular one
            if longest <= _MAX_TURN:
                break
            lam *= 10.0
            step = _floor_step(state, soft, lam)
            longest = np.abs(step).max()
        if longest > _MAX_TURN:
            step *= _MAX_TURN / longest
        moved = _stepped(problem, limits, state, step)
        accept = (_better(moved.rh, moved.rs, state.rh, state.rs) if use_soft
                  else float(moved.rh @ moved.rh) < float(state.rh @ state.rh))
        slack = max(len(state.rh), len(moved.rh)) * _SLACK ** 2
        if (not accept and use_soft and float(state.rh @ state.rh) <= slack < float(moved.rh @ moved.rh)
                and float(moved.rs @ moved.rs) < float(state.rs @ state.rs)):
            # the soft level gained but the hard one drifted past the slack (the step keeps it
            # only to first order): one hard step from there puts it back, then judge again
            again = _stepped(problem, limits, moved, _floor_step(moved, none, damping))
            if _better(again.rh, again.rs, state.rh, state.rs):
                moved, accept = again, True
        if accept:
            # settled: the hard level is met and the soft one gains less than _CREEP a step (out
            # of reach, the last millimetres come a hair at a time; they are not worth the time)
            gain = np.sqrt(float(state.rs @ state.rs)) - np.sqrt(float(moved.rs @ moved.rs))
            settled = (use_soft and len(state.rs)
                       and abs(gain) < min(_CREEP, 0.01 * np.sqrt(float(moved.rs @ moved.rs)))
                       and (not len(moved.rh) or np.abs(moved.rh).max() < _STOP))
            state = moved
            lam = max(lam * 0.3, 1e-7)
            if settled:
                break     # the soft level no longer moves: as close as it gets
        else:
            lam *= 10.0
            if lam > 1e8 or (lam > _GIVE_UP * damping and float(state.rh @ state.rh) <= len(state.rh) * _SLACK ** 2):
                break     # even short steps do not help: as close as it gets from here
    return state


def _stepped(problem, limits, state, step):
    """The _State a step (75,) from a _State reaches: turned (apply_step), its rotations kept
    orthonormal, the knees and elbows put back in range (the components pushed past a bound
    held there)."""
    new, new_trans = apply_step(state.local, state.trans, state.fk, step)
    new = _orthonormal(new)
    held = state.held
    if limits is not None:
        new, pushed = limits.clamp(new)
        held = _merge_held(state.held, pushed)
    return problem.evaluate(new, new_trans, held)


def _orthonormal(m):
    """Nearly orthonormal matrices (..., 3, 3) one Newton step nearer their rotations. A step
    turns a joint by R_p^T T R_p with R_p its parent's world rotation, a product along the
    chain: the error of a rotation not quite orthonormal (a network's float32 answer) would
    grow with every step, several times over down the arm."""
    return 1.5 * m - 0.5 * m @ np.swapaxes(m, -1, -2) @ m


def _release(problem, held, rh, jh, soft, lam):
    """Held range components (an active set) minus those the step taken without them would
    move away from their bound, with their rows dropped from the hard level's (rh, jh)."""
    first = 3 * len(problem.hard)
    rows = np.arange(first, first + len(held))
    free = np.setdiff1d(np.arange(len(rh)), rows)
    rates = jh[rows] @ _prioritised_step(rh[free], jh[free], *soft, lam)
    keep = []
    for (n, c, angles), rate in zip(held, rates):
        at_low = angles[c] <= problem.limits.low[n][c] + 1e-9
        keep.append(not ((at_low and rate > 0) or (not at_low and rate < 0)))
    if all(keep):
        return held, rh, jh
    mask = np.ones(len(rh), bool)
    mask[rows[~np.array(keep)]] = False
    return [h for h, k in zip(held, keep) if k], rh[mask], jh[mask]


def _merge_held(held, pushed):
    """Held limit components, updated with the ones a step pushed to their bound."""
    merged = {(n, c): angles for n, c, angles in held}
    for n, c, angles in pushed:
        merged[(n, c)] = angles
    return [(n, c, angles) for (n, c), angles in merged.items()]


def descend_many(targets, limits, local, trans, rest, options):
    """Damped least-squares steps on K poses at once for the same hard Targets, in place:
    local (K, 24, 3, 3) and trans (K, 3) on rest joints (24, 3), one batched linear solve a
    step, each pose's knees and elbows put back in range (`limits`, a limits.Limits, or None)
    after each; options.iterations steps at most from options.damping (a RefineOptions)."""
    lam = np.full(len(local), options.damping)
    fk = forward_kinematics(local, rest, PARENTS, trans)
    r, jac = effector_residuals(targets, fk.rotations, fk.positions, True)
    eye = np.eye(r.shape[-1])
    for _ in range(options.iterations):
        active = np.abs(r).max(-1) >= _STOP
        if not active.any():
            break
        a = np.flatnonzero(active)
        jt = np.swapaxes(jac[a], -1, -2)
        gram = jac[a] @ jt
        step = -(jt @ np.linalg.solve(gram + lam[a, None, None] * eye, r[a][..., None]))[..., 0]
        for _ in range(_SHORTER):   # too long: a damped step, not a cut near-singular one (as descend)
            long = np.flatnonzero(np.abs(step).max(-1) > _MAX_TURN)
            if not len(long):
                break
            lam[a[long]] *= 10.0
            step[long] = -(jt[long] @ np.linalg.solve(gram[long] + lam[a[long], None, None] * eye,
                                                      r[a[long]][..., None]))[..., 0]
        longest = np.abs(step).max(-1, keepdims=True)
        step *= np.minimum(1.0, _MAX_TURN / np.maximum(longest, 1e-12))
        sub = forward_kinematics(local[a], rest, PARENTS, trans[a])
        new, new_trans = apply_step(local[a], trans[a], sub, step)
        new = _orthonormal(new)
        if limits is not None:
            limits.clamp_many(new)
        new_fk = forward_kinematics(new, rest, PARENTS, new_trans)
        new_r, new_jac = effector_residuals(targets, new_fk.rotations, new_fk.positions, True)
        better = (new_r * new_r).sum(-1) < (r[a] * r[a]).sum(-1)
        take = a[better]
        local[take], trans[take], r[take], jac[take] = new[better], new_trans[better], new_r[better], new_jac[better]
        lam[take] = np.maximum(lam[take] * 0.3, 1e-7)
        lam[a[~better]] *= 10.0
