"""Build an output folder with the host C compiler and run it on raw tensors."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

from nn2c.errors import BuildError
from nn2c.ir import Value, numpy_dtype

WARNING_FLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror"]


def c_compiler() -> str:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise BuildError("no C compiler found; install gcc or set CC")
    return compiler


def c_sources(out_dir: Path) -> list[str]:
    """The folder's own C files and its kernels; not a user's build tree inside it (CMake's probes)."""
    return sorted(str(p) for p in [*out_dir.glob("*.c"), *(out_dir / "nn2c_kernels").glob("*.c")])


def build(out_dir: str | Path, exe: str | Path | None = None, extra_flags: list[str] | None = None,
          opt: str = "-O2") -> Path:
    """Compile every .c file of out_dir (subfolders too) into one program."""
    out_dir = Path(out_dir)
    exe = Path(exe) if exe else out_dir / "model_runner"
    command = [c_compiler(), *WARNING_FLAGS, opt, *(extra_flags or []), "-I", str(out_dir),
               *c_sources(out_dir), "-o", str(exe), "-lm"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        first = (result.stderr.strip().splitlines() or ["(no message)"])[:20]
        raise BuildError(f"C compiler failed on {out_dir}: " + "\n".join(first))
    return exe


def run(exe: str | Path, records: list[list[np.ndarray]], inputs: list[Value], outputs: list[Value],
        timeout: float = 600) -> list[list[np.ndarray]]:
    """Feed records (one array per model input) to the runner; returns one list of outputs per record."""
    payload = b"".join(
        np.ascontiguousarray(array, dtype=numpy_dtype(value.type.dtype)).tobytes()
        for record in records
        for array, value in zip(record, inputs, strict=True)
    )
    result = subprocess.run([str(exe)], input=payload, capture_output=True, timeout=timeout)
    if result.returncode != 0:
        raise BuildError(
            f"{exe} exited with status {result.returncode}: {result.stderr.decode(errors='replace')[:2000]}"
        )
    record_bytes = sum(v.type.num_bytes for v in outputs)
    if len(result.stdout) != record_bytes * len(records):
        raise BuildError(f"{exe} wrote {len(result.stdout)} bytes, expected {record_bytes * len(records)}")
    results = []
    offset = 0
    for _ in records:
        arrays = []
        for value in outputs:
            n = value.type.num_bytes
            arrays.append(
                np.frombuffer(result.stdout[offset : offset + n], dtype=numpy_dtype(value.type.dtype))
                .reshape(value.type.shape).copy()
            )
            offset += n
        results.append(arrays)
    return results
