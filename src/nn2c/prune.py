"""`nn2c compile --prune METHOD:AMOUNT`: zero weights of a dense model at compile time, and report the cost.

    structured:FRACTION  in every CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED, the FRACTION of output
                         filters with the smallest L1 norm (of the real weights: int8 codes times their
                         scale) is set to zero; at least one filter per layer is kept.
    magnitude:SPARSITY   in every such layer, the SPARSITY fraction of individual weights with the smallest
                         magnitude is set to zero (ranked, so the fraction is exact despite ties).
    N:M                  in every CONV_2D and FULLY_CONNECTED, of each M consecutive weights along the input
                         channels (the filter row's innermost axis) the N largest in magnitude are kept
                         (e.g. 1:8, 2:4); a layer whose input channels M does not divide stays dense, noted.

Pruning runs on the imported graph, before the optimiser, so passes/prune_channels.py then removes the
zeroed filters it can remove exactly (structured pruning lowers MACs, flash and arena). Magnitude and N:M
pruning leave the dense MACs unchanged; int8 FULLY_CONNECTED and 1x1 CONV_2D layers sparse enough then
run the sparse kernels (codegen/ops/sparse.py), which store and multiply only the nonzero weights.

The report compares the pruned model with the unpruned one on the calibration data (or on seeded random
inputs, said so): per output the SQNR, 10 log10(sum y^2 / sum (y - y_pruned)^2), with nn2c's reference
evaluator; and MACs, weight bytes and arena of the compile without --prune against this one. No
fine-tuning is done: pruning a trained model costs accuracy, which docs/BENCHMARKS.md measures.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from nn2c.errors import UsageError
from nn2c.ir import Graph, Node
from nn2c.quant.report import sqnr_db

METHODS = ("structured", "magnitude")
PRUNABLE = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")
RANDOM_RECORDS = 8  # seeded random inputs the SQNR is measured on without --calibration
MAX_EVALUATED = 100  # calibration samples the SQNR is measured on (the first ones)


def parse_spec(spec: str) -> tuple[str, float]:
    """'structured:0.5' -> ('structured', 0.5); '2:8' -> ('2:8', 0.75) (N:M, its sparsity); a UsageError
    (exit 7) on anything else."""
    group = re.fullmatch(r"\s*(\d+)\s*:\s*(\d+)\s*", spec)
    if group:
        n, m = int(group[1]), int(group[2])
        if not 0 < n < m <= 256:
            raise UsageError(f"--prune {spec!r}: N:M keeps N of every M weights, 0 < N < M <= 256 (e.g. 1:8, 2:4)")
        return f"{n}:{m}", 1.0 - n / m
    method, sep, amount = spec.partition(":")
    method = method.strip().lower()
    if method not in METHODS:
        raise UsageError(f"--prune {spec!r}: unknown method {method!r}; use structured:FRACTION, "
                         "magnitude:SPARSITY or N:M (e.g. structured:0.5, 2:8)")
    try:
        value = float(amount) if sep else math.nan
    except ValueError:
        value = math.nan
    if not (0.0 <= value < 1.0):
        raise UsageError(f"--prune {spec!r}: {method} needs a fraction in [0, 1) after the colon "
                         f"(e.g. {method}:0.5)")
    return method, value


def parse_skip(text: str | None) -> tuple[int, ...]:
    """'3,7' -> (3, 7): operator indices (as `nn2c inspect` numbers them) left dense."""
    if not text:
        return ()
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UsageError(f"--prune-skip {text!r}: give operator indices separated by commas (e.g. 0,5), "
                         "as `nn2c inspect` numbers them") from None


@dataclass
class LayerPrune:
    index: int  # the operator's index in the model (`nn2c inspect`)
    op: str
    name: str  # the operator's output tensor
    weights: int  # weight elements
    zeroed_fraction: float  # fraction of the weights that are zero after pruning
    filters: int  # output channels before
    filters_zeroed: int  # all-zero filters after pruning
    dtype: str = ""  # the activations' type (the input's): float32 (a float or hybrid layer) or int8
    channels_removed: int | None = None  # output channels the compile removed (None: the operator was fused away)
    note: str = ""  # why a layer stayed dense


@dataclass
class PruneReport:
    method: str
    amount: float
    inputs: str  # "calibration data (N samples)" or "N seeded random inputs"
    outputs: list[dict[str, Any]] = field(default_factory=list)  # name, sqnr_db
    layers: list[LayerPrune] = field(default_factory=list)
    before: dict[str, int] = field(default_factory=dict)  # macs, weight_bytes, arena_bytes without --prune
    after: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def spec(self) -> str:
        """As the user wrote it: 'structured:0.5', '2:8'."""
        return self.method if ":" in self.method else f"{self.method}:{self.amount:g}"

    @property
    def output_sqnr_db(self) -> float:
        return min((o["sqnr_db"] for o in self.outputs), default=math.inf)

    def to_dict(self) -> dict[str, Any]:
        def db(value: float) -> float | str:
            return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")

        return {"method": self.method, "amount": self.amount, "inputs": self.inputs,
                "output_sqnr_db": db(self.output_sqnr_db),
                "outputs": [{**o, "sqnr_db": db(o["sqnr_db"])} for o in self.outputs],
                "before": dict(self.before), "after": dict(self.after),
                "layers": [asdict(layer) for layer in self.layers], "notes": list(self.notes)}

    def lines(self) -> list[str]:
        """The summary lines of `nn2c compile` (without the per-layer table)."""
        out = []
        for o in self.outputs:
            value = o["sqnr_db"]
            shown = "exact" if value == math.inf else f"{value:.1f} dB"
            out.append(f"pruned {self.spec}: output {o['name']!r} SQNR {shown} against the "
                       f"unpruned model on {self.inputs}")
        if self.before and self.after:
            parts = []
            for key, label in (("macs", "MACs"), ("weight_bytes", "weights"), ("arena_bytes", "arena")):
                b, a = self.before[key], self.after[key]
                parts.append(f"{label} {b:,} -> {a:,} ({a / b:.2f}x)" if b else f"{label} {b:,} -> {a:,}")
            out.append("pruned: " + ", ".join(parts))
        zeroed = sum(layer.weights * layer.zeroed_fraction for layer in self.layers)
        total = sum(layer.weights for layer in self.layers)
        removed = sum(layer.channels_removed or 0 for layer in self.layers)
        if total:
            out.append(f"pruned: {len(self.layers)} layer(s), {zeroed / total:.1%} of their weights zero, "
                       f"{removed} output channel(s) removed by prune-channels")
        out += [f"pruned: {note}" for note in self.notes]
        return out

    def __str__(self) -> str:
        rows = [f"  op {x.index:3d} {x.op:18s} zero {x.zeroed_fraction:6.1%}  filters zeroed {x.filters_zeroed:4d}"
                f"/{x.filters:<4d} channels removed {'-' if x.channels_removed is None else x.channels_removed}"
                + (f"  ({x.note})" if x.note else "") for x in self.layers]
        return "\n".join([f"pruning {self.spec}, per layer:", *rows]) + "\n"


def _filter_axis(node: Node) -> int:
    return 3 if node.op == "DEPTHWISE_CONV_2D" else 0


def _dense_reason(node: Node) -> str:
    """Why this operator's weights are not pruned ('' when they are)."""
    w = node.input(1)
    if w is None or w.data is None or w.is_variable:
        return "weights computed at run time"
    if w.type.dtype not in ("float32", "int8"):
        return f"{w.type.dtype} weights"
    if w.type.dtype == "int8" and (w.type.quant is None or any(int(z) for z in w.type.quant.zero_point)):
        return "int8 weights with a nonzero zero point (code 0 is not the real 0)"
    if node.op == "FULLY_CONNECTED" and np.ndim(w.data) != 2:
        return "weights not 2-D"
    if node.op != "FULLY_CONNECTED" and np.ndim(w.data) != 4:
        return "weights not 4-D"
    return ""


