"""--npu (src/nn2c/npu/): Vela's placement and estimates, the partition, the simulation build bit-exact with
TFLite Micro, and the one-line errors. Vela (`ethos-u-vela`, in the test extra) is the oracle of what may run
on the NPU, so these tests skip loudly without it rather than imitate it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nn2c.cli import main
from nn2c.compile import compile_model
from nn2c.options import CompileOptions
from nn2c.verify.compare import verify_model
from tests.tflite_builder import ModelBuilder

vela = pytest.importorskip("ethosu.vela", reason="Vela is not installed: pip install 'nn2c[npu]' (CI installs it)")

MODELS = Path(__file__).resolve().parents[1] / "models"
KWS = MODELS / "mlcommons_tiny" / "kws_ref_model.tflite"
PERSON = MODELS / "tflite_micro" / "person_detect.tflite"


def _assert_bit_exact(model: Path, tmp_path: Path, options: CompileOptions) -> None:
    report = verify_model(model, count=2, seed=0, references=("tflm",), workdir=tmp_path / "c", options=options)
    assert "tflm" not in report.skipped, report.skipped
    bad = [c for c in report.comparisons if c.mismatches]
    assert report.comparisons and not bad, [(c.output, c.mismatches, c.max_abs_diff) for c in bad]


@pytest.mark.parametrize("model", [KWS, PERSON], ids=["kws_ref_model", "person_detect"])
def test_simulation_build_is_bit_exact_with_tflm(model: Path, tmp_path: Path) -> None:
    options = CompileOptions(npu="ethos-u55-128")
    result = compile_model(model, options)
    plan = result.graph.metadata["npu"]
    assert plan.subgraphs, "no operator went to the NPU"
    # every subgraph is consecutive operators on the NPU, every other operator is on the CPU
    on_npu = {i for sg in plan.subgraphs for i in sg.nodes}
    assert on_npu == {p.index for p in plan.placements if p.unit == "npu"}
    for sg in plan.subgraphs:
        assert list(sg.nodes) == list(range(sg.first, sg.last + 1))
        assert sg.vela.npu_ops > 0 and sg.vela.cpu_ops == 0 and len(sg.vela.ethos_u_ops) == 1
    # the chosen placement is never estimated slower than Vela's rule (all supported operators on the NPU)
    assert plan.estimate.total <= plan.baseline.total
    assert "NPU subgraph 0" in result.files[f"{result.name}.c"]
    _assert_bit_exact(model, tmp_path, options)


def test_default_build_is_unchanged_by_the_npu_code() -> None:
    plain = compile_model(KWS, CompileOptions())
    assert "npu" not in plain.graph.metadata
    assert "NPU" not in plain.files[f"{plain.name}.c"]


def _conv(b: ModelBuilder, x: int, cin: int, cout: int, out_scale: float, rng: np.random.Generator) -> int:
    w = b.tensor("int8", (cout, 3, 3, cin), scale=[0.02] * cout, zero_point=[0] * cout, axis=0,
                 data=rng.integers(-127, 128, (cout, 3, 3, cin)))
    bias = b.tensor("int32", (cout,), scale=[0.02 * 0.05] * cout, zero_point=[0] * cout,
                    data=rng.integers(-500, 500, cout))
    y = b.tensor("int8", (1, 8, 8, cout), scale=out_scale, zero_point=-1)
    b.op("CONV_2D", [x, w, bias], [y], {"padding": "SAME", "stride_w": 1, "stride_h": 1,
                                        "fused_activation_function": "NONE"})
    return y


def _npu_cpu_npu_model() -> bytes:
    """conv -> L2_NORMALIZATION (no Ethos-U55 support in Vela) -> conv."""
    rng = np.random.default_rng(7)
    b = ModelBuilder()
    x = b.tensor("int8", (1, 8, 8, 4), scale=0.05, zero_point=0)
    y = _conv(b, x, 4, 8, 0.3, rng)
    n = b.tensor("int8", (1, 8, 8, 8), scale=1 / 128, zero_point=0)
    b.op("L2_NORMALIZATION", [y], [n], {"fused_activation_function": "NONE"})
    z = _conv(b, n, 8, 8, 0.05, rng)
    return b.build(inputs=[x], outputs=[z])


def test_operator_vela_cannot_place_runs_on_the_cpu_between_two_npu_subgraphs(tmp_path: Path) -> None:
    path = tmp_path / "npu_cpu_npu.tflite"
    path.write_bytes(_npu_cpu_npu_model())
    options = CompileOptions(npu="ethos-u55-128")
    result = compile_model(path, options)
    plan = result.graph.metadata["npu"]
    units = [(p.op, p.unit) for p in plan.placements]
    assert units == [("CONV_2D", "npu"), ("L2_NORMALIZATION", "cpu"), ("CONV_2D", "npu")], units
    assert plan.placements[1].npu_cycles is None and "Vela" in plan.placements[1].reason
    assert [sg.nodes for sg in plan.subgraphs] == [(0,), (2,)]
    _assert_bit_exact(path, tmp_path, options)


def _c_array(source: str, ident: str) -> bytes:
    match = re.search(rf"{ident}\[(\d+)\] NN2C_ALIGNED\(16\) = \{{(.*?)\}};", source, re.S)
    assert match is not None, f"{ident} is not in the generated C"
    data = bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", match.group(2)))
    assert len(data) == int(match.group(1))
    return data


def test_embedded_command_stream_and_weights_are_vela_s(tmp_path: Path) -> None:
    from nn2c.npu.partition import subgraph_tflite
    from nn2c.npu.vela import compile_tflite, ethos_u_ops

    result = compile_model(PERSON, CompileOptions(npu="ethos-u55-128"))
    plan = result.graph.metadata["npu"]
    source = result.files[f"{result.name}_npu.c"]
    for sg in plan.subgraphs:
        # Vela, run again on the subgraph written afresh from the graph, gives the bytes the C embeds
        fresh = compile_tflite(subgraph_tflite(result.graph, [result.graph.nodes[i] for i in sg.nodes]), plan.arch)
        (op,) = ethos_u_ops(fresh.model)
        assert _c_array(source, f"{result.name}_npu{sg.number}_command_stream") == op.command_stream
        assert _c_array(source, f"{result.name}_npu{sg.number}_flash") == op.flash
        assert fresh.total_cycles == sg.vela.total_cycles and fresh.sram_peak_bytes == sg.vela.sram_peak_bytes
        # the NPU scratch is a 16-byte aligned buffer of nn2c's arena, at the subgraph's first step
        assert f"{result.name}_npu{sg.number}_invoke((void *)&{result.name}_arena[" in result.files[f"{result.name}.c"]
    assert any(b.size == op.scratch_bytes and b.alignment == 16 for b in result.code.buffers)
    # both builds are warning-free C99; the driver build is compiled (not linked: the driver is Arm's)
    out = tmp_path / "out"
    result.write(out)
    for flags in ([], ["-DNN2C_ETHOSU"]):
        for c_file in (f"{result.name}.c", f"{result.name}_npu.c"):
            subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", *flags, "-I", str(out), "-c",
                            str(out / c_file), "-o", str(tmp_path / "x.o")], check=True)


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.output


def test_unknown_npu_configuration_is_one_line(tmp_path: Path) -> None:
    code, out = _cli("compile", str(KWS), "-o", str(tmp_path / "o"), "--npu", "ethos-u99-1")
    assert code == 7 and "unknown NPU configuration" in out and "ethos-u55-128" in out
    assert "Traceback" not in out and len(out.strip().splitlines()) == 1
    code, out = _cli("compile", str(KWS), "-o", str(tmp_path / "o"), "--npu", "ethos-u55-128",
                     "--npu-system-config", "No_Such_System")
    assert code == 7 and "Ethos_U55_High_End_Embedded" in out and "Traceback" not in out
    assert len(out.strip().splitlines()) == 1


def test_float_model_needs_quantize(tmp_path: Path) -> None:
    code, out = _cli("compile", str(MODELS / "mlcommons_tiny" / "kws_ref_model_float32.tflite"), "-o",
                     str(tmp_path / "o"), "--npu", "ethos-u55-128")
    assert code == 7 and "--quantize int8" in out and "Traceback" not in out
    assert len(out.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_missing_vela_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    # hide the installed package (the import machinery, not Vela, is replaced): what a user without it sees
    for mod in [m for m in sys.modules if m == "ethosu" or m.startswith("ethosu.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "ethosu", None)
    code, out = _cli("compile", str(KWS), "-o", str(tmp_path / "o"), "--npu", "ethos-u55-128")
    assert code == 1 and "pip install 'nn2c[npu]'" in out and "Traceback" not in out
    assert len(out.strip().splitlines()) == 1


def test_simulation_build_is_bit_exact_in_qemu_on_cortex_m55(tmp_path: Path) -> None:
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed; CI installs gcc-arm-none-eabi "
                    "binutils-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm")
    options = CompileOptions(target="cortex-m55", npu="ethos-u55-128")
    report = bench_model(KWS, target="cortex-m55", count=2, seed=3, options=options, workdir=tmp_path)
    assert report.reference == "tflm", report.skipped
    assert report.passed() and all(c.max_abs_diff == 0 for c in report.comparisons)


def test_int8_io_model_keeps_a_cheaper_operator_on_the_cpu_and_reports_it(tmp_path: Path) -> None:
    """tinyengine/vww with --io int8: the cost model (Vela's cycles for the operator alone against nn2c's
    fitted instruction model for the Cortex-M55 kernel) keeps the final FULLY_CONNECTED on the CPU although
    Vela supports it; the report shows every operator's placement and reason; the simulation build is
    bit-exact with TFLM (its float edges converted exactly to and from our int8 ones)."""
    model = MODELS / "tinyengine" / "vww.tflite"
    options = CompileOptions(target="cortex-m55", npu="ethos-u55-128", io="int8")
    result = compile_model(model, options)
    plan = result.graph.metadata["npu"]
    kept = [p for p in plan.placements if p.unit == "cpu" and p.npu_cycles is not None]
    assert kept and all(p.cpu_cycles < p.npu_cycles + 2000 for p in kept), kept
    assert any(p.op == "FULLY_CONNECTED" and "the CPU is cheaper" in p.reason for p in kept), kept
    assert plan.estimate.total <= plan.baseline.total
    from nn2c.report.html import collect, render_html, render_markdown

    data = collect(result, images=False)
    page = render_html(data)
    table = page[page.index('id="npu-placement"'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr") == 1 + len(plan.placements)  # the header, then one row per operator
    assert table.count('<tr class="cpu">') == sum(p.unit == "cpu" for p in plan.placements)
    assert "the CPU is cheaper" in table
    assert "## NPU placement" in render_markdown(data)
    _assert_bit_exact(model, tmp_path, options)


def test_quantized_onnx_model_partitions_and_runs_as_its_cpu_build(tmp_path: Path) -> None:
    """A QDQ ONNX model (--io int8 exposes its int8 edges) goes to the NPU through the same TFLite writer;
    the simulation build's outputs equal the CPU-only build's bit for bit (that one is checked against
    onnxruntime in tests/test_onnx_models.py)."""
    from nn2c.verify.compare import run_compiled
    from nn2c.verify.inputs import random_records

    model = MODELS / "onnx" / "qdq_int8.onnx"
    npu = compile_model(model, CompileOptions(target="cortex-m55", npu="ethos-u55-128", io="int8"))
    plan = npu.graph.metadata["npu"]
    assert plan.subgraphs and any(p.op == "CONV_2D" and p.unit == "npu" for p in plan.placements)
    cpu = compile_model(model, CompileOptions(target="cortex-m55", io="int8"))
    records = random_records(npu.graph.inputs, 3, 7)
    ours, plain = run_compiled(npu, records, tmp_path / "npu"), run_compiled(cpu, records, tmp_path / "cpu")
    for a, b in zip(ours, plain, strict=True):
        for x, y in zip(a, b, strict=True):
            assert x.dtype == np.int8 and np.array_equal(x, y)
