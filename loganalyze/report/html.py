"""The HTML report: one self-contained file, readable offline, on a phone and on paper.

Security: every string from a log goes through `html.escape` (log text is untrusted:
a line can hold `<script>`), and a Content-Security-Policy allows no external source
and only the two scripts whose sha256 the page lists, so even a missed escape could
not run code or fetch anything. Vega, Vega-Lite and vega-embed come from
vl-convert-python's bundled copy, inlined once; each chart's spec is data in a JSON
script element, embedded by one vegaEmbed call per chart with `ast: true` (Vega's
expression interpreter instead of `new Function`, which the CSP forbids).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
from functools import lru_cache
from html import escape
from pathlib import Path

import altair as alt

from loganalyze.redact import redact_obj
from loganalyze.report import charts
from loganalyze.report.model import ReportData, builder_version
from loganalyze.report.tables import Table, all_metrics, config_table, fmt, key_metrics, sources_table, unparsed_table

BADGE = {"critical": "CRITICAL", "warning": "WARNING", "info": "INFO"}

EMBED = """(function () {
  var specs = JSON.parse(document.getElementById("chart-specs").textContent);
  specs.forEach(function (item) {
    var el = document.getElementById(item.id);
    vegaEmbed(el, item.spec, {renderer: "svg", actions: false, ast: true}).then(function () {
      el.setAttribute("data-rendered", "true");
    }).catch(function (err) {
      el.className += " chart-error";
      el.textContent = "This chart failed to render: " + err;
    });
  });
})();"""

CSS = """
:root { --fg: #1b1b1b; --muted: #5a5a5a; --line: #d0d0d0; --bg-soft: #f5f6f8; --accent: #1f5fa8;
        --crit: #b22222; --warn: #a86400; --info: #3b6e8f; --diff: #fff1c2; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; color: var(--fg); background: #fff; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto,
       "Helvetica Neue", Arial, sans-serif; }
main, header, footer { max-width: 68rem; margin: 0 auto; padding: 0 1rem; }
header { padding-top: 1.5rem; border-bottom: 2px solid var(--accent); }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 2rem 0 .75rem; padding-bottom: .25rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05rem; margin: 1.25rem 0 .5rem; }
.meta { color: var(--muted); font-size: .85rem; margin: 0 0 .75rem; overflow-wrap: anywhere; }
.verdict { font-size: 1.05rem; background: var(--bg-soft); border-left: 4px solid var(--accent);
           padding: .75rem 1rem; margin: 1rem 0; }
.verdict p { margin: .25rem 0; }
.verdict p + p { margin-top: .6rem; }
.verdict .run { font-weight: 700; text-decoration: underline; }
th { white-space: nowrap; }
.finding { border: 1px solid var(--line); border-left: 6px solid var(--info); border-radius: 4px;
           padding: .75rem 1rem; margin: 0 0 1rem; break-inside: avoid; }
.finding.critical { border-left-color: var(--crit); }
.finding.warning { border-left-color: var(--warn); }
.finding h4 { margin: 0 0 .4rem; font-size: 1rem; overflow-wrap: anywhere; }
.finding p { margin: .35rem 0; }
.finding .id { color: var(--muted); font-weight: normal; font-size: .85rem; }
.badge { display: inline-block; font-size: .75rem; font-weight: 700; letter-spacing: .04em; padding: .05rem .45rem;
         border: 1px solid currentColor; border-radius: 3px; margin-right: .4rem; vertical-align: 1px; }
