"""Conv -> CONV_2D or DEPTHWISE_CONV_2D between channels-last transposes.

ONNX weights are [O, I/group, kH, kW] (1-D: [O, I/group, kW], taken as kH = 1). A regular or
grouped conv takes them as OHWI ([O, kH, kW, I/group], perm (0, 2, 3, 1)); a depthwise conv
(group = C, one input channel per group) as [1, kH, kW, O] (perm (1, 2, 3, 0)) with
depth_multiplier O / C. Pads equal to TFLite's SAME become padding SAME, no pads VALID, and any
other pads an explicit PAD of the NHWC input before a VALID conv (passes/fuse_pad.py folds it back
in as explicit_padding).

ConvTranspose -> TRANSPOSE_CONV (nn2c's form with groups, dilations and explicit leading pads) between
the same transposes. Weights [C, M / group, kH, kW] become OHWI [M, kH, kW, C / group], group by
group. The output size comes from shape inference (it includes output_padding and output_shape);
the kernel needs only the leading pads: the given pads, or for auto_pad / output_shape the split
of the total padding (SAME_UPPER: total // 2 first, else the larger half first).

DeformConv (2-D) -> DEFORM_CONV in NCHW (no transposes: every operand is run-time data, the
kernel reads the offsets per output position); pads [top, left, bottom, right].
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nn2c.frontends.onnx.context import ConversionContext, converts, invalid, unsupported
from nn2c.frontends.onnx.spatial import geometry, padding_attrs, spatial_rank_check


@converts("Conv")
def _conv(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x, w = c.value(node.input[0]), c.value(node.input[1])
    rank = spatial_rank_check(x, "Conv")
    if len(w.type.shape) != rank:
        raise invalid(f"weights of rank {len(w.type.shape)} for a rank-{rank} input")
    _, out_shape = c.out_type(node.output[0])
    o, i_per_group = w.type.shape[0], w.type.shape[1]
    kernel = list(w.type.shape[2:])
    in_hw, out_hw, strides, dilations, pads = geometry(a, x.type.shape, out_shape, kernel)
    k_hw = [1, kernel[0]] if rank == 3 else kernel
    group = int(a.get("group", 1))
    channels = x.type.shape[1]
    if channels != i_per_group * group or o % group:
        raise invalid(f"{channels} input channels, {group} groups and weights {list(w.type.shape)} do not match")
    w4 = (o, i_per_group, *k_hw)
    depthwise = group > 1 and group == channels and i_per_group == 1
    name = node.output[0]
    attrs: dict[str, Any] = {}
    if depthwise:
        weights = c.relayout(w, w4, (1, 2, 3, 0), f"{name}/weights")  # [1, kH, kW, O]
        op, attrs["depth_multiplier"] = "DEPTHWISE_CONV_2D", o // channels
    else:
        weights = c.relayout(w, w4, (0, 2, 3, 1), f"{name}/weights")  # [O, kH, kW, I/group]
        op = "CONV_2D"
    bias = c.optional(node, 2)
    if bias is not None and bias.type.shape != (o,):
        raise invalid(f"bias of shape {list(bias.type.shape)} for {o} output channels (needs [{o}])")
    attrs.update(padding_attrs(pads, in_hw, out_hw, k_hw, strides, dilations))
    attrs.update({"stride_h": strides[0], "stride_w": strides[1], "dilation_hfactor": dilations[0],
                  "dilation_wfactor": dilations[1], "fused_activation_function": "NONE"})
    xn = c.to_channels_last(x, name)
    if "explicit_padding" in attrs:
        # an explicit PAD keeps every conv lowering right; passes/fuse_pad.py folds it back in
        xn = c.pad_nhwc(xn, attrs.pop("explicit_padding"), name)
    y = c.new(f"{name}/conv", "float32", (x.type.shape[0], *out_hw, o))
    c.emit(op, [xn, weights, bias], [y], attrs)
    c.from_channels_last(y, rank, node)


def _transposed_out_pads(a: dict[str, Any], in_hw: list[int], out_hw: list[int], kernel: list[int],
                         strides: list[int], dilations: list[int], output_padding: list[int]) -> list[int]:
    """Leading pads (top, left) of a ConvTranspose: the given pads, or auto_pad's split of
    total = stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - out."""
    auto_pad = a.get("auto_pad", "NOTSET")
    if auto_pad == "NOTSET" and "output_shape" not in a:
        pads = [int(p) for p in a.get("pads", [0] * 2 * len(in_hw))]
        if len(pads) != 2 * len(in_hw):
            raise invalid(f"pads has {len(pads)} values for {len(in_hw)} spatial axes")
        if any(p < 0 for p in pads):
            raise unsupported("negative pads")
        return pads[:len(in_hw)]
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise invalid(f"auto_pad {auto_pad!r} is not an ONNX value")
    begins = []
    for size, out, k, s, d, extra in zip(in_hw, out_hw, kernel, strides, dilations, output_padding, strict=True):
        # negative when output_shape asks for more than the full result: the kernel reads no input
        # for the extra pixels (bias only), as the reference does
        total = s * (size - 1) + extra + (k - 1) * d + 1 - out
        begins.append(total // 2 if auto_pad == "SAME_UPPER" else total - total // 2)
    return begins


def _transposed_weights(c: ConversionContext, w: Any, group: int, k_hw: list[int], name: str) -> Any:
    """ONNX [C, M / group, kH, kW] -> OHWI [M, kH, kW, C / group] (group by group)."""
    channels, per_group = w.type.shape[0], w.type.shape[1]
    grouped = (group, channels // group, per_group, *k_hw)
    data = c.data(w)
    if data is not None and w.type.quant is None:
        array = np.asarray(data).reshape(grouped).transpose(0, 2, 3, 4, 1)
        return c.const(np.ascontiguousarray(array).reshape(group * per_group, *k_hw, channels // group), name)
    moved = c.relayout(w, grouped, (0, 2, 3, 4, 1), f"{name}/g")
    return c.reshape(moved, (group * per_group, *k_hw, channels // group), name)


@converts("ConvTranspose")
def _conv_transpose(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x, w = c.value(node.input[0]), c.value(node.input[1])
    rank = spatial_rank_check(x, "ConvTranspose")
    if len(w.type.shape) != rank:
        raise invalid(f"weights of rank {len(w.type.shape)} for a rank-{rank} input")
    _, out_shape = c.out_type(node.output[0])
    group = int(a.get("group", 1))
    channels = x.type.shape[1]
    if group < 1 or w.type.shape[0] != channels or channels % group:
        raise invalid(f"{channels} input channels, {group} groups and weights {list(w.type.shape)} do not match")
    o = w.type.shape[1] * group
    kernel = list(w.type.shape[2:])
    count = rank - 2
    strides = [int(v) for v in a.get("strides", [1] * count)]
    dilations = [int(v) for v in a.get("dilations", [1] * count)]
    output_padding = [int(v) for v in a.get("output_padding", [0] * count)]
    in_sp, out_sp = list(x.type.shape[2:]), list(out_shape[2:])
    begins = _transposed_out_pads(a, in_sp, out_sp, kernel, strides, dilations, output_padding)
    if rank == 3:  # 1-D: a 2-D operator with H = 1
        in_sp, out_sp, kernel = [1, *in_sp], [1, *out_sp], [1, *kernel]
        strides, dilations, begins = [1, *strides], [1, *dilations], [0, *begins]
    name = node.output[0]
    weights = _transposed_weights(c, w, group, kernel, f"{name}/weights")
    bias = c.optional(node, 2)
    if bias is not None and bias.type.shape != (o,):
        raise invalid(f"bias of shape {list(bias.type.shape)} for {o} output channels (needs [{o}])")
    xn = c.to_channels_last(x, name)
    y = c.new(f"{name}/tconv", "float32", (x.type.shape[0], *out_sp, o))
    shape = c.int32([x.type.shape[0], *out_sp, o], f"{name}/output_shape")
    c.emit("TRANSPOSE_CONV", [shape, weights, xn, bias], [y], {
        "padding": "VALID", "stride_h": strides[0], "stride_w": strides[1],
        "dilation_h_factor": dilations[0], "dilation_w_factor": dilations[1], "groups": group,
        "explicit_padding": (begins[0], 0, begins[1], 0), "fused_activation_function": "NONE",
    })
    c.from_channels_last(y, rank, node)


@converts("DeformConv")
def _deform_conv(c: ConversionContext, node: Any, a: dict[str, Any]) -> None:
    x, w, offset = (c.value(node.input[i]) for i in range(3))
    bias, mask = c.optional(node, 3), c.optional(node, 4)
    if len(x.type.shape) != 4 or len(w.type.shape) != 4:
        raise unsupported(f"DeformConv of a rank-{len(x.type.shape)} input (2-D, [N, C, H, W], is supported)")
    if any(v is not None and v.type.dtype != "float32" for v in (x, w, offset, bias, mask)):
        raise unsupported("DeformConv of a non-float32 tensor (float32 is supported)")
    n, channels, height, width = x.type.shape
    oc, cpg, kh, kw = w.type.shape
    group, offset_group = int(a.get("group", 1)), int(a.get("offset_group", 1))
    kernel = [int(v) for v in a.get("kernel_shape", (kh, kw))]
    strides = [int(v) for v in a.get("strides", (1, 1))]
    dilations = [int(v) for v in a.get("dilations", (1, 1))]
    pads = [int(v) for v in a.get("pads", (0, 0, 0, 0))]
    if group < 1 or offset_group < 1 or channels != cpg * group or oc % group or channels % offset_group:
        raise invalid(f"group {group} / offset_group {offset_group} do not divide input channels {channels} and "
                      f"weight {list(w.type.shape)}")
    if kernel != [kh, kw] or len(strides) != 2 or len(dilations) != 2 or len(pads) != 4 or \
            min(strides + dilations) < 1 or min(pads) < 0 or max(strides + dilations + pads) > 1 << 16:
        raise invalid(f"kernel_shape {kernel}, strides {strides}, dilations {dilations}, pads {pads} do not fit a "
                      f"2-D kernel {[kh, kw]} (strides and dilations in [1, 65536], pads in [0, 65536])")
    oh = (height + pads[0] + pads[2] - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (width + pads[1] + pads[3] - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    if offset.type.shape != (n, offset_group * kh * kw * 2, oh, ow):
        raise invalid(f"offset {list(offset.type.shape)} must be {[n, offset_group * kh * kw * 2, oh, ow]}")
    if mask is not None and mask.type.shape != (n, offset_group * kh * kw, oh, ow):
        raise invalid(f"mask {list(mask.type.shape)} must be {[n, offset_group * kh * kw, oh, ow]}")
    if bias is not None and bias.type.shape != (oc,):
        raise invalid(f"bias {list(bias.type.shape)} must be [{oc}]")
    attrs = {"strides": strides, "pads": pads, "dilations": dilations, "group": group, "offset_group": offset_group}
    c.emit("DEFORM_CONV", [x, w, offset, bias, mask], [c.output(node, 0, "float32", (n, oc, oh, ow))], attrs)
