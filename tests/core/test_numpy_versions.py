"""The add-on runs on the numpy Blender ships, 1.26 in Blender 4.2-5.0 and 2.x from 5.1, and
the scripts and tests run on either: no source file may use a numpy name or keyword that only
one of them has. The tests run on one numpy at a time and reach only the code they call, so
every file is read here (its syntax tree: attributes of `np` / `numpy`, `from numpy import`,
keyword arguments of numpy calls), and the tables are checked against the numpy installed,
whichever it is."""
import ast
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("models", "addon", "scripts", "tests")
NUMPY_2 = int(np.__version__.split(".")[0]) >= 2

# In numpy 1.26, gone from numpy 2 (NEP 52's removals; in1d, trapz and row_stack warn in 2.x).
# Both have np.nan, np.inf, np.float64, np.prod, np.all, np.any, np.isin, np.vstack; no name
# integrates on both (np.trapezoid is 2.0's), so sum the trapezoids by hand.
GONE_IN_2 = frozenset("""add_newdoc_ufunc alltrue asfarray byte_bounds cast cfloat clongfloat compat complex_
cumproduct DataSource deprecate deprecate_with_doc disp fastCopyAndTranspose find_common_type float_ format_parser
geterrobj Inf Infinity infty issctype issubclass_ issubsctype longcomplex longfloat lookfor mat maximum_sctype msort
NaN NAN NINF NZERO obj2sctype PINF product PZERO recfromcsv recfromtxt round_ safe_eval sctype2char sctypes
seterrobj set_numeric_ops set_string_function singlecomplex sometrue source string_ tracemalloc_domain unicode_ who
compare_chararrays int0 uint0 bool8 object0 str0 bytes0 void0 in1d trapz row_stack""".split())
# New in numpy 2 (the array API names and aliases it brought back), absent from 1.26.
NEW_IN_2 = frozenset("""bool long ulong concat permute_dims pow acos asin atan atan2 acosh asinh atanh
bitwise_left_shift bitwise_right_shift bitwise_invert bitwise_count isdtype unique_values unique_counts
unique_inverse unique_all matrix_transpose vecdot cumulative_sum cumulative_prod astype matvec vecmat""".split())
NEW_IN_2_LINALG = frozenset("matrix_norm vector_norm vecdot cross outer diagonal trace svdvals "
                            "matrix_transpose".split())
PRIVATE = frozenset({"core"})   # numpy._core since 2.0; np.core warns
# Keywords numpy 2 added (1.26 raises TypeError), each with a call that uses it.
NEW_KEYWORDS = {
    ("asarray", "copy"): lambda: np.asarray([1.0], copy=True),
    ("reshape", "copy"): lambda: np.reshape(np.zeros(2), (2,), copy=True),
    ("sort", "stable"): lambda: np.sort(np.zeros(2), stable=True),
    ("argsort", "stable"): lambda: np.argsort(np.zeros(2), stable=True),
    ("std", "correction"): lambda: np.std(np.zeros(2), correction=1),
    ("var", "correction"): lambda: np.var(np.zeros(2), correction=1),
    ("unique", "sorted"): lambda: np.unique(np.zeros(2), sorted=True),
}


