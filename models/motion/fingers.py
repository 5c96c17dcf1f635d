"""A hand's finger chains, told apart from the skeleton's shape: the thumb reaches least far from
the wrist; the other fingers are ordered across the knuckles from the thumb's side, and start
at their knuckles, past any palm (metacarpal) bones."""
import numpy as np

FINGERS = ("thumb", "index", "middle", "ring", "pinky")
HAND_START = 0.18       # a finger's knuckle lies at least this share of the forearm past the wrist


def finger_chains(s, wrist, elbow):
    """{finger: (joint indices from the knuckle out, at most three)} of one hand, or {} when it
    has no fingers (or more than five chains). s: the structure search (its tree `t`, poses `p`
    and `length(a, b)`); wrist, elbow: the arm's joints."""
    t = s.t
    forearm = s.length(elbow, wrist)
    paths, reach = {}, {}
    for leaf in t.leaves(wrist):
        if leaf == wrist:
            continue
        path = [j for j in t.path(wrist, leaf) if t.mappable(j) and s.length(wrist, j) > t.eps]
        if path:
            key = path[0]
            reach[key] = max(reach.get(key, 0.0), t.depth[leaf] - t.depth[wrist])
            if len(path) > len(paths.get(key, ())):
                paths[key] = path
    if not paths:
        return {}
    # the thumb reaches least far from the wrist; the other fingers start at their knuckles,
    # past the palm's bones
    keys = sorted(paths, key=reach.get)
    thumb_key = keys[0] if len(keys) > 1 else None
    chains = []
    for key in keys:
        path = paths[key]
        if key != thumb_key:
            path = [j for j in path if s.length(wrist, j) > HAND_START * forearm]
        chain = path[:1]
        for j in path[1:]:
            if s.length(chain[-1], j) > t.eps:
                chain.append(j)
        if chain:
            chains.append(tuple(chain[:3]))
    chains = list(dict.fromkeys(chains))
    if not chains or len(chains) > 5:
        return {}
    if len(chains) == 1:
        return {"middle": chains[0]}
    thumb = 0
    others = [c for i, c in enumerate(chains) if i != thumb]
    thumb_chain = chains[thumb]
    if len(others) == 1:
        return {"thumb": thumb_chain, "middle": others[0]}
    # across the knuckles, starting from the thumb's side, in each pose
    bases = np.stack([s.p[:, c[0]] - s.p[:, wrist] for c in others], axis=1)      # (F, n, 3)
    centred = bases - bases.mean(axis=1, keepdims=True)
    across = np.linalg.svd(centred, full_matrices=False)[2][:, 0]                # (F, 3)
    thumb_tip = s.p[:, thumb_chain[-1]] - s.p[:, wrist] - bases.mean(axis=1)
    across *= np.where(np.sum(thumb_tip * across, axis=-1) < 0, -1.0, 1.0)[:, None]
    order = np.argsort(-np.median(np.einsum("fnc,fc->fn", centred, across), axis=0))
    names = {4: ("index", "middle", "ring", "pinky"), 3: ("index", "middle", "ring"), 2: ("index", "middle")}
    found = {"thumb": thumb_chain}
    for name, k in zip(names[len(others)], order):
        found[name] = others[k]
    return found
