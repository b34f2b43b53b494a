"""ONNX backend cases built with ASan + UBSan and run on the case's inputs and on extreme inputs.

The sanitizer mode of bench/onnx_backend.py (`--sanitize`) and tests/test_onnx_sanitize.py: a case
that compiles is built with tests/c_safety.SANITIZE_FLAGS (-fsanitize=address,undefined,
-fno-sanitize-recover=all, at -O1) and run, one process per record, on the case's own inputs (whose
outputs are judged as in the plain run) and on extreme inputs of the same shapes and dtypes (floats:
0, +-3e38, +-inf, NaN, +-1e-40 (a denormal); integers: their minimum, maximum, 0 and -1; bools:
both; then two records that mix these element by element). Outputs on extreme inputs are not
compared: any sanitizer report, signal, nonzero status or wrong number of output bytes there is a
finding (status SANITIZER).
"""

from __future__ import annotations

import math
import os
import re
import resource
import subprocess
import tempfile
import zlib
from pathlib import Path

import numpy as np

from nn2c.api import CompileResult
from nn2c.errors import BuildError
from nn2c.ir import Graph, Value, numpy_dtype
from nn2c.verify.build import build
from nn2c.verify.inputs import random_records
from nn2c.verify.onnx_oracle import from_model_layout
from tests.c_safety import SANITIZE_FLAGS
from tests.onnx_backend_cases import (
    CASE_MEMORY_LIMIT,
    CASE_TIMEOUT,
    BackendCase,
    Outcome,
    _array,
    _compiler_error,
    _outcome,
    compile_and_build,
    judge_outputs,
    to_graph_layout,
)

SANITIZER = "sanitizer"  # a sanitizer report, a signal or a failed run of the sanitized program

FLOAT_EXTREMES = (0.0, 3.0e38, -3.0e38, np.inf, -np.inf, np.nan, 1e-40, -1e-40)
MIXED_RECORDS = 2
# no leak check (the generated code never allocates; LeakSanitizer needs ptrace); ASan's own limit
# instead of RLIMIT_AS, which its shadow memory reservation cannot live under
SANITIZER_ENV = {"ASAN_OPTIONS": f"detect_leaks=0:hard_rss_limit_mb={CASE_MEMORY_LIMIT >> 20}",
                 "UBSAN_OPTIONS": "print_stacktrace=1"}


def extreme_values(dtype: np.dtype) -> list:
    if dtype.kind == "f":
        return list(FLOAT_EXTREMES)
    if dtype.kind == "b":
        return [False, True]
    info = np.iinfo(dtype)
    return [info.min, info.max, 0] + ([-1] if info.min < 0 else [])


def extreme_records(inputs: list[Value], seed: int = 0) -> list[tuple[str, list[np.ndarray]]]:
    """(label, one array per input): record k fills every input with the k-th extreme of its dtype
    (cycling through the shorter lists), then MIXED_RECORDS records draw each element from them."""
    dtypes = [numpy_dtype(v.type.dtype) for v in inputs]
    values = [extreme_values(d) for d in dtypes]
    records = []
    for k in range(max((len(v) for v in values), default=0)):
        record = [np.full(v.type.shape, vals[k % len(vals)], dtype=d) for v, d, vals in zip(inputs, dtypes, values,
                                                                                              strict=True)]
        records.append(("extreme " + ", ".join(str(vals[k % len(vals)]) for vals in values), record))
    rng = np.random.default_rng(seed)
    for k in range(MIXED_RECORDS):
        record = [np.array(vals, dtype=d)[rng.integers(0, len(vals), size=v.type.shape)]
                  for v, d, vals in zip(inputs, dtypes, values, strict=True)]
        records.append((f"mixed extremes #{k}", record))
    return records


SANITIZE_OPT = "-O1"
# the kernels' objects, compiled once per content and flags (nn2c.verify.build), also outside the test suite
# (bench/onnx_backend.py --sanitize)
KERNEL_CACHE = Path(tempfile.gettempdir()) / f"nn2c_sanitized_kernels_{os.getuid()}"


def build_sanitized(out_dir: Path, exe: Path) -> Path:
    """The folder's program with ASan + UBSan, -Wall -Wextra -Werror; kernels from KERNEL_CACHE."""
    return build(out_dir, exe, extra_flags=SANITIZE_FLAGS, opt=SANITIZE_OPT, object_cache=KERNEL_CACHE)


