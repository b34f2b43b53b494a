"""Sparse int8 kernels against nn2c's dense kernels, in QEMU: writes the `sparse` section of docs/BENCHMARKS.md.

Each model is pruned by nn2c itself (`--prune magnitude:S` or `N:M`, no fine-tuning) and written back
as a .tflite; that zero-laden model is compiled for each core with `--sparse off` (nn2c's dense
kernels), `--sparse always` (every int8 FULLY_CONNECTED and unpadded 1x1 CONV_2D on the sparse
kernels) and `--sparse auto` (the default: per layer, by the target's break-even density), all with
`--schedule layer` so that each layer's instructions are counted on their own. Every build runs in
QEMU on seeded inputs and its outputs are compared with TFLM running the same zero-laden .tflite
(integer outputs bit for bit). Cores: `portable` (the host target's C99 kernels, built for and run
on the Cortex-M4), `cortex-m4` (Arm DSP dense kernels) and `cortex-m55` (Helium dense kernels).

The choice of `--sparse auto`: per core and layer shape (`row`: one input row, a FULLY_CONNECTED of
batch < 4; `block`: four rows at once, 1x1 convolutions), relative least-squares fits of the measured
layers give two linear instruction models over codegen/ops/sparse.py's SPARSE_COST_FEATURES (the
kernel's work: MACs dense, stored entries x input rows sparse; then outputs, inputs, input rows, one
call), the coefficients nn2c.target ships (sparse_row_cost / sparse_block_cost); codegen/ops/sparse.py
takes the sparse kernel where it predicts at most SAFETY (0.85) times the dense instructions.
The `auto` columns then check that choice on every measured layer. On the cores that pack (Cortex-M4),
`size-off` and `size-auto` are the same two at `--optimize size`, where `auto` may store a layer in the
packed layout (4-bit position steps): their table shows flash and instructions against the dense build
at size.

    python bench/sparse.py [--models ...] [--prunings magnitude:0.5 ...] [--cores ...] [--no-write]
                           [--save runs.json | --load runs.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from report_file import replace_section  # noqa: E402
from tests.conftest import model_path  # noqa: E402

from nn2c.api import CompileOptions, compile_model  # noqa: E402
from nn2c.codegen.ops.sparse import (  # noqa: E402
    EIGHT_ROWS,
    PACKED_FOUR_ROWS,
    PAIRS_VARIANT,
    SAFETY,
    SPARSE_COST_FEATURES,
    TABLE_COST_FEATURES,
    TABLE_VARIANT,
    cost_features,
    density,
    pairs_cost,
    sparse_layout,
    stored_entries,
    table_counts,
    table_features,
)
from nn2c.ir.cost import macs  # noqa: E402
from nn2c.profiler import profile  # noqa: E402
from nn2c.target import get_target  # noqa: E402
from nn2c.targets.cortexm_bench import bench_model, steps_of  # noqa: E402

PAIR_KINDS = ("pairs", "pairs8")  # the row pairs' fits: 4-7 rows (the four-row loop), 8 or more (eight at a time)
MODELS = ["mlcommons_tiny/ad01_int8", "mlcommons_tiny/kws_ref_model", "mlcommons_tiny/vww_96_int8"]
PRUNINGS = ["magnitude:0.5", "magnitude:0.75", "magnitude:0.9", "1:8"]
CORES = ["portable", "cortex-m4", "cortex-m55"]
MODES = ["off", "always", "auto", "size-off", "size-auto", "speed-off", "speed-always", "speed-auto"]
# measured only on the cores whose target packs at --optimize size (Target.sparse_packed_extra)
SIZE_MODES = ("size-off", "size-auto")
# measured only on the Arm DSP cores: --optimize speed keeps the sparse row pairs (nn2c_sparse_row4_pairs) even
# where their scratch raises the arena, which a balanced build does only where it does not (compile.plan_stages)
SPEED_MODES = ("speed-off", "speed-always", "speed-auto")
SPARSE_CALLS = ("nn2c_fc_s8_sparse", "nn2c_conv_s8_sparse")


@dataclass
class LayerRun:
    index: int
    op: str
    kind: str  # "row" or "block"
    density: float
    macs: int  # dense MACs (every weight)
    depth: int
    outputs: int
    entries: int  # stored sparse entries (nonzeros padded per channel and segment) x input rows
    rows: int  # input rows: FULLY_CONNECTED batches or output pixels
    instructions: dict[str, float] = field(default_factory=dict)  # mode -> per inference
    accesses: dict[str, float] = field(default_factory=dict)
    sparse_in: dict[str, bool] = field(default_factory=dict)  # mode -> ran the sparse kernel
    pairs: dict[str, bool] = field(default_factory=dict)  # mode -> summed in row pairs
    table: dict[str, bool] = field(default_factory=dict)  # mode -> one row over pair tables
    table_words: int = 0  # stored words in the pair table layout (a one-row layer's)
    pair_entries: int = 0  # stored entries of the row pairs' unpadded layout x input rows


@dataclass
class Run:
    model: str
    pruning: str
    core: str
    total: dict[str, int] = field(default_factory=dict)  # mode -> instructions per inference
    accesses: dict[str, float] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=dict)  # mode -> flash weight bytes
    arena: dict[str, int] = field(default_factory=dict)  # mode -> arena bytes
    tflm: dict[str, str] = field(default_factory=dict)
    layers: list[LayerRun] = field(default_factory=list)


def _options(core: str, mode: str) -> CompileOptions:
    """A mode: --sparse off / always / auto, at --optimize balanced; size-off / size-auto at size."""
    optimize, _, sparse = mode.rpartition("-")
    return CompileOptions(name="model", target="host" if core == "portable" else core, sparse=sparse,
                          schedule="layer", optimize=optimize or "balanced")


def _modes(core: str, modes: list[str]) -> list[str]:
    packs = core != "portable" and get_target(core).sparse_packed_extra is not None
    pairs = core != "portable" and get_target(core).simd == "dsp"
    return [m for m in modes if (packs or m not in SIZE_MODES) and (pairs or m not in SPEED_MODES)]


def _variant_steps(path: Path, core: str, options: CompileOptions) -> dict[str, set[int]]:
    """The steps of this build per variant (nn2c.profile, the same stages as compile): row pairs, pair tables."""
    steps = profile(path, target=core, options=options).steps
    return {variant: {s.step for s in steps if s.variant == variant} for variant in (PAIRS_VARIANT, TABLE_VARIANT)}


def _prune(model: str, pruning: str, workdir: Path) -> Path:
    path = workdir / f"{Path(model).name}_{pruning.replace(':', '_')}.tflite"
    result = compile_model(model_path(f"{model}.tflite"), CompileOptions(prune=pruning, write_tflite=str(path)))
    assert result.tflite is not None
    path.write_bytes(result.tflite)
    return path


def _sparse_able(path: Path, core: str, mode: str) -> Iterator[tuple[int, Any, np.ndarray]]:
    """(step index, step, int8 filter rows [out_c, depth]) of the FULLY_CONNECTED and CONV_2D steps with a constant
    filter in a build of `mode` (what --sparse always puts on the sparse kernels)."""
    for k, step in enumerate(steps_of(compile_model(path, _options(core, mode)))):
        if getattr(step, "op", None) not in ("FULLY_CONNECTED", "CONV_2D"):
            continue
        w = step.inputs[1]
        if w is not None and w.data is not None:
            yield k, step, np.asarray(w.data).reshape(w.type.shape[0], -1).astype(np.int8)


def _candidates(path: Path, core: str) -> dict[int, LayerRun]:
    """Step index -> the layers the sparse kernels can take (what --sparse always puts on them)."""
    layers = {}
    for k, step, rows in _sparse_able(path, core, "always"):
        outputs = step.outputs[0].type.num_elements
        batches = outputs // rows.shape[0]  # input rows: FULLY_CONNECTED batches or output pixels
        entries = sparse_layout(rows).entries * batches
        layers[k] = LayerRun(k, step.op, "block" if batches >= 4 else "row", density(rows), macs(step),
                             rows.shape[1], outputs, entries, batches,
                             table_words=int(table_counts(rows).sum()) if batches < 4 else 0,
                             pair_entries=stored_entries(rows, padded=False) * batches)
    return layers


def measure(model: str, pruning: str, core: str, records: int, workdir: Path, modes: list[str]) -> Run:
    path = _prune(model, pruning, workdir)
    run = Run(model, pruning, core)
    layers = _candidates(path, core)
    bench_target = "cortex-m4" if core == "portable" else core
    for mode in _modes(core, modes):
        # (large_memory=None: the larger memory map where a build does not fit the standard one, such as pair tables
        # of a half-dense filter, 8 bytes a word)
        report = bench_model(path, target=bench_target, count=records, options=_options(core, mode),
                             workdir=workdir / f"{path.stem}_{core}_{mode}", large_memory=None)
        run.total[mode] = report.instructions_per_inference
        run.accesses[mode] = sum(report.loads + report.stores) / max(len(report.loads), 1)
        run.weights[mode] = report.footprint.flash_weights
        run.arena[mode] = report.footprint.ram_arena
        variants = _variant_steps(path, core, _options(core, mode)) if core != "portable" else {}
        bad = sum(c.mismatches for c in report.comparisons)
        run.tflm[mode] = ("not run: " + "; ".join(report.skipped.values()) if report.skipped or not report.comparisons
                          else "bit-exact" if bad == 0 else f"{bad} values differ")
        for layer in report.layers:
            if layer.index in layers:
                entry = layers[layer.index]
                entry.instructions[mode] = layer.instructions
                entry.accesses[mode] = layer.memory_accesses
                entry.sparse_in[mode] = any(call in SPARSE_CALLS for call in layer.calls)
                entry.pairs[mode] = layer.index in variants.get(PAIRS_VARIANT, set())
                entry.table[mode] = layer.index in variants.get(TABLE_VARIANT, set())
    run.layers = [x for x in layers.values() if x.instructions]
    return run


@dataclass
class Fit:
    dense: tuple[float, ...]  # coefficients of SPARSE_COST_FEATURES
    sparse: tuple[float, ...]
    layers: int
    dense_error: float  # largest |predicted / measured - 1| over the layers
    sparse_error: float

    @property
    def shipped(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        return (tuple(float(f"{c:.4g}") for c in self.dense), tuple(float(f"{c:.4g}") for c in self.sparse))


def _lstsq(features: list[list[int]], measured: list[float]) -> tuple[tuple[float, ...], float]:
    a = np.array(features, dtype=np.float64)
    y = np.array(measured, dtype=np.float64)
    # relative least squares: every layer counts alike, small ones too
    coef, *_ = np.linalg.lstsq(a / y[:, None], np.ones_like(y), rcond=None)
    coef = np.array([float(f"{c:.4g}") for c in coef])  # as shipped
    error = float(np.max(np.abs(a @ coef / y - 1.0)))
    return tuple(float(c) for c in coef), error


def fit(runs: list[Run], core: str, kind: str) -> Fit | None:
    """The dense and sparse instruction models of a core and layer shape ("row", "block": the balanced builds'
    layers not in row pairs; "pairs" / "pairs8": the speed builds' layers in row pairs of 4-7 / 8 or more rows, their
    sparse features over the rows the loops compute (pair_rows) and the unpadded entries; "table": the speed builds'
    one-row layers over pair tables, over TABLE_COST_FEATURES a row), or None without data."""
    if kind == "table":
        samples = [x for r in runs if r.core == core for x in r.layers
                   if x.table.get("speed-always") and "speed-off" in x.instructions]
        if len(samples) < 2 * len(TABLE_COST_FEATURES):
            return None
        dense, dense_error = _lstsq([cost_features(x.outputs // x.rows, x.depth, x.rows, 0)[0] for x in samples],
                                    [x.instructions["speed-off"] for x in samples])
        sparse, sparse_error = _lstsq([[f * x.rows for f in table_features(x.outputs // x.rows, x.depth,
                                                                           x.table_words)] for x in samples],
                                      [x.instructions["speed-always"] for x in samples])
        return Fit(dense, sparse, len(samples), dense_error, sparse_error)
    dense_mode, sparse_mode = ("speed-off", "speed-always") if kind in PAIR_KINDS else ("off", "always")
    samples = [x for r in runs if r.core == core for x in r.layers
               if (x.kind == "block" if kind in PAIR_KINDS else x.kind == kind) and x.sparse_in.get(sparse_mode)
               and x.pairs.get(sparse_mode, False) == (kind in PAIR_KINDS) and not x.table.get(sparse_mode, False)
               and dense_mode in x.instructions and (kind != "pairs" or x.rows < EIGHT_ROWS)
               and (kind != "pairs8" or x.rows >= EIGHT_ROWS)]
    if len(samples) < 2 * len(SPARSE_COST_FEATURES):
        return None
    features = [cost_features(x.outputs // x.rows, x.depth, x.rows, x.entries // x.rows) for x in samples]
    dense, dense_error = _lstsq([f[0] for f in features], [x.instructions[dense_mode] for x in samples])
    if kind in PAIR_KINDS:  # (their lists unpadded; from eight rows the rows the loop's blocks compute: pairs_cost)
        features = [cost_features(x.outputs // x.rows, x.depth, pairs_cost(get_target(core), x.rows)[1],
                                  x.pair_entries // x.rows) for x in samples]
    sparse, sparse_error = _lstsq([f[1] for f in features], [x.instructions[sparse_mode] for x in samples])
    return Fit(dense, sparse, len(samples), dense_error, sparse_error)


def table(runs: list[Run], fits: dict[tuple[str, str], Fit | None], all_layers: bool = False) -> str:
    lines = [
        "## Sparse kernels: pruned models, dense against sparse, in QEMU",
        "",
        "Written by `bench/sparse.py`. Each model is pruned by nn2c (`--prune`, no fine-tuning) and written as a",
        ".tflite; that model is compiled with `--sparse off` (nn2c's dense kernels), `--sparse always` and `--sparse",
        "auto` (the default), `--schedule layer`, built, run in QEMU and compared with TFLM running the same",
        "zero-laden .tflite (bit-exact: every build below matched). `portable` = the host target's C99 kernels run",
        "on the Cortex-M4. Instructions per inference; MACs count every weight; weights = flash weight bytes.",
        "",
        "| model | pruning | core | density of sparse-able layers | instr dense | instr sparse (always) | ratio "
        "| instr auto | ratio | loads+stores dense / always | weights dense | weights sparse | ratio | TFLM |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for r in runs:
        weights_total = sum(x.macs for x in r.layers)
        mean_density = sum(x.density * x.macs for x in r.layers) / weights_total if weights_total else 1.0
        dense, always, auto = (r.total.get(m, 0) for m in ("off", "always", "auto"))
        w_dense, w_sparse = r.weights.get("off", 0), r.weights.get("always", 0)
        verdict = ", ".join(sorted(set(r.tflm.values())))
        lines.append(
            f"| {r.model.split('/')[-1]} | {r.pruning} | {r.core} | {mean_density:.3f} | {dense:,} | {always:,} "
            f"| {always / dense:.2f}x | {auto:,} | {auto / dense:.2f}x | {r.accesses.get('off', 0):,.0f} / "
            f"{r.accesses.get('always', 0):,.0f} | {w_dense:,} | {w_sparse:,} "
            f"| {(w_sparse / w_dense if w_dense else 0):.2f}x | {verdict} |")
    sized = [r for r in runs if "size-off" in r.total and "size-auto" in r.total]
    if sized:
        lines += ["", "At `--optimize size` (the cores whose target packs: nn2c.target sparse_packed_extra): a layer "
                  "that `--sparse auto`", "takes stores each position as a 4-bit step from the previous one (the packed "
                  "layout, codegen/ops/sparse.py", "packed_layout) where that is smaller than the dense int8 rows and "
                  "predicted no slower than the dense kernel", "at size (one row: nn2c_sparse_row1_packed; four: "
                  "nn2c_sparse_row4_packed; section `sparse_packed` below);", "the others keep byte positions. Dense = "
                  "`--sparse off` at the same level; `balanced` = the table above's dense build.", "",
                  "| model | pruning | core | instr dense (size) | instr auto (size) | ratio | weights dense (size) "
                  "| weights auto (size) | ratio | ratio to balanced dense | TFLM |",
                  "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in sized:
            dense, auto = r.total["size-off"], r.total["size-auto"]
            w_dense, w_auto, w_balanced = r.weights["size-off"], r.weights["size-auto"], r.weights.get("off", 0)
            verdict = ", ".join(sorted({r.tflm[m] for m in SIZE_MODES}))
            lines.append(f"| {r.model.split('/')[-1]} | {r.pruning} | {r.core} | {dense:,} | {auto:,} "
                         f"| {auto / dense:.2f}x | {w_dense:,} | {w_auto:,} | {w_auto / w_dense:.2f}x "
                         f"| {(w_auto / w_balanced if w_balanced else 0):.2f}x | {verdict} |")
    sped = [r for r in runs if "speed-off" in r.total and "speed-always" in r.total]
    if sped:
        lines += ["", "At `--optimize speed` (Arm DSP cores): a per-channel layer over at most 256 inputs run four rows at "
                  "a time", "sums them in row pairs (two rows in one 64-bit SMLAL sum; nn2c_sparse_row4_pairs: 6 "
                  "instructions an entry for", "four rows against 10; from eight rows nn2c_sparse_row8_pairs, eight at "
                  "a time: 11 for eight, the channel loop in assembly with", "every register), their lists unpadded, "
                  "with 8 bytes of scratch per input and row pair; a balanced build keeps them only where the arena",
                  "does not grow. A one-row layer (FULLY_CONNECTED of batch < 4) "
                  "runs over pair tables (nn2c_sparse_row1_table:", "the products of two nonzeros in one SMLAD from a "
                  "table of input pairs built at run time, up to 2 KB of", "scratch; balanced: by the same rule). Sparse-able layers "
                  "= the layers `--sparse always` runs sparse, against the same", "layers dense; arena = the planned tensor "
                  "arena (bytes) of the dense build at speed, the sparse one at speed,", "and the sparse one balanced.", "",
                  "| model | pruning | core | layers in row pairs / pair tables | sparse-able layers dense (speed) | sparse (speed) "
                  "| ratio | sparse (balanced) | ratio | model dense (speed) | auto (speed) | ratio "
                  "| arena dense / sparse speed / sparse balanced | TFLM |",
                  "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
        for r in sped:
            chosen = [x for x in r.layers if x.sparse_in.get("speed-always") and "speed-off" in x.instructions]
            dense = sum(x.instructions["speed-off"] for x in chosen)
            fast = sum(x.instructions["speed-always"] for x in chosen)
            balanced = sum(x.instructions.get("always", 0) for x in chosen)
            paired = sum(x.pairs.get("speed-always", False) for x in chosen)
            tabled = sum(x.table.get("speed-always", False) for x in chosen)
            verdict = ", ".join(sorted({r.tflm[m] for m in SPEED_MODES}))
            lines.append(f"| {r.model.split('/')[-1]} | {r.pruning} | {r.core} | {paired} / {tabled} of {len(chosen)} "
                         f"| {dense:,.0f} | {fast:,.0f} | {fast / dense:.2f}x | {balanced:,.0f} | {balanced / dense:.2f}x "
                         f"| {r.total['speed-off']:,} | {r.total.get('speed-auto', 0):,} "
                         f"| {r.total.get('speed-auto', 0) / r.total['speed-off']:.2f}x "
                         f"| {r.arena.get('speed-off', 0):,} / {r.arena.get('speed-always', 0):,} / "
                         f"{r.arena.get('always', 0):,} | {verdict} |")
    lines += ["", "Per layer that can run sparse (FULLY_CONNECTED, unpadded 1x1 CONV_2D) on the Cortex-M4: instructions",
              "per inference (the other cores' layers: `python bench/sparse.py --load runs.json --no-write --all-layers`).",
              "", "| model | pruning | core | op | kind | density | MACs | dense | sparse | ratio | auto chose |",
              "|---|---|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in runs if all_layers else [r for r in runs if r.core == "cortex-m4"]:
        for x in r.layers:
            layer_dense, layer_sparse = x.instructions.get("off"), x.instructions.get("always")
            if layer_dense is None or layer_sparse is None or not x.sparse_in.get("always"):
                continue
            chose = "sparse" if x.sparse_in.get("auto") else "dense" if "auto" in x.sparse_in else "-"
            lines.append(f"| {r.model.split('/')[-1]} | {r.pruning} | {r.core} | {x.index} {x.op} | {x.kind} "
                         f"| {x.density:.3f} | {x.macs:,} | {layer_dense:,.0f} | {layer_sparse:,.0f} | {layer_sparse / layer_dense:.2f}x "
                         f"| {chose} |")
    packed = [x for r in sized for x in r.layers if x.sparse_in.get("size-auto") and "size-off" in x.instructions]
    if packed:
        slower_packed = [x for x in packed if x.instructions["size-auto"] >= x.instructions["size-off"]]
        lines += ["", f"At size, `--sparse auto` chose the sparse kernel on {len(packed)} measured layers; "
                  f"{len(slower_packed)} of them ran slower than the dense kernel at size."]
    fast = [x for r in sped for x in r.layers if x.sparse_in.get("speed-auto") and "speed-off" in x.instructions]
    if fast:
        slower_fast = [x for x in fast if x.instructions["speed-auto"] >= x.instructions["speed-off"]]
        lines += ["", f"At speed, `--sparse auto` (with the row pairs' and pair tables' models where a layer takes them) chose the sparse "
                  f"kernel on {len(fast)} measured layers; {len(slower_fast)} of them ran slower than the dense kernel "
                  "at speed."]
    chosen = [x for r in runs for x in r.layers if x.sparse_in.get("auto") and "off" in x.instructions]
    slower = [x for x in chosen if x.instructions["auto"] >= x.instructions["off"]]
    if chosen:
        lines += ["", f"`--sparse auto` chose the sparse kernel on {len(chosen)} measured layers; {len(slower)} of them "
                  "ran slower than dense."]
    lines += ["", "Instruction models: instructions = coefficients . (" + ", ".join(SPARSE_COST_FEATURES) + "), work =",
              "MACs (dense) or stored entries x input rows (sparse); relative least squares over the measured layers;",
              f"shipped in nn2c.target as sparse_row_cost / sparse_block_cost; `auto` takes sparse where predicted <= {SAFETY}x",
              "dense. `pairs` / `pairs8`: the layers summed in row pairs at `--optimize speed`, of 4-7 rows (the "
              "four-row loop) / 8 or more (eight at a time), over the rows their loops compute (a last 1-4 rows as 4, "
              "5-7 as 8) and their unpadded entries (the sparse coefficients shipped as sparse_pairs_cost / "
              "sparse_pairs8_cost, which `--sparse auto` at speed and nn2c.profile use; `block` is fitted on the "
              "balanced builds' other layers). `table`: the one-row layers over pair tables at speed, per input row over (" +
              ", ".join(TABLE_COST_FEATURES) + ")", "(shipped as sparse_table_cost, which `--sparse auto` at speed and "
              "nn2c.profile use). Max error = the largest", "|predicted / measured - 1| over the layers.", "",
              "| core | kernel | layers | dense coefficients | max error | sparse coefficients | max error | shipped "
              "= fitted |", "|---|---|---:|---|---:|---|---:|---|"]
    for (core, kind), f in fits.items():
        target = get_target("host" if core == "portable" else core)
        shipped = target.sparse_cost(kind == "block")
        if kind in (*PAIR_KINDS, "table"):  # (only the sparse coefficients are shipped: the dense ones are row / block's)
            shipped_sparse = {"pairs": target.sparse_pairs_cost, "pairs8": target.sparse_pairs8_cost,
                              "table": target.sparse_table_cost}[kind]
            if f is None:
                if shipped_sparse is not None:
                    lines.append(f"| {core} | {kind} | 0 | - | - | - | - | no data |")
                continue
            lines.append(f"| {core} | {kind} | {f.layers} | {f.shipped[0]} | {f.dense_error:.0%} | {f.shipped[1]} "
                         f"| {f.sparse_error:.0%} | {'yes' if shipped_sparse == f.shipped[1] else 'no'} |")
            continue
        if f is None:
            lines.append(f"| {core} | {kind} | 0 | - | - | - | - | {(shipped is None and 'none') or 'no data'} |")
            continue
        same = ("not shipped (host: its cost depends on the machine)" if core == "portable"
                else "yes" if shipped == f.shipped else "no")
        lines.append(f"| {core} | {kind} | {f.layers} | {f.shipped[0]} | {f.dense_error:.0%} | {f.shipped[1]} "
                     f"| {f.sparse_error:.0%} | {same} |")
    return "\n".join(lines) + "\n"


# --packed: the packed layout at --optimize size against the dense build at size, on the cores whose target packs
PACKED_MODES = ["size-off", "size-auto", "size-always"]


@dataclass
class PackedLayer:
    model: str
    pruning: str
    index: int
    op: str
    rows: int  # input rows
    out_c: int
    depth: int
    entries: int  # stored entries of the packed layout (padding included)
    nonzeros: int
    filter_dense: int  # bytes of the int8 rows
    filter_packed: int  # bytes of the packed layout: counts, 4-bit steps, values
    four_rows: bool = False  # packed for the four-row loop alone (PACKED_FOUR_ROWS: the last 1-3 rows run as four)
    instructions: dict[str, float] = field(default_factory=dict)  # mode -> per inference
    packed_in: dict[str, bool] = field(default_factory=dict)  # mode -> ran the sparse kernel

    @property
    def packable(self) -> bool:
        """Whether --sparse auto may pack the layer at all (codegen/ops/sparse.py sparse_plan: fewer than 2/3
        nonzeros, the packed layout smaller than the int8 rows)."""
        return 3 * self.nonzeros < 2 * self.filter_dense and self.filter_packed < self.filter_dense


def measure_packed(model: str, pruning: str, core: str, records: int, workdir: Path
                   ) -> tuple[dict[str, tuple[float, int, str]], list[PackedLayer]]:
    """One pruned model at --optimize size with --sparse off, auto and always (every sparse-able layer packed): its
    totals (instructions, weight bytes, TFLM) per mode and its sparse-able layers."""
    from nn2c.codegen.ops.sparse import packed_layout

    path = _prune(model, pruning, workdir)
    layers: dict[int, PackedLayer] = {}
    for k, step, rows in _sparse_able(path, core, "size-always"):
        layout = packed_layout(rows, four_rows_only=step.op == "CONV_2D")
        if layout is None:
            continue
        layers[k] = PackedLayer(model, pruning, k, step.op, step.outputs[0].type.num_elements // rows.shape[0],
                                rows.shape[0], rows.shape[1], layout.entries, int(np.count_nonzero(rows)), rows.size,
                                layout.flash_bytes, four_rows=layout.packed == PACKED_FOUR_ROWS)
    totals = {}
    for mode in PACKED_MODES:
        report = bench_model(path, target=core, count=records, options=_options(core, mode),
                             workdir=workdir / f"{path.stem}_{core}_{mode}", large_memory=None)
        bad = sum(c.mismatches for c in report.comparisons)
        verdict = ("not run: " + "; ".join(report.skipped.values()) if report.skipped or not report.comparisons
                   else "bit-exact" if bad == 0 else f"{bad} values differ")
        totals[mode] = (report.instructions_per_inference, report.footprint.flash_weights, verdict)
        for layer in report.layers:
            if layer.index in layers:
                layers[layer.index].instructions[mode] = layer.instructions
                layers[layer.index].packed_in[mode] = any(call in SPARSE_CALLS for call in layer.calls)
    return totals, [x for x in layers.values() if x.packed_in.get("size-always")]


def packed_extra_fit(layers: list[PackedLayer], core: str, blocked: bool) -> tuple[tuple[float, float], float] | None:
    """The packed layout's extra instructions over the shipped sparse model (Target.packed_extra): relative least
    squares of measured - predicted (byte layout model, the packed entries) over (entries x rows, out_c x rows), on
    the layers --sparse auto may pack (PackedLayer.packable), the rows of a PACKED_FOUR_ROWS layer rounded up to
    fours as codegen/ops/sparse.py predicted_instructions does; with the largest |predicted / measured - 1|."""
    from nn2c.codegen.ops.sparse import predicted_costs

    target = get_target(core)
    samples = [x for x in layers if (x.rows >= 4) == blocked and x.packable]
    if len(samples) < 4:
        return None
    rows = [-(-x.rows // 4) * 4 if x.four_rows else x.rows for x in samples]
    base = np.array([predicted_costs(target, x.out_c, x.depth, n, x.entries)[1] for x, n in zip(samples, rows, strict=True)])
    measured = np.array([x.instructions["size-always"] for x in samples])
    a = np.array([[x.entries * n, x.out_c * n] for x, n in zip(samples, rows, strict=True)], dtype=np.float64)
    coef, *_ = np.linalg.lstsq(a / measured[:, None], (measured - base) / measured, rcond=None)
    shipped = (float(f"{coef[0]:.3g}"), float(f"{coef[1]:.3g}"))
    error = float(np.max(np.abs((base + a @ np.array(shipped)) / measured - 1.0)))
    return shipped, error


def packed_table(results: list[tuple[str, str, dict[str, tuple[float, int, str]], list[PackedLayer]]],
                 core: str) -> str:
    """The `sparse_packed` section: per pruned model the sparse-able layers' filter bytes dense and packed, the
    totals at size, and the packed extras' fit."""
    layers = [x for *_, found in results for x in found]
    lines = ["## Sparse kernels: the packed layout at `--optimize size`", "",
             f"Written by `bench/sparse.py --packed` ({core}, QEMU, bit-exact with TFLM where the last column says so). "
             "Each pruned model (as above) is compiled at `--optimize size` with `--sparse off` (dense), `auto` and "
             "`always`, `--schedule layer`. The packed layout stores a nonzero as its int8 weight and a 4-bit step "
             "from the previous one (codegen/ops/sparse.py packed_layout), one list a channel padded to 4 entries "
             "(to 2 for a 1x1 convolution, whose last pixels run the four-row loop too), a uint16 count a channel; "
             "one input row runs nn2c_sparse_row1_packed, four or more nn2c_sparse_row4_packed (1x1 convolutions). "
             "Filter bytes = the sparse-able layers' (FULLY_CONNECTED, "
             "unpadded 1x1 CONV_2D) int8 rows dense, against their packed layout (`always` stores every one so); the "
             "output stage per channel (bias, multiplier, shift) is the same in both and not counted. Weights = the "
             "whole model's flash weight bytes.", "",
             "| model | pruning | filter bytes dense | packed | ratio | instr dense (size) | instr always (size) | ratio "
             "| instr auto (size) | ratio | weights dense | weights always | weights auto | TFLM |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for model, pruning, totals, found in results:
        dense_bytes = sum(x.filter_dense for x in found)
        packed_bytes = sum(x.filter_packed for x in found)
        off, always, auto = totals["size-off"], totals["size-always"], totals["size-auto"]
        verdicts = {v for *_, v in totals.values()}
        lines.append(f"| {Path(model).name} | {pruning} | {dense_bytes:,} | {packed_bytes:,} | "
                     f"{packed_bytes / max(dense_bytes, 1):.2f}x | {off[0]:,.0f} | {always[0]:,.0f} | "
                     f"{always[0] / off[0]:.2f}x | {auto[0]:,.0f} | {auto[0] / off[0]:.2f}x | {off[1]:,} | {always[1]:,} "
                     f"| {auto[1]:,} | {', '.join(sorted(verdicts))} |")
    chosen = [x for x in layers if x.packed_in.get("size-auto") and "size-off" in x.instructions]
    slower = [x for x in chosen if x.instructions["size-auto"] >= x.instructions["size-off"]]
    blocks = [x for x in chosen if x.rows >= 4]
    lines += ["", f"`--sparse auto` at size packed {len(chosen)} measured layers ({len(blocks)} of four rows or more); "
              f"{len(slower)} of them ran slower than the dense kernel at size.", "",
              "Packed layers of four rows or more, per layer (instructions per inference at size):", "",
              "| model | pruning | op | rows | filter | density | dense (size) | packed (always) | ratio | auto chose |",
              "|---|---|---|---:|---|---:|---:|---:|---:|---|"]
    for x in layers:
        if x.rows < 4 or "size-off" not in x.instructions:
            continue
        lines.append(f"| {Path(x.model).name} | {x.pruning} | {x.index} {x.op} | {x.rows} | {x.out_c} x {x.depth} | "
                     f"{x.nonzeros / max(x.filter_dense, 1):.2f} | {x.instructions['size-off']:,.0f} | "
                     f"{x.instructions['size-always']:,.0f} | "
                     f"{x.instructions['size-always'] / x.instructions['size-off']:.2f}x | "
                     f"{'packed' if x.packed_in.get('size-auto') else 'dense'} |")
    lines += ["", "The packed layout's extra instructions over the byte layout's shipped model (sparse_row_cost, "
              "sparse_block_cost), per stored entry and input row and per output channel and input row: relative least "
              "squares over the `always` builds' layers that `auto` may pack (fewer than 2/3 nonzeros, the packed layout "
              "smaller than the int8 rows; shipped in nn2c.target as sparse_packed_extra, "
              "sparse_packed_block_extra; `auto` packs a one-row layer where predicted <= 1.3x the dense model, "
              "SIZE_SAFETY, four rows where <= 0.85x, auto_margin). Max error = the largest |predicted / measured - 1|.",
              "", "| rows | layers | fitted | max error | shipped |", "|---|---:|---|---:|---|"]
    target = get_target(core)
    for blocked in (False, True):
        found_fit = packed_extra_fit(layers, core, blocked)
        shipped = target.packed_extra(blocked)
        if found_fit is None:
            lines.append(f"| {'four or more' if blocked else 'one'} | 0 | - | - | {shipped} |")
            continue
        coef, error = found_fit
        lines.append(f"| {'four or more' if blocked else 'one'} | {sum((x.rows >= 4) == blocked and x.packable for x in layers)} | "
                     f"{coef} | {error:.0%} | {shipped}{' (the same)' if shipped == coef else ''} |")
    return "\n".join(lines) + "\n"


# layer shapes for the break-even table: (label, output channels, inputs per output, input rows)
BREAK_EVEN_SHAPES = [
    ("ad01 FULLY_CONNECTED 640 -> 128", 128, 640, 1),
    ("ad01 FULLY_CONNECTED 128 -> 128", 128, 128, 1),
    ("FULLY_CONNECTED 1024 -> 256", 256, 1024, 1),
    ("classifier FULLY_CONNECTED 128 -> 10", 10, 128, 1),
    ("kws 1x1 CONV_2D 64 -> 64, 25x5 pixels", 64, 64, 125),
    ("vww 1x1 CONV_2D 32 -> 96, 24x24 pixels", 96, 32, 576),
    ("1x1 CONV_2D 256 -> 256, 6x6 pixels", 256, 256, 36),
]


def break_even_table() -> str:
    """The density below which each core's shipped models predict the sparse kernel faster
    (codegen/ops/sparse.py break_even_density), per layer shape: no QEMU run, the fitted coefficients."""
    from nn2c.codegen.ops.sparse import break_even_density, break_even_table_density
    from nn2c.target import get_target

    cores = [c for c in CORES if c != "portable" and get_target(c).sparse_row_cost is not None]
    paired = [c for c in cores if get_target(c).sparse_pairs_cost is not None]
    tabled = [c for c in cores if get_target(c).sparse_table_cost is not None]
    lines = ["## Sparse kernels: break-even density per layer shape and core", "",
             "Written by `bench/sparse.py --break-even` from the instruction models nn2c ships (nn2c.target, fitted by "
             "this script to QEMU counts, table above): the density (nonzeros / weights) below which the sparse kernel "
             "is predicted to take fewer instructions than nn2c's dense one. There is no single figure per kernel: the "
             "dense kernels' cost per MAC depends on the shape (Helium's 16 lanes, the per-channel requantization). "
             f"`--sparse auto` takes a layer only below {SAFETY}x the dense cost, at a lower density. One input row "
             "uses the `row` models, four or more (1x1 convolutions) the `block` ones; `row pairs`: the loops over row "
             "pairs, four rows at a time below 8 rows and eight at a time from 8 (`--optimize speed`, or balanced "
             "where the arena allows; `auto` at balanced decides with `block`); `pair tables`: a one-row layer over pair tables (`--optimize speed`; random nonzeros, each "
             "block's longer half as expected); 0 = sparse never wins.", "",
             "| layer | rows | " + " | ".join(cores + [f"{c} (row pairs)" for c in paired]
                                            + [f"{c} (pair tables)" for c in tabled]) + " |",
             "|---|---|" + "---|" * (len(cores) + len(paired) + len(tabled))]
    for label, out_c, depth, rows in BREAK_EVEN_SHAPES:
        cells = [break_even_density(get_target(c), out_c, depth, rows) for c in cores]
        cells += [break_even_density(get_target(c), out_c, depth, rows, pairs=True) for c in paired]
        cells += [break_even_table_density(get_target(c), out_c, depth) if rows < 4 else None for c in tabled]
        lines.append(f"| {label} | {rows} | " + " | ".join("-" if x is None else f"{x:.2f}" for x in cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--prunings", nargs="+", default=PRUNINGS)
    parser.add_argument("--cores", nargs="+", default=CORES)
    parser.add_argument("--modes", nargs="+", default=MODES)
    parser.add_argument("--records", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="print the tables, leave docs/BENCHMARKS.md alone")
    parser.add_argument("--save", type=Path, help="also write the measured runs as JSON")
    parser.add_argument("--all-layers", action="store_true", help="the per-layer table for every core")
    parser.add_argument("--load", type=Path, help="tabulate the runs of a --save file instead of measuring")
    parser.add_argument("--packed", action="store_true",
                        help="only measure the packed layout at --optimize size on the Cortex-M4 (the sparse_packed section)")
    parser.add_argument("--break-even", action="store_true",
                        help="only write the break-even density table from the shipped models (no QEMU)")
    parser.add_argument("--remeasure", action="store_true",
                        help="with --load: measure --modes again (e.g. auto after a change of its model), keep the rest")
    args = parser.parse_args()
    if args.break_even:
        text = break_even_table()
        print(text)
        if not args.no_write:
            replace_section("sparse_break_even", text)
        return 0
    if args.packed:
        results = []
        if args.load:
            for model, pruning, totals, found in json.loads(args.load.read_text()):
                results.append((model, pruning, {k: tuple(v) for k, v in totals.items()},
                                [PackedLayer(**x) for x in found]))
        else:
            with tempfile.TemporaryDirectory() as tmp:
                for model in args.models:
                    for pruning in args.prunings:
                        totals, found = measure_packed(model, pruning, "cortex-m4", args.records, Path(tmp))
                        print(f"{model} {pruning}: {totals}", flush=True)
                        results.append((model, pruning, totals, found))
        if args.save:
            args.save.write_text(json.dumps([(m, p, t, [asdict(x) for x in f]) for m, p, t, f in results]))
        text = packed_table(results, "cortex-m4")
        print(text)
        if not args.no_write:
            replace_section("sparse_packed", text)
        return 0 if all(v[2] == "bit-exact" for *_, totals, _ in results for v in totals.values()) else 1
    runs = []
    if args.load:
        for data in json.loads(args.load.read_text()):
            layers = [LayerRun(**layer) for layer in data.pop("layers")]
            runs.append(Run(**data, layers=layers))
    if args.load and args.remeasure:
        with tempfile.TemporaryDirectory() as tmp:
            for run in runs:
                fresh = measure(run.model, run.pruning, run.core, args.records, Path(tmp), args.modes)
                for mode in _modes(run.core, args.modes):
                    run.total[mode], run.accesses[mode] = fresh.total[mode], fresh.accesses[mode]
                    run.weights[mode], run.tflm[mode] = fresh.weights[mode], fresh.tflm[mode]
                    run.arena[mode] = fresh.arena[mode]
                by_index = {x.index: x for x in fresh.layers}
                for x in run.layers:
                    again = by_index.get(x.index)
                    if again is None:
                        continue
                    for mode in _modes(run.core, args.modes):
                        if mode in again.instructions:
                            x.instructions[mode] = again.instructions[mode]
                            x.accesses[mode] = again.accesses[mode]
                            x.sparse_in[mode] = again.sparse_in[mode]
                            x.pairs[mode] = again.pairs[mode]
                            x.table[mode] = again.table.get(mode, False)
                print(f"{run.model} {run.pruning} {run.core}: {run.total} {run.tflm}", flush=True)
    elif not args.load:
        with tempfile.TemporaryDirectory() as tmp:
            for model in args.models:
                for pruning in args.prunings:
                    for core in args.cores:
                        run = measure(model, pruning, core, args.records, Path(tmp), args.modes)
                        print(f"{model} {pruning} {core}: {run.total} {run.tflm}", flush=True)
                        runs.append(run)
    if args.save:
        args.save.write_text(json.dumps([asdict(r) for r in runs]))
    cores = sorted({r.core for r in runs}, key=CORES.index)
    fits = {(core, kind): fit(runs, core, kind) for core in cores for kind in ("row", "block", *PAIR_KINDS, "table")}
    text = table(runs, fits, args.all_layers)
    print(text)
    if not args.no_write:
        replace_section("sparse", text)
    return 0 if all(v == "bit-exact" for r in runs for v in r.tflm.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
