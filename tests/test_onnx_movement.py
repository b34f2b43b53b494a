"""ONNX indexing, rearranging and resizing operators against onnxruntime (1e-4 relative), several
operators per model; refusals of data-dependent shapes; a sanitizer build of the new kernels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

import onnx
from onnx import TensorProto

from nn2c.api import CompileOptions, compile_model
from nn2c.errors import UnsupportedOpError
from tests.test_onnx_models import OnnxBuilder, assert_matches_ort


def _rearrange(b: OnnxBuilder) -> list[str]:
    x = b.input([1, 8, 4, 6])
    outs = [b.node("DepthToSpace", [x], blocksize=2, mode=mode) for mode in ("DCR", "CRD")]
    outs += [b.node("SpaceToDepth", [x], blocksize=2)]
    outs.append(b.node("Tile", [x, b.const(np.array([2, 1, 1, 3], np.int64))]))
    outs.append(b.node("Expand", [b.input([3, 1]), b.const(np.array([2, 3, 5], np.int64))]))
    outs.append(b.node("GatherElements", [x, b.const(np.array([[[[1, 0, -1]]]], np.int64))], axis=3))
    outs.append(b.node("GatherND", [x, b.const(np.array([[0, 7], [0, -2]], np.int64))]))
    outs.append(b.node("GatherND", [x, b.const(np.array([[1, 2], [3, 0]], np.int64).reshape(1, 2, 2))],
                       batch_dims=1))
    outs.append(b.node("Gather", [x, b.const(np.array([[-1, 2]], np.int64))], axis=2))
    outs.append(b.node("Compress", [x, b.const(np.array([True, False, True]))], axis=2))
    outs.append(b.node("Compress", [x, b.const(np.array([False, True, True, False, True]))]))
    outs.append(b.node("Trilu", [x, b.const(np.array(1, np.int64))], upper=0))
    outs.append(b.node("Trilu", [x]))
    outs.append(b.node("Slice", [x, *(b.const(np.array(v, np.int64)) for v in ([-1, 5], [-100, 0], [3, 1], [-1, -2]))]))
    outs.append(b.node("CumSum", [x, b.const(np.array(2, np.int32))], exclusive=1, reverse=1))
    outs.append(b.node("CumSum", [x, b.const(np.array(-1, np.int64))]))
    outs.append(b.node("ScatterND", [x, b.const(np.array([[0, 3, 1], [0, -1, 0]], np.int64)), b.input([2, 6])]))
    outs.append(b.node("ScatterElements", [x, b.const(np.array([[[[2], [0]]]], np.int64)), b.input([1, 1, 2, 1])],
                       axis=3))
    for mode in ("reflect", "edge", "wrap"):
        outs.append(b.node("Pad", [x, b.const(np.array([0, 0, 1, 2, 0, 1, 2, 3], np.int64))], mode=mode))
    seq = b.input([5, 3, 2])
    outs.append(b.node("ReverseSequence", [seq, b.const(np.array([5, 1, 3], np.int64))], batch_axis=1, time_axis=0))
    return outs


def _resize(b: OnnxBuilder) -> list[str]:
    x = b.input([1, 2, 5, 7])
    outs = []
    empty = b.const(np.zeros(0, np.float32))
    sizes = b.const(np.array([1, 2, 9, 4], np.int64))
    for mode, coord in (("nearest", "half_pixel"), ("nearest", "asymmetric"), ("linear", "half_pixel"),
                        ("linear", "align_corners"), ("linear", "pytorch_half_pixel"), ("cubic", "half_pixel"),
                        ("cubic", "asymmetric")):
        outs.append(b.node("Resize", [x, "", empty, sizes], mode=mode, coordinate_transformation_mode=coord))
    # onnxruntime and onnx's reference differ on exact ties and on tf_crop_and_resize with a
    # non-integer scale * size (nn2c follows the reference, as the backend suite does): avoid both
    scales = b.const(np.array([1, 1, 2.0, 0.7], np.float32))
    outs.append(b.node("Resize", [x, "", scales], mode="nearest", nearest_mode="floor"))
    outs.append(b.node("Resize", [x, "", scales], mode="linear", coordinate_transformation_mode="half_pixel_symmetric"))
    outs.append(b.node("Resize", [x, "", scales], mode="cubic", exclude_outside=1, cubic_coeff_a=-0.5))
    roi = b.const(np.array([0, 0, 0.2, 0.1, 1, 1, 0.9, 1.3], np.float32))
    outs.append(b.node("Resize", [x, roi, empty, sizes], mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                       extrapolation_value=-7.0))
    # antialias (torchvision's resize(antialias=True)): downsampling widens the filter
    big = b.input([1, 2, 17, 12])
    small = b.const(np.array([1, 2, 5, 7], np.int64))
    outs.append(b.node("Resize", [big, "", "", small], mode="linear", antialias=1))
    outs.append(b.node("Resize", [big, "", "", small], mode="cubic", antialias=1, exclude_outside=1))
    outs.append(b.node("Resize", [big, "", b.const(np.array([1, 1, 0.3, 1.5], np.float32))], mode="linear",
                       antialias=1, coordinate_transformation_mode="pytorch_half_pixel"))
    return outs


def _resize_int8(b: OnnxBuilder) -> list[str]:
    """Nearest mode on integers: a compile-time index map (no arithmetic on the values)."""
    x = b.input([1, 3, 4, 5], TensorProto.INT8)
    empty = b.const(np.zeros(0, np.float32))
    outs = []
    for coord, nearest in (("half_pixel", "round_prefer_ceil"), ("asymmetric", "floor"),
                           ("align_corners", "round_prefer_floor"), ("pytorch_half_pixel", "ceil")):
        outs.append(b.node("Resize", [x, "", empty, b.const(np.array([1, 3, 7, 3], np.int64))], mode="nearest",
                           coordinate_transformation_mode=coord, nearest_mode=nearest))
    outs.append(b.node("Resize", [x, "", b.const(np.array([2.0, 3.0], np.float32))], mode="nearest", axes=[3, 2]))
    return outs


@pytest.mark.parametrize("case", [_rearrange, _resize, _resize_int8], ids=lambda f: f.__name__.strip("_"))
def test_operators_match_onnxruntime(case, tmp_path: Path) -> None:
    b = OnnxBuilder(opset=18, seed=1)
    path = b.save(tmp_path / "m.onnx", case(b))
    assert_matches_ort(path, tmp_path, count=2)


def _runtime_indices(b: OnnxBuilder) -> list[str]:
    """Gathers and scatters whose indices are computed at run time (ArgMax: in range, as a real
    model's are), and the two losses that ONNX defines as functions of them."""
    x = b.input([2, 5, 3])
    arg = b.node("ArgMax", [x], axis=1, keepdims=1)  # [2, 1, 3] int64
    outs = [b.node("GatherElements", [x, arg], axis=1)]
    outs.append(b.node("ScatterElements", [x, arg, b.input([2, 1, 3])], axis=1, reduction="add"))
    outs.append(b.node("ScatterElements", [x, arg, b.input([2, 1, 3])], axis=1))
    flat_arg = b.node("ArgMax", [b.node("Flatten", [x], axis=1)], axis=1, keepdims=1)  # [2, 1] in [0, 15)
    rows = b.node("Mod", [flat_arg, b.const(np.array([[2]], np.int64))])  # [2, 1] in [0, 2)
    outs.append(b.node("ScatterND", [x, rows, b.input([2, 5, 3])], reduction="max"))
    outs.append(b.node("GatherND", [x, b.node("Concat", [rows, rows], axis=1)]))
    cache = b.input([2, 1, 4, 3])
    write = b.node("Squeeze", [flat_arg, b.const(np.array([1], np.int64))])  # [2]
    outs.append(b.node("TensorScatter", [cache, b.input([2, 1, 2, 3]), write], mode="circular"))
    target = b.node("ArgMin", [x], axis=1, keepdims=0)  # [2, 3] class indices
    outs.append(b.node("NegativeLogLikelihoodLoss", [x, target, b.const(np.array([1, 2, 0.5, 1, 3], np.float32))],
                       reduction="mean"))
    outs += b.node("SoftmaxCrossEntropyLoss", [x, target], outputs=2, reduction="none", ignore_index=4)
    image = b.input([1, 2, 6, 5])  # SegNet's decoder: unpool at the encoder's argmax positions
    pooled, where = b.node("MaxPool", [image], outputs=2, kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1])
    outs += [where, b.node("MaxUnpool", [b.node("Relu", [pooled]), where], kernel_shape=[2, 2], strides=[2, 2])]
    outs.append(b.node("MaxPool", [image], outputs=2, kernel_shape=[3, 2], storage_order=1)[1])
    return outs