def _real_weights(node: Node) -> np.ndarray:
    w = node.inputs[1]
    assert w is not None and w.data is not None
    data = np.asarray(w.data, dtype=np.float64)
    quant = w.type.quant
    if w.type.dtype == "int8" and quant is not None:
        scale = np.asarray(quant.scale, dtype=np.float64)
        if len(scale) > 1:
            shape = [1] * data.ndim
            shape[quant.axis] = len(scale)
            scale = scale.reshape(shape)
        data = data * scale
    return data


def _nm_reason(node: Node, data: np.ndarray, m: int) -> str:
    """Why N:M pruning leaves this operator dense ('' when it does not)."""
    if node.op == "DEPTHWISE_CONV_2D":
        return "N:M pruning applies to CONV_2D and FULLY_CONNECTED (a depthwise filter has no input channels)"
    if data.shape[-1] % m:
        return f"its {data.shape[-1]} input channels are not a multiple of M = {m}"
    return ""


def _nm_mask(real: np.ndarray, n: int, m: int) -> np.ndarray:
    """True where a weight is zeroed: in each run of m along the last axis, all but the n largest
    (ties: the first ones kept, a stable rank)."""
    groups = real.reshape(-1, m)
    order = np.argsort(-groups, axis=1, kind="stable")
    mask = np.ones(groups.shape, dtype=bool)
    np.put_along_axis(mask, order[:, :n], False, axis=1)
    return mask.reshape(real.shape)


