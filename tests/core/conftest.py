import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def open_body():
    from models.body_model import load_body_model

    return load_body_model()


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(1234)
