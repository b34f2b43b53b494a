"""The zoo's int8 column: nn2c's post-training quantization against onnxruntime's on the same data.

For one exported float ONNX model (tests/zoo.py):
- calibration set: CALIBRATION_SAMPLES seeded standard-normal inputs (the distribution of the zoo's
  test inputs: the weights are random, so there is no "real" data to draw from);
- held-out set: EVALUATION_SAMPLES standard-normal inputs from another seed;
- nn2c: `compile_model(..., CompileOptions(quantize="int8", calibration=npz))` with its default range
  estimator, the generated C built and run on the held-out set;
- onnxruntime: `quantize_static` on the same calibration arrays, QDQ format, int8 activations
  (asymmetric) and per-channel int8 weights (symmetric), MinMax calibration, its default operator
  set; the QDQ model run by onnxruntime;
- both scored by SQNR against onnxruntime's float outputs on the held-out set:
  10 log10(sum x^2 / sum (x - x_q)^2) over every output element of every sample.

Shared by bench/zoo.py (the table of docs/zoo.md) and tests/test_zoo_int8.py (the 1 dB rule in CI).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nn2c.api import CompileOptions, compile_model
from nn2c.ir import Graph
from nn2c.quant.report import sqnr_db
from nn2c.verify.compare import run_compiled
from nn2c.verify.onnx_oracle import from_model_layout, run_onnxruntime, to_model_layout

CALIBRATION_SAMPLES = 32
EVALUATION_SAMPLES = 64
CALIBRATION_SEED = 1001
EVALUATION_SEED = 2002
# the rule: nn2c's int8 output within this many dB of onnxruntime's quantize_static, or better
TOLERANCE_DB = 1.0


@dataclass
class Int8Comparison:
    nn2c_sqnr_db: float  # nn2c's int8 C against onnxruntime float, held-out inputs
    ort_sqnr_db: float  # onnxruntime quantize_static (QDQ) against onnxruntime float, same inputs
    arena: int  # bytes of the int8 model's tensor arena
    ort_quantize_nodes: int  # QuantizeLinear nodes in onnxruntime's model (0: it quantized nothing)
    float_ops: int  # operators nn2c left in float (no int8 kernel)
    seconds: float

    @property
    def difference_db(self) -> float:
        """nn2c minus onnxruntime: negative when nn2c loses more signal."""
        return self.nn2c_sqnr_db - self.ort_sqnr_db

    @property
    def within_rule(self) -> bool:
        return self.difference_db >= -TOLERANCE_DB or math.isinf(self.nn2c_sqnr_db)


def standard_normal(shapes: list[tuple[int, ...]], count: int, seed: int) -> list[np.ndarray]:
    """One [count, *shape] float32 array per input, standard normal, in the model's (ONNX) layout."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((count, *shape)).astype(np.float32) for shape in shapes]


def _onnx_inputs(path: Path) -> list[tuple[str, tuple[int, ...]]]:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    return [(i.name, tuple(d.dim_value for d in i.type.tensor_type.shape.dim))
            for i in model.graph.input if i.name not in initializers]


def _sqnr(reference: list[list[np.ndarray]], quantized: list[list[np.ndarray]]) -> float:
    signal = noise = 0.0
    for ref_record, q_record in zip(reference, quantized, strict=True):
        for x, y in zip(ref_record, q_record, strict=True):
            x64 = np.asarray(x, dtype=np.float64)
            signal += float(np.sum(x64 * x64))
            noise += float(np.sum((x64 - np.asarray(y, dtype=np.float64).reshape(x64.shape)) ** 2))
    return sqnr_db(signal, noise)


def ort_quantize_static(path: Path, calibration: list[np.ndarray], out: Path) -> Path:
    """onnxruntime's static QDQ quantization of the float model (settings in the module docstring)."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    names = [name for name, _ in _onnx_inputs(path)]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.rows = iter([{n: a[i] for n, a in zip(names, calibration, strict=True)}
                              for i in range(len(calibration[0]))])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.rows, None)

    quantize_static(str(path), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax)
    return out


def _records(graph: Graph, arrays: list[np.ndarray]) -> list[list[np.ndarray]]:
    """Model-layout sample arrays as records in the layout of our graph inputs."""
    perms = graph.metadata.get("input_perms") or [None] * len(arrays)
    return [[a[i] if p is None else np.ascontiguousarray(np.transpose(a[i], p)) for a, p in
             zip(arrays, perms, strict=True)] for i in range(len(arrays[0]))]


def _run_ort_model_layout(path: Path, graph: Graph, records: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """A model whose I/O is the float model's (the QDQ model) on records in our layout."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return [from_model_layout(graph, [np.asarray(o) for o in session.run(
        None, dict(zip(names, to_model_layout(graph, r), strict=True)))]) for r in records]


def compare_int8(path: Path, workdir: Path, calibration_samples: int = CALIBRATION_SAMPLES,
                 evaluation_samples: int = EVALUATION_SAMPLES) -> Int8Comparison:
    """nn2c's int8 C and onnxruntime's quantize_static model, both scored on held-out inputs."""
    started = time.perf_counter()
    shapes = [shape for _, shape in _onnx_inputs(path)]
    # the batch axis is 1 in every zoo export; calibration arrays are [N, *shape[1:]] per input
    calibration = [a[:, 0] for a in standard_normal(shapes, calibration_samples, CALIBRATION_SEED)]
    held_out = [a[:, 0] for a in standard_normal(shapes, evaluation_samples, EVALUATION_SEED)]
    workdir.mkdir(parents=True, exist_ok=True)
    npz = workdir / f"{path.stem}_calibration.npz"
    np.savez(npz, *calibration)
    result = compile_model(path, CompileOptions(quantize="int8", calibration=str(npz)))
    graph = result.graph
    assert result.quant is not None
    records = _records(graph, [a[:, None] for a in held_out])
    reference = run_onnxruntime(path, graph, records)
    ours = run_compiled(result, records, workdir / f"{path.stem}_int8_c")
    qdq = ort_quantize_static(path, [a[:, None] for a in calibration], workdir / f"{path.stem}_qdq.onnx")
    theirs = _run_ort_model_layout(qdq, graph, records)
    return Int8Comparison(_sqnr(reference, ours), _sqnr(reference, theirs), result.arena_bytes,
                          _count_ops(qdq, "QuantizeLinear"), len(result.quant.float_ops),
                          time.perf_counter() - started)


def _count_ops(path: Path, op_type: str) -> int:
    import onnx

    return sum(node.op_type == op_type for node in onnx.load(str(path)).graph.node)
