"""Global average pools over a few pixels are quantized as depthwise convolutions.

TFLite Micro's int8 MEAN (QuantizedMeanOrSum) folds the divisor into its output multiplier and then
rounds twice: the high multiply rounds to an integer that keeps only about log2(count) - 1 bits
below the output's last code (when the input and output scales are close), and the final right
shift rounds that again, half away from zero. Emulating that arithmetic over random scale ratios,
about 15 % of the outputs of a 4- to 9-pixel mean are one code off the rounded mean (a mean bias
near 0.08 code), 6-8 % over 16 to 25 pixels, 4 % over 49. The global pool over 2 x 2 pixels of
lcnet_050 at 64 x 64 (tests/zoo.py) cost it 1.3 dB of output SQNR against onnxruntime's
quantize_static (37.99 against 39.25 dB); with that MEAN left in float it was 39.31 dB.

A DEPTHWISE_CONV_2D with an H x W filter of 1 / count computes the same mean. Quantized, its
weights are exact (every code 127, scale 1 / (127 count)), its accumulator is 127 times the MEAN's
sum and its multiplier 1/127 of the MEAN's, so the high multiply rounds about 7 bits further below
the output code and only the last rounding matters. Its output keeps its own calibrated range, as
the MEAN's did. The price is flash, per channel: the filter (count bytes), a zero int32 bias (4)
and the requantization multiplier and shift (8); mobilenet_v2_035's 1280 channels over 2 x 2 pixels
cost 20,480 bytes, 4 % of its int8 weights. So only pools of at most MAX_PIXELS pixels are
replaced: up to 25 pixels the double rounding moves 6 % or more of the outputs (on
mobilenet_v3_small_050, five of whose squeeze-excitation pools cover 16 pixels, replacing those gave
29.1 dB instead of 28.6 dB), and the filter stays small. The replacement is made in the float graph
before calibration (it is exact in float), so calibration, the SQNR report and --write-tflite see the
convolution, which TFLite Micro runs bit-exact with the generated C.
"""

from __future__ import annotations

import numpy as np

from nn2c.ir import Graph, Node

MAX_PIXELS = 25  # 5 x 5; over 49 pixels MEAN's double rounding moves 4 % of its outputs, by one code


def _spatial_mean(node: Node) -> tuple[int, int, int, int] | None:
    """(N, H, W, C) of a float MEAN over exactly the two spatial axes of an NHWC tensor, else None."""
    x, axes = node.input(0), node.input(1)
    if node.op != "MEAN" or x is None or axes is None or axes.data is None or len(node.outputs) != 1:
        return None
    if x.type.dtype != "float32" or len(x.type.shape) != 4 or node.outputs[0].type.dtype != "float32":
        return None
    if sorted({int(a) % 4 for a in np.asarray(axes.data).reshape(-1)}) != [1, 2]:
        return None
    n, h, w, c = x.type.shape
    return n, h, w, c


def global_means_as_depthwise(graph: Graph, keep_float: frozenset[str] = frozenset()) -> int:
    """Replace each float MEAN over at most MAX_PIXELS spatial pixels by the equivalent depthwise
    convolution (plus a RESHAPE when the MEAN dropped the reduced axes), except MEANs the user keeps
    float (by type or output name). Returns how many were replaced."""
    replaced = 0
    for node in list(graph.nodes):
        shape = _spatial_mean(node)
        if shape is None or not 1 < shape[1] * shape[2] <= MAX_PIXELS:
            continue
        if "MEAN" in keep_float or node.outputs[0].name in keep_float:
            continue
        n, h, w, c = shape
        x, out = node.inputs[0], node.outputs[0]
        assert x is not None
        filt = graph.const(np.full((1, h, w, c), 1.0 / (h * w), dtype=np.float32), f"{out.name}/mean_filter")
        pooled = out if out.type.shape == (n, 1, 1, c) else graph.new_value(f"{out.name}/pooled", "float32",
                                                                           (n, 1, 1, c))
        conv = Node("DEPTHWISE_CONV_2D", [x, filt, None], [pooled],
                    {"padding": "VALID", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1,
                     "dilation_hfactor": 1, "dilation_wfactor": 1, "fused_activation_function": "NONE"},
                    name=node.name, index=node.index)
        graph.insert(conv, before=node)
        graph.remove_node(node)
        if pooled is not out:
            target = graph.int32_const(list(out.type.shape), f"{out.name}/shape")
            graph.insert(Node("RESHAPE", [pooled, target], [out], name=node.name, index=node.index), after=conv)
        replaced += 1
    return replaced
