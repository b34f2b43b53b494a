"""Reference runtimes: TFLite Micro's Python interpreter and LiteRT with reference kernels.

They (and onnxruntime) are optional dependencies, the `oracle` extra: `nn2c compile` needs none of
them. A reference that is not installed raises MissingReferenceError (a UsageError, exit 7) saying
which extra to install, never a bare ModuleNotFoundError.
"""

from __future__ import annotations

import contextlib
import importlib.util
import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from nn2c.errors import UsageError

INSTALL_ORACLE = "pip install 'nn2c[oracle]'"

# reference name -> (what to call it, its top-level Python module, its PyPI package)
REFERENCES = {
    "tflm": ("TFLite Micro", "tflite_micro", "tflite-micro"),
    "litert": ("LiteRT", "ai_edge_litert", "ai-edge-litert"),
    "onnxruntime": ("onnxruntime", "onnxruntime", "onnxruntime"),
}

_LITERT_MISSING_EXIT = 97  # the LiteRT child process could not import ai_edge_litert
_TFLM_TIMEOUT = 1800  # seconds for run_tflm's child (LiteRT's has the same)


class MissingReferenceError(UsageError):
    """A reference runtime (from the `oracle` extra) is not installed."""

    def __init__(self, references: Iterable[str], detail: str = "", nothing_to_compare: bool = False) -> None:
        self.references = list(references)
        self.detail = detail
        names = [describe(r) for r in self.references]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        verb = "is" if len(names) == 1 else "are"
        why = f" ({detail})" if detail else ""
        lead = "no reference runtime to compare the outputs with: " if nothing_to_compare else ""
        super().__init__(f"{lead}{listed} {verb} not installed{why}; "
                         f"install the reference runtimes with: {INSTALL_ORACLE}")


def describe(reference: str) -> str:
    """'TFLite Micro (tflite-micro)': the runtime and, when its name differs, the package to install."""
    name, _module, package = REFERENCES[reference]
    return name if name == package else f"{name} ({package})"


def is_installed(reference: str) -> bool:
    """Whether the reference runtime's module can be found (without importing it)."""
    module = REFERENCES[reference][1]
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken package, or a module without a spec
        return False


def missing_references(references: Iterable[str]) -> list[str]:
    """The references (names of REFERENCES) whose runtime is not installed, in order."""
    return [r for r in references if not is_installed(r)]


def _import_error(reference: str, exc: ImportError) -> MissingReferenceError:
    return MissingReferenceError([reference], f"{type(exc).__name__}: {str(exc).strip()[:200]}")


@contextlib.contextmanager
def _quiet_stderr():
    """TFLM and LiteRT print to the C-level stderr; keep the user's terminal clean."""
    try:
        fd = os.dup(2)
    except OSError:
        yield
        return
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(fd, 2)
            os.close(fd)


def run_tflm(model_path: str | Path | bytes, records: list[list[np.ndarray]], num_outputs: int
             ) -> list[list[np.ndarray]]:
    """Run records in sequence on one TFLM interpreter (state carries over, as in the C runner); the
    model is a file or its bytes. In a forked child process, as LiteRT in its own: TFLM's interpreter can
    crash (a segfault, on fuzzed vww_96_int8 files it accepts) and must not take `nn2c verify` or `nn2c bench`
    down with it. Its errors are raised here; a crash is a RuntimeError saying so."""
    try:
        from tflite_micro.python.tflite_micro import runtime  # noqa: F401  (imported once, the children inherit it)
    except ImportError as exc:
        raise _import_error("tflm", exc) from exc

    data = model_path if isinstance(model_path, bytes) else Path(model_path).read_bytes()
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_tflm_child, args=(data, records, num_outputs, send))
    child.start()
    send.close()
    payload: Any = None
    try:
        kind, payload = receive.recv() if receive.poll(_TFLM_TIMEOUT) else ("timeout", None)
    except EOFError:  # the child died before it answered
        kind = "crash"
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        child.join()
    if kind == "ok":
        return list(payload)
    if kind == "error":
        raise payload if isinstance(payload, BaseException) else RuntimeError(str(payload))
    if kind == "timeout":
        raise RuntimeError(f"TFLite Micro did not finish within {_TFLM_TIMEOUT} s")
    code = child.exitcode if child.exitcode is not None else 0
    how = f"signal {-code}" if code < 0 else f"exit status {code}"
    raise RuntimeError(f"TFLite Micro crashed on this model ({how})")


