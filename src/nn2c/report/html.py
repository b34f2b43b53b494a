"""report.html and report.md: what the compiler did to one model, in one self-contained file.

The HTML has no external resource: the two plots of report/memory_plot.py are embedded as base64
PNG data URIs and the little CSS/JS is inline, so the file can be mailed or attached to a CI run.
Both files are deterministic for a given model and options (no timestamps, no absolute paths).
"""

from __future__ import annotations

import base64
import html
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nn2c import __version__
from nn2c.ir.cost import macs
from nn2c.report import npu_section
from nn2c.report.layers import Layer, Peak, layer_table, op_counts, peak, schedule_dict

if TYPE_CHECKING:
    from nn2c.result import CompileResult


@dataclass
class Budget:
    what: str  # "RAM" or "flash"
    used: int
    limit: int | None

    @property
    def fraction(self) -> float | None:
        return self.used / self.limit if self.limit else None


@dataclass
class ReportData:
    name: str
    source: str
    settings: dict[str, Any]
    operators: int
    macs: int
    arena_bytes: int
    lower_bound: int
    state_bytes: int
    weight_bytes: int
    inputs: list[dict[str, Any]]
    outputs: list[dict[str, Any]]
    layers: list[Layer]
    peak: Peak | None
    budgets: list[Budget]
    ops_before: dict[str, int] | None  # operators per type before the graph passes
    ops_after: dict[str, int]
    passes: dict[str, Any] | None  # passes.pipeline.report_dict
    quant: dict[str, Any] | None  # the quantizer's report, when the model was quantized
    images: dict[str, bytes] = field(default_factory=dict)  # file name -> PNG bytes
    schedule: dict[str, Any] = field(default_factory=dict)  # report.layers.schedule_dict
    prune: dict[str, Any] | None = None  # nn2c.prune.PruneReport.to_dict, with --prune
    npu: dict[str, Any] | None = None  # npu.partition.NpuPlan.as_dict, with --npu

    @property
    def ram_bytes(self) -> int:
        return self.arena_bytes + self.state_bytes


def _io(value) -> dict[str, Any]:
    t = value.type
    spec: dict[str, Any] = {"name": value.name, "dtype": t.dtype, "shape": list(t.shape), "bytes": t.num_bytes}
    if t.quant is not None and not t.quant.per_channel:
        spec["scale"] = float(t.quant.scale[0])
        spec["zero_point"] = int(t.quant.zero_point[0])
    return spec


def _plots(result: CompileResult) -> dict[str, bytes]:
    from nn2c.report.memory_plot import plot_live_bytes, plot_plan, plot_tradeoff

    code = result.code
    schedule = schedule_dict(result)
    groups = {g["step"]: f"row group: ops {g['ops'][0]}-{g['ops'][-1]}" for g in schedule["row_groups"]}
    with tempfile.TemporaryDirectory(prefix="nn2c_report_") as tmp:
        plan_png = plot_plan(code.buffers, code.plan, code.inplace, result.name, Path(tmp) / "memory_plan.png", groups)
        live_png = plot_live_bytes(code.buffers, code.plan, result.name, Path(tmp) / "live_bytes.png")
        images = {"memory_plan.png": plan_png.read_bytes(), "live_bytes.png": live_png.read_bytes()}
        tradeoff = schedule.get("tradeoff", [])
        # a curve of one planned schedule still shows what it saves against layer by layer
        if len(tradeoff) > 1 or (tradeoff and code.plan.arena_bytes < schedule["layer_by_layer_arena_bytes"]):
            points = [(p["arena_bytes"], p["added_cost_fraction"]) for p in tradeoff]
            bounds = [(p["lower_bound_bytes"], p["added_cost_fraction"]) for p in schedule["candidates"]]
            chosen = (code.plan.arena_bytes, schedule["added_cost_fraction"])
            curve = plot_tradeoff(points, chosen, schedule["layer_by_layer_arena_bytes"], result.name,
                                  Path(tmp) / "schedule_tradeoff.png", bounds)
            images["schedule_tradeoff.png"] = curve.read_bytes()
        return images