.badge.critical { color: #fff; background: var(--crit); border-color: var(--crit); }
.badge.warning { color: #000; background: #ffc94d; border-color: var(--warn); }
.badge.info { color: var(--info); background: #fff; }
.label { font-weight: 600; }
pre.evidence { background: var(--bg-soft); border: 1px solid var(--line); padding: .5rem .6rem; margin: .4rem 0;
               font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
               white-space: pre-wrap; overflow-wrap: anywhere; }
pre.evidence .ev { display: block; padding-left: 1.5em; text-indent: -1.5em; }
pre.evidence .ev + .ev { border-top: 1px dotted var(--line); margin-top: .2rem; padding-top: .2rem; }
pre.evidence .where { color: var(--accent); }
details { margin: .4rem 0; }
dl.numbers { display: flex; flex-wrap: wrap; gap: .2rem 1.2rem; margin: .3rem 0; font-size: .85rem; }
dl.numbers dt { display: inline; color: var(--muted); }
dl.numbers dd { display: inline; margin: 0 0 0 .35em; font-weight: 600; font-variant-numeric: tabular-nums;
                overflow-wrap: anywhere; }
summary { cursor: pointer; color: var(--accent); }
.table-wrap { overflow-x: auto; margin: .5rem 0 1rem; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { border: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top;
         overflow-wrap: break-word; }
td:first-child { min-width: 9rem; }
td.code { overflow-wrap: anywhere; min-width: 8rem; }
th { background: var(--bg-soft); }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.differs td { background: var(--diff); font-weight: 600; }
code, td.code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85em; }
.note { color: var(--muted); font-size: .85rem; margin: .25rem 0; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 30rem), 1fr)); gap: 1rem; }
figure.chart { margin: 0; border: 1px solid var(--line); border-radius: 4px; padding: .5rem .75rem;
               break-inside: avoid; min-width: 0; }
