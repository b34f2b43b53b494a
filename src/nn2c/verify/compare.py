"""Compile, build, run seeded inputs and compare with the reference runtimes."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nn2c.api import CompileOptions, CompileResult, compile_model
from nn2c.ir import Value, numpy_dtype
from nn2c.verify.build import build, run
from nn2c.verify.inputs import random_records

# integer outputs judged by LiteRT (TFLM not installed): LiteRT's reference kernels round some steps
# differently from TFLM, so the bit-exact outputs can differ from LiteRT's by one (ad01_int8)
LITERT_INT_TOLERANCE = 1


@dataclass
class OutputComparison:
    reference: str
    output: int
    name: str
    max_abs_diff: float
    max_rel_diff: float
    mismatches: int
    elements: int
    int_tolerance: int = 0  # integer outputs: the largest difference that is not a mismatch


@dataclass
class VerifyReport:
    model: str
    records: int
    comparisons: list[OutputComparison] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # reference -> why it could not run
    arena_bytes: int = 0
    missing: list[str] = field(default_factory=list)  # references not installed (also in skipped)

    @property
    def judge(self) -> str | None:
        """The reference that decides pass/fail: TFLM (the bit-exact target) when it runs the model."""
        refs = [c.reference for c in self.comparisons]
        return "tflm" if "tflm" in refs else (refs[0] if refs else None)

    def passed(self) -> bool:
        judged = [c for c in self.comparisons if c.reference == self.judge]
        return bool(judged) and all(c.mismatches == 0 for c in judged)


def compare_arrays(ours: np.ndarray, ref: np.ndarray, float_rtol: float, float_atol: float,
                   int_atol: int = 0) -> tuple[float, float, int]:
    ours = np.asarray(ours)
    ref = np.asarray(ref).reshape(ours.shape)
    if np.issubdtype(ours.dtype, np.floating):
        a, b = ours.astype(np.float64), ref.astype(np.float64)
        with np.errstate(invalid="ignore"):  # inf - inf
            diff = np.abs(a - b)
        finite_ref = np.isfinite(b)
        scale = np.where(finite_ref, np.maximum(np.abs(b), 1e-30), 1.0)
        # within tolerance of a finite reference; an infinite one must be matched exactly; NaN against
        # NaN agrees (as numpy.testing.assert_allclose), NaN against a number does not (a plain
        # `diff > tolerance` would let it through)
        with np.errstate(invalid="ignore"):
            close = np.where(finite_ref, diff <= float_atol + float_rtol * np.abs(b), a == b)
        same = close | (np.isnan(a) & np.isnan(b))
        finite = np.where(np.isfinite(diff), diff, 0.0)
        return float(finite.max(initial=0)), float((finite / scale).max(initial=0)), int((~same).sum())
    diff = np.abs(ours.astype(np.int64) - ref.astype(np.int64))
    return float(diff.max(initial=0)), 0.0, int((diff > int_atol).sum())


def written_mask(value: Value, record: int, outputs: list[Value], theirs: list[np.ndarray]) -> np.ndarray | None:
    """Which elements of graph output `value` TFLM writes in record `record` of a stream that starts
    from the reset state (None: all of them). SignalFramer writes a frame once its buffer holds
    frame_size samples, SignalStacker its output when its valid flag is true; TFLM leaves the bytes
    of an earlier invocation where it does not write (nn2c writes zeros)."""
    node = value.producer
    if node is None or node.outputs[0] is not value:
        return None
    a = node.attrs
    if node.op == "SIGNAL_FRAMER":
        size, step = int(a["frame_size"]), int(a["frame_step"])
        shape = value.type.shape
        n_frames = shape[-2]
        initial = size - step if a.get("prefill") else 0
        produced = [initial + (record * n_frames + f + 1) * step >= size for f in range(n_frames)]
        mask = np.zeros(shape, bool)
        mask[..., np.array(produced, bool), :] = True
        return mask
    if node.op == "SIGNAL_STACKER" and len(node.outputs) == 2 and node.outputs[1] in outputs:
        flag = np.asarray(theirs[outputs.index(node.outputs[1])]).any()
        return None if flag else np.zeros(value.type.shape, bool)
    return None


def compare_outputs(reference: str, outputs: list[Value], ours: list[list[np.ndarray]],
                    theirs: list[list[np.ndarray]], float_rtol: float, float_atol: float,
                    int_atol: int = 0) -> list[OutputComparison]:
    """Per model output, the worst difference over all records (ours against one reference), the
    records being one stream from the reset state; a Framer / Stacker output only where TFLM
    writes it (written_mask)."""
    comparisons = []
    for k, value in enumerate(outputs):
        worst = OutputComparison(reference, k, value.name, 0.0, 0.0, 0, 0)
        if not np.issubdtype(numpy_dtype(value.type.dtype), np.floating):
            worst.int_tolerance = int_atol
        for record, (ours_rec, theirs_rec) in enumerate(zip(ours, theirs, strict=True)):
            a, b = np.asarray(ours_rec[k]), np.asarray(theirs_rec[k]).reshape(np.shape(ours_rec[k]))
            mask = written_mask(value, record, outputs, theirs_rec)
            if mask is not None:
                a, b = a[mask], b[mask]
            abs_d, rel_d, bad = compare_arrays(a, b, float_rtol, float_atol, int_atol)
            worst.max_abs_diff = max(worst.max_abs_diff, abs_d)
            worst.max_rel_diff = max(worst.max_rel_diff, rel_d)
            worst.mismatches += bad
            worst.elements += a.size
        comparisons.append(worst)
    return comparisons


@dataclass
class IntEdges:
    """The inputs and outputs `--io int8` exposed as int8 where the model file has float32 (passes/int8_io.py):
    (index, scale, zero point). The references run the model file, so they are given the float inputs that
    quantize exactly to our int8 inputs, (q - zero point) * scale, and their float outputs, dequantized by
    the model's last DEQUANTIZE, go back to int8 the same way: both conversions are exact."""

    inputs: list[tuple[int, float, int]] = field(default_factory=list)
    outputs: list[tuple[int, float, int]] = field(default_factory=list)

    @classmethod
    def of(cls, model: str | Path, graph, options: CompileOptions | None) -> IntEdges:
        """The edges of `graph` compiled from `model` with `options` (none without --io int8)."""
        from nn2c.compile import load_model

        if options is None or options.io != "int8":
            return cls()
        original = load_model(model)

        def edges(ours: list[Value], theirs: list[Value]) -> list[tuple[int, float, int]]:
            return [(k, float(v.type.quant.scale[0]), int(v.type.quant.zero_point[0]))
                    for k, (v, o) in enumerate(zip(ours, theirs, strict=True))
                    if v.type.dtype == "int8" and o.type.dtype == "float32" and v.type.quant is not None]

        return cls(edges(graph.inputs, original.inputs), edges(graph.outputs, original.outputs))

    def inputs_of(self, records: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
        out = [list(record) for record in records]
        for record in out:
            for k, scale, zero_point in self.inputs:
                record[k] = ((record[k].astype(np.float32) - np.float32(zero_point)) * np.float32(scale))
        return out

    def outputs_of(self, theirs: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
        out = [list(record) for record in theirs]
        for record in out:
            for k, scale, zero_point in self.outputs:
                q = np.round(np.asarray(record[k], dtype=np.float32) / np.float32(scale)) + zero_point
                record[k] = np.clip(q, -128, 127).astype(np.int8)
        return out


def run_compiled(result: CompileResult, records: list[list[np.ndarray]], workdir: str | Path | None = None
                 ) -> list[list[np.ndarray]]:
    """Write the compiled model (into workdir, or a temporary folder), build it with the host compiler
    and run it on the records."""
    with tempfile.TemporaryDirectory(prefix="nn2c_verify_") as tmp:
        out_dir = Path(workdir) if workdir else Path(tmp) / result.name
        result.write(out_dir, force=True)
        exe = build(out_dir, Path(tmp) / "runner")
        return run(exe, records, result.graph.inputs, result.graph.outputs)


def verify_model(model: str | Path, count: int = 3, seed: int = 0, references: tuple[str, ...] = ("tflm", "litert"),
                 float_rtol: float = 1e-5, float_atol: float = 1e-6, workdir: str | Path | None = None,
                 options: CompileOptions | None = None) -> VerifyReport:
    """Compare the compiled model with each reference that is installed and runs the model.

    A reference that is not installed is skipped (listed in report.missing); when none of them is
    installed, MissingReferenceError (a UsageError) says which extra to install, before compiling.
    Without TFLM, LiteRT judges, and integer outputs may differ from it by LITERT_INT_TOLERANCE:
    LiteRT's reference kernels round some fixed-point steps differently from TFLM.
    """
    from nn2c.verify.oracle import (
        REFERENCES,
        MissingReferenceError,
        missing_references,
        run_litert,
        run_tflm,
    )

    missing = missing_references(references)
    if references and len(missing) == len(references):
        raise MissingReferenceError(missing, nothing_to_compare=True)
    result: CompileResult = compile_model(model, options)
    graph = result.graph
    records = random_records(graph.inputs, count, seed)
    ours = run_compiled(result, records, workdir)
    exposed = IntEdges.of(model, graph, options)
    report = VerifyReport(str(model), count, arena_bytes=result.arena_bytes)
    runners = {"tflm": run_tflm, "litert": run_litert}
    for ref_name in references:
        try:
            if ref_name in missing:
                raise MissingReferenceError([ref_name])
            theirs = exposed.outputs_of(runners[ref_name](model, exposed.inputs_of(records), len(graph.outputs)))
        except MissingReferenceError as exc:  # not installed (or its import failed): say so, go on
            report.missing.append(ref_name)
            report.skipped[ref_name] = str(exc)
            continue
        except Exception as exc:  # the reference itself refuses some models (e.g. TFLM and hybrids)
            report.skipped[ref_name] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}"
            continue
        without_tflm = "tflm" in missing or "tflm" in report.missing
        int_atol = LITERT_INT_TOLERANCE if ref_name == "litert" and without_tflm else 0
        report.comparisons += compare_outputs(ref_name, graph.outputs, ours, theirs, float_rtol, float_atol,
                                              int_atol)
    if not report.comparisons and report.missing:
        # the installed references refused the model and the others are not installed
        refused = "; ".join(f"{REFERENCES[ref][0]} could not run this model: {why}"
                            for ref, why in report.skipped.items() if ref not in report.missing)
        raise MissingReferenceError(report.missing, refused, nothing_to_compare=True)
    return report