def quant_dict(quant: Any) -> dict[str, Any] | None:
    """The quantizer's report as plain data (it offers to_dict / as_dict), for the report and --json."""
    if quant is None:
        return None
    for attribute in ("as_dict", "to_dict"):
        if hasattr(quant, attribute):
            data = getattr(quant, attribute)()
            return data if isinstance(data, dict) else {"report": data}
    if isinstance(quant, dict):
        return quant
    return {"report": str(quant)}


def collect(result: CompileResult, ram_budget: int | None = None, flash_budget: int | None = None,
            instructions: dict[int, float] | None = None, images: bool = True,
            accesses: dict[int, float] | None = None) -> ReportData:
    """Gather everything the report shows; `instructions` and `accesses` (loads + stores; step -> per
    inference) come from nn2c bench."""
    from nn2c.passes.pipeline import report_dict

    options = getattr(result, "options", None)
    settings: dict[str, Any] = {}
    if options is not None:
        settings = {"target": options.target, "planner": options.planner, "in-place": "on" if options.inplace else "off",
                    "optimisation": f"-O{options.opt_level}"}
        if options.quantize:
            settings["quantize"] = f"{options.quantize} ({options.calibration_method} calibration)"
        if options.debug:
            settings["debug"] = True
    graph, code = result.graph, result.code
    return ReportData(
        name=result.name, source=getattr(result, "source", "") or "", settings=settings,
        operators=len(graph.nodes), macs=sum(macs(n) for n in graph.nodes),
        arena_bytes=code.plan.arena_bytes, lower_bound=code.plan.lower_bound, state_bytes=code.state_bytes,
        weight_bytes=code.weight_bytes, inputs=[_io(v) for v in graph.inputs], outputs=[_io(v) for v in graph.outputs],
        layers=layer_table(result, instructions, accesses), peak=peak(result),
        budgets=[Budget("RAM", result.ram_bytes, ram_budget), Budget("flash", code.weight_bytes, flash_budget)],
        ops_before=getattr(result, "ops_before", None), ops_after=op_counts(graph),
        passes=report_dict(result.passes) if result.passes is not None else None,
        quant=quant_dict(result.quant),
        images=_plots(result) if images else {},
        schedule=schedule_dict(result),
        prune=result.prune.to_dict() if getattr(result, "prune", None) is not None else None,
        npu=graph.metadata["npu"].as_dict() if "npu" in graph.metadata else None,
    )


# --- HTML ----------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;max-width:1200px;
 padding:0 1em;color:#1d1d1f;background:#fff}
