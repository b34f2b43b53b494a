"""TFLite_Detection_PostProcess (SSD box decoding + non-max suppression), against TFLite Micro.

Small SSD-like models: the box encodings and class scores arrive flat and are RESHAPEd to [1, boxes,
4] and [1, boxes, classes], the anchors are a constant; then the custom operator. Seeded random
inputs with scores on a coarse grid (many equal scores: the sort orders must be TFLM's), both NMS
modes, with and without a background class, several classes per detection, max_detections above
the number of boxes over the threshold, IoU thresholds 1 and small, more than 20 candidates (TFLM's
merge sort, not only its insertion sort). Compared: num_detections and the classes identical, boxes
and scores within 1e-5 relative, on the rows TFLM writes (regular NMS: max_detections rows; fast:
the rows its row counter reaches; TFLM leaves the others unwritten, nn2c zeroes them). TFLite Micro
runs the operator on float32 only, so the int8 variant is an int8 model input DEQUANTIZEd before
the operator, and int8 tensors fed to it directly are refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from nn2c.api import compile_model, load_model
from nn2c.errors import InvalidModelError, UnsupportedOpError
from nn2c.options import CompileOptions
from nn2c.reference.evaluate import run_graph
from nn2c.verify.build import build, run
from nn2c.verify.compare import run_compiled
from tests.c_safety import assert_no_injected_code, extreme_records
from tests.test_op_signal import CustomOpModel, _tflm

_QUICK = CompileOptions(planner="greedy", schedule="layer")
CODE = "TFLite_Detection_PostProcess"


def _options(**overrides: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "max_detections": 10, "max_classes_per_detection": 1, "detections_per_class": 4, "use_regular_nms": False,
        "nms_score_threshold": 0.3, "nms_iou_threshold": 0.5, "num_classes": 3, "y_scale": 10.0, "x_scale": 10.0,
        "h_scale": 5.0, "w_scale": 5.0, "_output_quantized": True,
    }
    options.update(overrides)
    return options


def _anchors(boxes: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.1, 0.9, (boxes, 2))
    sizes = rng.choice([0.1, 0.2, 0.35], (boxes, 2))
    return np.concatenate([centres, sizes], axis=1).astype(np.float32)


def _model(boxes: int, classes: int, options: dict[str, Any] | bytes, rows: int, seed: int = 0,
           stride: int = 4, dtype: str = "float32", name: str | None = None, dequantize: bool = False) -> bytes:
    """Flat inputs (int8 ones DEQUANTIZEd first with `dequantize`) -> RESHAPE -> TFLite_Detection_PostProcess
    -> 4 outputs."""
    m = CustomOpModel()
    inputs = [m.tensor("int8" if dequantize else dtype, (1, boxes * stride), name=name or "box_input"),
              m.tensor("int8" if dequantize else dtype, (1, boxes * classes), name="score_input")]
    flat_boxes, flat_scores = inputs
    if dequantize:
        m.quant[flat_boxes], m.quant[flat_scores] = (0.05, -3), (1 / 255, -128)
        flat_boxes, flat_scores = m.tensor(dtype, (1, boxes * stride)), m.tensor(dtype, (1, boxes * classes))
        m.builtin("DEQUANTIZE", [inputs[0]], [flat_boxes])
        m.builtin("DEQUANTIZE", [inputs[1]], [flat_scores])
    encodings = m.tensor(dtype, (1, boxes, stride), name="box_encodings")
    scores = m.tensor(dtype, (1, boxes, classes), name="class_predictions")
    m.builtin("RESHAPE", [flat_boxes, m.tensor("int32", (3,), data=[1, boxes, stride])], [encodings])
    m.builtin("RESHAPE", [flat_scores, m.tensor("int32", (3,), data=[1, boxes, classes])], [scores])
    anchors = m.tensor("float32", (boxes, 4), data=_anchors(boxes, seed), name="anchors")
    outs = [m.tensor("float32", (1, rows, 4), name="detection_boxes"),
            m.tensor("float32", (1, rows), name="detection_classes"),
            m.tensor("float32", (1, rows), name="detection_scores"), m.tensor("float32", (1,), name="num_detections")]
    m.custom(CODE, [encodings, scores, anchors], outs, options)
    return m.serialize(inputs, outs)


def _records(boxes: int, classes: int, seed: int, count: int = 3, stride: int = 4) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    records = []
    for k in range(count):
        enc = rng.normal(0, 2.0 + k, (1, boxes * stride)).astype(np.float32)
        grid = (4, 8, 1000)[k % 3]  # coarse grids: many equal scores
        scores = (np.round(rng.uniform(0, 1, (1, boxes * classes)) * grid) / grid).astype(np.float32)
        records.append([enc, scores])
    return records


def _written_rows(ours: list[np.ndarray], options: dict[str, Any], rows: int) -> list[int]:
    """The rows TFLM writes: regular NMS all max_detections; fast, row ncat * k + k % ncat for the k-th
    (detection, class) it emits."""
    if options["use_regular_nms"]:
        return list(range(min(rows, options["max_detections"])))
    ncat = min(options["max_classes_per_detection"], options["num_classes"])
    return [r for k in range(int(ours[3][0])) if (r := ncat * k + k % ncat) < rows]


def _assert_same_detections(ours: list[np.ndarray], theirs: list[np.ndarray], options: dict[str, Any],
                            rows: int) -> None:
    assert ours[3].tolist() == theirs[3].tolist(), (ours[3], theirs[3])
    written = _written_rows(ours, options, rows)
    np.testing.assert_array_equal(ours[1][0, written], theirs[1][0, written])
    for j in (0, 2):
        np.testing.assert_allclose(ours[j][0, written], theirs[j][0, written], rtol=1e-5, atol=1e-6)
    unwritten = sorted(set(range(rows)) - set(written))
    assert not np.any(ours[0][0, unwritten]) and not np.any(ours[2][0, unwritten])


def _check(tmp_path, model: bytes, records: list[list[np.ndarray]], options: dict[str, Any], rows: int,
           name: str) -> float:
    """C code and reference evaluator against TFLM; returns the largest |difference| seen."""
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(model)
    result = compile_model(path, _QUICK)
    ours = run_compiled(result, records, tmp_path / name)
    theirs = _tflm(model, records, 4)
    graph = load_model(path)
    worst = 0.0
    for record, our, their in zip(records, ours, theirs, strict=True):
        _assert_same_detections(our, their, options, rows)
        reference = run_graph(graph, record)
        assert isinstance(reference, list)
        for a, b in zip(reference, our, strict=True):  # the reference is the C code's, zero rows included
            np.testing.assert_array_equal(a, b)
        written = _written_rows(our, options, rows)
        worst = max([worst, *(float(np.max(np.abs(our[j][0, written] - their[j][0, written]), initial=0.0))
                               for j in (0, 2))])
    assert any(int(our[3][0]) > 0 for our in ours), "no record produced a detection"
    return worst


_CASES: dict[str, tuple[int, int, dict[str, Any], int]] = {  # boxes, classes (+ background), options, rows
    "fast_background": (24, 4, _options(), 10),
    "fast_3_per_detection_iou_1": (16, 5, _options(num_classes=4, max_classes_per_detection=3, max_detections=4,
                                                  nms_iou_threshold=1.0), 36),
    "fast_many_candidates": (48, 3, _options(nms_score_threshold=0.0, nms_iou_threshold=0.3, max_detections=30), 30),
    "regular_background": (24, 4, _options(use_regular_nms=True, max_detections=8), 8),
    "regular_no_background_iou_1": (20, 3, _options(use_regular_nms=True, nms_iou_threshold=1.0, max_detections=12,
                                                    detections_per_class=6), 12),
    "regular_many_candidates_small_iou": (40, 3, _options(use_regular_nms=True, nms_score_threshold=0.0,
                                                          nms_iou_threshold=1e-6, max_detections=16,
                                                          detections_per_class=100, num_classes=2), 20),
    "fast_few_above_threshold": (12, 2, _options(num_classes=1, nms_score_threshold=0.9, max_detections=12,
                                                 max_classes_per_detection=5), 12),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_matches_tflm(tmp_path, case):
    boxes, classes, options, rows = _CASES[case]
    seed = list(_CASES).index(case)
    stride = 6 if case == "fast_background" else 4  # encodings with extra values per box (keypoints)
    model = _model(boxes, classes, options, rows, seed=seed, stride=stride)
    worst = _check(tmp_path, model, _records(boxes, classes, seed, stride=stride), options, rows, case)
    print(f"{case}: max abs diff {worst:g}")


def test_sanitizers_on_extreme_inputs(tmp_path):
    """ASan + UBSan on extreme_records (every score equal: the tie orders) against TFLM, then on huge,
    infinite and NaN values against nn2c's reference (TFLM fails on invalid boxes; with NaN scores its
    std::partial_sort has no defined order)."""
    boxes, classes, rows = 30, 4, 12
    cases = [_options(max_detections=12), _options(use_regular_nms=True, max_detections=12, nms_score_threshold=-5.0)]
    for k, options in enumerate(cases):
        model = _model(boxes, classes, options, rows, seed=7)
        path = tmp_path / f"extreme{k}.tflite"
        path.write_bytes(model)
        result = compile_model(path, _QUICK)
        exe = build(result.write(tmp_path / f"out{k}"), tmp_path / f"asan{k}", opt="-O1",
                    extra_flags=["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
        extreme = extreme_records(result.graph)
        ours = run(exe, extreme, result.graph.inputs, result.graph.outputs)
        for our, their in zip(ours, _tflm(model, extreme, 4), strict=True):
            _assert_same_detections(our, their, options, rows)
        rng = np.random.default_rng(k)
        wild = []
        for fill in (np.nan, np.inf, 3e38):
            enc = rng.normal(0, 1, (1, boxes * 4)).astype(np.float32)
            scores = rng.uniform(0, 1, (1, boxes * classes)).astype(np.float32)
            enc[0, ::7] = fill
            scores[0, ::5] = fill
            wild.append([enc, scores])
            wild.append([np.full_like(enc, fill), scores])
        wild.append([np.zeros((1, boxes * 4), np.float32), np.where(np.arange(boxes * classes) % 3, np.nan,
                                                                     0.5).astype(np.float32).reshape(1, -1)])
        ours = run(exe, wild, result.graph.inputs, result.graph.outputs)
        graph = load_model(path)
        for record, our in zip(wild, ours, strict=True):
            reference = run_graph(graph, record)
            assert isinstance(reference, list)
            for a, b in zip(reference, our, strict=True):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("regular", [False, True])
def test_int8_model_dequantized_before_the_op(tmp_path, regular):
    """An int8 model: int8 inputs DEQUANTIZEd to float (the form TFLM runs), both NMS modes, int8
    extremes included."""
    boxes, classes, rows = 20, 4, 10
    options = _options(use_regular_nms=regular, nms_score_threshold=0.55)
    model = _model(boxes, classes, options, rows, seed=11, dequantize=True)
    rng = np.random.default_rng(11)
    records = [[rng.integers(-128, 128, (1, boxes * 4)).astype(np.int8),
                (rng.integers(0, 8, (1, boxes * classes)) * 32 - 128).astype(np.int8)] for _ in range(3)]
    records += [[np.full((1, boxes * 4), v, np.int8), np.full((1, boxes * classes), v, np.int8)] for v in (-128, 127)]
    worst = _check(tmp_path, model, records, options, rows, f"int8_{regular}")
    print(f"int8 regular={regular}: max abs diff {worst:g}")


def test_int8_tensors_into_the_op_are_refused(tmp_path):
    """TFLM's Eval fails on int8 box encodings / class predictions: nn2c refuses them at compile time."""
    path = tmp_path / "int8_direct.tflite"
    path.write_bytes(_model(8, 3, _options(), 10, dtype="int8"))
    with pytest.raises(UnsupportedOpError, match="runs on float32 only") as info:
        compile_model(path, _QUICK)
    assert "\n" not in str(info.value)


