"""The debug build (`nn2c compile --debug`): a canary before the arena and a guard zone behind every
buffer, filled before the operator that first uses the buffer and checked after every operator.

On every repo model the debug build computes what TFLM computes (no kernel writes outside its
tensors); an out-of-bounds write planted into the generated code is caught and names the operator.
"""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.memory.arena import DEBUG_GUARD
from nn2c.verify.build import build, run
from nn2c.verify.inputs import random_records
from nn2c.verify.oracle import run_tflm
from tests.conftest import TFLM_MODELS, model_path
from tests.oracle_check import assert_records_match


@pytest.mark.parametrize("model", TFLM_MODELS)
def test_debug_build_guards_hold_and_results_equal_tflm(model, tmp_path):
    result = compile_model(model_path(model), CompileOptions(debug=True, plan_time_limit=5.0))
    source = result.files[f"{result.name}.c"]
    assert f"{result.name}_guard_check(" in source
    out = result.write(tmp_path / "out")
    exe = build(out, tmp_path / "debug_runner", opt="-O1")
    records = random_records(result.graph.inputs, 2, seed=7)
    ours = run(exe, records, result.graph.inputs, result.graph.outputs)  # exit 2 if a guard broke
    theirs = run_tflm(model_path(model), records, len(result.graph.outputs))
    assert_records_match(ours, theirs)


def _plant(source: str, name: str, step: int, statement: str) -> str:
    """Insert `statement` right before operator `step`'s guard check."""
    marker = f"if (!{name}_guard_check({step}))"
    assert marker in source
    return source.replace(marker, f"{statement}\n    {marker}", 1)


@pytest.mark.parametrize(("where", "expected_op"), [("behind", 3), ("canary", 5)])
def test_out_of_bounds_write_is_caught_and_names_the_operator(tmp_path, where, expected_op):
    # layer by layer, so that step k is operator k (the default streams kws's chain as one row group)
    result = compile_model(model_path("mlcommons_tiny/kws_ref_model.tflite"),
                           CompileOptions(debug=True, schedule="layer"))
    name = result.name
    out = result.write(tmp_path / "out")
    source = (out / f"{name}.c").read_text()
    if where == "behind":
        # one byte past the end of the first tensor operator 3 writes
        step_buffers = [r for r in result.code.buffers if r.first == expected_op and not r.name.startswith("s")]
        request = step_buffers[0]
        offset = DEBUG_GUARD + result.code.plan.offsets[request.name] + request.size - DEBUG_GUARD
        planted = f"{name}_arena[{offset}] ^= 1;"
    else:
        planted = f"{name}_arena[{DEBUG_GUARD - 1}] ^= 1;"  # just below the first tensor byte
    (out / f"{name}.c").write_text(_plant(source, name, expected_op, planted))
    exe = build(out, tmp_path / "runner", opt="-O1")
    record = random_records(result.graph.inputs, 1, seed=0)[0]
    payload = b"".join(np.ascontiguousarray(a).tobytes() for a in record)
    proc = subprocess.run([str(exe)], input=payload, capture_output=True, timeout=60)
    assert proc.returncode == 2
    assert re.search(rf"{name}: operator {expected_op} wrote outside its tensors", proc.stderr.decode())


def test_release_build_has_no_guards():
    result = compile_model(model_path("mlcommons_tiny/ad01_int8.tflite"))
    assert "guard" not in result.files[f"{result.name}.c"]
    assert "DEBUG" not in result.files[f"{result.name}.h"]
