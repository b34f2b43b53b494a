"""Relocation (memory/lifetimes.py, memory/arena.py): a chain of operators written in place drifts
down the arena by the sum of their in-place distances; moving a tensor back after its step (one
nn2c_move) undoes the drift. The plan keeps relocations only where they lower the arena, the moves
are word copies that equal memmove for every overlap, and the outputs stay bit-exact with TFLM.
"""

from __future__ import annotations

import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.compile import load_model, optimise_stage, plan_stages
from nn2c.memory.arena import plan_arena
from nn2c.memory.requests import check_plan
from nn2c.report.layers import schedule_dict
from nn2c.verify.compare import verify_model
from tests.c_safety import SANITIZE_FLAGS
from tests.conftest import model_path

KWS = "mlcommons_tiny/kws_ref_model.tflite"

MOVE_CHECK = r"""
#include <stdio.h>
#include <string.h>
#include "nn2c_common.h"

static uint8_t a[8704] NN2C_ALIGNED(16), b[8704] NN2C_ALIGNED(16);

static void fill(void) {
    for (size_t i = 0; i < sizeof a; ++i) a[i] = b[i] = (uint8_t)(i * 131u + 7u);
}

/* nn2c_move(dst, src, n) leaves exactly what memmove leaves, for every overlap and alignment */
static int check(size_t dst, size_t src, size_t n) {
    fill();
    nn2c_move(a + dst, a + src, n);
    memmove(b + dst, b + src, n);
    if (memcmp(a, b, sizeof a) != 0) {
        printf("differs: dst %u src %u n %u\n", (unsigned)dst, (unsigned)src, (unsigned)n);
        return 1;
    }
    return 0;
}

int main(void) {
    int bad = 0;
    for (size_t n = 0; n <= 70; ++n)
        for (size_t dst = 0; dst <= 40; ++dst)
            for (size_t src = 0; src <= 40; ++src)
                bad += check(dst, src, n);
    bad += check(512, 0, 8000) + check(0, 512, 8000) + check(448, 0, 8001) + check(16, 32, 8003);
    return bad != 0;
}
"""


