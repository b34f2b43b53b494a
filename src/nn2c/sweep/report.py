"""A sweep's reports from its rows: results.parquet (only when pyarrow is installed; nn2c does not
depend on it), pareto.png (peak RAM vs predicted latency, colour = MACs, filled where the candidate
fits the board) and index.html (the plot, the Pareto front of RAM and MACs, and the failures)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from nn2c.sweep.run import COLUMNS

INTS = ("index", "resolution", "weight_seed", "ram_bytes", "arena_bytes", "state_bytes", "weight_bytes",
        "flash_bytes_estimate", "macs", "predicted_instructions")
FLOATS = ("width", "latency_ms_estimate", "profile_seconds")


def _typed(row: dict[str, Any]) -> dict[str, Any]:
    typed: dict[str, Any] = {}
    for key in COLUMNS:
        value = row.get(key, "")
        if value in ("", None):
            typed[key] = None
        elif key in INTS:
            typed[key] = int(value)
        elif key in FLOATS:
            typed[key] = float(value)
        else:
            typed[key] = str(value)
    return typed


def pareto_front(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates no other beats on both RAM (lower) and MACs (higher, capacity as in TinyNAS),
    sorted by RAM: for each RAM, the most network. (RAM against latency alone is no trade-off: the
    smallest network wins both.)"""
    points = sorted((r for r in rows if r.get("ram_bytes") is not None and r.get("macs") is not None),
                    key=lambda r: (r["ram_bytes"], -r["macs"]))
    front: list[dict[str, Any]] = []
    for r in points:
        if not front or r["macs"] > front[-1]["macs"]:
            front.append(r)
    return front


def write_reports(rows: list[dict[str, Any]], out: Path, board: str | None) -> tuple[Path | None, Path | None, Path]:
    typed = [_typed(r) for r in rows]
    parquet = _parquet(typed, out / "results.parquet")
    ok = [r for r in typed if r["status"] == "ok"]
    y = "latency_ms_estimate" if any(r["latency_ms_estimate"] is not None for r in ok) else "predicted_instructions"
    plot = _plot(ok, out / "pareto.png", y, board) if ok else None
    page = out / "index.html"
    page.write_text(_html(typed, ok, board, plot))
    return parquet, plot, page


def _parquet(rows: list[dict[str, Any]], path: Path) -> Path | None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _plot(ok: list[dict[str, Any]], path: Path, y: str, board: str | None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=110)
    macs = [r["macs"] / 1e6 for r in ok]
    low, high = min(macs), max(macs)
    fit = [r for r in ok if r["fits"] == "yes"]
    over = [r for r in ok if r["fits"] != "yes"]
    scatter = None
    for group, marker, label in ((fit, "o", f"fits {board}"), (over, "x", f"does not fit {board}")):
        if not group:
            continue
        scatter = ax.scatter([r["ram_bytes"] / 1024 for r in group], [r[y] for r in group],
                             c=[r["macs"] / 1e6 for r in group], cmap="viridis", vmin=low, vmax=high, marker=marker,
                             s=28, label=label if board else None)
    front = pareto_front(ok)
    ax.scatter([r["ram_bytes"] / 1024 for r in front], [r[y] for r in front], s=90, facecolors="none",
               edgecolors="tab:red", lw=1.2, label="Pareto front (least RAM, most MACs)")
    if scatter is not None:
        fig.colorbar(scatter, ax=ax, label="MACs (millions)")
    ax.set_xlabel("peak RAM, arena + state (KB; exact)")
    ax.set_ylabel("latency (ms; estimate)" if y == "latency_ms_estimate" else "predicted instructions")
    ax.set_title(f"nn2c sweep: {len(ok)} candidates" + (f" on {board}" if board else ""))
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _table(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> str:
    head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
    body = "".join("<tr>" + "".join(f"<td>{html.escape('' if r[k] is None else str(r[k]))}</td>" for k in keys)
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _html(rows: list[dict[str, Any]], ok: list[dict[str, Any]], board: str | None, plot: Path | None) -> str:
    failed = [r for r in rows if r["status"] != "ok"]
    fits = [r for r in ok if r["fits"] == "yes"]
    keys = ("index", "id", "source", "resolution", "width", "depths", "kernel_sizes", "expand_ratios", "ram_bytes",
            "flash_bytes_estimate", "macs", "predicted_instructions", "latency_ms_estimate", "fits")
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>nn2c sweep</title><style>"
             "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}</style></head><body>",
             "<h1>nn2c sweep</h1>",
             f"<p>{len(rows)} candidates: {len(ok)} profiled, {len(failed)} failed"
             + (f"; {len(fits)} fit {html.escape(board)}" if board else "") + ". RAM and weights are exact "
             "(nn2c compile's planner); instructions are predicted by a cost model and latency is an estimate "
             "(instructions x assumed cycles per instruction / clock). Full results: results.csv.</p>"]
    if plot is not None:
        parts.append(f"<img src='{plot.name}' alt='Pareto plot'>")
    parts += ["<h2>Pareto front (least peak RAM, most MACs)</h2>", _table(pareto_front(ok), keys)]
    if failed:
        parts += ["<h2>Failed</h2>", _table(failed, ("index", "id", "source", "error"))]
    parts.append("</body></html>\n")
    return "\n".join(parts)
