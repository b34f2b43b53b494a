"""Post-training int8 quantization of float models: calibrate, rewrite, measure.

    graph, report = quantize_graph(graph, samples, method="mse")

0. Global average pools over a few pixels become depthwise convolutions (global_pool.py: TFLite
   Micro's int8 MEAN rounds twice, which over few pixels moves many outputs by one code).
1. Calibration runs the float graph on every sample with nn2c's reference evaluator
   (nn2c.reference) and records each float tensor's range (observers.py: min/max, percentile or
   MSE-optimal clip range).
2. The rewrite (rewrite.py) turns the graph into TFLite's int8 scheme so that the existing,
   TFLM-bit-exact int8 kernels run it unchanged.
3. The int8 graph is evaluated with the same reference on the samples, and every int8 tensor is
   compared with its float counterpart (report.py: per-tensor and output SQNR).
`quantize_for_compile` is the entry point of `nn2c compile --quantize int8`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nn2c.errors import UnsupportedOpError, UsageError
from nn2c.ir import Graph, TensorType, Value, verify
from nn2c.ir.ops import op_info
from nn2c.quant.calibration import load_calibration
from nn2c.quant.global_pool import global_means_as_depthwise
from nn2c.quant.observers import METHODS, TensorRange
from nn2c.quant.report import OutputReport, QuantReport, TensorReport, sqnr_db
from nn2c.quant.rewrite import HUGE_FILL, QuantizedGraph, rewrite
from nn2c.reference.evaluate import ReferenceError, real, run_graph

IO_MODES = ("float", "int8")
MAX_EVALUATED = 200  # samples the SQNR figures are measured on (the first ones)


def _run(graph: Graph, record: Sequence[np.ndarray], what: str) -> dict[int, np.ndarray]:
    try:
        with np.errstate(all="ignore"):  # NaN / inf are reported after the pass, with the tensor's name
            env = run_graph(graph, list(record), keep=True)
    except ReferenceError as exc:
        raise UnsupportedOpError(f"cannot {what}: nn2c's reference evaluator stops at {exc}; "
                                 "quantize this model with another tool, or keep that operator out of it") from None
    assert isinstance(env, dict)
    return env


def _observed(graph: Graph) -> list[Value]:
    """The float activations calibration watches (inputs and node outputs, not constants)."""
    return [v for v in graph.values() if v.type.dtype == "float32" and not v.is_constant and not v.is_variable]


def calibrate(graph: Graph, samples: Sequence[np.ndarray], method: str = "mse") -> tuple[dict[int, tuple[float, float]], dict[int, TensorRange]]:
    """Clip range per float activation (by id of the value), from two passes over the samples."""
    if method not in METHODS:
        raise UsageError(f"unknown calibration method {method!r}; choose one of {', '.join(METHODS)}")
    watched = _observed(graph)
    stats = {id(v): TensorRange() for v in watched}
    count = len(samples[0])
    passes = [TensorRange.observe_minmax] + ([TensorRange.observe_hist] if method != "minmax" else [])
    for observe in passes:
        for i in range(count):
            env = _run(graph, [s[i] for s in samples], "calibrate")
            for v in watched:
                if id(v) in env:
                    observe(stats[id(v)], np.asarray(env[id(v)], dtype=np.float64))
        if observe is TensorRange.observe_minmax:
            for v in watched:
                if stats[id(v)].nonfinite:
                    raise UsageError(f"calibration: tensor {v.name!r} ({_producer_op(v)}) becomes NaN or infinite "
                                     "on the calibration data; check that the inputs are preprocessed as the model "
                                     "expects")
    ranges = {key: st.clip_range(method) for key, st in stats.items() if np.isfinite(st.minimum)}
    return ranges, stats


def _producer_op(value: Value) -> str:
    return value.producer.op if value.producer is not None else "input"


def evaluate(float_graph: Graph, q: QuantizedGraph, samples: Sequence[np.ndarray], stats: dict[int, TensorRange],
             method: str, io: str) -> QuantReport:
    """Per-tensor and output SQNR of the int8 graph against the float graph, on the samples."""
    count = min(len(samples[0]), MAX_EVALUATED)
    tracked = [v for v in _observed(float_graph) if id(v) in q.int8_of]
    signal = {id(v): 0.0 for v in tracked}
    noise = {id(v): 0.0 for v in tracked}
    out_signal = [0.0] * len(float_graph.outputs)
    out_noise = [0.0] * len(float_graph.outputs)
    agree = [0] * len(float_graph.outputs)
    for i in range(count):
        record = [s[i] for s in samples]
        ref = _run(float_graph, record, "evaluate the float model")
        q_record = [_stored(v, r) for v, r in zip(q.graph.inputs, record, strict=True)]
        got = _run(q.graph, q_record, "evaluate the int8 model")
        for v in tracked:
            x = np.asarray(ref[id(v)], dtype=np.float64)
            qv = q.int8_of[id(v)]
            if id(qv) not in got and qv.data is None:
                continue
            y = real(qv, np.asarray(got.get(id(qv), qv.data)))
            # values standing for infinities (a max pool's padding) saturate by design; not signal
            ordinary = np.abs(x) < HUGE_FILL
            x, y = np.where(ordinary, x, 0.0), np.where(ordinary, y, 0.0)
            signal[id(v)] += float(np.sum(x * x))
            noise[id(v)] += float(np.sum((x - y) ** 2))
        for k, (fv, qv) in enumerate(zip(float_graph.outputs, q.graph.outputs, strict=True)):
            x = np.asarray(ref.get(id(fv), fv.data), dtype=np.float64)
            y = real(qv, np.asarray(got.get(id(qv), qv.data)))
            out_signal[k] += float(np.sum(x * x))
            out_noise[k] += float(np.sum((x - y) ** 2))
            if x.ndim and x.shape[-1] > 1:
                agree[k] += int(np.array_equal(np.argmax(x.reshape(-1, x.shape[-1]), axis=-1),
                                               np.argmax(np.asarray(y).reshape(-1, x.shape[-1]), axis=-1)))
    report = QuantReport(method=method, samples=len(samples[0]), evaluated=count, io=io,
                         int8_ops=len(q.int8_nodes))
    for v in tracked:
        quant = q.int8_of[id(v)].type.quant
        assert quant is not None
        s, z = quant.scale[0], quant.zero_point[0]
        st = stats[id(v)]
        report.tensors.append(TensorReport(v.name, _producer_op(v), s, z, s * (-128 - z), s * (127 - z),
                                           st.minimum, st.maximum, sqnr_db(signal[id(v)], noise[id(v)])))
    for k, fv in enumerate(float_graph.outputs):
        classes = fv.type.shape[-1] if fv.type.shape else 1
        report.outputs.append(OutputReport(fv.name, sqnr_db(out_signal[k], out_noise[k]),
                                           agree[k] / count if classes > 1 and count else None))
    report.float_ops = [(n.op, n.outputs[0].name if n.outputs else n.name, reason) for n, reason in q.float_nodes
                        if n.op not in ("QUANTIZE", "DEQUANTIZE")]
    for v in [*q.graph.inputs, *q.graph.outputs]:
        if v.type.dtype == "int8" and v.type.quant is not None:
            report.io_params.append((v.name, v.type.dtype, v.type.quant.scale[0], v.type.quant.zero_point[0]))
    return report


def _stored(value: Value, record: np.ndarray) -> np.ndarray:
    """A float record as the (possibly int8) graph input takes it."""
    from nn2c.reference.evaluate import store

    return store(value, np.asarray(record, dtype=np.float64))


def dequantize_hybrid_weights(graph: Graph) -> int:
    """Hybrid (dynamic-range) models: float activations, int8 weights. Their weights become float
    constants, (w - zp) * scale per channel, so that the model is quantized as a float one.
    Returns the number of weights converted."""
    converted = 0
    for node in graph.nodes:
        x = node.input(0)
        if op_info(node.op).weight_axis is None or x is None or x.type.dtype != "float32":
            continue
        for index in (1, 2):
            w = node.input(index)
            if w is None or not w.is_constant or w.type.dtype not in ("int8", "int32") or w.type.quant is None:
                continue
            data = real(w, np.asarray(w.data)).astype(np.float32)
            floated = Value(f"{w.name}/float", TensorType("float32", w.type.shape), data)
            graph.set_input(node, index, floated)
            converted += 1
    return converted


def check_float_model(graph: Graph) -> None:
    """--quantize int8 applies to float models; quantized ones are refused."""
    for v in graph.values():
        if v.type.dtype in ("int8", "uint8", "int16") and v.type.quant is not None:
            where = f"{v.producer.where()} output" if v.producer is not None else "constant" if v.is_constant else "input"
            raise UsageError(f"the model is already quantized ({where} {v.name!r} is {v.type.dtype}); "
                             "--quantize int8 takes float models: drop --quantize to compile it as it is")


def _keep_float_set(graph: Graph, keep_float: Sequence[str]) -> frozenset[str]:
    ops = {n.op for n in graph.nodes}
    names = {o.name for n in graph.nodes for o in n.outputs}
    unknown = [k for k in keep_float if k not in ops and k.upper() not in ops and k not in names]
    if unknown:
        raise UsageError(f"--keep-float {unknown[0]!r} matches no operator type ({', '.join(sorted(ops))}) "
                         "and no operator output tensor of the model")
    return frozenset(list(keep_float) + [k.upper() for k in keep_float if k.upper() in ops])


def quantize_graph(graph: Graph, samples: Sequence[np.ndarray], method: str = "mse",
                   keep_float: Sequence[str] = (), io: str = "float") -> tuple[Graph, QuantReport]:
    """The int8 version of a float graph, calibrated on samples (one [N, *shape] array per input)."""
    if io not in IO_MODES:
        raise UsageError(f"unknown --io {io!r}; choose float or int8")
    dequantize_hybrid_weights(graph)
    check_float_model(graph)
    keep = _keep_float_set(graph, keep_float)
    global_means_as_depthwise(graph, keep)  # TFLite Micro's int8 MEAN rounds twice; see global_pool.py
    ranges, stats = calibrate(graph, samples, method)
    q = rewrite(graph, ranges, keep, io)
    verify(q.graph)
    report = evaluate(graph, q, samples, stats, method, io)
    if method == "mse":
        # Per-tensor MSE clipping is biased (clipped values are always pulled inwards) and in deep
        # networks the bias compounds; the whole-model result is what matters, so min/max ranges are
        # tried as well and the better output SQNR on the calibration samples wins.
        plain = {key: st.clip_range("minmax") for key, st in stats.items() if key in ranges}
        q_plain = rewrite(graph, plain, keep, io)
        verify(q_plain.graph)
        report_plain = evaluate(graph, q_plain, samples, stats, method, io)
        if report_plain.output_sqnr_db > report.output_sqnr_db:
            report_plain.choice = (f"min/max ranges: output SQNR {report_plain.output_sqnr_db:.1f} dB against "
                                   f"{report.output_sqnr_db:.1f} dB with per-tensor MSE clipping")
            q, report = q_plain, report_plain
        else:
            report.choice = (f"per-tensor MSE clipping: output SQNR {report.output_sqnr_db:.1f} dB against "
                             f"{report_plain.output_sqnr_db:.1f} dB with min/max ranges")
    q.graph.metadata["quantized_by"] = "nn2c"
    # The QUANTIZE / DEQUANTIZE edges are nn2c's own choices (e.g. around --keep-float operators):
    # the QDQ pass must take only its exact rules here, as on TFLite models, not re-quantize islands.
    q.graph.metadata["ptq_source_format"] = graph.metadata.get("source_format")
    q.graph.metadata["source_format"] = "nn2c-ptq"
    return q.graph, report


def quantize_for_compile(graph: Graph, options: Any) -> tuple[Graph, QuantReport]:
    """`nn2c compile --quantize int8 --calibration DATA`: options is api.CompileOptions."""
    if options.quantize != "int8":
        raise UsageError(f"--quantize {options.quantize!r} is not supported; only int8 is")
    if not options.calibration:
        raise UsageError("--quantize int8 needs --calibration DATA (.npz, .npy or a folder of .npy files with "
                         "representative inputs)")
    if options.calibration_method not in METHODS:
        raise UsageError(f"unknown --calibration-method {options.calibration_method!r}; choose one of "
                         f"{', '.join(METHODS)}")
    if options.io not in IO_MODES:
        raise UsageError(f"unknown --io {options.io!r}; choose float or int8")
    dequantize_hybrid_weights(graph)
    check_float_model(graph)
    samples = load_calibration(Path(options.calibration), graph)
    return quantize_graph(graph, samples, options.calibration_method, tuple(options.keep_float), options.io)
