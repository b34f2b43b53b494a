"""What a compile returns (CompileResult) and how its folder is written (write_output, atomically)."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nn2c.codegen.render import GeneratedCode
from nn2c.errors import UsageError
from nn2c.ir import Graph
from nn2c.memory.schedule import Schedule
from nn2c.options import CompileOptions
from nn2c.passes.pipeline import PipelineReport


@dataclass
class CompileResult:
    name: str
    graph: Graph
    code: GeneratedCode
    files: dict[str, str] = field(default_factory=dict)
    passes: PipelineReport | None = None
    quant: Any = None  # nn2c.quant report (per-tensor SQNR) when the model was quantized
    source: str = ""  # the model's file name (no directories: reports stay free of absolute paths)
    options: CompileOptions | None = None
    ops_before: dict[str, int] | None = None  # operators per type as imported, before the graph passes
    tflite: bytes | None = None  # the quantized model as a .tflite flatbuffer (CompileOptions.write_tflite)
    onnx: bytes | None = None  # the pruned ONNX model (CompileOptions.write_onnx)
    schedule: Schedule | None = None  # the execution order the code follows
    prune: Any = None  # nn2c.prune.PruneReport when CompileOptions.prune was given

    @property
    def arena_bytes(self) -> int:
        return self.code.plan.arena_bytes

    @property
    def ram_bytes(self) -> int:
        """Static RAM of the generated code: the arena plus state tensors."""
        return self.code.plan.arena_bytes + self.code.state_bytes

    def write(self, out_dir: str | Path, force: bool = False) -> Path:
        """Write the C folder, and the .tflite / .onnx model too when CompileOptions.write_tflite /
        write_onnx asked for it."""
        folder = write_output(self.files, out_dir, force)
        from nn2c.export.tflite_writer import write_bytes_atomically

        if self.tflite is not None and self.options is not None and self.options.write_tflite:
            write_bytes_atomically(self.tflite, self.options.write_tflite)
        if self.onnx is not None and self.options is not None and self.options.write_onnx:
            write_bytes_atomically(self.onnx, self.options.write_onnx)
        return folder


def write_output(files: dict[str, str], out_dir: str | Path, force: bool = False) -> Path:
    """Write all files into out_dir atomically: a failure leaves no partial folder behind."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not force and (not out_dir.is_dir() or any(out_dir.iterdir())):
            raise UsageError(f"{out_dir}: exists and is not empty; pass --force to replace it")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        for relative, text in sorted(files.items()):
            target = (staging / relative).resolve()
            if staging.resolve() not in target.parents:
                raise UsageError(f"refusing to write {relative!r} outside the output folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "w", encoding="ascii", newline="\n") as handle:
                handle.write(text)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out_dir