def test_nn2c_move_equals_memmove_under_sanitizers(tmp_path: Path) -> None:
    if shutil.which("cc") is None:
        pytest.skip("SKIPPED LOUDLY: no host C compiler (cc); CI installs gcc")
    kernels = Path(str(resources.files("nn2c") / "kernels"))
    source = tmp_path / "move.c"
    source.write_text(MOVE_CHECK)
    exe = tmp_path / "move"
    subprocess.run(["cc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", *SANITIZE_FLAGS, f"-I{kernels}",
                    str(source), "-o", str(exe)], check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_relocation_undoes_the_drift_of_an_inplace_chain() -> None:
    """kws: 4 depthwise / pointwise pairs in place; without relocation the chain drifts 2 kB."""
    options = CompileOptions(schedule="layer", target="cortex-m4")
    graph = load_model(model_path(KWS))
    optimise_stage(graph, options, lambda _: None)
    lowered, order, step_codes, arena = plan_stages(graph, "kws", options, lambda _: None)
    scratch = [code.scratch for code in step_codes]
    fixed = plan_arena(graph, lowered.aliases, scratch, relocate=False, steps=order.steps)
    moved = plan_arena(graph, lowered.aliases, scratch, relocate=True, steps=order.steps)
    result = compile_model(model_path(KWS), options)
    assert moved.moves, "no relocation was placed apart"
    assert moved.plan.arena_bytes < fixed.plan.arena_bytes
    assert result.arena_bytes == arena.plan.arena_bytes == moved.plan.arena_bytes
    check_plan(moved.requests, moved.plan, moved.buffers.inplace)
    # every move puts a tensor written by one step where the next steps read it, within the arena
    for move in moved.moves:
        assert min(move.source, move.target) >= 0 and max(move.source, move.target) + move.size <= moved.arena_bytes
    source = result.files[f"{result.name}.c"]
    assert source.count("nn2c_move(") == len(moved.moves)
    reported = schedule_dict(result)["relocations"]  # the CLI summary, --json and the report
    assert [(r["after_step"], r["bytes"]) for r in reported] == [(m.step, m.size) for m in moved.moves]


def test_no_relocation_where_it_saves_nothing() -> None:
    """A model whose in-place plan is already at the live-bytes bound keeps its tensors still."""
    result = compile_model(model_path("tflite_micro/micro_speech_quantized.tflite"), CompileOptions(schedule="layer"))
    assert "nn2c_move(" not in result.files[f"{result.name}.c"]


@pytest.mark.parametrize("target", ["host", "cortex-m4"])
def test_relocated_kws_matches_tflm(target: str, tmp_path: Path) -> None:
    options = CompileOptions(schedule="layer", target=target)
    report = verify_model(model_path(KWS), count=2, seed=5, references=("tflm",), workdir=tmp_path / "c",
                          options=options)
    assert "tflm" not in report.skipped, report.skipped
    assert report.comparisons and all(c.mismatches == 0 for c in report.comparisons)


# The same check on the Cortex-M4 in QEMU, where nn2c_move's whole 32-byte blocks are LDM / STM of eight
# registers (NN2C_MOVE_LDM): a fake model folder whose invoke runs the checks and reports the failures.
MOVE_QEMU_SOURCE = r"""
#include <stdint.h>
#include <string.h>
#include "nn2c_common.h"
#include "fake.h"
FAKE_API

static uint8_t a[400] NN2C_ALIGNED(16), b[400] NN2C_ALIGNED(16);

static int check(size_t dst, size_t src, size_t n) {
    for (size_t i = 0; i < sizeof a; ++i) a[i] = b[i] = (uint8_t)(i * 131u + 7u);
    nn2c_move(a + dst, a + src, n);
    memmove(b + dst, b + src, n);
    return memcmp(a, b, sizeof a) != 0;
}

int fake_invoke(void) {
    int bad = 0;
    for (size_t n = 0; n <= 300; n += 13)
        for (size_t dst = 0; dst <= 80; dst += 4)
            for (size_t src = 0; src <= 80; src += 4)
                bad += check(dst, src, n);
    bad += check(3, 0, 100) + check(0, 5, 100) + check(100, 0, 299) + check(0, 100, 299);
    fake_buffer[0] = (uint8_t)(bad > 255 ? 255 : bad);
    fake_buffer[1] = 0xA5;
    return FAKE_OK;
}
"""


def test_nn2c_move_equals_memmove_on_cortex_m4(tmp_path: Path) -> None:
    from nn2c.targets.cortexm_build import build_image, missing_tools
    from nn2c.targets.cortexm_run import run_image
    from tests.test_cortexm import FAKE_API, FAKE_HEADER

    missing = missing_tools()
    if missing:
        pytest.skip(f"SKIPPED LOUDLY: {', '.join(missing)} not installed")
    folder = tmp_path / "fake"
    folder.mkdir()
    (folder / "fake.h").write_text(FAKE_HEADER)
    (folder / "fake.c").write_text(MOVE_QEMU_SOURCE.replace("FAKE_API\n", FAKE_API))
    kernels = Path(str(resources.files("nn2c") / "kernels"))
    for header in ("nn2c_common.h", "nn2c_config.h"):
        shutil.copy(kernels / header, folder / header)
    image = build_image(folder, "fake", [bytes(4)], "cortex-m4", tmp_path / "build")
    assert not image.warnings, image.warnings
    text = subprocess.run(["arm-none-eabi-objdump", "-d", str(image.elf)], capture_output=True, text=True).stdout
    assert "ldmdb" in text and "stmdb" in text  # the LDM / STM blocks are there, both ways
    run = run_image(image)
    assert run.outputs[(0, 0)][:2] == bytes([0, 0xA5]), run.outputs[(0, 0)]
