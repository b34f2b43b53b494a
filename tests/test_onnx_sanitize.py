"""ONNX backend cases under ASan + UBSan, on their inputs and on extreme inputs.

bench/onnx_backend.py --sanitize runs every applicable case this way (tests/onnx_backend_sanitize.py)
and writes the figure into docs/onnx-backend.md; here: the harness itself, against real sanitizer
reports, and the cases whose generated code the sanitizers caught, each fixed at the root.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")

from nn2c.api import CompileOptions, compile_model
from nn2c.ir import TensorType, Value
from tests.onnx_backend_cases import PASS, applicable_cases, run_isolated
from tests.onnx_backend_sanitize import (
    FLOAT_EXTREMES,
    MIXED_RECORDS,
    build_and_run_sanitized,
    extreme_records,
    run_case_sanitized,
)


def _case(name: str):
    return next(c for c in applicable_cases() if c.name == name)


def test_extreme_records_cover_every_dtype():
    inputs = [Value("f", TensorType("float32", (3, 4))), Value("i", TensorType("int8", (5,))),
              Value("u", TensorType("uint8", (2,))), Value("b", TensorType("bool", (2, 2)))]
    records = extreme_records(inputs)
    assert len(records) == len(FLOAT_EXTREMES) + MIXED_RECORDS
    filled = [record for label, record in records if label.startswith("extreme")]
    floats = np.concatenate([r[0].ravel() for r in filled])
    assert np.isnan(floats).any() and np.isposinf(floats).any() and np.isneginf(floats).any()
    assert ((floats != 0) & (np.abs(floats) < np.finfo(np.float32).tiny)).any()  # a denormal
    assert np.abs(floats[np.isfinite(floats)]).max() > 1e38
    assert {-128, 127, 0, -1} <= {int(v) for r in filled for v in r[1]}
    assert {0, 255} <= {int(v) for r in filled for v in r[2]}
    assert {False, True} <= {bool(v) for r in filled for v in r[3].ravel()}
    for _, record in records:
        assert [a.shape for a in record] == [(3, 4), (5,), (2,), (2, 2)]
        assert [a.dtype for a in record] == [np.float32, np.int8, np.uint8, np.bool_]


def test_sanitizer_catches_an_overflow_in_generated_code(tmp_path):
    """The harness's oracle is real: the Abs kernel told to read one float more than the arena holds."""
    case = _case("test_abs")
    path = tmp_path / "abs.onnx"
    path.write_bytes(case.model.SerializeToString())
    result = compile_model(path, CompileOptions(name="model"))
    assert build_and_run_sanitized(result, tmp_path / "clean") is None
    source = result.files["model.c"]
    assert source.count(".count = 60,") == 1
    result.files["model.c"] = source.replace(".count = 60,", ".count = 61,")
    problem = build_and_run_sanitized(result, tmp_path / "broken")
    assert problem is not None
    assert problem.startswith("ASan: global-buffer-overflow at nn2c_math.c:"), problem
    assert "on random inputs" in problem


def test_a_backend_case_runs_clean_under_the_sanitizers():
    outcome = run_isolated(_case("test_mod_mixed_sign_int32"), runner=run_case_sanitized)
    assert outcome.status == PASS, outcome.summary()


def test_wide_params_fields_are_the_ones_the_kernel_headers_declare():
    """EmitContext refuses integer params fields outside int32 except WIDE_FIELDS: those must be
    exactly the scalar struct fields the kernel headers declare wider than int32_t."""
    import re
    from pathlib import Path

    import nn2c
    from nn2c.codegen.context import WIDE_FIELDS

    wide = set()
    for header in (Path(nn2c.__file__).parent / "kernels").glob("*.h"):
        for body in re.findall(r"typedef struct \{(.*?)\}", header.read_text(), flags=re.S):
            for _ctype, names in re.findall(r"^\s*(?:const\s+)?(u?int64_t|uint32_t|long)\s+([^;*(]+);", body, re.M):
                wide.update(re.sub(r"\[.*?\]", "", n).strip() for n in names.split(","))
    assert wide == set(WIDE_FIELDS)
