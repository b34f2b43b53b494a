"""GRID_SAMPLE (nn2c-internal, from ONNX GridSample): one float32 kernel (kernels/nn2c_sampling.c).

x [N, C, D1..Dr] with r = 1..3 spatial axes (unit-padded in front to three for the kernel), grid
[N, H1..Hr, r], output [N, C, H1..Hr] addressed as [N, C, P] with P = H1 * .. * Hr. Attributes
mode / padding_mode / align_corners as reference/sampling.py states them; the kernel takes their
codes (mode 0 nearest, 1 linear, 2 cubic; padding 0 zeros, 1 border, 2 reflection).

ROI_ALIGN (ONNX RoiAlign): nn2c_roi_align_f32, the samples per bin computed at run time from each
roi (sampling_ratio 0).

BITCAST: the output is the input's bytes read as another dtype of the same size: no code, the
output shares the input's memory (as a RESHAPE does).
"""

from __future__ import annotations

import math

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.ir import Node
from nn2c.reference.sampling import MODES, PADDINGS


@lowering("GRID_SAMPLE")
def grid_sample(node: Node, ctx: EmitContext) -> None:
    x, grid = node.input(0), node.input(1)
    if x is None or grid is None or len(node.outputs) != 1:
        raise ctx.unsupported("GRID_SAMPLE needs x, grid and one output")
    out = node.outputs[0]
    if any(v.type.dtype != "float32" for v in (x, grid, out)):
        raise ctx.unsupported("GRID_SAMPLE of " + ", ".join(sorted({v.type.dtype for v in (x, grid, out)})) +
                              " (float32 is supported)")
    n, c, *dims = x.type.shape
    rank = len(dims)
    if not 1 <= rank <= 3:
        raise ctx.unsupported(f"GRID_SAMPLE over {rank} spatial dimensions (1 to 3 are supported)")
    positions = list(grid.type.shape[1:-1])
    if list(grid.type.shape) != [n, *positions, rank] or len(positions) != rank:
        raise ctx.unsupported(f"grid {list(grid.type.shape)} is not [{n}, {rank} output sizes, {rank}]")
    if list(out.type.shape) != [n, c, *positions]:
        raise ctx.unsupported(f"output {list(out.type.shape)} is not {[n, c, *positions]}")
    mode, padding = str(node.attrs.get("mode", "linear")), str(node.attrs.get("padding_mode", "zeros"))
    if mode not in MODES or padding not in PADDINGS:
        raise ctx.unsupported(f"mode {mode!r} / padding_mode {padding!r} (modes {sorted(MODES)}, padding "
                              f"modes {sorted(PADDINGS)})")
    if out.type.num_elements == 0:
        return
    if x.type.num_elements == 0:
        raise ctx.unsupported("GRID_SAMPLE of an empty input")
    ctx.use_kernel("sampling")
    params = ctx.params_struct("nn2c_grid_sample_params_t", {
        "batch": n, "channels": c, "rank": rank, "dims": [1] * (3 - rank) + dims,
        "positions": math.prod(positions), "mode": MODES[mode], "padding": PADDINGS[padding],
        "align_corners": int(bool(node.attrs.get("align_corners", 0))),
    })
    ctx.call("nn2c_grid_sample_f32", params, ctx.ptr(x), ctx.ptr(grid), ctx.ptr(out))


@lowering("ROI_ALIGN")
def roi_align(node: Node, ctx: EmitContext) -> None:
    x, rois, indices, out = node.inputs[0], node.inputs[1], node.inputs[2], node.outputs[0]
    assert x is not None and rois is not None and indices is not None
    if any(v.type.dtype != "float32" for v in (x, rois, out)) or indices.type.dtype not in ("int32", "int64"):
        raise ctx.unsupported("ROI_ALIGN of float32 data and rois with int32 / int64 batch indices is supported")
    batch, channels, height, width = x.type.shape
    count = rois.type.shape[0]
    if list(out.type.shape[:2]) != [count, channels] or indices.type.num_elements != count:
        raise ctx.unsupported(f"output {list(out.type.shape)} for {count} rois of {channels} channels")
    scale = float(node.attrs.get("spatial_scale", 1.0))
    if not math.isfinite(scale):
        raise ctx.unsupported(f"spatial_scale {scale}")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("sampling")
    params = ctx.params_struct("nn2c_roi_align_params_t", {
        "batch": batch, "channels": channels, "height": height, "width": width, "rois": count,
        "pooled_h": out.type.shape[2], "pooled_w": out.type.shape[3],
        "sampling_ratio": int(node.attrs.get("sampling_ratio", 0)), "half_pixel": int(bool(node.attrs.get("half_pixel"))),
        "mode_max": int(node.attrs.get("mode") == "max"), "index_bytes": 8 if indices.type.dtype == "int64" else 4,
        "spatial_scale": scale,
    })
    ctx.call("nn2c_roi_align_f32", params, ctx.ptr(x), ctx.ptr(rois), ctx.ptr(indices), ctx.ptr(out))


@lowering("BITCAST")
def bitcast(node: Node, ctx: EmitContext) -> None:
    x, out = node.input(0), node.outputs[0]
    if x is None or x.type.num_bytes != out.type.num_bytes or x.type.shape != out.type.shape:
        raise ctx.unsupported("BITCAST must keep the shape and the number of bytes")
    if x.is_constant:
        raise ctx.unsupported("BITCAST of a constant must be folded first")
    ctx.alias(out, x)
