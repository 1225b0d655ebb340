# The commands a new user and CI run. `make test` is what .ci/run runs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_STORE ?= /tmp/loganalyze-demo

.PHONY: install demo test reports bench bench-many accuracy

$(BIN)/loganalyze: pyproject.toml loganalyze/formats/_tokenizer.c
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test]'
	touch $@

install: $(BIN)/loganalyze

demo: install
	rm -rf $(DEMO_STORE)
	$(BIN)/loganalyze ingest -q --store $(DEMO_STORE) --run sglang-base fixtures/reference/sglang-base/server.log fixtures/reference/sglang-base/bench.jsonl
	$(BIN)/loganalyze ingest -q --store $(DEMO_STORE) --run sglang-eagle3 fixtures/reference/sglang-eagle3/server.log fixtures/reference/sglang-eagle3/bench.jsonl fixtures/reference/sglang-eagle3/nccl.log
	$(BIN)/loganalyze ingest -q --store $(DEMO_STORE) --run vllm-baseline fixtures/reference/vllm-baseline/server.log fixtures/reference/vllm-baseline/bench/*.json
	$(BIN)/loganalyze diagnose sglang-eagle3 --baseline sglang-base --store $(DEMO_STORE)
	$(BIN)/loganalyze compare vllm-baseline sglang-base sglang-eagle3 --store $(DEMO_STORE)

# Chromium renders the HTML report in tests/test_report.py (Debian's package).
# The long tests (fault loops, fuzzing at scale) run here too; plain `pytest` skips them.
# Test files run side by side on every core (pytest-xdist), each file whole on one worker.
test: install
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } || echo "chromium not installed: browser tests will skip"
	$(BIN)/pytest -q -m "long or not long" -n auto --dist loadfile

reports: install
	$(BIN)/python reports/build.py

bench: install
	$(BIN)/pip install -q -r benchmarks/requirements.txt
	$(BIN)/python benchmarks/ingest.py

# Many small logs (2,000 lines each, SGLang then vLLM): files/s and CPU-ms per file (README, Performance).
bench-many: install
	$(BIN)/python benchmarks/many_files.py --files 2000 --lines 2000
	$(BIN)/python benchmarks/many_files.py --files 1000 --lines 2000 --format vllm

# How right loganalyze is on the real logs of fixtures/real/ and fixtures/engines/ (the README's table).
accuracy: install
	$(BIN)/python tests/accuracy.py -v
