"""A bounded fuzz campaign: every input must compile or end in one nn2c error, within a time limit.

Seeds are dispatched by file type (.tflite: fuzz/tflite_mutator.py, .onnx: fuzz/onnx_mutator.py);
each mutant is written with its seed's suffix and compiled in-process (no C build). Anything but a
successful compile or an NN2CError is a failure: a traceback, a hang (> per_input_limit seconds,
SIGALRM), a MemoryError (the address space is capped so that a multi-GB allocation fails fast).
Failing mutants are kept in `keep_failures` to reproduce with `nn2c compile`.

With `execute`, some of the mutants nn2c accepts (default options) are also built and run: the
callable gets the CompileResult and a scratch folder and returns None, or what went wrong (the
generated C failed to build, a sanitizer report, a signal, a hang): a crash of the generated code
on a model nn2c accepted is a failure like a traceback. It gets at most `execute_share` of the
campaign's time, so that compiling mutants still gets the rest.
"""

from __future__ import annotations

import collections
import faulthandler
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nn2c.errors import NN2CError


class _Timeout(BaseException):  # not an Exception: no `except Exception` in nn2c may swallow it
    pass


@dataclass
class FormatResult:
    inputs: int = 0
    compiled: int = 0
    errors: collections.Counter = field(default_factory=collections.Counter)  # nn2c error type -> count
    failures: list[str] = field(default_factory=list)  # tracebacks, hangs, memory errors

    @property
    def rejected(self) -> int:
        return sum(self.errors.values())

    @property
    def hangs(self) -> int:
        return sum(1 for f in self.failures if f.startswith("hang"))

    @property
    def memory_errors(self) -> int:
        return sum(1 for f in self.failures if f.startswith("MemoryError"))

    @property
    def generated_code_failures(self) -> int:
        return sum(1 for f in self.failures if f.startswith("generated code"))

    @property
    def tracebacks(self) -> int:
        return len(self.failures) - self.hangs - self.memory_errors - self.generated_code_failures


@dataclass
class CampaignResult(FormatResult):
    formats: dict[str, FormatResult] = field(default_factory=dict)  # "tflite" / "onnx" -> its share
    executed: int = 0  # accepted mutants built and run (with `execute`)

    def record(self, fmt: str, outcome: str, failure: str | None = None) -> None:
        """outcome: "compiled", an nn2c error type name, or "failure" (with its description)."""
        for result in (self, self.formats.setdefault(fmt, FormatResult())):
            result.inputs += 1
            if outcome == "compiled":
                result.compiled += 1
            elif outcome == "failure":
                result.failures.append(failure or "?")
            else:
                result.errors[outcome] += 1


@dataclass(frozen=True)
class _Mutator:
    prepare: Callable[[bytes], Any]
    mutate: Callable[[bytes, np.random.Generator, Any], tuple[bytes, str]]


def _mutators() -> dict[str, _Mutator]:
    from nn2c.fuzz import onnx_mutator, tflite_mutator

    return {".tflite": _Mutator(tflite_mutator.locate_fields, tflite_mutator.mutate),
            ".onnx": _Mutator(onnx_mutator.prepare, onnx_mutator.mutate)}


def _on_alarm(signum, frame):
    raise _Timeout


# what an `execute` callback returns for an accepted mutant it did not build and run (say, inputs too large for
# the machine): not a failure, and not counted as executed
NOT_RUN = "(not run)"
Executor = Callable[[Any, Path], "str | None"]  # (CompileResult, scratch folder) -> None, NOT_RUN or the failure


def run_campaign(models: list[Path], seconds: float, seed: int = 0, per_input_limit: int = 30,
                 memory_limit: int | None = 8 << 30, keep_failures: Path | None = None,
                 execute: Executor | None = None, execute_share: float = 0.5,
                 variants: tuple[Any, ...] | None = None, executed_variants: tuple[int, ...] = (0,)
                 ) -> CampaignResult:
    """Mutate `models` round-robin for `seconds`; compile each mutant in-process (no C build unless
    `execute` is given: then accepted mutants are built and run in up to `execute_share` of the time).
    `variants`: the CompileOptions mutants cycle through (the compiles of those at `executed_variants`, the first
    one by default, are the executed ones); default: the default compile and the row-group search pushed to its
    limit on SIMD lowerings."""
    from nn2c.api import CompileOptions, compile_model

    mutators = _mutators()
    rng = np.random.default_rng(seed)
    seeds = []
    for path in models:
        suffix = path.suffix.lower()
        if suffix not in mutators:
            raise ValueError(f"{path}: no mutator for {suffix!r} files (have {', '.join(mutators)})")
        data = path.read_bytes()
        seeds.append((path, suffix, data, mutators[suffix].prepare(data)))
    result = CampaignResult()
    if memory_limit:  # a multi-GB allocation must fail fast, not take the machine down
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, hard))
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    started = time.monotonic()
    deadline = started + seconds
    executing = 0.0  # seconds spent in `execute`
    if variants is None:
        variants = (CompileOptions(plan_time_limit=2.0),
                    CompileOptions(plan_time_limit=2.0, schedule="min-ram", target="cortex-m4"))
    try:
        with tempfile.TemporaryDirectory(prefix="nn2c_fuzz_") as tmp:
            while time.monotonic() < deadline:
                path, suffix, original, prepared = seeds[result.inputs % len(seeds)]
                fmt = suffix.lstrip(".")
                data, what = mutators[suffix].mutate(original, rng, prepared)
                target = Path(tmp) / f"mutant{suffix}"
                target.write_bytes(data)
                failure = None
                # a hang inside C code never returns to Python for SIGALRM: dump and exit instead of
                # blocking CI forever (the mutant is still in `target`)
                faulthandler.dump_traceback_later(per_input_limit * 4, exit=True, file=sys.stderr)
                signal.alarm(per_input_limit)
                variant = result.inputs % len(variants)
                compiled = None
                try:
                    compiled = compile_model(target, variants[variant])
                    outcome = "compiled"
                except NN2CError as exc:
                    outcome = type(exc).__name__
                except _Timeout:
                    failure = f"hang (> {per_input_limit} s) on {path.name}: {what}"
                except MemoryError:
                    failure = f"MemoryError on {path.name}: {what}"
                except Exception as exc:  # anything else is a bug: keep where it happened
                    frame = traceback.extract_tb(exc.__traceback__)[-1]
                    failure = (f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno} on "
                               f"{path.name} ({what}): {str(exc)[:200]}")
                finally:
                    signal.alarm(0)
                    faulthandler.cancel_dump_traceback_later()
                now = time.monotonic()
                if (compiled is not None and execute is not None and variant in executed_variants
                        and executing <= execute_share * (now - started)):
                    problem = execute(compiled, Path(tmp) / "run")
                    executing += time.monotonic() - now
                    if problem == NOT_RUN:
                        problem = None
                    else:
                        result.executed += 1
                    if problem is not None:
                        failure = f"generated code: {problem} on {path.name} ({what})"
                if failure is not None:
                    outcome = "failure"
                    if keep_failures is not None:
                        keep_failures.mkdir(parents=True, exist_ok=True)
                        kept = keep_failures / f"{fmt}_{result.inputs:06d}{suffix}"
                        kept.write_bytes(data)
                        failure += f" [{kept}]"
                result.record(fmt, outcome, failure)
    finally:
        signal.signal(signal.SIGALRM, previous)
        if memory_limit:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    return result
