"""nn2c.profile / `nn2c profile` and `--board`.

- the profile's static RAM (arena + state) and weight bytes equal `nn2c compile`'s, byte for byte,
  on models of models/ (tflite and onnx, three targets, with a board's budget too), from a file and
  from an in-memory Graph (left unchanged);
- the cost model shipped as package data predicts QEMU's instruction counts within a stated
  tolerance, on two models of the fit and on a network built here that it was not fitted on (needs
  arm-none-eabi-gcc and qemu-system-arm: skips loudly without them);
- --board: an unknown board is one line listing the boards (exit 7), a model over a board's RAM or
  flash is one line with the figures (exit 4), RP2040 has no bench image, `nn2c bench --board` picks
  a memory map the model fits;
- `nn2c profile --json` fields;
- `nn2c profile` writes its report and nothing else to stdout (the solver's own debug prints stay out).
The profile's speed is measured by bench/costmodel.py --speed (docs/BENCHMARKS.md), not here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nn2c.api import CompileOptions, compile_model, load_model, profile
from nn2c.boards import BOARDS, board_options, get_board
from nn2c.cli import main as cli_main
from nn2c.errors import UsageError
from nn2c.ir import dump
from nn2c.ir.cost import macs
from nn2c.profiler import cost_model
from nn2c.targets.cortexm_build import missing_tools
from tests.conftest import model_path

# cheap models of models/ (the full set was checked once: docs/user-guide.md "nn2c profile")
CASES = [
    ("mlcommons_tiny/ad01_int8.tflite", "cortex-m4"),
    ("mlcommons_tiny/kws_ref_model.tflite", "cortex-m55"),
    ("tflite_micro/micro_speech_quantized.tflite", "cortex-m7"),
    ("tflite_micro/hello_world_float.tflite", "host"),
    ("tflite_micro/trained_lstm_int8.tflite", "cortex-m4"),
    ("onnx/cnn_float.onnx", "cortex-m4"),
    ("onnx/qdq_int8.onnx", "cortex-m55"),
]
# the cost model's stated tolerance on a model's total instructions (docs/BENCHMARKS.md "Cost model")
TOLERANCE = 0.10


def _requires_cross_tools() -> None:
    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed; CI installs gcc-arm-none-eabi "
                    "binutils-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm")


@pytest.mark.parametrize(("model", "target"), CASES)
def test_profile_ram_and_weights_equal_compile(model, target):
    path = model_path(model)
    result = compile_model(path, CompileOptions(target=target))
    prof = profile(path, target=target)
    assert prof.arena_bytes == result.arena_bytes
    assert prof.state_bytes == result.code.state_bytes
    assert prof.ram_bytes == result.ram_bytes
    assert prof.weight_bytes == result.code.weight_bytes
    assert prof.macs == sum(macs(n) for n in result.graph.nodes)
    assert result.schedule is not None
    assert [s.op for s in prof.steps] == [s.op for s in result.schedule.steps]
    if target == "host":
        assert prof.predicted == {}
    else:
        assert set(prof.predicted) >= {target}
        assert all(value > 0 for value in prof.predicted.values())


def test_profile_takes_a_graph_and_leaves_it_unchanged():
    path = model_path("mlcommons_tiny/kws_ref_model.tflite")
    graph = load_model(path)
    before = dump(graph)
    from_graph = profile(graph, target="cortex-m4")
    assert dump(graph) == before
    from_file = profile(path, target="cortex-m4")
    assert (from_graph.ram_bytes, from_graph.weight_bytes) == (from_file.ram_bytes, from_file.weight_bytes)
    assert from_graph.predicted == from_file.predicted


def test_profile_on_a_board_equals_compile_on_the_board():
    """--board sets the budgets, which steer the row-group schedule: profile follows compile there too."""
    path = model_path("mlcommons_tiny/kws_ref_model.tflite")
    board = get_board("stm32f412")
    tight = CompileOptions(ram_budget=9200)  # below the default schedule's 9,280 B: row groups must change
    result = compile_model(path, board_options(tight, board, target_given=False))
    prof = profile(path, board=board, options=tight)
    assert prof.target == "cortex-m4" and prof.ram_bytes == result.ram_bytes <= 9200
    assert prof.latency_ms is not None and prof.latency_ms > 0
    assert prof.fits() == {"ram": True, "flash": True}


def test_profile_rejects_what_it_does_not_model():
    with pytest.raises(UsageError, match="quantize"):
        profile(model_path("onnx/cnn_float.onnx"), options=CompileOptions(quantize="int8"))
    with pytest.raises(UsageError, match="unknown board 'stm32f9'"):
        profile(model_path("onnx/cnn_float.onnx"), board="stm32f9")
    with pytest.raises(UsageError, match="runs --target cortex-m7"):
        profile(model_path("onnx/cnn_float.onnx"), board="stm32f746", target="cortex-m4")


def test_cost_model_is_package_data_for_every_core():
    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert '"data/*.json"' in pyproject
    costs = cost_model()
    assert {"cortex-m4", "cortex-m7", "cortex-m55"} <= set(costs)
    for core in costs.values():
        assert "nn2c_conv_s8_simd" in core["kernels"]
        for table in ("kernels", "ops"):
            for coefficients in core[table].values():
                assert all(c >= 0 for c in coefficients.values())


@pytest.mark.parametrize(("model", "target"), [("mlcommons_tiny/ad01_int8.tflite", "cortex-m4"),
                                               ("mlcommons_tiny/kws_ref_model.tflite", "cortex-m55")])
def test_cost_model_predicts_qemu_counts(model, target):
    _requires_cross_tools()
    from nn2c.targets.cortexm_bench import bench_model

    path = model_path(model)
    report = bench_model(path, target=target, count=1)
    prof = profile(path, target=target)
    measured = report.instructions_per_inference
    assert abs(prof.predicted[target] - measured) <= TOLERANCE * measured, (prof.predicted[target], measured)
    # per step: the steps holding most of the instructions are predicted within 25% (kws on M55: all but
    # its first convolution, a 1-channel 10x4 im2col the linear features under-predict by a third)
    by_step = {x.index: x.instructions for x in report.layers}
    close = [s for s in prof.steps if abs(s.predicted[target] - by_step.get(s.step, 0)) <= 0.25 * by_step.get(s.step, 0)]
    assert sum(by_step[s.step] for s in close) >= 0.85 * sum(by_step.values()), [
        (s.step, s.op, round(s.predicted[target]), by_step.get(s.step)) for s in prof.steps]


def test_window_taps_count_each_output_pixels_filter_taps():
    """The cost model's window_taps feature: output pixels x kh x kw of every convolution and pooling
    window (kws: a 10x4 first convolution on 25x5 outputs, 3x3 depthwise layers, a 25x5 average pool),
    0 for the other operators."""
    graph = load_model(model_path("mlcommons_tiny/kws_ref_model.tflite"))
    prof = profile(graph, target="cortex-m4", options=CompileOptions(schedule="layer"))
    taps = {s.op: set() for s in prof.steps}
    for s in prof.steps:
        taps[s.op].add((s.window_taps, s.output_pixels))
    assert taps["CONV_2D"] == {(125 * 40, 125), (125, 125)}  # the first 10x4, then the 1x1 convolutions
    assert taps["DEPTHWISE_CONV_2D"] == {(125 * 9, 125)}
    assert taps["AVERAGE_POOL_2D"] == {(125, 1)}
    assert all(s.window_taps == 0 for s in prof.steps if s.op in ("FULLY_CONNECTED", "SOFTMAX", "RESHAPE"))


def test_profile_counts_the_relocations_the_code_makes():
    """The bytes the profile's invoke overhead charges for relocations are the ones the generated code
    moves (kws at the default schedule undoes in-place drift four times)."""
    import re

    from nn2c.codegen.render import RELOCATION_COMMENT

    path = model_path("mlcommons_tiny/kws_ref_model.tflite")
    result = compile_model(path, CompileOptions(target="cortex-m4"))
    moves = [line for line in result.files[f"{result.name}.c"].splitlines() if RELOCATION_COMMENT in line]
    sizes = [int(re.search(r", (\d+)\); /\*", line)[1]) for line in moves]
    moved = profile(path, target="cortex-m4").moved
    assert moves and moved["words"] + moved["bytes"] == sum(sizes)
    assert moved == {"words": sum(sizes), "bytes": 0}  # the arena's offsets are word-aligned here


def test_cost_model_predicts_a_network_it_was_not_fitted_on(tmp_path):
    """An MCUNet-style candidate built here (seed and shape of none of bench/costmodel.py's candidates)."""
    _requires_cross_tools()
    from nn2c.targets.cortexm_bench import bench_model
    from tests.test_row_groups import Net

    net = Net(20_261_124)
    x = net.input((1, 56, 56, 3))
    h = net.conv(x, 16, 3, 2)
    for out_c, k, expand, stride in ((16, 5, 4, 1), (24, 3, 6, 2), (24, 7, 3, 1), (40, 5, 4, 2)):
        h = net.inverted_bottleneck(h, expand, out_c, k, stride)
    path = tmp_path / "unseen.tflite"
    path.write_bytes(net.build(x, h))
    report = bench_model(path, target="cortex-m4", count=1)
    assert report.passed()
    prof = profile(path, target="cortex-m4")
    # its row groups' ring-buffer moves (nn2c_move inlined into invoke) count in their steps, not as
    # invoke's own overhead: with no relocations, that is a few instructions
    assert any(s.op == "ROW_GROUP" for s in prof.steps) and not any(prof.moved.values())
    assert report.invoke_overhead < 50, report.invoke_overhead
    predicted = prof.predicted["cortex-m4"]
    measured = report.instructions_per_inference
    assert abs(predicted - measured) <= TOLERANCE * measured, (predicted, measured)


def test_convolution_output_stages_are_fitted_apart(tmp_path):
    """The DSP convolution (nn2c_gemm_pair16) requantises in assembly only where every shift is negative and
    the activation range is int8's; elsewhere its C output stage costs some 25 instructions more a channel
    pair. The lowering marks those convolutions (NodeCode.variant), the cost model keys them apart and ships a
    fit for each path: kws's convolutions take the assembly path (its 1x1 layers over pixel triples, another
    variant), an MCUNet-style candidate's RELU6 ones the C one. Helium has one output stage: no variant."""
    from nn2c.profiler import kernel_key
    from tests.test_row_groups import _unseen_candidate

    def conv_keys(path: Path, target: str) -> set[str]:
        prof = profile(path, target=target)
        return ({kernel_key(s.kernels, s.variant) for s in prof.steps if s.op == "CONV_2D"}
                | {m["kernel"] for s in prof.steps for m in s.members if m["op"] == "CONV_2D"})

    path = tmp_path / "candidate.tflite"
    path.write_bytes(_unseen_candidate())
    assert conv_keys(model_path("mlcommons_tiny/kws_ref_model.tflite"), "cortex-m4") == {
        "nn2c_conv_s8_simd", "nn2c_conv_s8_simd/triples"}
    assert conv_keys(path, "cortex-m4") == {"nn2c_conv_s8_simd", "nn2c_conv_s8_simd/generic-output",
                                            "nn2c_conv_s8_simd/triples"}
    assert conv_keys(path, "cortex-m55") == {"nn2c_conv_s8_simd"}
    fitted = cost_model()["cortex-m4"]["op_kernels"]
    assert {"CONV_2D:nn2c_conv_s8_simd", "CONV_2D:nn2c_conv_s8_simd/generic-output"} <= set(fitted)


def test_profile_stdout_is_the_report_alone(tmp_path):
    """The HiGHS that scipy 1.17 bundles printf()s a debug line whenever it repairs an incumbent; the
    arenas of this candidate make it do so (bench/costmodel.py's c006). In a separate process, as a user
    runs it (C's stdout is flushed at exit), stdout is the report and nothing else."""
    from tests.test_row_groups import mcunet_candidates

    path = tmp_path / "c006.tflite"
    path.write_bytes(mcunet_candidates(7, 0)[6])
    args = ["profile", str(path), "--target", "cortex-m4"]
    run = subprocess.run([sys.executable, "-m", "nn2c", *args], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    in_process = _run(args)
    assert in_process.exit_code == 0, in_process.output

    def timeless(text: str) -> str:
        return re.sub(r"\d+ ms after loading", "", text)

    assert timeless(run.stdout) == timeless(in_process.output)


def _run(args: list[str]):
    return CliRunner().invoke(cli_main, args)


def _one_error_line(result, code: int) -> str:
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("nn2c: error:")]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize("command", [["profile"], ["compile", "-o", "OUT"], ["bench"]])
def test_unknown_board_is_one_line_listing_the_boards(command, tmp_path):
    args = [a if a != "OUT" else str(tmp_path / "out") for a in command]
    line = _one_error_line(_run([*args, str(model_path("mlcommons_tiny/ad01_int8.tflite")), "--board", "esp32"]), 7)
    assert "unknown board 'esp32'" in line
    assert all(name in line for name in BOARDS)
    assert not (tmp_path / "out").exists()


def test_board_and_a_different_target_is_a_usage_error(tmp_path):
    result = _run(["compile", str(model_path("mlcommons_tiny/ad01_int8.tflite")), "-o", str(tmp_path / "o"),
                   "--board", "stm32f746", "--target", "cortex-m55"])
    assert "--board stm32f746 runs --target cortex-m7" in _one_error_line(result, 7)


def test_rp2040_compiles_portable_kernels_and_has_no_bench_image(tmp_path):
    model = str(model_path("mlcommons_tiny/ad01_int8.tflite"))
    result = _run(["compile", model, "-o", str(tmp_path / "o"), "--board", "rp2040", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["target"] == "host"
    assert "no Cortex-M0+ target" in _one_error_line(_run(["bench", model, "--board", "rp2040"]), 7)


def _onnx_model(path: Path, inputs: int, outputs: int, weights: bool) -> Path:
    """y = relu(x @ W) with W of inputs x outputs float weights, or y = relu(x) without."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    initializers, nodes = [], []
    if weights:
        w = np.random.default_rng(0).standard_normal((inputs, outputs)).astype(np.float32)
        initializers.append(numpy_helper.from_array(w, "w"))
        nodes.append(helper.make_node("MatMul", ["x", "w"], ["m"]))
        nodes.append(helper.make_node("Relu", ["m"], ["y"]))
    else:
        outputs = inputs
        nodes.append(helper.make_node("Relu", ["x"], ["y"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, inputs])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, outputs])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_model_over_the_boards_flash_is_one_line_with_figures(tmp_path):
    big = _onnx_model(tmp_path / "big_weights.onnx", 640, 512, weights=True)  # 1,310,720 B of weights
    line = _one_error_line(_run(["compile", str(big), "-o", str(tmp_path / "o"), "--board", "stm32f412"]), 4)
    assert "does not fit board stm32f412" in line and "1,310,720" in line and "1,048,576" in line
    assert not (tmp_path / "o").exists()
    line = _one_error_line(_run(["profile", str(big), "--board", "stm32f412"]), 4)
    assert "does not fit board stm32f412" in line and "1,048,576" in line


def test_model_over_the_boards_ram_is_one_line_with_figures(tmp_path):
    wide = _onnx_model(tmp_path / "wide.onnx", 100_000, 0, weights=False)  # 400,000 B in, 400,000 B out
    line = _one_error_line(_run(["compile", str(wide), "-o", str(tmp_path / "o"), "--board", "nrf52840"]), 4)
    assert "does not fit board nrf52840" in line and "262,144" in line and "RAM" in line
    result = _run(["profile", str(wide), "--board", "stm32l4r5", "--json"])  # 640 KB: fits
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["board"]["fits_ram"] is True


def test_profile_json_fields():
    model = str(model_path("mlcommons_tiny/kws_ref_model.tflite"))
    result = _run(["profile", model, "--board", "stm32l4r5", "--json", "--top", "3"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for key in ("arena_bytes", "state_bytes", "ram_bytes", "weight_bytes", "code_bytes_estimate", "macs",
                "predicted_instructions", "estimate_note", "layers", "board", "steps", "schedule"):
        assert key in data
    assert data["ram_bytes"] == data["arena_bytes"] + data["state_bytes"]
    assert data["target"] == "cortex-m4" and set(data["predicted_instructions"]) == {"cortex-m4", "cortex-m7"}
    assert len(data["layers"]) == 3 and data["steps"] >= 3
    board = data["board"]
    assert board["name"] == "stm32l4r5" and board["clock_mhz"] == 120 and board["ram_bytes"] == 640 * 1024
    expected = data["predicted_instructions"]["cortex-m4"] * board["cpi_assumed"] / (120 * 1e3)
    assert board["latency_ms_estimate"] == pytest.approx(expected, rel=1e-6)
    text = _run(["profile", model])
    assert text.exit_code == 0 and "estimate" in text.output and "exact" in text.output


@pytest.mark.parametrize(("board", "core"), [("stm32h743", "cortex-m7"), ("alif-e3-hp", "cortex-m55")])
def test_bench_board_picks_a_memory_map_the_model_fits(tmp_path, board: str, core: str):
    """1,310,720 B of weights overflow the standard bench image (512 KiB of flash); STM32H743 has 2 MB, the
    Alif E3 5.5 MB (the Cortex-M55 image's weights then sit in its DDR: still counted as the weights' flash)."""
    _requires_cross_tools()
    big = _onnx_model(tmp_path / "big_weights.onnx", 640, 512, weights=True)
    result = _run(["bench", str(big), "--board", board, "--inputs", "1", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["target"] == core and data["passed"]
    assert data["footprint"]["flash_weights"] >= 640 * 512 * 4
    assert data["board"]["fits_flash"] and data["board"]["latency_ms_estimate"] > 0
