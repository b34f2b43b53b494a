"""nn2c's side of the Keras zoo: convert it (tests/keras_zoo_build.py, run by tensorflow's Python),
then compile each .tflite, build it, run it on seeded inputs and compare with TFLite Micro.

Shared by tests/test_keras_zoo.py (a subset, in CI) and bench/keras_zoo.py (everything, the table in
docs/zoo-keras.md). tensorflow clashes with nn2c's pins (numpy, protobuf), so it lives in its own
venv: NN2C_TF_PYTHON names its python, else .venv-tf/bin/python (made by `make tf-venv`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nn2c.api import CompileOptions, compile_model
from nn2c.ir import Value
from nn2c.verify.compare import OutputComparison, compare_outputs, run_compiled
from nn2c.verify.inputs import random_input

ROOT = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = Path(__file__).resolve().parent / "keras_zoo_build.py"
RTOL, ATOL = 1e-4, 1e-5  # float outputs; integer outputs must be equal
RECORDS, SEED = 3, 0
# TFLM's interpreter does not return on some Keras loops (a WHILE writing a sequence); such models run
# it in a child process that is stopped after this long, and LiteRT judges them instead
TFLM_TIMEOUT_S = 60


def tf_python() -> Path:
    """The python of the tensorflow venv (it may not exist: callers check)."""
    named = os.environ.get("NN2C_TF_PYTHON")
    return Path(named) if named else ROOT / ".venv-tf" / "bin" / "python"


def tf_build(tmp_path_factory: pytest.TempPathFactory, script: str) -> Path:
    """Run tests/SCRIPT (a model builder) with tensorflow's python into a fresh folder."""
    python = tf_python()
    if not python.exists():
        pytest.skip(f"SKIPPED LOUDLY: no tensorflow venv ({python} does not exist); make it with `make tf-venv`")
    out = tmp_path_factory.mktemp(Path(script).stem)
    done = subprocess.run([str(python), str(Path(__file__).with_name(script)), str(out)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def build_zoo(python: Path, out: Path, selection: str | None = None) -> dict[str, Any]:
    """Convert the zoo (or `selection`, as keras_zoo_build.py --only takes it) into out; the manifest."""
    command = [str(python), str(BUILD_SCRIPT), str(out)] + (["--only", selection] if selection else [])
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{BUILD_SCRIPT.name} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    manifest: dict[str, Any] = json.loads((out / "manifest.json").read_text())
    return manifest


def tflite_operators(path: Path) -> list[str]:
    """The builtin operators of every subgraph (loop bodies too), sorted."""
    import tflite

    from nn2c.frontends.tflite_frontend import _operator_names

    model = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    names = set()
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for i in range(graph.OperatorsLength()):
            code = model.OperatorCodes(graph.Operators(i).OpcodeIndex())
            builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            names.add(_operator_names().get(builtin, f"UNKNOWN_{builtin}"))
    return sorted(names)


def _has_loop(path: Path) -> bool:
    return "WHILE" in tflite_operators(path)


def _run_tflm_in_child(path: Path, records: list[list[np.ndarray]], num_outputs: int) -> list[list[np.ndarray]]:
    """run_tflm in a child process stopped after TFLM_TIMEOUT_S (TimeoutError)."""
    with tempfile.TemporaryDirectory(prefix="nn2c_tflm_") as tmp:
        request, response = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        np.savez(request, **{f"r{i}_{k}": a for i, rec in enumerate(records) for k, a in enumerate(rec)})  # type: ignore[arg-type]
        script = (
            "import sys, numpy as np\n"
            "from nn2c.verify.oracle import run_tflm\n"
            "data = np.load(sys.argv[2])\n"
            f"records = [[data[f'r{{i}}_{{k}}'] for k in range({len(records[0])})] for i in range({len(records)})]\n"
            f"out = run_tflm(sys.argv[1], records, {num_outputs})\n"
            "np.savez(sys.argv[3], **{f'r{i}_{k}': a for i, rec in enumerate(out) for k, a in enumerate(rec)})\n"
        )
        try:
            done = subprocess.run([sys.executable, "-c", script, str(path), str(request), str(response)],
                                  capture_output=True, text=True, timeout=TFLM_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"TFLM gave no result within {TFLM_TIMEOUT_S} s") from None
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
            raise RuntimeError(lines[-1][:200])
        data = np.load(response)
        return [[data[f"r{i}_{k}"] for k in range(num_outputs)] for i in range(len(records))]


def reference_outputs(path: Path, records: list[list[np.ndarray]], num_outputs: int
                      ) -> tuple[str, str, list[list[np.ndarray]]]:
    """(reference, why not TFLM or "", outputs): TFLM, or LiteRT where TFLM cannot run the model."""
    from nn2c.verify.oracle import run_litert, run_tflm

    try:
        if _has_loop(path):
            return "tflm", "", _run_tflm_in_child(path, records, num_outputs)
        return "tflm", "", run_tflm(path, records, num_outputs)
    except Exception as exc:  # TFLM refused or hung: LiteRT's reference kernels judge, and we say why
        return "litert", _why_tflm_failed(path, exc), run_litert(path, records, num_outputs)


def _why_tflm_failed(path: Path, exc: Exception) -> str:
    """The operators TFLM has no kernel for (its own error only says that allocation failed), or its error."""
    from tests.test_tflm_coverage import tflm_registered_builtins

    lacking = sorted(set(tflite_operators(path)) - tflm_registered_builtins())
    if lacking and not isinstance(exc, TimeoutError):
        return f"TFLM has no {', '.join(lacking)} kernel"
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:160] if str(exc).strip() else ''}"


