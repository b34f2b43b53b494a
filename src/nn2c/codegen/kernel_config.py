"""The optional kernel paths of a model's build: nn2c_kernels/nn2c_config.h.

A kernel function carries every path its layers may take: the Arm DSP depthwise kernel, say, its
output stage from records and from four per-channel arrays. Each path kept costs flash in every build
(kws_ref_model's Cortex-M4 code: 9,313 B with its own paths, 16,277 B with all of them). The lowerings say which paths their layers
take (EmitContext.take_path); the header leaves out the rest, each as `#define NN2C_OMIT_<PATH> 1`
read by `#if !defined(...)` guards in the kernel sources (kernels/nn2c_config.h: the copy that leaves
nothing out, for building the kernels on their own). Two models in one program share one build of the
kernels: its header may leave out only what both leave out; a model linked with kernels missing a path its
layers take fails to link on that path's symbol (path_symbol), rather than running without it.
"""

from __future__ import annotations

CONFIG_HEADER = "nn2c_config.h"

# path -> what takes it; a kernel source guards the path's code with `#if !defined(NN2C_OMIT_<path>)`
OPTIONAL_PATHS: dict[str, str] = {
    "DSP_DW_ARRAYS": "Arm DSP depthwise output stage from four per-channel arrays (not records)",
    "DSP_DW_INT8": "Arm DSP depthwise from records over an int8 filter (--optimize size)",
    "DSP_DW_INT16": "Arm DSP depthwise from records over an int16 filter (--optimize speed and balanced)",
    "DSP_DW_PLANES": "Arm DSP depthwise 3x3 at stride 1 over channel planes in scratch (nn2c_dw_planes: --optimize "
                     "speed, or balanced for rows of 24 or more where the arena allows)",
    "DSP_DW_PARTIAL": "Arm DSP depthwise from records over a channel count that is not a multiple of 4: its last "
                      "1-3 channels byte by byte",
    "DSP_GEMM_ARRAYS": "Arm DSP convolution output stage from per-channel arrays (not records)",
    "DSP_IM2COL": "Arm DSP convolution windows copied (im2col: neither 1x1 nor rows of whole words)",
    "DSP_EXPAND_WINDOW": "Arm DSP convolution windows expanded from the image (rows of whole words)",
    "DSP_FC_BATCH_PAIRS": "Arm DSP FULLY_CONNECTED over two input rows at a time (a batch of 2 or more)",
    "DSP_FC_ARRAYS": "Arm DSP FULLY_CONNECTED output stage from per-channel arrays (not records)",
    "DSP_FC_GROUPS": "Arm DSP FULLY_CONNECTED of batch 1 from records, 16 channels or more, whole input words in "
                     "pairs: its groups of 4 channels in one assembly loop",
    "DSP_FC_DUAL": "Arm DSP FULLY_CONNECTED as DSP_FC_GROUPS over a multiple of 4 channels whose filter is dual "
                   "(channel pairs as int16 halves A + 256 B: 3 instructions per 4 MACs instead of 4)",
    "DSP_GEMM_DUAL": "Arm DSP convolution over pixel pairs whose filter is dual (as DSP_FC_DUAL)",
    "DSP_GEMM_PAIRS": "Arm DSP convolution over pixel pairs (every one but a 1x1 layer over pixel triples, and those "
                      "too where a row group feeds a FULLY_CONNECTED)",
    "DSP_GEMM_ODD": "Arm DSP convolution over pixel pairs or triples from records of an odd channel count (a "
                    "pruned layer's): its last channel apart",
    "DSP_GEMM_TRIPLES": "Arm DSP 1x1 convolution over pixel triples whose filter is dual (--optimize speed, or "
                        "balanced where the arena allows)",
    "DSP_GEMM_PLAIN": "Arm DSP convolution over pixel pairs from records whose filter is not dual (an odd channel "
                      "count, or weights that do not fit)",
    **{f"DSP_CONV_ROWS_{n}{tail}": f"Arm DSP convolution over narrow filter rows read straight from the image "
                                   f"(nn2c_conv_s8_rows), rows of {n} input word{'s' if n > 1 else ''}"
                                   + (", the last one byte" if tail else "")
       for n in range(1, 5) for tail in ("", "_BYTE")},
    "POOL_LANES": "int8 AVERAGE_POOL_2D in SIMD lanes (Arm DSP: a depth of whole groups of 4 channels; Helium: "
                  "any depth), windows of at most 256 pixels",
    "SPARSE_ROWS4": "sparse kernels over four input rows at a time (1x1 convolutions, a FULLY_CONNECTED of 4 "
                    "batches or more) with byte positions",
    "SPARSE_PACKED4": "sparse kernels over four input rows at a time in the packed layout (--optimize size)",
    "SPARSE_ROWS8": "sparse kernels over eight input rows at a time in row pairs (Arm DSP, layers of eight rows or "
                    "more: --optimize speed, or balanced where the arena allows)",
    "SPARSE_TABLE": "sparse FULLY_CONNECTED of one input row in the pair table layout (Arm DSP: --optimize speed, "
                    "or balanced where the arena allows)",
    "SVDF_INPUT_OFFSET": "SVDF feature sums taking the input's zero point at run time (--optimize size: no folded "
                         "constant per filter)",
    "DSP_CONV_ROWS8_3X9": "Arm DSP convolution over filter rows of 9 bytes (3x3 over 3 channels: an RGB model's first "
                          "layer), 8 output channels at a time in assembly",
    "MVE_DW_ANY": "Helium depthwise in assembly beyond 3x3 filters over whole groups of 16 channels: 5x5 and 7x7 "
                  "windows, other tap counts, a last partial group",
}


def path_symbol(path: str) -> str:
    """The symbol kernels/nn2c_simd.c defines where its build keeps `path`; a model whose layers take the path
    reads it once an inference, so that linking with kernels built without the path fails and names it."""
    return f"nn2c_kernel_path_{path.lower()}"


def geometry_symbol(wide: bool) -> str:
    """The symbol kernels/nn2c_conv.c defines for its geometry's width; a model whose layers hold a geometry
    reads the one of its own width, so that linking with kernels built for the other fails and names it."""
    return f"nn2c_kernel_geometry_{'wide' if wide else 'narrow'}"


def config_header(taken: set[str], wide_geometry: bool = False) -> str:
    """nn2c_config.h for a model whose layers take the paths `taken` (keys of OPTIONAL_PATHS); wide_geometry:
    32-bit convolution geometry fields (a dimension above 65,535: kernels/nn2c_conv.h)."""
    unknown = taken - OPTIONAL_PATHS.keys()
    assert not unknown, f"kernel paths without an entry in OPTIONAL_PATHS: {sorted(unknown)}"
    lines = [
        "/* The optional kernel paths this model's layers do not take, left out of its build (written by nn2c:",
        " * codegen/kernel_config.py). A layer added by hand that takes one needs its line removed. */",
        "#ifndef NN2C_CONFIG_H",
        "#define NN2C_CONFIG_H",
    ]
    for path, what in OPTIONAL_PATHS.items():
        if path not in taken:
            lines.append(f"#define NN2C_OMIT_{path} 1 /* no layer takes it: {what} */")
    if wide_geometry:
        lines.append("#define NN2C_WIDE_GEOMETRY 1 /* a convolution's dimension is above 65,535: 32-bit geometry */")
    lines += ["#endif", ""]
    return "\n".join(lines)