def prune_weights(graph: Graph, method: str, amount: float, skip: tuple[int, ...] = ()) -> PruneReport:
    """Zero weights in place (the graph's constant arrays are replaced, never written through)."""
    report = PruneReport(method, amount, "")
    for step_index, node in enumerate(graph.nodes):
        if node.op not in PRUNABLE:
            continue
        index = node.index if node.index is not None else step_index
        w = node.input(1)
        reason = "kept dense by --prune-skip" if index in skip else _dense_reason(node)
        name = node.outputs[0].name if node.outputs else ""
        if w is None or w.data is None:
            report.notes.append(f"op {index} {node.op} {name!r} stays dense: {reason}")
            continue
        data = np.asarray(w.data)
        axis = _filter_axis(node)
        filters = int(data.shape[axis]) if data.ndim > axis else 1
        if not reason and ":" in method:
            reason = _nm_reason(node, data, int(method.split(":")[1]))
        if not reason:
            real = np.abs(_real_weights(node))
            if ":" in method:
                mask = _nm_mask(real, *(int(k) for k in method.split(":")))
            elif method == "structured":
                l1 = real.sum(axis=tuple(a for a in range(real.ndim) if a != axis))
                count = min(math.floor(amount * filters + 1e-9), filters - 1)
                chosen: list[Any] = [slice(None)] * real.ndim
                chosen[axis] = np.argsort(l1, kind="stable")[:count]
                mask = np.zeros(real.shape, dtype=bool)
                mask[tuple(chosen)] = True
            else:
                count = math.floor(amount * real.size + 1e-9)
                flat = np.zeros(real.size, dtype=bool)
                flat[np.argsort(real.reshape(-1), kind="stable")[:count]] = True
                mask = flat.reshape(real.shape)
            pruned = data.copy()
            pruned[mask] = 0
            w.data = pruned
            data = pruned
        else:
            report.notes.append(f"op {index} {node.op} {name!r} stays dense: {reason}")
        zero = data == 0
        zero_filters = int(np.all(np.moveaxis(zero, axis, 0).reshape(filters, -1), axis=1).sum()) if data.ndim else 0
        report.layers.append(LayerPrune(index, node.op, name, int(data.size), float(zero.mean()) if data.size else 0.0,
                                        filters, zero_filters, node.inputs[0].type.dtype if node.inputs[0] else "",
                                        note=reason))
    return report


