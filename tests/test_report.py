"""`nn2c compile --report`: report.html (checked in a real headless Chromium) and report.md."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from nn2c import CompileOptions, compile_model
from nn2c.cli import main
from nn2c.ir.cost import macs
from nn2c.report.html import collect, render_html, render_markdown
from nn2c.report.layers import layer_table, peak
from tests.conftest import model_path

KWS = model_path("mlcommons_tiny/kws_ref_model.tflite")
# runs row groups by default (kws no longer does: relocation brings it layer by layer below them)
PERSON = model_path("tflite_micro/person_detect.tflite")
CHROMIUM = os.environ.get("NN2C_CHROMIUM", "/usr/bin/chromium")
# screenshots for a person to look at (gitignored); CI keeps the folder as an artifact if it wants
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


def _compile_with_report(tmp_path: Path, *extra: str) -> tuple[Path, dict]:
    out = tmp_path / "person"
    result = CliRunner().invoke(main, ["compile", str(PERSON), "-o", str(out), "--name", "person", "--report",
                                       "--json", *extra])
    assert result.exit_code == 0, result.output
    return out, json.loads(result.stdout)


def _browser():
    """Playwright driving Debian's chromium (no browser download); skip loudly if either is missing."""
    if not Path(CHROMIUM).is_file() and shutil.which("chromium") is None:
        pytest.skip(f"SKIPPED LOUDLY: no chromium at {CHROMIUM}; CI installs the apt packages chromium and "
                    "chromium-driver (set NN2C_CHROMIUM to another binary)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("SKIPPED LOUDLY: the playwright Python package is not installed (pip install playwright)")
    return sync_playwright, CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium")


def test_report_renders_in_headless_chromium(tmp_path):
    sync_playwright, chromium = _browser()
    # a RAM budget below layer-by-layer execution (36,912 B): the cheapest row groups that fit
    out, summary = _compile_with_report(tmp_path, "--ram-budget", "30000", "--flash-budget", "400000")
    html_path = out / "report.html"
    assert html_path.is_file() and (out / "report.md").is_file()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            failed: list[str] = []
            page.on("requestfailed", lambda request: failed.append(request.url))
            page.goto(html_path.as_uri())
            page.wait_for_load_state("load")
            assert page.title() == "nn2c report: person"
            assert page.inner_text("#arena-bytes") == f"{summary['arena_bytes']:,}"
            assert page.inner_text("#operator-count") == str(summary["operators"])
            assert page.inner_text("#weight-bytes") == f"{summary['weight_bytes']:,}"
            assert "30,000 B budget" in page.inner_text("body") and "400,000 B budget" in page.inner_text("body")
            for image in ("#memory-plan", "#live-bytes"):
                width, height = page.evaluate(
                    f"[document.querySelector('{image}').naturalWidth, document.querySelector('{image}').naturalHeight]")
                assert width > 100 and height > 100, image
            rows = page.eval_on_selector_all("#layers tbody tr", "rows => rows.length")
            assert rows == summary["steps"]  # one row per step: an operator, or a row group
            groups = page.eval_on_selector_all("#row-groups tbody tr", "rows => rows.length")
            assert groups == len(summary["schedule"]["row_groups"]) > 0
            width = page.evaluate("document.querySelector('#schedule-tradeoff').naturalWidth")
            assert width > 100
            assert page.eval_on_selector_all("#layers tbody tr.peak", "rows => rows.length") == 1
            # sorting by MACs (twice: descending) puts the biggest step first
            page.click("#layers th:nth-child(5)")
            page.click("#layers th:nth-child(5)")
            cells = page.eval_on_selector_all("#layers tbody tr td:nth-child(5)", "cells => cells.map(c => c.innerText)")
            values = [int(c.replace(",", "")) for c in cells]
            assert values == sorted(values, reverse=True) and values[0] > 0
            assert failed == []  # self-contained: nothing fetched
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "report_person.png"), full_page=True)
            page.screenshot(path=str(tmp_path / "report_person.png"), full_page=True)
        finally:
            browser.close()
    assert (tmp_path / "report_person.png").stat().st_size > 10_000


def test_report_is_deterministic_and_self_contained(tmp_path):
    a, _ = _compile_with_report(tmp_path / "a")
    b, _ = _compile_with_report(tmp_path / "b")
    for file_name in ("report.html", "report.md", "memory_plan.png", "live_bytes.png", "schedule_tradeoff.png"):
        assert (a / file_name).read_bytes() == (b / file_name).read_bytes(), file_name
    html = (a / "report.html").read_text(encoding="ascii")
    assert str(tmp_path) not in html and "http://" not in html and "https://" not in html
    assert html.count("data:image/png;base64,") == 3  # memory plan, live bytes, schedule trade-off