figure.chart figcaption { font-size: .85rem; color: var(--muted); margin-bottom: .25rem; }
figure.chart figcaption b { color: var(--fg); display: block; font-size: .95rem; }
.vega { width: 100%; min-height: 120px; }
.vega svg { max-width: 100%; height: auto; }
.chart-error { color: var(--crit); font-weight: 600; }
footer { color: var(--muted); font-size: .8rem; margin-top: 2rem; padding-bottom: 2rem; border-top: 1px solid var(--line); }
@media (max-width: 600px) { body { font-size: 14px; } h1 { font-size: 1.25rem; } .finding { padding: .6rem; } }
@media print {
  body { font-size: 10.5pt; }
  main, header, footer { max-width: none; padding: 0; }
  .charts { grid-template-columns: 1fr 1fr; }
  details::details-content { content-visibility: visible; display: block; } details > summary { display: none; }
  h2 { break-after: avoid; } tr { break-inside: avoid; }
  .verdict, pre.evidence, th, tr.differs td, .badge { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  a { color: inherit; }
}
@page { margin: 14mm; }
"""


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "loganalyze"


@lru_cache(maxsize=1)
def vega_bundle() -> str:
    """Vega, Vega-Lite (the version Altair writes) and vega-embed as one script, from vl-convert's copy.

    vl-convert bundles the JS anew on every call (3-10 s), so the result is kept in the user's
    cache, keyed by the vl-convert and Vega-Lite versions; without a writable cache it is rebuilt.
    """
    import vl_convert

    version = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    cached = cache_dir() / f"vega-bundle-{vl_convert.__version__}-vl{version}.js"
    if cached.is_file():
        return cached.read_text(encoding="utf-8")
    bundle = vl_convert.javascript_bundle(vl_version=version)
    if "</script" in bundle.lower():
        raise RuntimeError("the Vega bundle contains '</script' and cannot be inlined")
    with contextlib.suppress(OSError):
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(bundle, encoding="utf-8")
        tmp.replace(cached)
    return bundle


def csp(scripts: list[str]) -> str:
    """No source outside the file; only these inline scripts run; inline styles are allowed (Vega sets them)."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in scripts)
    allowed = hashes or "'none'"
    return (f"default-src 'none'; script-src {allowed}; style-src 'unsafe-inline'; img-src data:; "
            "base-uri 'none'; form-action 'none'")


def e(value: object) -> str:
    return escape(str(value), quote=True)


def render_table(t: Table, right: tuple[int, ...] = (), code_cols: tuple[int, ...] = ()) -> str:
    """A table; `right` columns hold numbers (right-aligned), `code_cols` log text or settings.
    Rows that differ between runs are shaded and marked ≠ so print and colour-blind readers see it."""
    head = "".join(f"<th scope=\"col\">{e(c)}</th>" for c in t.columns)
    body = []
    for row, differs in zip(t.rows, t.differs or [False] * len(t.rows)):
        cells = []
        for i, cell in enumerate(row):
            cls = "num" if i in right else "code" if i in code_cols else ""
            text = ("≠ " if differs and i == 0 else "") + cell
            cells.append(f"<td class=\"{cls}\">{e(text)}</td>" if cls else f"<td>{e(text)}</td>")
        body.append(f"<tr class=\"differs\">{''.join(cells)}</tr>" if differs else f"<tr>{''.join(cells)}</tr>")
    note = f"<p class=\"note\">{e(t.note)}</p>" if t.note else ""
    return (f"<div class=\"table-wrap\"><table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody>"
            f"</table></div>{note}")


def render_finding(f: dict) -> str:
    """One finding: badge (a word, not only a colour), title, verdict, impact, evidence with file:line, fix."""
    sev = f["severity"]
    evidence = "".join(f"<span class=\"ev\"><span class=\"where\">{e(ev['path'])}:{e(ev['line'])}</span>  "
                       f"{e(ev['text'])}</span>" for ev in f["evidence"])
    numbers = "".join(f"<div><dt>{e(k)}</dt><dd>{e(fmt(k, v))}</dd></div>" for k, v in f["metrics"].items()
                      if not isinstance(v, (list, dict)) or len(str(v)) < 200)
    return (
        f"<article class=\"finding {e(sev)}\">"
        f"<h4><span class=\"badge {e(sev)}\">{BADGE.get(sev, e(sev.upper()))}</span>{e(f['title'])} "
        f"<span class=\"id\">({e(f['id'])}, confidence {e(f['confidence'])})</span></h4>"
        f"<p>{e(f['verdict'])}</p>"
        f"<p><span class=\"label\">Impact:</span> {e(f['impact_text'])}</p>"
        + (f"<pre class=\"evidence\">{evidence}</pre>" if evidence else "")
        + f"<p><span class=\"label\">Recommendation:</span> {e(f['recommendation'])}</p>"
        + (f"<details><summary>Numbers</summary><dl class=\"numbers\">{numbers}</dl></details>" if numbers else "")
        + "</article>")


def render_verdict(data: ReportData) -> str:
    paragraphs = []
    for run in data.subjects:
        who = f"<span class=\"run\">{e(run.name)}:</span> " if len(data.subjects) > 1 else ""
        text = " ".join(f"<strong>{e(lead)}</strong> {e(rest)}" for lead, rest in run.verdict())
        paragraphs.append(f"<p>{who}{text}</p>")
    return f"<section class=\"verdict\" aria-label=\"verdict\">{''.join(paragraphs)}</section>"


def render_findings(data: ReportData) -> str:
    out = ["<h2 id=\"findings\">Findings, largest impact first</h2>"]
    for run in data.subjects:
        if len(data.subjects) > 1:
            out.append(f"<h3>{e(run.name)}</h3>")
        out += [render_finding(f) for f in run.findings] or ["<p>No findings.</p>"]
    return "".join(out)


def chart_specs(data: ReportData) -> list[tuple[str, dict, charts.ChartKind]]:
    """(heading, Vega-Lite spec, kind) of every chart with data, per run then compared across runs.

    Specs are redacted here, as data: their strings (phase and transport names, run names)
    come from frames that the model leaves unredacted because they hold millions of rows."""
    drawn = []
    for run in data.subjects:
        for kind in charts.PER_RUN:
            family = run.families.get(kind.family)
            drawn.append((run.name, kind.draw(family) if family else None, kind))
    for kind in charts.COMPARED:
        families = {r.name: r.families[kind.family] for r in data.runs if kind.family in r.families}
        who = "all runs" if len(data.runs) > 1 else data.runs[0].name
        drawn.append((who, kind.draw(charts.stacked(families)) if families else None, kind))
    clean = redact_obj if data.redacted else (lambda spec: spec)
    return [(who, clean(json.loads(charts.spec(chart))), kind) for who, chart, kind in drawn if chart is not None]


def render_charts(specs: list[tuple[str, dict, charts.ChartKind]], several: bool) -> str:
    """Chart placeholders, grouped under a heading per run when the report has several."""
    if not specs:
        return ""
    groups: dict[str, list[str]] = {}
    for i, (who, _, kind) in enumerate(specs):
        label = f"{kind.title} ({who})"
        groups.setdefault(who, []).append(
            f"<figure class=\"chart\"><figcaption><b>{e(kind.title)}</b>{e(kind.caption)}</figcaption>"
            f"<div class=\"vega\" id=\"chart-{i}\" role=\"img\" aria-label=\"{e(label)}\"></div></figure>")
    body = "".join((f"<h3>{e(who)}</h3>" if several else "") + f"<div class=\"charts\">{''.join(figures)}</div>"
                   for who, figures in groups.items())
    return ("<h2 id=\"charts\">Charts</h2><noscript><p class=\"note\">The charts need JavaScript (it is inlined in "
            f"this file; nothing is downloaded).</p></noscript>{body}")


def spec_json(specs: list[tuple[str, dict, charts.ChartKind]]) -> str:
    """The charts' specs as JSON safe inside a <script> element (no '<' left to close it)."""
    items = [{"id": f"chart-{i}", "spec": spec} for i, (_, spec, _) in enumerate(specs)]
    return json.dumps(items, separators=(",", ":"), sort_keys=True).replace("<", "\\u003c")


def render_numbers(data: ReportData) -> str:
    runs = tuple(range(1, len(data.runs) + 1))
    return "".join(["<h2 id=\"numbers\">Key numbers</h2>", render_table(key_metrics(data), right=runs),
                    "<details><summary>All metrics</summary>", render_table(all_metrics(data), right=runs),
                    "</details>"])


def render_tables(data: ReportData) -> str:
    runs = tuple(range(1, len(data.runs) + 1))
    out = ["<h2 id=\"config\">Configuration</h2>", render_table(config_table(data), code_cols=runs),
           "<h2 id=\"sources\">Sources</h2>", render_table(sources_table(data), right=(3, 4), code_cols=(1, 5))]
    for run in data.runs:
        table = unparsed_table(run)
        if table:
            out += [f"<h3>{e(table.title)}</h3>", render_table(table, right=(0,), code_cols=(1, 2))]
    return "".join(out)


def render_html(data: ReportData, command: str) -> str:
    specs = chart_specs(data)
    scripts = [vega_bundle(), EMBED] if specs else []
    several = len(data.runs) > 1
    comparing = len(data.subjects) > 1  # several runs under study: their numbers side by side come first
    sources = sum(len(r.sources) for r in data.runs)
    body = (
        f"<header><h1>{e(data.title)}</h1><p class=\"meta\">{sources} source file(s); built by loganalyze "
        f"{e(builder_version())}; inputs {e(data.inputs_digest[:16])}</p></header><main>"
        + render_verdict(data) + (render_numbers(data) if comparing else "") + render_findings(data)
        + render_charts(specs, several) + ("" if comparing else render_numbers(data)) + render_tables(data)
        + f"</main><footer><p>Rebuild: <code>{e(command)}</code>. Secrets in log text are redacted unless "
        "--no-redact was given. No part of this file loads anything from the network.</p></footer>")
    script_tags = (f"<script type=\"application/json\" id=\"chart-specs\">{spec_json(specs)}</script>"
                   + "".join(f"<script>{s}</script>" for s in scripts)) if specs else ""
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{e(csp(scripts))}\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<meta name=\"generator\" content=\"loganalyze {e(builder_version())}\">"
        f"<meta name=\"loganalyze-inputs\" content=\"{e(data.inputs_digest)}\">"
        f"<title>{e(data.title)}</title><style>{CSS}</style></head>"
        f"<body>{body}{script_tags}</body></html>\n")
