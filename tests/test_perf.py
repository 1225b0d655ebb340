"""Ingest at scale: the benchmark generator, and the engine's fast paths giving the same tables."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent


def test_speculative_reset_line_becomes_a_config_row(tmp_path, ingest_one):
    log = tmp_path / "server.log"
    log.write_text(
        "[2026-01-02 03:00:00 TP0] Decode batch, #running-req: 3, #token: 10, token usage: 0.01, #queue-req: 0\n"
        "[2026-01-02 03:00:00] Max running requests is reset to 48 for speculative decoding. You can override "
        "this by explicitly setting --max-running-requests.\n"
    )
    _, run = ingest_one(log)
    rows = run.table("config").filter(pl.col("origin") == "speculative_reset").collect()
    assert rows.select("key", "value", "value_num").row(0) == ("max_running_requests", "48", 48.0)