def test_layer_table_matches_the_compiled_model():
    result = compile_model(PERSON)
    layers = layer_table(result)
    steps = result.schedule.steps
    assert any(step.op == "ROW_GROUP" for step in steps)  # person_detect runs its first blocks by rows
    assert [layer.op for layer in layers] == [step.op for step in steps]
    assert sum(layer.macs for layer in layers) == sum(macs(n) for n in result.graph.nodes)
    assert sum(layer.inplace for layer in layers) == len(result.code.inplace) > 0
    kws = compile_model(KWS, CompileOptions(schedule="layer"))
    layer = layer_table(kws)
    assert [x.op for x in layer] == [n.op for n in kws.graph.nodes]
    # its 8 depthwise / pointwise convolutions at least, relocated or not, as the plan honours them
    assert sum(x.inplace for x in layer) == len(kws.code.inplace) >= 8
    assert [layer.op for layer in layers if layer.aliased] == ["RESHAPE"]
    for layer in layers:
        assert layer.offset is not None and layer.offset + layer.size <= result.arena_bytes
        assert layer.arena_top <= result.arena_bytes
    top = peak(result)
    assert top is not None and top.arena_top == result.arena_bytes
    assert top.describe().startswith(f"peak at op {top.step} {top.op} (tensors ")


def test_markdown_report_and_pass_figures():
    result = compile_model(model_path("tflite_micro/person_detect.tflite"), CompileOptions(opt_level=2))
    data = collect(result, ram_budget=1000, images=False)
    md = render_markdown(data)
    assert "OVER BUDGET" in md and f"| arena bytes (RAM) | {result.arena_bytes:,} |" in md
    assert "## Layers" in md and md.count("\n| ") > len(result.graph.nodes)
    if result.passes is not None:
        assert f"{result.passes.ops_before} operators -> {result.passes.ops_after}" in md


class _FakeQuantReport:
    def as_dict(self) -> dict:
        return {"method": "mse", "mean_sqnr_db": 31.25,
                "tensors": [{"name": "conv1", "sqnr_db": 35.5}, {"name": "fc", "sqnr_db": 27.0}]}


def test_quantization_section_when_the_model_was_quantized():
    result = compile_model(model_path("mlcommons_tiny/ad01_int8.tflite"))
    assert "Quantization" not in render_html(collect(result, images=False))
    result.quant = _FakeQuantReport()
    page = render_html(collect(result, images=False))
    assert 'id="quantization"' in page and "conv1" in page and "35.5" in page and "31.25" in page
    assert "## Quantization" in render_markdown(collect(result, images=False))


def test_budget_error_names_the_layers_at_the_peak(tmp_path):
    result = CliRunner().invoke(main, ["compile", str(KWS), "-o", str(tmp_path / "out"), "--ram-budget", "1000"])
    assert result.exit_code == 4
    message = result.stderr.strip()
    assert "\n" not in message and "budget of 1,000" in message and "--ram-budget" in message
    # the least RAM streams the whole chain by rows: the peak is that row group, named with its operators
    assert "peak at op 0 row group (CONV_2D, DEPTHWISE_CONV_2D" in message and "AVERAGE_POOL_2D" in message
    assert "rows of functional_1/activation" in message  # its windows, named by the tensor they hold rows of
    assert not (tmp_path / "out").exists()


def test_quantized_compile_reports_sqnr(tmp_path):
    model = model_path("onnx/cnn_float.onnx")
    import numpy as np

    np.save(tmp_path / "calibration.npy", np.random.default_rng(0).standard_normal((8, 1, 3, 16, 16)).astype(np.float32))
    result = CliRunner().invoke(main, ["compile", str(model), "-o", str(tmp_path / "out"), "--quantize", "int8",
                                       "--calibration", str(tmp_path / "calibration.npy"), "--report", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["quantization"]["tensors"]
    html = (tmp_path / "out" / "report.html").read_text()
    assert 'id="quantization"' in html and "sqnr_db" in html


def test_one_planned_schedule_still_draws_its_tradeoff():
    """mobilenet_v2 reaches its least RAM at almost no cost, so the search plans one schedule: the picture
    (the docs show it) compares it with layer by layer (whose plan needs no relocation: no added cost)
    and the candidates' bounds."""
    result = compile_model(model_path("tflite_micro/mobilenet_v2_quantized_1x3x224x224.tflite"),
                           CompileOptions(target="cortex-m4"))
    data = collect(result)
    points = [(p["arena_bytes"], p["added_cost_fraction"]) for p in data.schedule["tradeoff"]]
    assert points == [(result.code.plan.arena_bytes, data.schedule["added_cost_fraction"]),
                      (data.schedule["layer_by_layer_arena_bytes"], 0.0)]
    assert result.code.plan.arena_bytes < data.schedule["layer_by_layer_arena_bytes"]
    assert data.images["schedule_tradeoff.png"].startswith(b"\x89PNG")
