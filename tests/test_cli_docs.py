"""docs/cli/ is generated from --help: every command has its page, and every page is current."""

from __future__ import annotations

import importlib.util

from conftest import ROOT
from loganalyze.cli import main

REGENERATE = "run `.venv/bin/python docs/gen_cli_docs.py`"


def generator():
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "docs" / "gen_cli_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_command_has_a_current_page():
    gen = generator()
    wanted = gen.pages()
    top = {f"{name}.md" for name in main.commands} | {"README.md"}
    assert top <= set(wanted) and all(n in top or f"{n.split('-')[0]}.md" in top for n in wanted)  # group-sub.md
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in gen.FOLDER.glob("*.md")}
    assert sorted(on_disk) == sorted(wanted), f"pages missing or stale: {REGENERATE}"
    stale = [name for name, text in wanted.items() if on_disk[name] != text]
    assert not stale, f"{', '.join(stale)} differ from --help: {REGENERATE}"


def test_pages_do_not_depend_on_the_terminal(monkeypatch):
    gen = generator()
    monkeypatch.setenv("COLUMNS", "40")
    assert gen.pages() == {p.name: p.read_text(encoding="utf-8") for p in gen.FOLDER.glob("*.md")}


def test_a_page_shows_usage_options_and_example():
    text = (ROOT / "docs" / "cli" / "query.md").read_text(encoding="utf-8")
    assert "Usage: loganalyze query [OPTIONS] SQL" in text
    assert "--format [table|csv|json|ndjson|parquet]" in text and "Example:" in text
