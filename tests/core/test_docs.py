"""The README and docs/ against the code and the benchmark JSON they quote.

A figure is quoted as `21.6<!--fig benchmark_cmu methods.smplik_6pt.mpjpe_mm--> mm`: the
number, then an HTML comment (invisible when rendered) naming its JSON file and key. The file
is docs/figures/NAME.json, or models/ik/weights/NAME.json for `weights/NAME` (the training
records), or models/body/NAME.json for `body/NAME` (the open bodies' build records); the key is
a dotted path (a key that itself holds dots, such as a zip's name, is found as written). The
quoted number's decimals set the rounding it must match; thousands separators are allowed. After
re-running a benchmark, rewrite every quoted figure from the JSON with

    .venv/bin/python tests/core/test_docs.py --fix

and re-read the sentences around the lines it lists.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "figures"
WEIGHTS = ROOT / "models" / "ik" / "weights"
SHARED_DATA = ROOT.parent / "shared" / "data"
BODIES = ROOT / "models" / "body"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), BODIES / "README.md"]
# Dated figures of past training runs, quoted as they were measured then: exempt from the
# rule that every figure with a unit of time or size is marked (marked figures are checked).
HISTORY = {"training_log.md"}
PYTHON = sys.executable   # each venv make test runs checks the scripts with its own Python

MARK = re.compile(r"(?<![\d.,])(?P<num>\d[\d,]*(?:\.\d+)?)<!--fig (?P<file>[\w/-]+) (?P<key>[^\s>]+?) ?-->")
# A figure with a unit of time, size or rate that no marker follows (ranges such as "8-11 ms" included).
UNMARKED_UNIT = re.compile(r"(?<![\d.,\w])(\d[\d,]*(?:\.\d+)?)\s?(ms|s|MB|GB|kB|KB|frames/s|poses/s|fr/s)(?![\w/])")
NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?![\w])")
UNIT_WORDS = {"FIG", "mm", "cm", "m", "deg", "ms", "s", "MB", "frames", "poses", "fr", "x"}
SCRIPT = re.compile(r"scripts/(\w+)\.py")
OPTION = re.compile(r"(?<![\w-])--[a-z][\w-]*")
PATH = re.compile(r"(?<![\w./-])((?:models|scripts|addon|docs|tests)/[\w./*-]*[\w*])")
MAKE = re.compile(r"(?:^|`)make (\w+)")   # in inline code or at a command line's start


@dataclass(frozen=True)
class Line:
    doc: Path
    number: int
    text: str
    fence: str | None   # the fence's language ("" for none) inside a fenced block, else None
    block: int          # which fenced block (counted from 1 in its file); 0 outside

    def where(self):
        return f"{self.doc.relative_to(ROOT)}:{self.number}"


def lines(doc):
    fence, block = None, 0
    for number, text in enumerate(doc.read_text().splitlines(), 1):
        if text.lstrip().startswith("```"):
            if fence is None:
                fence, block = text.strip()[3:].strip(), block + 1
            else:
                fence = None
            continue
        yield Line(doc, number, text, fence, block if fence is not None else 0)


def prose(docs=DOCS):
    return [line for doc in docs for line in lines(doc) if line.fence is None]


def code_blocks(language):
    """(first line, code) of every fenced block in that language."""
    blocks = {}
    for doc in DOCS:
        for line in lines(doc):
            if line.fence == language:
                blocks.setdefault((doc, line.block), (line, []))[1].append(line.text)
    return [(first, "\n".join(text) + "\n") for first, text in blocks.values()]


# --- figures ------------------------------------------------------------------------------
def figure_file(name):
    if name.startswith("weights/"):
        return WEIGHTS / (name.removeprefix("weights/") + ".json")
    if name.startswith("body/"):
        return BODIES / (name.removeprefix("body/") + ".json")
    return FIGURES / (name + ".json")


def lookup(data, key):
    """The value at a dotted key; a segment may itself hold dots ('smpl_ik-0.1.0.zip')."""
    parts = key.split(".")
    while parts:
        for n in range(1, len(parts) + 1):
            name = ".".join(parts[:n])
            if isinstance(data, dict) and name in data:
                data, parts = data[name], parts[n:]
                break
            if isinstance(data, list) and name.isdigit() and int(name) < len(data):
                data, parts = data[int(name)], parts[n:]
                break
        else:
            raise KeyError(".".join(parts))
    return data


@dataclass(frozen=True)
class Figure:
    line: Line
    quoted: str
    file: str
    key: str
    start: int
    end: int

    @property
    def decimals(self):
        return len(self.quoted.partition(".")[2])

    def actual(self):
        """The JSON value, or a string saying why there is none."""
        path = figure_file(self.file)
        if not path.exists():
            return f"no {path.relative_to(ROOT)}"
        try:
            value = lookup(json.loads(path.read_text()), self.key)
        except KeyError as missing:
            return f"no key {missing} in {path.relative_to(ROOT)}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{self.key} is {value!r}, not a number"
        return value

    def matches(self, value):
        quoted = float(self.quoted.replace(",", ""))
        return abs(quoted - value) <= 0.5 * 10 ** -self.decimals * (1 + 1e-9) + 1e-12

    def describe(self, value):
        return f"{self.line.where()}: {self.file} {self.key} quoted {self.quoted}, JSON says {value}"


def figures(docs=DOCS):
    out = []
    for line in prose(docs):
        for m in MARK.finditer(line.text):
            out.append(Figure(line, m["num"], m["file"], m["key"], m.start("num"), m.end("num")))
    return out


def formatted(value, like):
    """value written as `like` is: its decimals, and thousands separators if it has them."""
    decimals = len(like.partition(".")[2])
    text = f"{value:,.{decimals}f}"
    if "," not in like and abs(value) < 10_000:
        text = text.replace(",", "")
    return text


def test_every_marked_figure_matches_its_json():
    found = figures()
    assert len(found) > 20, "the docs quote their figures through <!--fig FILE KEY--> markers"
    wrong = []
    for fig in found:
        value = fig.actual()
        if isinstance(value, str) or not fig.matches(value):
            wrong.append(fig.describe(value))
    assert not wrong, ("figures that do not match their JSON (fix with tests/core/test_docs.py --fix):\n"
                       + "\n".join(wrong))


def test_figures_with_units_and_table_figures_are_marked():
    """A hand-typed duplicate of a benchmark figure (a drag time, a zip size, a table cell)."""
    guides = [d for d in DOCS if d.name not in HISTORY]
    unmarked = []
    for line in prose(guides):
        bare = MARK.sub("FIG", line.text)
        bare = re.sub(r"`[^`]*`", "", bare)   # inline code: commands and options, not figures
        for m in UNMARKED_UNIT.finditer(bare):
            unmarked.append(f"{line.where()}: '{m.group(0)}' is not marked")
        if line.text.lstrip().startswith("|") and "<!--fig" in line.text:
            for cell in bare.strip().strip("|").split("|")[1:]:   # the first cell names the row
                words = set(re.findall(r"[A-Za-z]+", cell)) - UNIT_WORDS
                if "FIG" in cell or not words:   # a figure cell: every number in it marked
                    for m in NUMBER.finditer(cell):
                        unmarked.append(f"{line.where()}: table cell '{cell.strip()}' has an unmarked {m.group(0)}")
    assert not unmarked, "figures typed by hand instead of quoted from JSON:\n" + "\n".join(unmarked)


def test_drag_time_and_zip_sizes_are_quoted_from_json():
    readme = figures([ROOT / "README.md"])
    quoted = {(f.file, f.key.rsplit(".", 1)[0]) for f in readme}
    assert ("benchmark_drag", "refined") in quoted, "README quotes the drag time from benchmark_drag.json"
    sizes = json.loads(figure_file("extension_sizes").read_text())["zips"]
    missing = [name for name in sizes if ("extension_sizes", f"zips.{name}") not in quoted]
    assert not missing, f"README does not quote the size of {missing} from extension_sizes.json"


def test_readme_gives_the_shapes_retarget_returns(tmp_path, open_body):
    """The README's retarget example says in a comment what it prints: the shapes are the code's."""
    import numpy as np

    from models.core.rotations import axis_angle_to_matrix
    from models.motion.bvh import read_bvh
    from models.motion.bvh import write_smpl_bvh
    from models.motion.retarget import retarget

    line = next(line for doc in [ROOT / "README.md"] for line in lines(doc) if "print(result.poses.shape" in line.text)
    printed, _, comment = line.text.partition("#")
    quoted = [tuple(p.strip() for p in m.split(",") if p.strip()) for m in re.findall(r"\(([^()]*)\)", comment)]
    frames = 12
    rng = np.random.default_rng(0)
    rot = axis_angle_to_matrix(rng.normal(scale=0.2, size=(frames, 24, 3)))
    write_smpl_bvh(tmp_path / "clip.bvh", rot, np.zeros((frames, 3)), open_body.rest_joints(np.zeros(10)), 30.0)
    result = retarget(read_bvh(tmp_path / "clip.bvh"), open_body)
    names = re.findall(r"result\.(\w+)\.shape", printed)
    actual = [tuple("T" if n == frames and k == 0 else str(n) for k, n in enumerate(getattr(result, name).shape))
              for name in names]
    assert len(names) == 3 and quoted == actual, f"{line.where()} says {quoted} for {names}; retarget gives {actual}"


# --- code blocks --------------------------------------------------------------------------
BLENDER_PRELUDE = """\
from benchmarks import blender_session
blender_session.start()   # as in Blender with the extension enabled
"""


def python_blocks():
    return [pytest.param(code, id=first.where()) for first, code in code_blocks("python")]


@pytest.mark.parametrize("code", python_blocks())
def test_python_block_runs_from_the_repo_root(code):
    if "../shared/data" in code and not SHARED_DATA.is_dir():
        pytest.skip("the block reads ../shared/data, which is not here")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONPATH="")
    if re.search(r"^\s*(import bpy|from bpy)", code, flags=re.M):
        code = BLENDER_PRELUDE + code
    with tempfile.TemporaryDirectory() as tmp:
        env["BLENDER_USER_RESOURCES"] = tmp
        run = subprocess.run([PYTHON, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"the block failed:\n{code}\n{run.stdout[-3000:]}{run.stderr[-3000:]}"


def named_commands():
    """{script name: options the docs give it}, from shell blocks and inline code."""
    commands = {}
    for doc in DOCS:
        for line in lines(doc):
            if line.fence == "python":
                continue
            spans = [line.text] if line.fence is not None else re.findall(r"`([^`]*)`", line.text)
            for span in spans:
                for m in SCRIPT.finditer(span):
                    rest = SCRIPT.split(span[m.end():])[0]   # up to the next script named
                    commands.setdefault(m[1], set()).update(OPTION.findall(rest))
            for m in SCRIPT.finditer(line.text):   # named in prose too: it must exist
                commands.setdefault(m[1], set())
    return commands


@pytest.mark.parametrize("name,options", sorted(named_commands().items()))
def test_named_script_exists_and_takes_its_options(name, options):
    script = ROOT / "scripts" / f"{name}.py"
    assert script.exists(), f"the docs name scripts/{name}.py, which does not exist"
    run = subprocess.run([PYTHON, str(script.relative_to(ROOT)), "--help"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300, env=dict(os.environ, PYTHONPATH=""))
    if run.returncode and "No module named 'torch'" in run.stderr:
        pytest.skip(f"scripts/{name}.py needs torch, which {PYTHON} lacks")
    assert run.returncode == 0, f"scripts/{name}.py --help failed:\n{run.stderr[-2000:]}"
    unknown = sorted(o for o in options - {"--help"} if not re.search(rf"{re.escape(o)}(?![\w-])", run.stdout))
    assert not unknown, f"the docs give scripts/{name}.py options its --help does not list: {unknown}"


def test_named_paths_and_make_targets_exist():
    makefile = (ROOT / "Makefile").read_text()
    missing = []
    for doc in DOCS:
        for line in lines(doc):
            text = MARK.sub("", line.text)
            for m in PATH.finditer(text):
                path = m[1].rstrip(".")
                if "*" in path:
                    exists = any(ROOT.glob(path))
                else:
                    exists = (ROOT / path).exists()
                if not exists:
                    missing.append(f"{line.where()}: {path}")
            for m in MAKE.finditer(text.strip() if line.fence is not None else text):
                if not re.search(rf"^{m[1]}:", makefile, flags=re.M):
                    missing.append(f"{line.where()}: make {m[1]} (no such Makefile target)")
    assert not missing, "the docs name paths or targets that do not exist:\n" + "\n".join(missing)


# --- rewriting the figures ----------------------------------------------------------------
def fix():
    """Rewrite every marked figure from its JSON at the decimals it is quoted at."""
    changed, failed = [], []
    for doc in DOCS:
        found = figures([doc])
        if not found:
            continue
        text = doc.read_text().splitlines(keepends=True)
        for fig in sorted(found, key=lambda f: (f.line.number, -f.start)):
            value = fig.actual()
            if isinstance(value, str):
                failed.append(fig.describe(value))
                continue
            if fig.matches(value):
                continue
            new = formatted(value, fig.quoted)
            row = text[fig.line.number - 1]
            text[fig.line.number - 1] = row[:fig.start] + new + row[fig.end:]
            changed.append(f"{fig.line.where()}: {fig.key} {fig.quoted} -> {new}")
        doc.write_text("".join(text))
    print("\n".join(changed) or "every figure already matches its JSON")
    if failed:
        print("not fixed:\n" + "\n".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1:] != ["--fix"]:
        sys.exit(__doc__)
    sys.exit(fix())