def _tflm_child(data: bytes, records: list[list[np.ndarray]], num_outputs: int, send: Any) -> None:
    """run_tflm's child: the outputs, or the exception (as itself where it pickles, else a RuntimeError)."""
    try:
        message: tuple[str, Any] = ("ok", _run_tflm_inprocess(data, records, num_outputs))
    except Exception as exc:  # the interpreter refuses the model: the parent raises it
        message = ("error", exc)
    try:
        send.send(message)
    except Exception:  # an exception that does not pickle (the outputs, numpy arrays, do)
        send.send(("error", RuntimeError(f"{type(message[1]).__name__}: {message[1]}"[:400])))
    send.close()


def _run_tflm_inprocess(data: bytes, records: list[list[np.ndarray]], num_outputs: int) -> list[list[np.ndarray]]:
    from tflite_micro.python.tflite_micro import runtime

    with _quiet_stderr():
        interpreter = runtime.Interpreter.from_bytes(data, arena_size=max(len(data) * 10, 16 << 20))
    results = []
    for record in records:
        for i, array in enumerate(record):
            interpreter.set_input(array, i)
        interpreter.invoke()
        results.append([np.array(interpreter.get_output(i)) for i in range(num_outputs)])
    return results


def run_litert(model_path: str | Path, records: list[list[np.ndarray]], num_outputs: int) -> list[list[np.ndarray]]:
    """LiteRT in a child process: it can crash (double free) on models it does not support."""
    if not is_installed("litert"):
        raise MissingReferenceError(["litert"])
    with tempfile.TemporaryDirectory(prefix="nn2c_litert_") as tmp:
        request, response = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        arrays = {f"r{i}_{k}": a for i, rec in enumerate(records) for k, a in enumerate(rec)}
        np.savez(request, **arrays)  # type: ignore[arg-type]
        script = (
            "import sys, numpy as np\n"
            "try:\n"
            "    from ai_edge_litert import interpreter\n"
            "except ImportError as exc:\n"
            "    sys.stderr.write(f'{type(exc).__name__}: {exc}\\n')\n"
            f"    sys.exit({_LITERT_MISSING_EXIT})\n"
            "from nn2c.verify.oracle import _run_litert_inprocess\n"
            "data = np.load(sys.argv[2])\n"
            f"records = [[data[f'r{{i}}_{{k}}'] for k in range({len(records[0]) if records else 0})] "
            f"for i in range({len(records)})]\n"
            f"out = _run_litert_inprocess(sys.argv[1], records, {num_outputs})\n"
            "np.savez(sys.argv[3], **{f'r{i}_{k}': a for i, rec in enumerate(out) for k, a in enumerate(rec)})\n"
        )
        result = subprocess.run([sys.executable, "-c", script, str(model_path), str(request), str(response)],
                                capture_output=True, text=True, timeout=1800)
        if result.returncode != 0:
            why = (result.stderr.strip().splitlines() or [f"exit status {result.returncode}"])[-1]
            if result.returncode == _LITERT_MISSING_EXIT:
                raise MissingReferenceError(["litert"], why[:200])
            raise RuntimeError(f"LiteRT failed on this model (exit status {result.returncode}): {why[:200]}")
        data = np.load(response)
        return [[data[f"r{i}_{k}"] for k in range(num_outputs)] for i in range(len(records))]


def _run_litert_inprocess(model_path: str | Path, records: list[list[np.ndarray]],
                          num_outputs: int) -> list[list[np.ndarray]]:
    """Run records in sequence on LiteRT with the reference (non-optimised) kernels."""
    try:
        from ai_edge_litert import interpreter as litert
    except ImportError as exc:
        raise _import_error("litert", exc) from exc

    with _quiet_stderr():
        interpreter = litert.Interpreter(
            model_path=str(model_path),
            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF,
        )
        interpreter.allocate_tensors()
    inputs = interpreter.get_input_details()
    outputs = interpreter.get_output_details()[:num_outputs]
    results = []
    for record in records:
        for detail, array in zip(inputs, record, strict=True):
            interpreter.set_tensor(detail["index"], array)
        interpreter.invoke()
        results.append([np.array(interpreter.get_tensor(d["index"])) for d in outputs])
    return results


