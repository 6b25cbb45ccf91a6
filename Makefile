# Two commands on a fresh machine:  `make run`  and  `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_PIN ?= torch==2.13.0

.PHONY: install run test clean

$(BIN)/neurosym: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(TORCH_PIN)
	$(BIN)/python -m pip install -q -e ".[test,plots]"
	touch $@

install: $(BIN)/neurosym

run: install
	$(BIN)/neurosym arithmetic --quick

test: install
	$(BIN)/python -m pytest -q -n 2 tests

clean:
	rm -rf $(VENV) results build *.egg-info