def _bad(options: dict[str, Any] | bytes) -> bytes:
    return _model(8, 4, options, 10)


@pytest.mark.parametrize(("options", "error", "message"), [
    (_options(nms_iou_threshold=0.0), UnsupportedOpError,
     r"op #2 CUSTOM:TFLite_Detection_PostProcess: option 'nms_iou_threshold' = 0.0 is outside \(0, 1\]"),
    (_options(nms_iou_threshold=1.5), UnsupportedOpError, "'nms_iou_threshold' = 1.5 is outside"),
    (_options(max_detections=0), UnsupportedOpError, r"'max_detections' = 0 is outside \[1, 65536\]"),
    (_options(max_detections=2.5), InvalidModelError, "option 'max_detections' must be an integer"),
    (_options(num_classes=-1), UnsupportedOpError, "'num_classes' = -1 is outside"),
    (_options(y_scale=0.0), UnsupportedOpError, "option 'y_scale' is 0"),
    (_options(h_scale=float("inf")), UnsupportedOpError, "'h_scale' = inf is not a finite float32"),
    (_options(w_scale=float("nan")), UnsupportedOpError, "'w_scale' = nan is not a finite float32"),
    (_options(x_scale="ten"), InvalidModelError, "option 'x_scale' must be a number, got str"),
    (_options(max_classes_per_detection=0), UnsupportedOpError, "'max_classes_per_detection' = 0 without"),
    (_options(use_regular_nms=True, detections_per_class=0), UnsupportedOpError, "'detections_per_class' = 0 with"),
    ({k: v for k, v in _options().items() if k != "nms_score_threshold"}, InvalidModelError,
     "custom option 'nms_score_threshold' is missing"),
    (b"\x01\x02\x03", InvalidModelError, "not valid FlexBuffers|not a FlexBuffers map"),
    (b"", InvalidModelError, "not valid FlexBuffers"),
    (_options(num_classes=1), UnsupportedOpError, r"class predictions have shape \[1, 8, 4\]"),
])
def test_bad_options_are_refused_in_one_line(tmp_path, options, error, message):
    path = tmp_path / "bad.tflite"
    path.write_bytes(_bad(options))
    with pytest.raises(error, match=message) as info:
        compile_model(path, _QUICK)
    assert "\n" not in str(info.value)


def test_regular_nms_needs_max_detections_rows(tmp_path):
    path = tmp_path / "rows.tflite"
    path.write_bytes(_model(8, 4, _options(use_regular_nms=True, max_detections=10), 6))
    with pytest.raises(UnsupportedOpError, match=r"6 rows, fewer than max_detections \(10\)") as info:
        compile_model(path, _QUICK)
    assert "\n" not in str(info.value)


def test_tensor_names_never_reach_the_code(tmp_path):
    payload = "*/ int injected = 1; /*"
    path = tmp_path / "names.tflite"
    path.write_bytes(_model(8, 4, _options(), 10, name=payload))
    out = compile_model(path, _QUICK).write(tmp_path / "out")
    files = {p.name: p.read_text() for p in out.rglob("*") if p.is_file() and p.suffix in (".c", ".h")}
    assert_no_injected_code(files, ("int injected",))