def model_records(inputs: list[Value], sample: str, count: int = RECORDS, seed: int = SEED
                  ) -> list[list[np.ndarray]]:
    """Seeded inputs: float inputs drawn as the model expects them (the manifest's input_sample, the
    distribution of the representative data: "pixels" 0..255 before a Rescaling layer, "unit" -1..1,
    "normal"), integer inputs over their whole range."""
    rng = np.random.default_rng(seed)

    def one(value: Value) -> np.ndarray:
        shape = value.type.shape
        if value.type.dtype != "float32":
            return random_input(value, rng)
        if sample == "pixels":
            return rng.uniform(0, 255, shape).astype(np.float32)
        if sample == "unit":
            return rng.uniform(-1, 1, shape).astype(np.float32)
        return rng.standard_normal(shape).astype(np.float32)

    return [[one(v) for v in inputs] for _ in range(count)]


@dataclass
class Check:
    """One converted model through nn2c against its reference."""

    reference: str
    why_not_tflm: str
    comparisons: list[OutputComparison] = field(default_factory=list)
    arena: int = 0
    weights: int = 0
    input_dependent: bool = False  # the reference's outputs differ between the records
    io_dtypes: list[str] = field(default_factory=list)  # of the model's inputs, then its outputs

    @property
    def mismatches(self) -> int:
        return sum(c.mismatches for c in self.comparisons)

    @property
    def max_rel(self) -> float:
        return max((c.max_rel_diff for c in self.comparisons), default=0.0)

    @property
    def max_abs(self) -> float:
        return max((c.max_abs_diff for c in self.comparisons), default=0.0)


def check_model(path: Path, sample: str, workdir: Path) -> Check:
    """Compile at -O2, build, run RECORDS seeded inputs, compare (NN2CError when nn2c refuses it)."""
    result = compile_model(path, CompileOptions())
    records = model_records(result.graph.inputs, sample)
    ours = run_compiled(result, records, workdir)
    reference, why, theirs = reference_outputs(path, records, len(result.graph.outputs))
    comparisons = compare_outputs(reference, result.graph.outputs, ours, theirs, RTOL, ATOL)
    # a model whose output ignores its input (signal lost in the random weights) would test little
    varies = any(not np.array_equal(theirs[0][k], rec[k]) for rec in theirs[1:] for k in range(len(rec)))
    io_dtypes = [v.type.dtype for v in (*result.graph.inputs, *result.graph.outputs)]
    return Check(reference, why, comparisons, result.arena_bytes, result.code.weight_bytes, varies, io_dtypes)
