"""WINDOW, MEL_WEIGHT_MATRIX and DFT (nn2c-internal, from ONNX): float32 kernels in double
(kernels/nn2c_spectral.c).

WINDOW reads its int32 size at run time and writes the static length; MEL_WEIGHT_MATRIX reads its
five scalars at run time and writes the static [rows, cols] matrix, bounding every write. DFT is
the direct O(N^2) sum along one axis: the input is addressed as [outer, n, inner, 1 or 2]; the
kernel fills a 2 N-double scratch with the twiddle factors once per call.
"""

from __future__ import annotations

import math

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.ir import Node
from nn2c.reference.spectral import WINDOWS


@lowering("WINDOW")
def window(node: Node, ctx: EmitContext) -> None:
    size, out = node.input(0), node.outputs[0]
    if size is None or size.type.dtype != "int32" or size.type.num_elements != 1:
        raise ctx.unsupported("WINDOW needs an int32 scalar size")
    kind = str(node.attrs.get("window", ""))
    if kind not in WINDOWS or out.type.dtype != "float32" or len(out.type.shape) != 1:
        raise ctx.unsupported(f"WINDOW {kind!r} into {out.type} (hann, hamming, blackman into float32 [L])")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("spectral")
    params = ctx.params_struct("nn2c_window_params_t", {
        "window": WINDOWS[kind], "periodic": int(bool(node.attrs.get("periodic", True))),
        "length": out.type.shape[0]})
    ctx.call("nn2c_window_f32", params, ctx.ptr(size), ctx.ptr(out))


@lowering("MEL_WEIGHT_MATRIX")
def mel_weight_matrix(node: Node, ctx: EmitContext) -> None:
    operands = [node.input(k) for k in range(5)]
    out = node.outputs[0]
    dtypes = ["int32"] * 3 + ["float32"] * 2
    if any(v is None or v.type.dtype != d or v.type.num_elements != 1 for v, d in zip(operands, dtypes, strict=True)):
        raise ctx.unsupported("MEL_WEIGHT_MATRIX needs int32 num_mel_bins, dft_length, sample_rate and float32 "
                              "edge scalars")
    if out.type.dtype != "float32" or len(out.type.shape) != 2:
        raise ctx.unsupported(f"MEL_WEIGHT_MATRIX into {out.type} (float32 [rows, cols])")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("spectral")
    params = ctx.params_struct("nn2c_mel_params_t", {"rows": out.type.shape[0], "cols": out.type.shape[1]})
    ctx.call("nn2c_mel_weight_matrix_f32", params, *(ctx.ptr(v) for v in operands), ctx.ptr(out))


@lowering("DFT")
def dft(node: Node, ctx: EmitContext) -> None:
    x, out = node.input(0), node.outputs[0]
    if x is None or x.type.dtype != "float32" or out.type.dtype != "float32":
        raise ctx.unsupported("DFT of float32 into float32 is supported")
    shape, rank = x.type.shape, len(x.type.shape)
    axis, length = int(node.attrs["axis"]), int(node.attrs["length"])
    inverse, onesided = bool(node.attrs.get("inverse", False)), bool(node.attrs.get("onesided", False))
    if not 0 <= axis < rank - 1 or shape[-1] not in (1, 2) or length < 1:
        raise ctx.unsupported(f"DFT along axis {axis} of {list(shape)} with length {length}")
    hermitian = inverse and onesided
    n_out = length if hermitian else (length // 2 + 1 if onesided else length)
    expected = [*shape[:axis], n_out, *shape[axis + 1:-1], 1 if hermitian else 2]
    if list(out.type.shape) != expected:
        raise ctx.unsupported(f"DFT output {list(out.type.shape)}, expected {expected}")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("spectral")
    params = ctx.params_struct("nn2c_dft_params_t", {
        "outer": math.prod(shape[:axis]), "inner": math.prod(shape[axis + 1:-1]),
        "n_in": shape[axis], "n_out": n_out, "length": length,
        "in_complex": int(shape[-1] == 2), "out_complex": int(not hermitian),
        "inverse": int(inverse), "hermitian": int(hermitian)})
    ctx.call("nn2c_dft_f32", params, ctx.scratch(16 * length), ctx.ptr(x), ctx.ptr(out))
