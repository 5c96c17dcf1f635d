"""Rotation conversions: round trips in float32 and float64, and agreement with scipy and torch."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from models.core import rotations as R


def random_axis_angle(rng, n, dtype):
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    angle = rng.uniform(0, np.pi, size=(n, 1))
    angle[:3] = [[0.0], [1e-7], [np.pi - 1e-6]]  # the hard cases: none, tiny, half turn
    return (axis * angle).astype(dtype)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-9), (np.float32, 2e-5)])
def test_round_trips(rng, dtype, tol):
    aa = random_axis_angle(rng, 500, dtype)
    m = R.axis_angle_to_matrix(aa)
    assert m.dtype == dtype
    q = R.matrix_to_quat_wxyz(m)
    assert np.allclose(R.quat_wxyz_to_matrix(q), m, atol=tol)
    assert np.allclose(R.rot6d_to_matrix(R.matrix_to_rot6d(m)), m, atol=tol)
    assert np.allclose(R.axis_angle_to_matrix(R.matrix_to_axis_angle(m)), m, atol=tol * 10)
    assert np.allclose(R.quat_wxyz_to_axis_angle(R.axis_angle_to_quat_wxyz(aa)), aa, atol=tol * 10)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-9), (np.float32, 3e-4)])
def test_rotation_vector_back_from_matrix(rng, dtype, tol):
    """matrix_to_axis_angle gives the rotation vector itself on both sides of 120 degrees (the
    skew part below, the quaternion above), for tiny turns, and for one unbatched matrix."""
    aa = random_axis_angle(rng, 500, np.float64)
    angle = np.linalg.norm(aa, axis=1, keepdims=True)
    aa[3:9] *= np.radians([[119.999], [120.0], [120.001], [1e-3], [60.0], [179.0]]) / np.maximum(angle[3:9], 1e-12)
    aa = aa.astype(dtype)
    back = R.matrix_to_axis_angle(R.axis_angle_to_matrix(aa))
    assert back.dtype == dtype
    assert np.allclose(back, aa, atol=tol)
    for one in (aa[7], aa[8]):   # 60 and 179 degrees, one matrix each
        assert np.allclose(R.matrix_to_axis_angle(R.axis_angle_to_matrix(one)), one, atol=tol)
    assert np.allclose(back.astype(np.float64),
                       Rotation.from_matrix(R.axis_angle_to_matrix(aa).astype(np.float64)).as_rotvec(), atol=tol)


def test_matches_scipy(rng):
    aa = random_axis_angle(rng, 200, np.float64)
    ref = Rotation.from_rotvec(aa)
    assert np.allclose(R.axis_angle_to_matrix(aa), ref.as_matrix(), atol=1e-12)
    xyzw = ref.as_quat()
    wxyz = np.concatenate([xyzw[:, 3:], xyzw[:, :3]], 1)
    wxyz *= np.sign(wxyz[:, :1] + 1e-300)
    assert np.allclose(R.matrix_to_quat_wxyz(ref.as_matrix()), wxyz, atol=1e-9)
    a, b = Rotation.random(50, random_state=1), Rotation.random(50, random_state=2)
    qa = np.roll(a.as_quat(), 1, axis=1)
    qb = np.roll(b.as_quat(), 1, axis=1)
    assert np.allclose(R.quat_wxyz_to_matrix(R.quat_wxyz_multiply(qa, qb)), (a * b).as_matrix(), atol=1e-12)


def test_batch_dims_and_angle(rng):
    aa = random_axis_angle(rng, 24, np.float64).reshape(2, 4, 3, 3)
    m = R.axis_angle_to_matrix(aa)
    assert m.shape == (2, 4, 3, 3, 3)
    ang = R.geodesic_angle(np.broadcast_to(np.eye(3), m.shape), m)
    assert np.allclose(ang, np.linalg.norm(aa, axis=-1), atol=1e-6)


def test_rot6d_orthonormalises():
    d6 = np.array([2.0, 0.0, 0.0, 1.0, 3.0, 0.0])  # not unit, not orthogonal
    m = R.rot6d_to_matrix(d6)
    assert np.allclose(m @ m.T, np.eye(3))
    assert np.isclose(np.linalg.det(m), 1.0)
    assert np.allclose(m[:, 0], [1, 0, 0]) and np.allclose(m[:, 1], [0, 1, 0])


def test_skew_and_shortest_arc(rng):
    v, w = rng.normal(size=(2, 50, 3))
    assert np.allclose(np.einsum("nij,nj->ni", R.skew(v), w), np.cross(v, w))
    a, b = rng.normal(size=(2, 50, 3))
    b[0] = -2 * a[0]                      # exactly opposite: a half turn
    r = R.shortest_arc(a, b)
    assert np.allclose(r @ np.swapaxes(r, -1, -2), np.eye(3)) and np.allclose(np.linalg.det(r), 1)
    unit_a, unit_b = (x / np.linalg.norm(x, axis=-1, keepdims=True) for x in (a, b))
    assert np.allclose(np.einsum("nij,nj->ni", r, unit_a), unit_b)
    # the smallest angle: the angle between a and b
    assert np.allclose(R.geodesic_angle(r, np.eye(3)), np.arccos(np.clip((unit_a * unit_b).sum(-1), -1, 1)))


def test_torch_twins_agree(rng):
    torch = pytest.importorskip("torch")
    from models.training import rotations as RT

    aa = random_axis_angle(rng, 300, np.float64)
    m = R.axis_angle_to_matrix(aa)
    assert np.allclose(RT.axis_angle_to_matrix(torch.from_numpy(aa)).numpy(), m, atol=1e-9)
    d6 = rng.normal(size=(100, 6))
    assert np.allclose(RT.rot6d_to_matrix(torch.from_numpy(d6)).numpy(), R.rot6d_to_matrix(d6), atol=1e-9)
    assert np.allclose(RT.matrix_to_rot6d(torch.from_numpy(m)).numpy(), R.matrix_to_rot6d(m))
    q = rng.normal(size=(100, 4))
    assert np.allclose(RT.quat_wxyz_to_matrix(torch.from_numpy(q)).numpy(), R.quat_wxyz_to_matrix(q), atol=1e-9)
    ang = RT.geodesic_angle(torch.from_numpy(m[:50]), torch.from_numpy(m[50:100])).numpy()
    assert np.allclose(ang, R.geodesic_angle(m[:50], m[50:100]), atol=1e-6)
    # gradients stay finite at the identity, where the naive formulas divide by zero
    z = torch.zeros(4, 3, dtype=torch.float64, requires_grad=True)
    RT.axis_angle_to_matrix(z).sum().backward()
    assert torch.isfinite(z.grad).all()


@pytest.mark.parametrize("order", ["XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"])
def test_euler_is_intrinsic_against_scipy(rng, order):
    """Compound angles in every order, against scipy's intrinsic (upper-case) convention, and back."""
    angles = rng.uniform(-1.4, 1.4, size=(50, 3))
    ours = R.euler_to_matrix(angles, order)
    assert np.allclose(ours, Rotation.from_euler(order, angles).as_matrix(), atol=1e-12)
    # extrinsic composes the turns in the opposite order: with angles up to 1.4 rad (median
    # 0.7) they fail to commute by about their products, so the median pose is over 20 degrees off
    extrinsic = Rotation.from_euler(order.lower(), angles).as_matrix()
    assert np.median(np.degrees(R.geodesic_angle(ours, extrinsic))) > 20.0
    assert np.allclose(R.matrix_to_euler(ours, order), angles, atol=1e-9)
