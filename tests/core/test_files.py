"""Atomic writes: the target appears whole or not at all."""
import os

import numpy as np
import pytest

from models.core.errors import SmplIkError
from models.core.files import atomic_write, write_json


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="half way"):
        with atomic_write(target, "w") as fh:
            fh.write("new, but not finished")
            raise RuntimeError("half way")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_finished_write_replaces_the_file_readable_by_all(tmp_path):
    target = tmp_path / "sub" / "arrays.npz"      # the folder is created
    with atomic_write(target) as fh:
        np.savez(fh, x=np.arange(3))
    with np.load(target, allow_pickle=False) as npz:
        assert npz["x"].tolist() == [0, 1, 2]
    assert os.stat(target).st_mode & 0o777 == 0o644
    write_json(tmp_path / "r.json", {"a": 1})
    assert (tmp_path / "r.json").read_text() == '{\n "a": 1\n}\n'


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only folder")
def test_an_unwritable_folder_is_a_clear_error(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(SmplIkError, match="cannot write to .*locked"):
            with atomic_write(folder / "x.npz") as fh:
                fh.write(b"x")
    finally:
        folder.chmod(0o700)


def test_a_folder_in_place_of_the_file_is_a_clear_error(tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(SmplIkError, match="cannot write .*taken"):
        with atomic_write(tmp_path / "taken") as fh:
            fh.write(b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
