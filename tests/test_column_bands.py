"""Column bands (codegen/bands.py): a row group's output split into vertical bands, each streamed by
rows, its windows a band wide, the halo columns recomputed (MCUNetV2's patches with their rows
streamed). The outputs stay bit-exact with TFLite Micro on the host and in QEMU.

The models are converter-shaped int8 stages built here: a wide input image, a stride-2 3x3
convolution, depthwise 3x3 / 5x5 (stride 2), 1x1 expand and project, a max pool, and an inverted
bottleneck whose ADD reads its block input from outside the group.
"""

from __future__ import annotations

import pytest

import nn2c.memory.fusion as fusion
from nn2c.api import CompileOptions, compile_model
from nn2c.codegen.bands import MIN_BAND_PIXELS, plan_bands
from nn2c.codegen.stream import RowGroup
from nn2c.verify.compare import verify_model
from tests.test_row_groups import Net


def _wide_stage(seed: int) -> bytes:
    """A MobileNet-like first stage on a wide image: its expanded rows are what a row window holds."""
    net = Net(seed)
    x = net.input((1, 64, 160, 3))
    h = net.conv(x, 16, 3, 2)
    h = net.conv(h, 0, 3, 1, depthwise=True)
    h = net.conv(h, 8, 1, activation="NONE")
    h = net.conv(h, 48, 1)
    h = net.conv(h, 0, 5, 2, depthwise=True)
    h = net.conv(h, 16, 1, activation="NONE")
    return net.build(x, h)


def _pool_chain(seed: int) -> bytes:
    """A 7x7 VALID stride-2 depthwise and a max pool inside the band (odd band widths and halos)."""
    net = Net(seed)
    x = net.input((1, 40, 56, 8))
    h = net.conv(x, 16, 3, 2)
    h = net.conv(h, 0, 5, 1, depthwise=True)
    h = net.conv(h, 48, 1)
    h = net.conv(h, 0, 7, 2, "VALID", depthwise=True)
    h = net.pool(h, 2, 1)
    h = net.conv(h, 8, 1, activation="NONE")
    return net.build(x, h)


def _residual_block(seed: int) -> bytes:
    """An inverted bottleneck whose ADD reads the block input from outside the group."""
    net = Net(seed)
    x = net.input((1, 24, 64, 16))
    return net.build(x, net.inverted_bottleneck(x, 6, 16, 3, 1))


def _banded(result) -> list[RowGroup]:
    return [g for g in result.schedule.fusion.groups if g.bands is not None]


def _check_tflm(path, options, tmp_path) -> None:
    report = verify_model(path, count=3, seed=5, references=("tflm",), workdir=tmp_path / "c", options=options)
    assert "tflm" not in report.skipped, report.skipped
    for c in report.comparisons:
        assert c.mismatches == 0, f"output {c.output}: {c.mismatches}/{c.elements} differ"


@pytest.mark.parametrize("target", ["host", "cortex-m4", "cortex-m55"])
def test_min_ram_runs_a_wide_stage_in_column_bands(target, monkeypatch, tmp_path):
    """On a wide stage the windows of full-width rows outweigh what writing rows in place saves:
    min-ram takes column bands, the arena drops below the best schedule without them, and the C
    is bit-exact with TFLM (the Cortex-M lowerings built for the host)."""
    path = tmp_path / "stage.tflite"
    path.write_bytes(_wide_stage(9))
    options = CompileOptions(schedule="min-ram", target=target)
    result = compile_model(path, options)
    banded = _banded(result)
    assert banded, "no group runs in column bands"
    assert all(g.recomputed_macs > 0 for g in banded)
    monkeypatch.setattr(fusion, "BAND_COUNTS", ())
    rows_only = compile_model(path, options)
    assert not _banded(rows_only)
    assert result.arena_bytes < rows_only.arena_bytes
    monkeypatch.undo()
    _check_tflm(path, options, tmp_path)


@pytest.mark.parametrize(("case", "inplace"), [("pool_chain", True), ("residual_block", False)])
def test_bands_with_pools_and_outside_reads_match_tflm(case, inplace, tmp_path):
    """A max pool and a 7x7 VALID stride-2 depthwise inside a band; and (without in-place outputs,
    where bands win on more groups) an ADD copying its band of the block input into a tile."""
    path = tmp_path / f"{case}.tflite"
    path.write_bytes(_pool_chain(8) if case == "pool_chain" else _residual_block(7))
    options = CompileOptions(schedule="min-ram", target="host", inplace=inplace)
    banded = _banded(compile_model(path, options))
    assert banded, "no group runs in column bands"
    kinds = {op.kind for g in banded for op in g.ops}
    assert ("pool" in kinds) if case == "pool_chain" else ("bcast" in kinds and banded[0].bands.reads[-1].member > 0)
    _check_tflm(path, options, tmp_path)