def test_runtime_indices_and_loss_functions_match_onnxruntime(tmp_path: Path) -> None:
    b = OnnxBuilder(opset=24, seed=2)
    path = b.save(tmp_path / "m.onnx", _runtime_indices(b))
    assert_matches_ort(path, tmp_path, count=3)


def test_roi_align_matches_onnx_reference(tmp_path: Path) -> None:
    """Mask R-CNN's region pooling over a feature map, rois given at run time: inside, across and
    beyond the image, tiny ones, adaptive and fixed sampling, both modes and both coordinate
    conventions. The oracle is onnx.reference: onnxruntime's max mode is not the operator's
    definition (its own warning says so) and it has no RoiAlign after opset 21."""
    from onnx.reference import ReferenceEvaluator

    from nn2c.verify.build import build, run

    b = OnnxBuilder(opset=22, seed=3)
    image, boxes = b.input([2, 3, 6, 5], name="image"), b.input([4, 4], name="boxes")
    images = b.const(np.array([0, 1, 1, 0], np.int64))
    outs = [b.node("RoiAlign", [image, boxes, images], output_height=2, output_width=3, spatial_scale=0.9),
            b.node("RoiAlign", [image, boxes, images], output_height=3, output_width=2, sampling_ratio=2,
                   coordinate_transformation_mode="output_half_pixel"),
            b.node("RoiAlign", [image, boxes, images], output_height=2, output_width=2, mode="max")]
    model = b.model(outs)
    onnx.save(model, tmp_path / "roi.onnx")
    result = compile_model(tmp_path / "roi.onnx", CompileOptions(name="model"))
    exe = build(result.write(tmp_path / "model"), tmp_path / "runner")
    feeds = {"image": np.random.default_rng(5).standard_normal((2, 3, 6, 5)).astype(np.float32),
             "boxes": np.array([[0.5, 1.0, 4.0, 5.5], [-1.0, 0.0, 2.0, 9.0], [1.0, 1.0, 1.2, 1.1],
                                [3.0, 4.0, 12.0, 10.0]], np.float32)}
    expected = ReferenceEvaluator(model).run(None, feeds)
    ours = run(exe, [[feeds[v.name] for v in result.graph.inputs]], result.graph.inputs, result.graph.outputs)[0]
    for got, want in zip(ours, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_operators_defined_as_onnx_functions_compile(tmp_path: Path) -> None:
    """CenterCropPad has no converter: ONNX defines it as a function, whose body nn2c compiles."""
    b = OnnxBuilder(opset=20, seed=1)
    x = b.input([2, 3, 7, 5])
    outs = [b.node("CenterCropPad", [x, b.const(np.array([4, 8], np.int64))], axes=[2, 3]),
            b.node("CenterCropPad", [x, b.const(np.array([2, 9, 5, 2], np.int64))])]
    assert_matches_ort(b.save(tmp_path / "crop.onnx", outs), tmp_path, count=2)


def test_model_local_functions_are_inlined(tmp_path: Path) -> None:
    """A model that calls a function it defines (torch.onnx export_modules_as_functions, onnxscript)."""
    h = onnx.helper
    body = h.make_function("local", "ScaledGelu", ["x", "s"], ["y"],
                           [h.make_node("Mul", ["x", "s"], ["t"]), h.make_node("Gelu", ["t"], ["y"])],
                           [h.make_opsetid("", 20)])
    graph = h.make_graph([h.make_node("ScaledGelu", ["x", "s"], ["y"], domain="local")], "g",
                         [h.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                         [h.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                         [onnx.numpy_helper.from_array(np.array(1.5, np.float32), "s")])
    model = h.make_model(graph, functions=[body], opset_imports=[h.make_opsetid("", 20), h.make_opsetid("local", 1)])
    model.ir_version = 10
    onnx.save(model, tmp_path / "local.onnx")
    assert_matches_ort(tmp_path / "local.onnx", tmp_path, count=2)


def _consumed(b: OnnxBuilder, value: str, path: Path) -> Path:
    """The value feeds a Relu whose declared output shape says nothing about the value's size."""
    relu = b.node("Relu", [value])
    model = b.model([])
    model.graph.output.extend([onnx.helper.make_tensor_value_info(relu, TensorProto.FLOAT, ["n"])])
    onnx.save(model, path)
    return path


def test_data_dependent_shapes_are_refused(tmp_path: Path) -> None:
    b = OnnxBuilder(opset=13)
    x = b.input([6])
    cond = b.node("Greater", [x, b.const(np.zeros(6, np.float32))])
    picked = b.node("Compress", [x, cond], axis=0)
    with pytest.raises(UnsupportedOpError, match=r"Compress.*data-dependent"):
        compile_model(_consumed(b, picked, tmp_path / "compress.onnx"), CompileOptions())
    b = OnnxBuilder(opset=13)
    x = b.input([6])
    top = b.node("ReduceMax", [x], keepdims=0)
    ramp = b.node("Range", [b.const(np.array(0.0, np.float32)), top, b.const(np.array(0.5, np.float32))])
    with pytest.raises(UnsupportedOpError, match=r"Range.*data-dependent"):
        compile_model(_consumed(b, ramp, tmp_path / "range.onnx"), CompileOptions())


SANITIZE = ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]


def _runtime_operands_model(path: Path) -> Path:
    """Resize with run-time scales, OneHot / Range / CumSum / Compress / GatherND / GatherElements /
    ScatterElements / ScatterND / TensorScatter / RoiAlign with run-time operands: every output shape declared
    (as the ONNX backend cases do)."""
    h = onnx.helper
    f, i32 = TensorProto.FLOAT, TensorProto.INT32
    inputs = [h.make_tensor_value_info(n, t, s) for n, t, s in (
        ("x", f, [1, 2, 4, 5]), ("scales", f, [4]), ("hot", f, [3]), ("start", f, []), ("delta", f, []),
        ("axis", i32, []), ("cond", TensorProto.BOOL, [4]), ("idx", i32, [3, 2]), ("ie", i32, [1, 2, 3, 5]),
        ("upd", f, [1, 2, 3, 5]), ("rows", f, [3, 4, 5]), ("cache", f, [2, 1, 4, 3]), ("new", f, [2, 1, 2, 3]),
        ("write", i32, [2]), ("rois", f, [2, 4]), ("images", i32, [2]), ("write64", TensorProto.INT64, [2]))]
    outputs = [h.make_tensor_value_info(n, f, s) for n, s in (
        ("nearest", [1, 2, 8, 3]), ("linear", [1, 2, 8, 3]), ("cubic", [1, 2, 8, 3]), ("antialiased", [1, 2, 8, 3]),
        ("onehot", [3, 4]),
        ("range", [6]), ("cumsum", [1, 2, 4, 5]), ("compress", [1, 2, 2, 5]), ("gathered", [3, 4, 5]),
        ("elements", [1, 2, 3, 5]), ("scattered", [1, 2, 4, 5]), ("scattered_nd", [1, 2, 4, 5]),
        ("present", [2, 1, 4, 3]), ("aligned", [2, 2, 3, 2]), ("aligned_max", [2, 2, 3, 2]),
        ("present_linear", [2, 1, 4, 3]), ("present_circular", [2, 1, 4, 3]))]
    nodes = [h.make_node("Resize", ["x", "", "scales"], [name], mode=name) for name in ("nearest", "linear", "cubic")]
    nodes.append(h.make_node("Resize", ["x", "", "scales"], ["antialiased"], mode="cubic", antialias=1))
    nodes += [h.make_node("Constant", [], ["depth"], value=h.make_tensor("d", TensorProto.INT64, [], [4])),
              h.make_node("Constant", [], ["values"], value=h.make_tensor("v", f, [2], [-1.0, 2.0])),
              h.make_node("OneHot", ["hot", "depth", "values"], ["onehot"]),
              h.make_node("Constant", [], ["limit"], value=h.make_tensor("l", f, [], [100.0])),
              h.make_node("Range", ["start", "limit", "delta"], ["range"]),
              h.make_node("CumSum", ["x", "axis"], ["cumsum"], exclusive=1),
              h.make_node("Compress", ["x", "cond"], ["compress"], axis=2),
              h.make_node("GatherND", ["x", "idx"], ["gathered"]),
              h.make_node("GatherElements", ["x", "ie"], ["elements"], axis=2),
              h.make_node("ScatterElements", ["x", "ie", "upd"], ["scattered"], axis=2, reduction="add"),
              h.make_node("ScatterND", ["x", "idx", "rows"], ["scattered_nd"], reduction="mul"),
              h.make_node("TensorScatter", ["cache", "new", "write"], ["present"], mode="circular"),
              h.make_node("TensorScatter", ["cache", "new", "write64"], ["present_linear"]),
              h.make_node("TensorScatter", ["cache", "new", "write64"], ["present_circular"], mode="circular"),
              h.make_node("RoiAlign", ["x", "rois", "images"], ["aligned"], output_height=3, output_width=2),
              h.make_node("RoiAlign", ["x", "rois", "images"], ["aligned_max"], output_height=3, output_width=2,
                          mode="max", sampling_ratio=2, coordinate_transformation_mode="output_half_pixel")]
    model = h.make_model(h.make_graph(nodes, "runtime", inputs, outputs), opset_imports=[h.make_opsetid("", 24)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_runtime_operand_kernels_are_sanitizer_clean_on_extreme_inputs(tmp_path: Path) -> None:
    from nn2c.verify.build import build, run

    result = compile_model(_runtime_operands_model(tmp_path / "runtime.onnx"), CompileOptions())
    exe = build(result.write(tmp_path / "out"), tmp_path / "asan_runner", opt="-O1", extra_flags=SANITIZE)
    records = []
    for floats, ints, flags in ((-3e38, -(2**31), False), (3e38, 2**31 - 1, True), (np.nan, -1, True),
                                (np.inf, 0, False), (-np.inf, 7, True)):
        record = []
        for value in result.graph.inputs:
            dtype = np.dtype(value.type.dtype)
            if dtype.kind in "iu" and ints in (-(2**31), 2**31 - 1):  # the type's own limits (int64 too)
                fill = np.iinfo(dtype).min if ints < 0 else np.iinfo(dtype).max
            else:
                fill = floats if dtype.kind == "f" else (flags if dtype.kind == "b" else ints)
            record.append(np.full(value.type.shape, fill, dtype=dtype))
        records.append(record)
    outputs = run(exe, records, result.graph.inputs, result.graph.outputs)
    assert len(outputs) == len(records)
