"""Shared parts of the generated-code safety tests: extreme inputs, and the injection assertion
(what a model names never reaches the C compiler)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np


def assert_no_injected_code(files: dict[str, str], payloads: tuple[str, ...]) -> None:
    """Every .c/.h file is ASCII without trigraphs or line splices, comments are closed where they
    open, and none of `payloads` appears outside a comment."""
    for name, text in files.items():
        if not name.endswith((".c", ".h")):
            continue
        assert all(ord(ch) < 128 for ch in text), name
        assert "??" not in text and "\\\n" not in text, name  # no trigraphs, no line splices
        code = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)  # what the compiler sees outside comments
        assert "/*" not in code and "*/" not in code, name
        for payload in payloads:
            assert payload not in code, (name, payload)


def extreme_records(graph) -> list[list[np.ndarray]]:
    """Two records: every input at its dtype's minimum, then at its maximum (floats: -3 and 3, bools:
    False and True)."""
    records = []
    for fill in ("min", "max"):
        record = []
        for value in graph.inputs:
            dtype = np.dtype(value.type.dtype)
            if dtype.kind == "f":
                v = -3.0 if fill == "min" else 3.0
            elif dtype.kind == "b":
                v = fill == "max"
            else:
                info = np.iinfo(dtype)
                v = info.min if fill == "min" else info.max
            record.append(np.full(value.type.shape, v, dtype=dtype))
        records.append(record)
    return records


SANITIZE_FLAGS = ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]


def build_sanitized(result, out_dir: Path, exe: Path, reset_at: int | None = None) -> Path:
    """Write `result` to out_dir and build its runner with ASan + UBSan; with `reset_at`, the runner
    calls <name>_reset() before that record (as a stream restarts in firmware)."""
    from nn2c.verify.build import build

    out = result.write(out_dir)
    if reset_at is not None:
        main = (out / "main.c").read_text()
        main = main.replace("int main(void) {", "int main(void) {\n    int record = 0;", 1)
        invoke = next(line for line in main.splitlines() if "_invoke() !=" in line)
        main = main.replace(invoke, f"        if (record++ == {reset_at}) {{ {result.name}_reset(); }}\n{invoke}", 1)
        (out / "main.c").write_text(main)
    return build(out, exe, opt="-O1", extra_flags=SANITIZE_FLAGS)