def _outputs(graph: Graph, records: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    from nn2c.quant.ptq import _run
    from nn2c.reference.values import real

    per_output: list[list[np.ndarray]] = [[] for _ in graph.outputs]
    for record in records:
        env = _run(graph, record, "measure the pruned model")
        for i, value in enumerate(graph.outputs):
            per_output[i].append(real(value, env[id(value)]))
    return per_output


def _load_samples(path: Path, graph: Graph) -> list[np.ndarray]:
    """--calibration data for --prune: as for --quantize (quant/calibration.py) on float inputs; an integer
    (e.g. int8) input takes integer arrays of its own range, [N, *shape] (or [N, *shape[1:]] for a batch of 1)."""
    from nn2c.quant import calibration as cal

    if all(v.type.dtype == "float32" for v in graph.inputs):
        return cal.load_calibration(path, graph)
    if not path.exists():
        raise UsageError(f"calibration data {path}: no such file or folder")
    if path.is_dir():
        arrays = cal._from_folder(path, graph)
    elif path.suffix.lower() == ".npz":
        arrays = cal._by_key(path, cal._read_npz(path), graph)
    elif len(graph.inputs) == 1:
        arrays = [cal._read_npy(path)]
    else:
        raise UsageError(f"calibration data {path}: a single .npy for a model with {len(graph.inputs)} inputs; "
                         "give an .npz with one array per input")
    samples = []
    for value, array in zip(graph.inputs, arrays, strict=True):
        shape, what = value.type.shape, f"calibration data {path.name}, input {value.name!r}"
        if array.ndim == len(shape) and array.shape[1:] == shape[1:] and shape and shape[0] == 1:
            array = array.reshape((array.shape[0], *shape))
        if array.ndim != len(shape) + 1 or array.shape[1:] != shape or len(array) == 0:
            raise UsageError(f"{what}: shape {list(array.shape)} does not match the input; expected "
                             f"[N, {', '.join(map(str, shape))}]")
        dtype = np.dtype(value.type.dtype)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            if array.dtype.kind not in "iu" or array.min() < info.min or array.max() > info.max:
                raise UsageError(f"{what}: the model's input is {dtype}; give {dtype} values (got {array.dtype}"
                                 f" in [{array.min()}, {array.max()}])")
        samples.append(np.ascontiguousarray(array, dtype=dtype))
    return samples


def _records(graph: Graph, calibration: str | None) -> tuple[list[list[np.ndarray]], str]:
    if calibration:
        samples = _load_samples(Path(calibration), graph)
        count = min(len(samples[0]), MAX_EVALUATED)
        return [[s[i] for s in samples] for i in range(count)], f"{count} calibration sample(s)"
    from nn2c.verify.inputs import random_records

    return (random_records(list(graph.inputs), RANDOM_RECORDS, seed=0),
            f"{RANDOM_RECORDS} seeded random inputs (no --calibration given)")


class Pruning:
    """The prune stage's state across compile_model: the report, and the operators to count channels on."""

    def __init__(self, report: PruneReport, nodes: list[tuple[Node, int, int]], tflite: bytes | None) -> None:
        self.report = report
        self.nodes = nodes  # (the pruned operator, its index, its filter count before the optimiser)
        self.tflite = tflite
        self.onnx: bytes | None = None  # --write-onnx: the source ONNX model with the zeros

    def count_channels(self, graph: Graph) -> None:
        """On the compiled graph: the output channels each pruned operator lost (prune-channels). Operators
        are matched by their model index, which the passes and the int8 rewrite keep."""
        now: dict[int, int] = {}
        for node in graph.nodes:
            w = node.input(1)
            if node.op in PRUNABLE and node.index is not None and w is not None and w.data is not None:
                now.setdefault(node.index, int(w.type.shape[_filter_axis(node)]))
        by_index = {x.index: x for x in self.report.layers}
        for _node, index, before in self.nodes:
            layer = by_index.get(index)
            if layer is not None and index in now:
                layer.channels_removed = before - now[index]

    def finish(self, result: Any, path: str | Path, options: Any) -> PruneReport:
        """Compile the model again without --prune, for the before figures."""
        from nn2c.compile import compile_model
        from nn2c.ir.cost import macs

        self.count_channels(result.graph)
        dense = compile_model(path, replace(options, prune=None, prune_skip=(), write_tflite=None, write_onnx=None,
                                            ram_budget=None, flash_budget=None))
        for figures, compiled in ((self.report.before, dense), (self.report.after, result)):
            figures["macs"] = sum(macs(n) for n in compiled.graph.nodes)
            figures["weight_bytes"] = compiled.code.weight_bytes
            figures["arena_bytes"] = compiled.arena_bytes
        if self.report.method != "structured":
            self.report.notes.append("the MACs above count every weight; int8 FULLY_CONNECTED and 1x1 CONV_2D layers "
                                     "run sparse kernels that multiply only the nonzero weights where the target's "
                                     "cost model predicts them faster (--sparse); other layers multiply the zeros")
        floats = [x for x in self.report.layers if x.filters_zeroed and x.dtype == "float32"]
        if self.report.method == "structured" and floats and not options.quantize:
            self.report.notes.append(f"{len(floats)} float32 layer(s): a zeroed float filter still outputs its bias, "
                                     "which prune-channels does not fold into the next layer (that would reorder "
                                     "float additions), so those channels stay unless nothing reads them; "
                                     "with --quantize int8 they are removed")
        return self.report


def prune_stage(graph: Graph, options: Any, step: Any, source: Path | None = None) -> Pruning:
    """Before the optimiser: zero the weights, measure the SQNR against the unpruned graph, (serialise:
    --write-tflite from the graph, --write-onnx into the `source` ONNX model's initializers)."""
    method, amount = parse_spec(options.prune)
    step(f"pruning ({method}:{amount:g}) and measuring it against the unpruned model")
    records, described = _records(graph, options.calibration)
    dense = _outputs(graph, records)
    unpruned = [(f"op {n.index} {n.op} {n.outputs[0].name!r}" if n.outputs else f"op {n.index} {n.op}", w,
                 np.asarray(w.data)) for n in graph.nodes if n.op in PRUNABLE
                for w in [n.input(1)] if w is not None and w.data is not None]
    report = prune_weights(graph, method, amount, tuple(options.prune_skip))
    report.inputs = described
    if not any(not layer.note for layer in report.layers):
        report.notes.append("nothing to prune: the model has no CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED "
                            "with constant float32 or int8 weights")
    pruned = _outputs(graph, records)
    for value, ys, yps in zip(graph.outputs, dense, pruned, strict=True):
        y, yp = np.concatenate([a.reshape(-1) for a in ys]), np.concatenate([a.reshape(-1) for a in yps])
        report.outputs.append({"name": value.name, "sqnr_db": sqnr_db(float(np.sum(y * y)),
                                                                     float(np.sum((y - yp) ** 2)))})
    tflite = None
    if options.write_tflite is not None and not options.quantize:
        from nn2c.export.tflite_writer import graph_to_tflite

        step("writing the pruned graph as a TFLite flatbuffer")
        tflite = graph_to_tflite(graph, f"nn2c {method}:{amount:g} pruning of {graph.name}")
    onnx_bytes = None
    if getattr(options, "write_onnx", None) is not None and source is not None:
        from nn2c.export.onnx_weights import pruned_onnx

        step("writing the pruned weights into the ONNX model")
        onnx_bytes = pruned_onnx(source, [(where, before, np.asarray(w.data)) for where, w, before in unpruned])
    nodes = []
    for step_index, node in enumerate(graph.nodes):
        w = node.input(1)
        if node.op in PRUNABLE and w is not None and w.data is not None and np.ndim(w.data) > _filter_axis(node):
            index = node.index if node.index is not None else step_index
            nodes.append((node, index, int(np.shape(w.data)[_filter_axis(node)])))
    pruning = Pruning(report, nodes, tflite)
    pruning.onnx = onnx_bytes
    return pruning
