"""The operator table: every fact about an operator that more than one stage needs, in one place.

The graph passes, the quantizers (post-training and QDQ), the memory planner's in-place rules and
the reference evaluator read these facts from here; none of them keeps its own list of operators.
The table is assembled from the modules of this package, one per operator family, each holding a
`FACTS` dict (op name -> OpInfo); an operator may appear in one module only. Adding an operator
means: one `OpInfo` in its family's module, one reference evaluator (reference/), one lowering
(codegen/ops/) and, where needed, a kernel (kernels/). See docs/how-it-works.md.

Facts per operator:
- kind: what the operator does to its data ("window", "matmul", "elementwise", "activation",
  "reduction", "reshape", "movement", "resize", "quantize", "recurrent", "lookup", "shape", "other").
  "movement" and "reshape" operators only move elements (any dtype, values unchanged): the
  reference evaluator runs them with one dtype-agnostic routine; a "reshape" (RESHAPE, SQUEEZE,
  EXPAND_DIMS) changes only the shape, so consecutive ones compose into one.
- data_inputs: the input positions that carry activations (the rest are weights, bias, shapes,
  axes, state); ALL = every input given (CONCATENATION, PACK).
- weight_axis: the output-channel axis of the weights (input 1), for operators with weights.
- int8: how the int8 kernel's output quantization relates to its inputs': FREE (any output scale,
  the kernel rescales), TIED (the output and every data input share one quantization), FIXED (a
  scale / zero point set by the kernel, int8_fixed), or None (no int8 kernel the quantizers use).
- quantized_dtypes: the integer activation types the quantizers may give it.
- fused_activation: the operator can carry a fused_activation_function (a clamp of its result).
- clamp: for RELU-like activations, the (low, high) real bounds (None: unbounded);
  fusable_clamp: it is also a value of TFLite's fused_activation_function.
- inplace: the kernel's write order, for the in-place rules of memory/inplace.py: "window" (output
  pixels in NHWC raster order, reading only their window) or "elementwise" (y[i] = f(x[i]) in one
  forward loop), or None (never in place).
- layout: how a transpose of the data inputs passes through the operator (passes/layout.py):
  "unary" / "binary" (elementwise: any permutation), "reduce" (axes remapped), "axis" (an axis or
  per-axis attribute remapped: concatenation, split, softmax over the last axis, pad, slice), or
  None (the operator has a fixed layout, e.g. NHWC convolutions).
- dequantize_commutes: M(DEQUANTIZE(q)) == DEQUANTIZE(M(q)): single-input data movement whose
  fill value (PAD's) is the zero point.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence

import numpy as np

from nn2c.ir.graph import Node
from nn2c.ir.ops.info import ALL, Int8Rule, OpInfo

__all__ = ["ALL", "FAMILY", "FUSED_ACTIVATIONS", "OPS", "Int8Rule", "OpInfo", "data_inputs", "int8_attr_problem",
           "int8_scales_ok", "op_info", "ops_where"]


def _collect() -> tuple[dict[str, OpInfo], dict[str, str]]:
    table: dict[str, OpInfo] = {}
    family: dict[str, str] = {}
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.name == "info":
            continue
        facts: dict[str, OpInfo] = importlib.import_module(f"{__name__}.{module.name}").FACTS
        for name, info in facts.items():
            if name in table:
                raise AssertionError(f"operator {name} has facts in two modules of nn2c.ir.ops")
            table[name] = info
            family[name] = module.name
    return table, family


OPS: dict[str, OpInfo]
FAMILY: dict[str, str]  # operator -> the module of this package that holds its facts (its family)
OPS, FAMILY = _collect()

_UNKNOWN = OpInfo("other")

# fused_activation_function values and the clamps they stand for; NONE clamps nothing
FUSED_ACTIVATIONS: dict[str, tuple[float, float | None]] = {
    name: info.clamp for name, info in OPS.items() if info.clamp is not None and info.fusable_clamp
}


def op_info(op: str) -> OpInfo:
    """The facts of `op`; an operator missing from the table has none of the properties above."""
    return OPS.get(op, _UNKNOWN)


def ops_where(predicate: Callable[[OpInfo], bool]) -> frozenset[str]:
    return frozenset(name for name, info in OPS.items() if predicate(info))


def data_inputs(node: Node) -> list[int]:
    """Input positions of `node` that carry activations (the rest: weights, bias, shapes, axes)."""
    positions = op_info(node.op).data_inputs
    if positions == ALL:
        return [i for i, v in enumerate(node.inputs) if v is not None]
    return list(positions)


def int8_attr_problem(node: Node) -> str | None:
    limit = op_info(node.op).int8_attr_limit
    return limit(node.attrs) if limit is not None else None


def int8_scales_ok(op: str, input_scales: Sequence[float], output_scale: float) -> bool:
    """Can the int8 kernel's fixed-point rescale take these scales?"""
    info = op_info(op)
    if info.int8_scale_floor is None:
        return True
    floor = info.int8_scale_floor(input_scales)
    if info.int8_floor_strict:
        return bool(np.float32(floor) < np.float32(output_scale))
    return output_scale >= floor
