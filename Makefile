# nn2c developer entry points. `make demo` and `make test` work on a fresh machine with python3 + gcc.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_WORKERS ?= 2
# tensorflow-cpu converts the Keras zoo of tests/test_keras_zoo.py; its own venv, as its pins clash with nn2c's
TF_VENV ?= .venv-tf
TF_PINS := tensorflow-cpu==2.21.0 keras==3.15.1

.PHONY: demo test test-fast tf-venv lint bench clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

$(TF_VENV)/.installed:
	python3 -m venv $(TF_VENV)
	$(TF_VENV)/bin/python -m pip install --quiet $(TF_PINS)
	$(TF_VENV)/bin/python -m pip install --quiet --no-deps tf-keras==2.21.0  # Keras 2 (its tensorflow dependency is tensorflow-cpu here)
	# tfmot prunes the Keras 2 model of tests/test_sparse.py; its own pins (numpy~=1.23, absl-py~=1.2) are older than
	# tensorflow's and it runs with these, so it and dm-tree come without dependencies
	$(TF_VENV)/bin/python -m pip install --quiet --no-deps tensorflow-model-optimization==0.8.0 dm-tree==0.1.10
	touch $@

tf-venv: $(TF_VENV)/.installed  ## tensorflow for the Keras zoo test (about 35 s, 320 MB download)

demo: $(VENV)/.installed  ## compile a real model, build it, run it, compare with TFLite Micro
	$(PY) examples/demo.py

test: $(VENV)/.installed $(TF_VENV)/.installed  ## the whole test suite (what CI runs)
	$(PY) -m pytest -n $(PYTEST_WORKERS) -q

test-fast: $(VENV)/.installed  ## skip the two large models
	$(PY) -m pytest -n $(PYTEST_WORKERS) -q -m "not slow"

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) $(TF_VENV) demo_out .pytest_cache
