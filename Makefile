# The commands a new user and CI run. `make test` is what .ci/run runs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_STORE ?= /tmp/loganalyze-demo

.PHONY: install demo test reports bench

$(BIN)/loganalyze: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test]'
	touch $@

install: $(BIN)/loganalyze

demo: install
	$(BIN)/loganalyze ingest -q fixtures/reference/sglang-eagle3/server.log fixtures/reference/sglang-eagle3/bench.jsonl --run sglang-eagle3 --store $(DEMO_STORE)
	$(BIN)/loganalyze diagnose sglang-eagle3 --store $(DEMO_STORE)

# Chromium renders the HTML report in tests/test_report.py (Debian's package).
# The long tests (fault loops, fuzzing at scale) run here too; plain `pytest` skips them.
test: install
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } || echo "chromium not installed: browser tests will skip"
	$(BIN)/pytest -q -m "long or not long"

reports: install
	$(BIN)/python reports/build.py

bench: install
	$(BIN)/python benchmarks/ingest.py