def _lift_memory_limit() -> None:
    """The soft RLIMIT_AS of the case process back to its hard limit (ASan reserves terabytes of
    address space for its shadow memory; hard_rss_limit_mb bounds the program instead)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def run_sanitized(exe: Path, record: list[np.ndarray], graph: Graph, timeout: float) -> tuple[list[np.ndarray] | None,
                                                                                              str]:
    """(outputs, "") or (None, what went wrong: the sanitizer's first report line, or the status)."""
    payload = b"".join(np.ascontiguousarray(a, dtype=numpy_dtype(v.type.dtype)).tobytes()
                       for a, v in zip(record, graph.inputs, strict=True))
    result = subprocess.run([str(exe)], input=payload, capture_output=True, timeout=timeout,
                            env={**os.environ, **SANITIZER_ENV}, preexec_fn=_lift_memory_limit)
    if result.returncode != 0:
        return None, sanitizer_summary(result.stderr.decode(errors="replace"), result.returncode)
    sizes = [v.type.num_bytes for v in graph.outputs]
    if len(result.stdout) != sum(sizes):
        return None, f"wrote {len(result.stdout)} bytes, expected {sum(sizes)}"
    outputs, offset = [], 0
    for value, size in zip(graph.outputs, sizes, strict=True):
        outputs.append(np.frombuffer(result.stdout[offset:offset + size], dtype=numpy_dtype(value.type.dtype))
                       .reshape(value.type.shape).copy())
        offset += size
    return outputs, ""


_UBSAN = re.compile(r"([\w.]+\.c):(\d+):\d+: runtime error: (.*)")
_ASAN = re.compile(r"SUMMARY: AddressSanitizer: ([\w-]+) .*?([\w.]+\.c):(\d+) in (\w+)")


def sanitizer_summary(stderr: str, status: int) -> str:
    """One line: the sanitizer's finding (kind, file:line, function) or how the program ended."""
    ub = _UBSAN.search(stderr)
    if ub:
        frame = re.search(r"#0 0x[0-9a-f]+ in (\w+)", stderr)
        where = f" in {frame.group(1)}" if frame else ""
        return f"UBSan: {ub.group(3)[:160]} at {ub.group(1)}:{ub.group(2)}{where}"
    asan = _ASAN.search(stderr)
    if asan:
        return f"ASan: {asan.group(1)} at {asan.group(2)}:{asan.group(3)} in {asan.group(4)}"
    if "AddressSanitizer" in stderr:
        line = next(x for x in stderr.splitlines() if "AddressSanitizer" in x)
        return "ASan: " + re.sub(r"^=+\d+=+", "", line).strip()[:200]
    if status < 0:
        return f"killed by signal {-status}"
    return f"exited with status {status}: {stderr.strip()[:160]}"


def sanitizer_reason(summary: str) -> str:
    """The finding without addresses and values, so that one bug groups into one reason."""
    text = re.sub(r"0x[0-9a-f]+", "…", summary)
    text = re.sub(r"-?\d+(\.\d+)?(e[+-]?\d+)?", "N", text)
    return text[:200]


def run_case_sanitized(case: BackendCase, workdir: Path) -> Outcome:
    """Compile; build with ASan + UBSan; run the case's inputs (judged) and the extreme records."""
    built = compile_and_build(case, workdir, build_sanitized)
    if isinstance(built, Outcome):
        return built
    graph, exe = built
    records = [("the case's inputs", to_graph_layout(graph, [_array(a) for a in case.inputs]))]
    records += extreme_records(graph.inputs, seed=zlib.crc32(case.name.encode()))
    judged = None
    for label, record in records:
        outputs, problem = run_sanitized(exe, record, graph, timeout=CASE_TIMEOUT)
        if outputs is None:
            return _outcome(case, SANITIZER, sanitizer_reason(problem), f"on {label}: {problem}")
        if judged is None:
            judged = judge_outputs(case, outputs, from_model_layout(graph, [_array(a) for a in case.expected]))
    assert judged is not None
    return judged


RUN_LIMIT_BYTES = 256 << 20


def build_and_run_sanitized(result: CompileResult, workdir: Path, timeout: float = 30.0) -> str | None:
    """For fuzz campaigns (nn2c.fuzz.campaign's `execute`): build an accepted model's C with ASan +
    UBSan and run it on one seeded random record and the extreme records. None when all of it is
    clean, else what went wrong, in one line. A model whose inputs hold more than RUN_LIMIT_BYTES is not run
    (a fuzzed shape of 65535 x 128 x 128: its records alone would take gigabytes here): NOT_RUN, which the
    campaign does not count as executed."""
    from nn2c.fuzz.campaign import NOT_RUN

    graph = result.graph
    if sum(math.prod(v.type.shape) * 8 for v in graph.inputs) > RUN_LIMIT_BYTES:  # (int64 while drawn)
        return NOT_RUN
    result.write(workdir, force=True)
    try:
        exe = build_sanitized(workdir, workdir / "runner")
    except BuildError as exc:
        return f"C build failed: {_compiler_error(exc)}"
    records = [("random inputs", random_records(graph.inputs, 1, seed=0)[0]), *extreme_records(graph.inputs)]
    for label, record in records:
        try:
            outputs, problem = run_sanitized(exe, record, graph, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"no result within {timeout:g} s on {label}"
        if outputs is None:
            return f"{problem} on {label}"
    return None
