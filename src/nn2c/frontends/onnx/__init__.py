"""ONNX model -> IR (TFLite operator names, NHWC layout), through the `onnx` package.

The IR computes in TFLite's conventions, so each ONNX node becomes the TFLite-style nodes that
compute the same function:
- Tensors keep their ONNX (NCHW) layout between nodes. A layout-sensitive operator (Conv, pools)
  is wrapped in explicit TRANSPOSE nodes: NCHW -(0,2,3,1)-> NHWC, op, NHWC -(0,3,1,2)-> NCHW (1-D
  operators: NCW -(0,2,1)-> NWC, reshaped to N,1,W,C). The layout pass (passes/layout.py) sinks
  these transposes through element-wise operators and cancels inverse pairs.
- Conv weights O,I,kH,kW become OHWI (CONV_2D) or 1,kH,kW,O (DEPTHWISE_CONV_2D, group = C);
  ONNX pads become SAME when they equal TFLite's SAME padding, else an explicit PAD before a VALID
  operator (-O2 folds it into the conv as explicit_padding).
- BatchNormalization is y = x * s + t with s = gamma / sqrt(var + eps), t = beta - mean * s:
  a MUL and an ADD by per-channel constants, which passes/fold_affine.py merges into a conv.
- Gemm / MatMul with constant B become FULLY_CONNECTED (weights [out, in] = B^T, times alpha).
- QuantizeLinear / DequantizeLinear become QUANTIZE / DEQUANTIZE with the scale and zero point on
  the integer tensor; uint8 is shifted to int8 (q - 128 with zero point - 128: same real values).
- Shape is a constant (static shapes); Constant, ConstantOfShape are constants; Gather, Cast,
  Concat, Unsqueeze... on constants become nodes that the constant-folding pass evaluates. Integer
  shape arithmetic that ONNX shape inference cannot evaluate is folded first (fold.py).
- Identity and Dropout become IDENTITY nodes (removed by passes/simplify.py).
- Model-local functions are inlined; an operator without a converter that ONNX defines as a
  function of other operators (the losses) is replaced by that function's body (functions.py).
  An If whose condition static shapes and constants decide becomes the branch it takes (control.py).

Shapes come from ONNX shape inference (symbolic dimensions are fixed to 1). Errors name the ONNX
node: `ONNX node #index 'name' (OpType): ...`.

Layout of this package, as codegen/ops/: context.py holds the conversion context and the converter
table, model.py reads the protobuf and runs the import loop, and one module per operator family
registers its converters with `@converts("OpType", ...)` (conv, pool, gemm, elementwise, activation,
normalization, reduce, layout, shape, quant; spatial.py has the padding algebra conv and pool share).
Supporting a new ONNX operator is one decorated function in its family's module; a new module of
this package is picked up by `load_converters` without being listed anywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nn2c.errors import InvalidModelError
from nn2c.frontends.onnx.context import CONVERTERS, ConversionContext, converts, load_converters
from nn2c.frontends.onnx.control import inline_constant_ifs
from nn2c.frontends.onnx.fold import bind_range_lengths, fold_shape_arithmetic, unshaped_outputs
from nn2c.frontends.onnx.functions import expand_schema_functions, inline_local_functions
from nn2c.frontends.onnx.inference import infer_shapes_isolated
from nn2c.frontends.onnx.model import (
    MAX_OPSET,
    MIN_OPSET,
    check_declared_shapes,
    check_onnx,
    fix_symbolic_dims,
    import_graph,
)
from nn2c.ir import Graph, GraphInvariantError, verify

__all__ = ["CONVERTERS", "MAX_OPSET", "MIN_OPSET", "ConversionContext", "check_onnx", "converts",
           "load_converters", "load_onnx"]


def load_onnx(path: str | Path, data: bytes | None = None, nhwc_io: bool = False) -> Graph:
    """Read an .onnx file into a Graph. nhwc_io: rank-3/4 float inputs and outputs become channels-last."""
    import onnx

    model = check_onnx(path, data)
    fix_symbolic_dims(model)
    check_declared_shapes(model, path)  # ONNX shape inference can take minutes on absurd shapes

    def infer(model: Any) -> Any:
        try:
            return infer_shapes_isolated(onnx, model)
        except Exception as exc:
            raise InvalidModelError(f"{path}: ONNX shape inference failed ({str(exc).splitlines()[0][:200]})") from None

    model = infer(inline_local_functions(model))
    model = expand_schema_functions(model, load_converters(), infer)
    model = inline_constant_ifs(model, infer)
    model = expand_schema_functions(model, load_converters(), infer)  # functions a taken branch calls
    if unshaped_outputs(model):  # shape arithmetic that inference did not evaluate: fold it, infer again
        model = fold_shape_arithmetic(model, infer)
    if unshaped_outputs(model):  # run-time Range lengths that the declared output shapes fix
        model = bind_range_lengths(model, infer)
    graph = import_graph(model, str(path), nhwc_io)
    try:
        verify(graph)
    except GraphInvariantError as exc:
        raise InvalidModelError(f"{path}: the model's graph is inconsistent ({exc}); re-export the model") from None
    return graph