h1{font-size:1.6em;margin-bottom:.2em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
.sub{color:#666;margin-top:0}
.cards{display:flex;flex-wrap:wrap;gap:.8em}
.card{border:1px solid #ddd;border-radius:6px;padding:.6em 1em;min-width:9em}
.card .v{font-size:1.4em;font-weight:600;font-variant-numeric:tabular-nums} .card .k{color:#666;font-size:.85em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
th,td{border-bottom:1px solid #eee;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f6f6f6;cursor:pointer;position:sticky;top:0} td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.peak td{background:#fff4e5} tr.cpu td{background:#eef4ff} .bar{background:#eee;border-radius:3px;width:16em;height:.8em;display:inline-block}
.bar span{display:block;height:100%;border-radius:3px;background:#2e7d32} .bar span.over{background:#c62828}
img{max-width:100%;border:1px solid #eee} code{background:#f6f6f6;padding:0 .2em}
.muted{color:#888}
"""

# click a header to sort a table by that column (numbers numerically)
_JS = """
document.querySelectorAll('table.sortable th').forEach(function(th){
 th.addEventListener('click', function(){
  var col = th.cellIndex, body = th.closest('table').tBodies[0], rows = Array.from(body.rows);
  var dir = th.dataset.dir === 'asc' ? -1 : 1; th.dataset.dir = dir === 1 ? 'asc' : 'desc';
  function key(r){ var t = r.cells[col].dataset.v || r.cells[col].textContent; var x = parseFloat(t);
   return isNaN(x) ? t : x; }
  rows.sort(function(a, b){ var x = key(a), y = key(b); return (x > y ? 1 : x < y ? -1 : 0) * dir; });
  rows.forEach(function(r){ body.appendChild(r); });
 });
});
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _n(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return str(value)
    return f"{value:,.0f}" if isinstance(value, float) else f"{value:,}"


def _card(key: str, value: str, ident: str) -> str:
    return f'<div class="card"><div class="v" id="{ident}">{_e(value)}</div><div class="k">{_e(key)}</div></div>'


def _table(headers: list[str], rows: list[list[Any]], numeric: set[int] | None = None, sortable: bool = False,
           ident: str = "", row_classes: list[str] | None = None) -> str:
    numeric = numeric or set()
    attributes = (f' id="{ident}"' if ident else "") + (' class="sortable"' if sortable else "")
    out = [f"<table{attributes}>",
           "<thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in headers) + "</tr></thead><tbody>"]
    for k, row in enumerate(rows):
        cls = f' class="{row_classes[k]}"' if row_classes and row_classes[k] else ""
        cells = []
        for c, cell in enumerate(row):
            if c in numeric:
                raw = "" if cell is None else cell
                cells.append(f'<td class="n" data-v="{_e(raw)}">{_n(cell)}</td>')
            else:
                cells.append(f"<td>{_e(cell)}</td>")
        out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _io_rows(specs: list[dict[str, Any]]) -> list[list[Any]]:
    return [[k, s["name"], s["dtype"], "x".join(map(str, s["shape"])) or "scalar", s["bytes"],
             f"{s['scale']:.9g}" if "scale" in s else "-", s.get("zero_point", "-")] for k, s in enumerate(specs)]


def _budget_html(budget: Budget, ident: str) -> str:
    if budget.limit is None:
        return f'<p>{budget.what}: <b id="{ident}">{budget.used:,} B</b> <span class="muted">(no budget given)</span></p>'
    fraction = budget.fraction or 0.0
    width = min(fraction, 1.0) * 100
    over = ' class="over"' if fraction > 1 else ""
    verdict = "OVER BUDGET" if fraction > 1 else "fits"
    return (f'<p>{budget.what}: <b id="{ident}">{budget.used:,} B</b> of {budget.limit:,} B budget '
            f'({fraction * 100:.1f}%, {verdict}) <span class="bar"><span{over} style="width:{width:.1f}%"></span></span></p>')


def _layer_rows(data: ReportData) -> tuple[list[str], list[list[Any]], set[int], list[str]]:
    measured = any(layer.instructions is not None for layer in data.layers)
    headers = ["#", "operator", "inputs", "outputs", "MACs", "weight B", "arena offset", "output B", "scratch B",
               "memory", "live B"] + (["instructions", "loads+stores"] if measured else [])
    numeric = {0, 4, 5, 6, 7, 8, 10, 11, 12}
    rows, classes = [], []
    peak_step = data.peak.step if data.peak else -1
    for layer in data.layers:
        memory = "in place" if layer.inplace else "shares input (no copy)" if layer.aliased else (
            "separate" if layer.offset is not None else "state")
        row: list[Any] = [layer.step, layer.op + (f" ({layer.name.split(';')[0][:40]})" if layer.name else ""),
                          ", ".join(layer.inputs), ", ".join(layer.outputs), layer.macs, layer.weight_bytes,
                          layer.offset, layer.size, layer.scratch_bytes, memory, layer.live_bytes]
        if measured:
            row += [layer.instructions, layer.accesses]
        rows.append(row)
        classes.append("peak" if layer.step == peak_step else "")
    return headers, rows, numeric, classes


def _ops_rows(data: ReportData) -> list[list[Any]]:
    before = data.ops_before or {}
    names = sorted(set(before) | set(data.ops_after), key=lambda op: (-before.get(op, 0), op))
    return [[op, before.get(op, 0) if data.ops_before is not None else None, data.ops_after.get(op, 0)]
            for op in names]


def _pass_rows(passes: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for name, r in passes["passes"].items():
        notes = "; ".join(r["changes"][:6]) + (f"; ... {len(r['changes']) - 6} more" if len(r["changes"]) > 6 else "")
        rows.append([name, r["removed_ops"], r["removed_tensors"], r["bytes_saved"], notes if r["modified"] else "no change"])
    return rows


def _quant_html(quant: dict[str, Any]) -> str:
    """The quantizer's report: lists of records become tables, the rest key/value rows."""
    parts, scalars = [], []
    for key, value in quant.items():
        if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            headers = sorted({k for x in value for k in x}, key=lambda k: (k != "name", k != "tensor", k))
            rows = [[_fmt(x.get(h)) for h in headers] for x in value]
            parts.append(f"<h3>{_e(key)}</h3>" + _table(headers, rows, sortable=True))
        elif isinstance(value, dict) and value and all(not isinstance(x, dict | list) for x in value.values()):
            parts.append(f"<h3>{_e(key)}</h3>" + _table(["tensor", "value"], [[k, _fmt(v)] for k, v in value.items()],
                                                          sortable=True))
        else:
            scalars.append([key, _fmt(value)])
    head = _table(["field", "value"], scalars) if scalars else ""
    return head + "\n".join(parts)


def _prune_html(prune: dict[str, Any]) -> str:
    """--prune's report: settings, outputs and layers as tables, before / after side by side, the notes."""
    rest = {k: v for k, v in prune.items() if k not in ("before", "after", "notes")}
    keys = [k for k in prune["before"] if k in prune["after"]]
    rows = [[k, prune["before"][k], prune["after"][k],
             f"{prune['after'][k] / prune['before'][k]:.2f}x" if prune["before"][k] else "-"] for k in keys]
    notes = "".join(f"<li>{_e(n)}</li>" for n in prune["notes"])
    return (_quant_html(rest) + "<h3>before and after</h3>" + _table(["figure", "without --prune", "with", "ratio"],
                                                                      rows, {1, 2})
            + (f"<ul>{notes}</ul>" if notes else ""))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def _schedule_rows(data: ReportData) -> list[list[Any]]:
    return [[g["step"], f"{g['ops'][0]}-{g['ops'][-1]}", " > ".join(g["types"]), g["rows_per_iteration"],
             g["column_bands"], sum(g["window_bytes"]) + sum(g["tile_bytes"]), g["moved_bytes"],
             g["recomputed_macs"], "; ".join(g["slower_kernels"]) or "-"]
            for g in data.schedule.get("row_groups", [])]


_SCHEDULE_HEADERS = ["step", "operators", "types", "rows per iteration", "column bands", "window and tile bytes",
                     "bytes moved", "MACs recomputed", "slower kernels"]
_SCHEDULE_NUMERIC = {0, 3, 4, 5, 6, 7}


def _schedule_summary(data: ReportData) -> str:
    s = data.schedule
    text = f"Schedule {s['policy']}: layer by layer."
    if s["row_groups"]:
        text = (f"Schedule {s['policy']}: {len(s['row_groups'])} row group(s) run several operators a few rows at "
                f"a time (intermediates never whole); arena {data.arena_bytes:,} B against "
                f"{s['layer_by_layer_arena_bytes']:,} B layer by layer, estimated extra cost "
                f"{100 * s['added_cost_fraction']:.1f}%, "
                + (f"{s['recomputed_macs']:,} MACs recomputed (the halo columns of column bands)."
                   if s["recomputed_macs"] else "no MAC recomputed."))
    moves = s.get("relocations", [])
    if moves:
        text += (f" {len(moves)} tensor(s) move back after an in-place step (after steps "
                 f"{', '.join(str(m['after_step']) for m in moves)}; {sum(m['bytes'] for m in moves):,} B copied "
                 "per inference), so chains of in-place operators do not drift down the arena.")
    return text


def _has_schedule(data: ReportData) -> bool:
    return bool(data.schedule.get("row_groups") or data.schedule.get("relocations"))


def _schedule_html(data: ReportData) -> list[str]:
    if not _has_schedule(data):
        return []
    body = ["<h2>Schedule</h2>", f'<p id="schedule">{_e(_schedule_summary(data))}</p>']
    if data.schedule["row_groups"]:
        body.append(_table(_SCHEDULE_HEADERS, _schedule_rows(data), _SCHEDULE_NUMERIC, ident="row-groups"))
    if "schedule_tradeoff.png" in data.images:
        body.append(f'<p><img id="schedule-tradeoff" alt="RAM against cost of the schedules planned" '
                    f'src="{_data_uri(data.images["schedule_tradeoff.png"])}"></p>')
    return body


def _npu_html(data: ReportData) -> list[str]:
    if data.npu is None:
        return []
    return ["<h2>NPU placement</h2>", f'<p id="npu">{_e(npu_section.summary(data.npu))}</p>',
            _table(npu_section.SUBGRAPH_HEADERS, npu_section.subgraph_rows(data.npu), npu_section.SUBGRAPH_NUMERIC,
                   ident="npu-subgraphs"),
            _table(npu_section.PLACEMENT_HEADERS, npu_section.placement_rows(data.npu), npu_section.PLACEMENT_NUMERIC,
                   sortable=True, ident="npu-placement",
                   row_classes=[p["unit"] for p in data.npu["placements"]])]


def _npu_markdown(data: ReportData) -> list[str]:
    if data.npu is None:
        return []
    return ["", "## NPU placement", "", npu_section.summary(data.npu), "",
            _md_table(npu_section.SUBGRAPH_HEADERS, npu_section.subgraph_rows(data.npu), npu_section.SUBGRAPH_NUMERIC),
            "", _md_table(npu_section.PLACEMENT_HEADERS, npu_section.placement_rows(data.npu),
                          npu_section.PLACEMENT_NUMERIC)]


def _schedule_markdown(data: ReportData) -> list[str]:
    if not _has_schedule(data):
        return []
    out = ["", "## Schedule", "", _schedule_summary(data)]
    if data.schedule["row_groups"]:
        out += ["", _md_table(_SCHEDULE_HEADERS, _schedule_rows(data), _SCHEDULE_NUMERIC)]
    if "schedule_tradeoff.png" in data.images:
        out += ["", "![schedule trade-off](schedule_tradeoff.png)"]
    return out


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def render_html(data: ReportData) -> str:
    ratio = data.arena_bytes / data.lower_bound if data.lower_bound else 1.0
    title = f"nn2c report: {data.name}"
    body = [f"<h1>{_e(title)}</h1>",
            f'<p class="sub">compiled from <code>{_e(data.source or data.name)}</code> by nn2c {_e(__version__)}'
            + ("; " + ", ".join(f"{k}: {v}" for k, v in data.settings.items()) if data.settings else "") + "</p>",
            '<div class="cards">',
            _card("operators", f"{data.operators:,}", "operator-count"),
            _card("MACs per inference", f"{data.macs:,}", "macs"),
            _card("arena bytes (RAM)", f"{data.arena_bytes:,}", "arena-bytes"),
            _card("state bytes (RAM)", f"{data.state_bytes:,}", "state-bytes"),
            _card("weight bytes (flash)", f"{data.weight_bytes:,}", "weight-bytes"),
            _card(f"live-bytes lower bound (arena / bound {ratio:.2f})", f"{data.lower_bound:,}", "lower-bound"),
            "</div>",
            "<h2>Budgets</h2>",
            _budget_html(data.budgets[0], "ram-total"), _budget_html(data.budgets[1], "flash-total"),
            '<p class="muted">RAM = tensor arena + state tensors (static, no heap); flash = weights only '
            "(add the code size your compiler reports).</p>"]
    if data.peak is not None:
        body.append(f'<p id="peak">Arena {_e(data.peak.describe(limit=8))}: the highest byte in use is '
                    f"{data.peak.arena_top:,}; the tensors live at that step add up to {data.peak.live_bytes:,} B "
                    "(an output written in place overlaps its input).</p>")
    body += _schedule_html(data)
    body += _npu_html(data)
    body.append("<h2>Inputs and outputs</h2>")
    io_headers = ["#", "tensor", "dtype", "shape", "bytes", "scale", "zero point"]
    body.append("<h3>Inputs</h3>" + _table(io_headers, _io_rows(data.inputs), {4}))
    body.append("<h3>Outputs</h3>" + _table(io_headers, _io_rows(data.outputs), {4}))
    body.append("<h2>Memory plan</h2>")
    for file_name, alt, ident in (("memory_plan.png", "memory plan: buffers by arena offset and step", "memory-plan"),
                                  ("live_bytes.png", "live bytes over the schedule", "live-bytes")):
        if file_name in data.images:
            body.append(f'<p><img id="{ident}" alt="{_e(alt)}" src="{_data_uri(data.images[file_name])}"></p>')
    body.append("<h2>Graph before and after optimisation</h2>")
    if data.passes is not None:
        body.append(f"<p>-O{data.passes['level']}: <b id=\"ops-before\">{data.passes['ops_before']}</b> operators "
                    f"&rarr; <b id=\"ops-after\">{data.passes['ops_after']}</b> in {data.passes['iterations']} "
                    "iteration(s) of the pass pipeline.</p>")
    body.append(_table(["operator", "before", "after"], _ops_rows(data), {1, 2}, sortable=True, ident="op-counts"))
    if data.passes is not None and data.passes["passes"]:
        body.append("<h3>Per pass</h3>" + _table(["pass", "operators removed", "tensors removed",
                                                   "activation bytes saved", "changes"],
                                                  _pass_rows(data.passes), {1, 2, 3}))
    if data.quant is not None:
        body.append('<h2 id="quantization">Quantization</h2>' + _quant_html(data.quant))
    if data.prune is not None:
        body.append('<h2 id="pruning">Pruning</h2><p class="muted">Weights zeroed at compile time (--prune), '
                    "without fine-tuning; SQNR of each output against the unpruned model; before = the compile "
                    "without --prune.</p>" + _prune_html(data.prune))
    headers, rows, numeric, classes = _layer_rows(data)
    body.append("<h2>Layers</h2>")
    body.append('<p class="muted">In execution order (click a header to sort). Arena offset and output B: the '
                "first output's buffer; in place = written over an input that dies at this operator; live B = "
                "bytes of all buffers live during the step; the highlighted row sets the peak.</p>")
    body.append(_table(headers, rows, numeric, sortable=True, ident="layers", row_classes=classes))
    page = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{_e(title)}</title>\n"
            f"<style>{_CSS}</style>\n</head>\n<body>\n" + "\n".join(body) + f"\n<script>{_JS}</script>\n</body>\n</html>\n")
    return page.encode("ascii", "xmlcharrefreplace").decode("ascii")


# --- Markdown ------------------------------------------------------------------------------

def _md_table(headers: list[str], rows: list[list[Any]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()

    def cell(c: int, value: Any) -> str:
        text = _n(value) if c in numeric else _fmt(value)
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---:" if c in numeric else "---" for c in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(cell(c, v) for c, v in enumerate(row)) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(data: ReportData) -> str:
    ratio = data.arena_bytes / data.lower_bound if data.lower_bound else 1.0
    out = [f"# nn2c report: {data.name}", "",
           f"Compiled from `{data.source or data.name}` by nn2c {__version__}"
           + ("; " + ", ".join(f"{k}: {v}" for k, v in data.settings.items()) if data.settings else "") + ".", "",
           _md_table(["figure", "value"], [
               ["operators", data.operators], ["MACs per inference", data.macs],
               ["arena bytes (RAM)", data.arena_bytes], ["state bytes (RAM)", data.state_bytes],
               ["weight bytes (flash)", data.weight_bytes],
               ["live-bytes lower bound", data.lower_bound], ["arena / lower bound", f"{ratio:.2f}"],
           ], {1}), ""]
    for budget in data.budgets:
        if budget.limit is None:
            out.append(f"- {budget.what}: {budget.used:,} B (no budget given)")
        else:
            out.append(f"- {budget.what}: {budget.used:,} B of {budget.limit:,} B budget "
                       f"({(budget.fraction or 0) * 100:.1f}%, {'OVER BUDGET' if (budget.fraction or 0) > 1 else 'fits'})")
    if data.peak is not None:
        out.append(f"- arena {data.peak.describe(limit=8)}")
    out += _schedule_markdown(data)
    out += _npu_markdown(data)
    io_headers = ["#", "tensor", "dtype", "shape", "bytes", "scale", "zero point"]
    out += ["", "## Inputs", "", _md_table(io_headers, _io_rows(data.inputs), {4}),
            "", "## Outputs", "", _md_table(io_headers, _io_rows(data.outputs), {4}), "",
            "## Memory plan", "", "![memory plan](memory_plan.png)", "", "![live bytes](live_bytes.png)", "",
            "## Graph before and after optimisation", ""]
    if data.passes is not None:
        out += [f"-O{data.passes['level']}: {data.passes['ops_before']} operators -> {data.passes['ops_after']} "
                f"in {data.passes['iterations']} iteration(s).", ""]
    out += [_md_table(["operator", "before", "after"], _ops_rows(data), {1, 2}), ""]
    if data.passes is not None and data.passes["passes"]:
        out += ["| pass | operators removed | tensors removed | activation bytes saved |", "|---|---:|---:|---:|"]
        out += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:,} |" for r in _pass_rows(data.passes)]
        out.append("")
    if data.quant is not None:
        out += ["## Quantization", ""]
        for key, value in data.quant.items():
            if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
                headers = sorted({k for x in value for k in x}, key=lambda k: (k != "name", k != "tensor", k))
                out += [f"### {key}", "", _md_table(headers, [[x.get(h) for h in headers] for x in value]), ""]
            else:
                out.append(f"- {key}: {_fmt(value) if not isinstance(value, dict | list) else value}")
        out.append("")
    if data.prune is not None:
        out += ["## Pruning", ""]
        for key, value in data.prune.items():
            if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
                headers = list(value[0])
                out += [f"### {key}", "", _md_table(headers, [[x.get(h) for h in headers] for x in value]), ""]
            else:
                out.append(f"- {key}: {_fmt(value) if not isinstance(value, dict | list) else value}")
        out.append("")
    headers, rows, numeric, _ = _layer_rows(data)
    out += ["## Layers", "", _md_table(headers, rows, numeric), ""]
    return "\n".join(out).encode("ascii", "replace").decode("ascii")


def write_report(result: CompileResult, out_dir: str | Path, ram_budget: int | None = None,
                 flash_budget: int | None = None, instructions: dict[int, float] | None = None,
                 accesses: dict[int, float] | None = None) -> list[Path]:
    """Write report.html, report.md, memory_plan.png and live_bytes.png into out_dir; return their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = collect(result, ram_budget, flash_budget, instructions, accesses=accesses)
    written = []
    for file_name, png in data.images.items():
        (out_dir / file_name).write_bytes(png)
        written.append(out_dir / file_name)
    for file_name, text in (("report.html", render_html(data)), ("report.md", render_markdown(data))):
        (out_dir / file_name).write_text(text, encoding="ascii", newline="\n")
        written.append(out_dir / file_name)
    return written