def _numpy_attribute(node):
    """('linalg', 'norm') for np.linalg.norm, ('float_',) for np.float_; None for an
    attribute not rooted at the names numpy is imported as."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return tuple(reversed(parts)) if isinstance(node, ast.Name) and node.id in ("np", "numpy") else None


def _problem(chain):
    if chain[0] in GONE_IN_2:
        return f"np.{chain[0]} is gone from numpy 2"
    if chain[0] in NEW_IN_2:
        return f"np.{chain[0]} is not in numpy 1.26"
    if chain[0] in PRIVATE:
        return f"np.{chain[0]} is private from numpy 2"
    if chain[0] == "linalg" and len(chain) > 1 and chain[1] in NEW_IN_2_LINALG:
        return f"np.linalg.{chain[1]} is not in numpy 1.26"
    return None


def _problems(path, root=ROOT):
    """'file:line: why' for each use in the file of a numpy name or keyword of one version."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found, inner = [], set()
    for node in ast.walk(tree):   # breadth first: a chain's outer attribute comes before its inner ones
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Attribute):
                inner.add(id(node.value))   # np.linalg.norm is looked at once, whole
            chain = _numpy_attribute(node)
            why = chain and id(node) not in inner and _problem(chain)
            if why:
                found.append(f"{where}: {why}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "numpy":
            sub = tuple(node.module.split(".")[1:])
            for alias in node.names:
                why = _problem(sub + (alias.name,)) if sub in ((), ("linalg",)) else _problem(sub[:1])
                if why:
                    found.append(f"{where}: {why}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[:2] == ["numpy", "core"]:
                    found.append(f"{where}: numpy.core is private from numpy 2")
        elif isinstance(node, ast.Call):
            chain = _numpy_attribute(node.func)
            if not chain or len(chain) != 1:
                continue
            for kw in node.keywords:
                if (chain[0], kw.arg) in NEW_KEYWORDS:
                    found.append(f"{where}: np.{chain[0]}({kw.arg}=...) is not in numpy 1.26")
                if (chain[0] == "array" and kw.arg == "copy" and isinstance(kw.value, ast.Constant)
                        and kw.value.value is False):
                    found.append(f"{where}: np.array(copy=False) copies on numpy 1 and raises on numpy 2 "
                                 "where it must copy (np.asarray does the same on both)")
    return found


def test_no_source_file_uses_numpy_names_of_one_version_only():
    found = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path != Path(__file__).resolve():   # this file names them to test for them
                found += _problems(path)
    assert not found, "\n".join(found)


def test_the_tables_match_the_numpy_installed():
    """Each name and keyword above is where the tables say on this numpy (1.26 or 2.x)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # numpy 1.26 warns on some of the names it still has
        assert {n for n in GONE_IN_2 if hasattr(np, n) == NUMPY_2} == set()
        assert {n for n in NEW_IN_2 if hasattr(np, n) != NUMPY_2} == set()
        assert {n for n in NEW_IN_2_LINALG if hasattr(np.linalg, n) != NUMPY_2} == set()
    for call in NEW_KEYWORDS.values():
        if NUMPY_2:
            call()
        else:
            with pytest.raises(TypeError):
                call()


@pytest.mark.parametrize("source,expected", [
    ("import numpy as np\nx = np.float_(1)\n", ["np.float_ is gone from numpy 2"]),
    ("import numpy as np\nx = np.NaN.real\n", ["np.NaN is gone from numpy 2"]),
    ("import numpy as np\ny = np.linalg.vector_norm(x)\n", ["np.linalg.vector_norm is not in numpy 1.26"]),
    ("import numpy as np\nz = np.asarray(x, copy=False)\n", ["np.asarray(copy=...) is not in numpy 1.26"]),
    ("import numpy as np\nz = np.array(x, copy=False)\n", ["np.array(copy=False) copies on numpy 1"]),
    ("from numpy import trapz\n", ["np.trapz is gone from numpy 2"]),
    ("from numpy.core.multiarray import scalar\n", ["np.core is private from numpy 2"]),
    ("import numpy.core.multiarray\n", ["numpy.core is private from numpy 2"]),
    ("import numpy as np\n"
     "ok = (np.isin(a, b), np.vstack(c), np.float64(1), d.float_, 'np.NaN', np.array(x, copy=True))\n",
     []),
])
def test_the_scan_finds_what_it_looks_for(tmp_path, source, expected):
    """The scan itself: each kind of use found once, and look-alikes (other objects'
    attributes, strings, what both versions have) left alone."""
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    found = _problems(probe, tmp_path)
    assert len(found) == len(expected) and all(e in f for e, f in zip(expected, found)), found
