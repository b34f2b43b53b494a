"""Build an output folder with the host C compiler and run it on raw tensors.

The kernels (nn2c_kernels/*.c) are copied unchanged into every output folder and include only files of their
own folder. With an object cache (build's `object_cache`, or the directory named by the environment variable
NN2C_OBJECT_CACHE: the test suite sets it), each kernel is compiled once per content of it and of the files it
includes, compiler and flags, and its object is reused by every later build. The test suite builds output
folders by the thousand: on tests/test_op_elementwise.py, _layout.py and _activation.py the compiler ran 55 s
without the cache and 20 s with it (2 workers: 39 s -> 19 s)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from functools import lru_cache
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


OBJECT_CACHE_ENV = "NN2C_OBJECT_CACHE"
SIDE_FILES = (".su",)  # -fstack-usage's frame sizes (the Cortex-M bench's flags), kept beside a cached object
_KEY_DIGITS = 32  # hex digits of the key in a cached file's name: NAME_KEY.o, .txt (its messages), SIDE_FILES
_QUOTED_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def build(out_dir: str | Path, exe: str | Path | None = None, extra_flags: list[str] | None = None,
          opt: str = "-O2", object_cache: str | Path | None = None) -> Path:
    """Compile every .c file of out_dir (and its kernels) into one program; the kernels' objects from
    object_cache (default: $NN2C_OBJECT_CACHE) when one is given."""
    out_dir = Path(out_dir)
    exe = Path(exe) if exe else out_dir / "model_runner"
    compiler = c_compiler()
    flags = [*WARNING_FLAGS, opt, *(extra_flags or [])]
    cache = object_cache or default_object_cache()
    inputs = []
    for source in map(Path, c_sources(out_dir)):
        if cache and source.parent.name == "nn2c_kernels":
            obj, messages = cached_object(compiler, flags, source, Path(cache))
            if obj is None:
                raise _failure(out_dir, messages)
            source = obj
        inputs.append(str(source))
    result = subprocess.run([compiler, *flags, "-I", str(out_dir), *inputs, "-o", str(exe), "-lm"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise _failure(out_dir, result.stderr)
    return exe


def _failure(out_dir: Path, stderr: str) -> BuildError:
    first = (stderr.strip().splitlines() or ["(no message)"])[:20]
    return BuildError(f"C compiler failed on {out_dir}: " + "\n".join(first))


def default_object_cache() -> Path | None:
    """The directory named by $NN2C_OBJECT_CACHE, if set."""
    cache = os.environ.get(OBJECT_CACHE_ENV)
    return Path(cache) if cache else None


def cached_object(compiler: str, flags: list[str], source: Path, cache: Path) -> tuple[Path | None, str]:
    """source's object in cache and the compiler's messages (its warnings), compiled there first if no build made
    it yet; (None, messages) when it fails to compile. The key: the compiler (its path and version), the flags,
    and the bytes of source and of every file it includes from its folder, directly or not (nn2c_config.h among
    them: the model's kernel paths and geometry width)."""
    key = hashlib.sha256(_compiler_version(compiler) + "\0".join([compiler, *flags]).encode())
    for path in _quoted_includes(source):
        key.update(b"\0" + path.name.encode() + b"\0" + path.read_bytes())
    obj = cache / f"{source.stem}_{key.hexdigest()[:_KEY_DIGITS]}.o"
    messages = obj.with_suffix(".txt")  # written before the object: an object always has its messages
    if not obj.exists():
        cache.mkdir(parents=True, exist_ok=True)
        partial = obj.with_suffix(f".{os.getpid()}.tmp")
        result = subprocess.run([compiler, *flags, "-I", str(source.parent), "-c", str(source), "-o", str(partial)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            partial.unlink(missing_ok=True)
            return None, result.stderr
        text = partial.with_suffix(".txt.tmp")
        text.write_text(result.stderr)
        text.replace(messages)
        for suffix in SIDE_FILES:  # what the flags make the compiler write beside the object
            if partial.with_suffix(suffix).exists():
                partial.with_suffix(suffix).replace(obj.with_suffix(suffix))
        partial.replace(obj)  # atomic: a concurrent build sees the whole object or none
    return obj, messages.read_text()


def prune_object_cache(cache: Path, older_than: float) -> None:
    """Delete the files cached_object wrote in cache (and only those: the directory may hold others) whose last
    change is before `older_than` (seconds since the epoch); a later build compiles what it needs again."""
    suffixes = "|".join(s.lstrip(".") for s in (".o", ".txt", *SIDE_FILES))
    ours = re.compile(rf".+_[0-9a-f]{{{_KEY_DIGITS}}}\.({suffixes})")
    for path in cache.glob("*"):
        try:
            if ours.fullmatch(path.name) and path.is_file() and path.stat().st_mtime < older_than:
                path.unlink()
        except OSError:
            pass  # (gone already: another run pruned it)


def _quoted_includes(source: Path) -> list[Path]:
    """source and the files of its folder that it includes with quotes, directly or through another, in the
    order first met (a name not in the folder is left to the compiler: it fails the build)."""
    found = [source]
    for path in found:
        for name in _QUOTED_INCLUDE.findall(path.read_bytes()):
            included = source.parent / name.decode(errors="replace")
            if included.is_file() and included not in found:
                found.append(included)
    return found


@lru_cache(maxsize=8)
def _compiler_version(compiler: str) -> bytes:
    try:
        return subprocess.run([compiler, "--version"], capture_output=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return b""


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
