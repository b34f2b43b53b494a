"""End to end on every real model in models/: compile, build with gcc, run seeded inputs, compare.

The oracle is TFLite Micro (bit-exact for integer outputs, 1e-5 relative for float). The hybrid
kws_ref_model_float32 is refused by TFLM, so LiteRT's reference kernels judge it.
"""

from __future__ import annotations

import pytest

from nn2c.verify.compare import verify_model
from tests.conftest import LARGE_MODELS, model_path
from tests.conftest import TFLM_MODELS as SMALL

TFLM_MODELS = SMALL + [pytest.param(m, marks=pytest.mark.slow) for m in LARGE_MODELS]


@pytest.mark.parametrize("model", TFLM_MODELS)
def test_model_matches_tflm(model, tmp_path):
    report = verify_model(model_path(model), count=3, seed=7, references=("tflm",),
                          workdir=tmp_path / "out")
    assert "tflm" not in report.skipped, report.skipped
    assert report.comparisons, "no outputs compared"
    for c in report.comparisons:
        assert c.elements > 0
        assert c.mismatches == 0, (
            f"output {c.output}: {c.mismatches}/{c.elements} values differ from TFLM "
            f"(max abs diff {c.max_abs_diff:g}, max rel diff {c.max_rel_diff:.3g})"
        )


def test_hybrid_model_matches_litert(tmp_path):
    """kws_ref_model_float32 has float activations and int8 weights; TFLM refuses it, LiteRT runs it.

    nn2c reproduces LiteRT's hybrid arithmetic (per-batch symmetric input quantization), so the
    outputs agree to float rounding.
    """
    report = verify_model(model_path("mlcommons_tiny/kws_ref_model_float32.tflite"), count=3, seed=7,
                          references=("tflm", "litert"), float_rtol=1e-5, float_atol=1e-6,
                          workdir=tmp_path / "out")
    assert "tflm" in report.skipped  # TFLM: "Hybrid models are not supported on TFLite Micro."
    assert report.comparisons and all(c.reference == "litert" for c in report.comparisons)
    for c in report.comparisons:
        assert c.mismatches == 0, f"max abs diff {c.max_abs_diff:g} against LiteRT"


@pytest.mark.parametrize("model", TFLM_MODELS)
def test_exact_planner_reaches_the_lower_bound_without_inplace(model):
    """Every buffer kept apart: the exact planner needs no more than the max live bytes (16 B aligned)."""
    from nn2c.api import CompileOptions, compile_model

    exact = compile_model(model_path(model), CompileOptions(planner="exact", inplace=False)).code
    greedy = compile_model(model_path(model), CompileOptions(planner="greedy", inplace=False)).code
    assert exact.plan.arena_bytes <= -(-exact.lower_bound_no_inplace // 16) * 16 + 16
    assert exact.plan.arena_bytes <= greedy.plan.arena_bytes


@pytest.mark.parametrize("model", ["mlcommons_tiny/vww_96_int8.tflite", "tflite_micro/person_detect.tflite",
                                   "mlcommons_tiny/kws_ref_model.tflite", "tinyengine/vww.tflite"])
def test_inplace_planning_beats_the_no_inplace_lower_bound(model):
    """Outputs written over dying inputs: the arena drops well below max live bytes of separate buffers
    (layer by layer: row groups lower the live bytes themselves)."""
    from nn2c.api import CompileOptions, compile_model

    code = compile_model(model_path(model), CompileOptions(schedule="layer")).code
    assert code.inplace, "no operator was planned in place"
    assert code.plan.arena_bytes <= 0.85 * code.lower_bound_no_inplace
