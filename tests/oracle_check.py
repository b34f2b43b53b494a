"""Test helpers: compile a model with nn2c and compare its outputs with TFLite Micro's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nn2c.verify.compare import VerifyReport, compare_arrays, verify_model


def assert_matches_tflm(model: bytes | str | Path, tmp_path: Path, records: int = 4, seed: int = 0,
                        rtol: float = 1e-5, atol: float = 1e-6, name: str = "model") -> VerifyReport:
    """Compile, build, run `records` seeded inputs in sequence; assert equality with TFLM.

    Integer outputs must be identical; float outputs within rtol (relative) + atol.
    """
    if isinstance(model, bytes):
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(model)
    else:
        path = Path(model)
    report = verify_model(path, count=records, seed=seed, references=("tflm",), float_rtol=rtol,
                          float_atol=atol, workdir=tmp_path / f"{name}_c")
    assert "tflm" not in report.skipped, f"TFLM could not run the model: {report.skipped['tflm']}"
    bad = [c for c in report.comparisons if c.mismatches]
    assert not bad, "; ".join(
        f"output {c.output}: {c.mismatches}/{c.elements} values differ, max abs diff {c.max_abs_diff:g}"
        for c in bad
    )
    return report


def assert_records_match(ours: list[list[np.ndarray]], theirs: list[list[np.ndarray]], rtol: float = 1e-5,
                         atol: float = 1e-6) -> None:
    """Outputs of already-run records: integers identical, floats within rtol (relative) + atol."""
    assert len(ours) == len(theirs)
    for k, (our_rec, their_rec) in enumerate(zip(ours, theirs, strict=True)):
        for j, (a, b) in enumerate(zip(our_rec, their_rec, strict=True)):
            max_abs, _, bad = compare_arrays(a, b, rtol, atol)
            assert bad == 0, f"record {k} output {j}: {bad}/{a.size} values differ, max abs diff {max_abs:g}"


def tflm_with_reset(model: bytes, records: list[list[np.ndarray]], outputs: int, reset_at: int
                    ) -> list[list[np.ndarray]]:
    """TFLM's outputs for records run in sequence on one interpreter, reset (MicroInterpreter::Reset)
    before record `reset_at` (-1: never)."""
    from tflite_micro.python.tflite_micro import runtime

    interpreter = runtime.Interpreter.from_bytes(model, arena_size=1 << 20)
    results = []
    for k, record in enumerate(records):
        if k == reset_at:
            interpreter.reset()
        for i, array in enumerate(record):
            interpreter.set_input(array, i)
        interpreter.invoke()
        results.append([np.array(interpreter.get_output(i)) for i in range(outputs)])
    return results