def test_bands_cover_the_output_once_and_read_inside_the_image(tmp_path):
    """Every band's columns, traced back through the group, stay inside each member's input, and the
    sink's bands tile its output columns exactly once; only the halo is made twice."""
    path = tmp_path / "pool_chain.tflite"
    path.write_bytes(_pool_chain(8))
    group = _banded(compile_model(path, CompileOptions(schedule="min-ram", target="host")))[0]
    sources = [[s for s, _ in m.reads] for m in group.members]
    width = group.ops[-1].output.type.shape[2]
    for count in (2, 3, 4):
        bands = plan_bands(group.ops, sources, count)
        if width < count * MIN_BAND_PIXELS:  # bands too narrow for the kernels' pixel pairs to pay
            assert bands is None
            continue
        assert bands is not None
        covered = [c for b in bands.bands for c in range(b.out_lo[-1], b.out_lo[-1] + b.out_w[-1])]
        assert covered == list(range(width))
        for b in bands.bands:
            for j, op in enumerate(group.ops):
                assert b.out_lo[j] >= 0 and b.out_lo[j] + b.out_w[j] <= op.output.type.shape[2]
        made = [sum(b.out_w[j] for b in bands.bands) for j in range(len(group.ops))]
        assert all(m >= op.output.type.shape[2] for m, op in zip(made, group.ops, strict=True))
        assert bands.recomputed_macs > 0


@pytest.mark.parametrize("target", ["cortex-m4", "cortex-m55"])
def test_column_bands_on_qemu_match_tflm(target, tmp_path):
    """The DSP and Helium kernels on band geometries (narrow rows, left padding only in the first
    band, clipped right edges) in QEMU, bit-exact with TFLM."""
    from nn2c.targets.cortexm_bench import bench_model
    from nn2c.targets.cortexm_build import missing_tools

    if missing_tools():
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing_tools())} not installed; CI installs them")
    path = tmp_path / "stage.tflite"
    path.write_bytes(_wide_stage(9))
    options = CompileOptions(schedule="min-ram", target=target)
    assert _banded(compile_model(path, options))
    report = bench_model(path, target=target, count=3, seed=2, workdir=tmp_path, options=options)
    assert report.reference == "tflm", report.skipped
    assert report.passed() and all(c.max_abs_diff == 0 for c in report.comparisons)


@pytest.mark.parametrize(("case", "inplace"), [("stage", True), ("residual_block", False)])
def test_column_bands_are_sanitizer_and_guard_clean(case, inplace, tmp_path):
    """The Cortex-M4 lowering in column bands built for the host: ASan + UBSan on all-min / all-max
    inputs, and the --debug build's guard zones around every buffer (exit 2 if a band's copy or a
    kernel wrote outside its tile or window), both equal to TFLM."""
    import numpy as np

    from nn2c.verify.build import build, run
    from nn2c.verify.oracle import run_tflm
    from tests.c_safety import SANITIZE_FLAGS, extreme_records
    from tests.oracle_check import assert_records_match

    path = tmp_path / f"{case}.tflite"
    path.write_bytes(_wide_stage(9) if case == "stage" else _residual_block(7))
    options = CompileOptions(target="cortex-m4", schedule="min-ram", inplace=inplace)
    result = compile_model(path, options)
    assert _banded(result)
    exe = build(result.write(tmp_path / "asan"), tmp_path / "asan_runner", opt="-O1", extra_flags=SANITIZE_FLAGS)
    records = extreme_records(result.graph)
    assert_records_match(run(exe, records, result.graph.inputs, result.graph.outputs),
                         run_tflm(path, records, len(result.graph.outputs)))
    debug = compile_model(path, CompileOptions(target="cortex-m4", schedule="min-ram", inplace=inplace, debug=True))
    assert _banded(debug)
    exe = build(debug.write(tmp_path / "debug"), tmp_path / "debug_runner", opt="-O1")
    records = [np.random.default_rng(k).integers(-128, 128, v.type.shape).astype(np.int8)
               for k, v in enumerate(debug.graph.inputs)]
    assert_records_match(run(exe, [records], debug.graph.inputs, debug.graph.outputs),
                         run_tflm(path, [records], len(debug.graph.outputs)))
