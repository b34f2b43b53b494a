"""GridSample (opsets 16, 20, 22) -> GRID_SAMPLE (float32; kernels/nn2c_sampling.c).

Opset 16 names the modes "bilinear" / "bicubic" and takes 4-D inputs only; opset 20 renamed them
"linear" / "cubic" and allows any rank. Both spellings map onto the IR's "nearest" / "linear" /
"cubic". padding_mode zeros / border / reflection and align_corners pass through; the grid may be
a run-time input. 1 to 3 spatial axes are supported (4-D and 5-D inputs).

RoiAlign (opsets 10, 16, 22) -> ROI_ALIGN (float32): rois and batch indices may be run-time inputs
(a detector's proposals); coordinate_transformation_mode defaults to half_pixel from opset 16.
"""

from __future__ import annotations

from typing import Any

from nn2c.frontends.onnx.context import ConversionContext, converts, invalid, unsupported

_MODES = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "cubic": "cubic", "bicubic": "cubic"}
_PADDINGS = ("zeros", "border", "reflection")


@converts("GridSample")
def grid_sample(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x, grid = c.value(node.input[0]), c.value(node.input[1])
    mode = str(a.get("mode", "bilinear" if c.opset < 20 else "linear"))
    padding = str(a.get("padding_mode", "zeros"))
    if mode not in _MODES:
        raise invalid(f"mode {mode!r} is not one of {sorted(_MODES)}")
    if padding not in _PADDINGS:
        raise invalid(f"padding_mode {padding!r} is not one of {list(_PADDINGS)}")
    rank = len(x.type.shape) - 2
    if not 1 <= rank <= 3:
        raise unsupported(f"GridSample over {rank} spatial dimensions (1 to 3 are supported)")
    g_shape = grid.type.shape
    if len(g_shape) != rank + 2 or (g_shape[0], g_shape[-1]) != (x.type.shape[0], rank):
        raise invalid(f"grid {list(grid.type.shape)} is not [N, {rank} output sizes, {rank}] for X "
                      f"{list(x.type.shape)}")
    if x.type.dtype != "float32" or grid.type.dtype != "float32":
        raise unsupported(f"GridSample of {x.type.dtype} X and {grid.type.dtype} grid (float32 is supported)")
    out = c.output(node, shape=[*x.type.shape[:2], *grid.type.shape[1:-1]], dtype="float32")
    c.emit("GRID_SAMPLE", [x, grid], [out], {"mode": _MODES[mode], "padding_mode": padding,
                                              "align_corners": int(a.get("align_corners", 0))})


@converts("RoiAlign")
def roi_align(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x, rois, indices = (c.value(n) for n in node.input[:3])
    if len(x.type.shape) != 4:
        raise invalid(f"X must be 4-D [N, C, H, W], got {list(x.type.shape)}")
    if x.type.dtype != "float32" or rois.type.dtype != "float32":
        raise unsupported(f"RoiAlign of {x.type.dtype} with {rois.type.dtype} rois (float32 is supported)")
    if len(rois.type.shape) != 2 or rois.type.shape[1] != 4 or indices.type.num_elements != rois.type.shape[0]:
        raise invalid(f"rois {list(rois.type.shape)} and batch_indices {list(indices.type.shape)} are not [R, 4] "
                      "and [R]")
    mode = a.get("mode", "avg")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    coords = a.get("coordinate_transformation_mode", "half_pixel" if c.opset >= 16 else "output_half_pixel")
    coords = coords.decode() if isinstance(coords, bytes) else str(coords)
    if mode not in ("avg", "max") or coords not in ("half_pixel", "output_half_pixel"):
        raise invalid(f"mode {mode!r} / coordinate_transformation_mode {coords!r}")
    height, width = int(a.get("output_height", 1)), int(a.get("output_width", 1))
    if height < 1 or width < 1 or int(a.get("sampling_ratio", 0)) < 0:
        raise invalid(f"output {height} x {width} and sampling_ratio {a.get('sampling_ratio', 0)} must be positive")
    out = c.output(node, dtype="float32", shape=[rois.type.shape[0], x.type.shape[1], height, width])
    c.emit("ROI_ALIGN", [x, rois, indices], [out],
           {"mode": mode, "sampling_ratio": int(a.get("sampling_ratio", 0)),
            "spatial_scale": float(a.get("spatial_scale", 1.0)), "half_pixel": coords == "half_pixel"})
