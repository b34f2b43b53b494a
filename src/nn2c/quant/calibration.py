"""Calibration data: load representative inputs and check them against the model's inputs.

Accepted forms (first axis = samples):
- a .npz archive with one array per model input, by input name, or by order (np.savez's arr_0,
  arr_1, ...);
- a .npy file (single-input models);
- a folder of .npy files: for a single-input model every file is one sample or a batch of samples
  (files sorted by name and concatenated); for several inputs one file per input, named after it.
Per input the array is [N, *input_shape] or, when the input's batch dimension is 1, [N, *shape[1:]].
Every failure is a UsageError naming the file, the input and what to do.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import numpy as np

from nn2c.errors import UsageError
from nn2c.ir import Graph, Value

MIN_SAMPLES = 2


def _read_npy(path: Path) -> np.ndarray:
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise UsageError(f"calibration file {path}: cannot read it as a .npy array ({_short(exc)})") from None
    if not isinstance(array, np.ndarray):
        raise UsageError(f"calibration file {path}: expected a .npy array, got an archive; use the .npz form")
    return array


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise UsageError(f"calibration file {path}: expected an .npz archive, got a single array")
            return {key: archive[key] for key in archive.files}
    except UsageError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise UsageError(f"calibration file {path}: cannot read it as an .npz archive ({_short(exc)})") from None


def _input_names(graph: Graph) -> str:
    return ", ".join(repr(v.name) for v in graph.inputs)


def _by_key(path: Path, arrays: dict[str, np.ndarray], graph: Graph) -> list[np.ndarray]:
    """Match archive keys to model inputs: positional arr_<k> keys, else exact input names."""
    names = [v.name for v in graph.inputs]
    keys = list(arrays)
    if not keys:
        raise UsageError(f"calibration file {path}: the archive holds no arrays")
    positional = [f"arr_{k}" for k in range(len(keys))]
    if sorted(keys) == sorted(positional) and not set(keys) & set(names):
        if len(keys) != len(names):
            raise UsageError(f"calibration file {path}: {len(keys)} array(s) for a model with {len(names)} "
                             f"input(s) ({_input_names(graph)})")
        return [arrays[f"arr_{k}"] for k in range(len(keys))]
    unknown = [k for k in keys if k not in names]
    if unknown:
        raise UsageError(f"calibration file {path}: array {unknown[0]!r} names no model input; the inputs are "
                         f"{_input_names(graph)} (or save the arrays by position with np.savez(path, a, b))")
    missing = [n for n in names if n not in arrays]
    if missing:
        raise UsageError(f"calibration file {path}: no array for model input {missing[0]!r}")
    return [arrays[n] for n in names]


def _file_stem_key(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z_.-]", "_", name)


def _from_folder(path: Path, graph: Graph) -> list[np.ndarray]:
    files = sorted(p for p in path.iterdir() if p.suffix == ".npy" and p.is_file())
    if not files:
        raise UsageError(f"calibration folder {path}: no .npy files in it")
    if len(graph.inputs) == 1:
        value = graph.inputs[0]
        parts = []
        for file in files:
            array = _read_npy(file)
            parts.append(array[None] if array.shape == value.type.shape or
                         (array.size == value.type.num_elements and array.ndim == len(value.type.shape) - 1)
                         else array)
        shapes = {p.shape[1:] for p in parts}
        if len(shapes) > 1:
            raise UsageError(f"calibration folder {path}: the .npy files hold arrays of different shapes "
                             f"({', '.join(str(s) for s in sorted(shapes))}); every sample must have the input's shape")
        return [np.concatenate(parts)]
    by_stem = {f.stem: f for f in files}
    arrays = []
    for value in graph.inputs:
        found = by_stem.get(value.name, by_stem.get(_file_stem_key(value.name)))
        if found is None:
            raise UsageError(f"calibration folder {path}: no {_file_stem_key(value.name)}.npy for model input "
                             f"{value.name!r}; a multi-input model needs one file per input, named after it")
        arrays.append(_read_npy(found))
    return arrays


def _samples(path: Path, array: np.ndarray, value: Value) -> np.ndarray:
    """[N, *shape] float32 records for one input, after checking dtype, shape and values."""
    what = f"calibration data {path.name}, input {value.name!r}"
    shape = value.type.shape
    if array.dtype.kind not in "f":
        raise UsageError(f"{what}: dtype {array.dtype}, but the model's input is {value.type.dtype}; give float "
                         "arrays, preprocessed (scaled / normalised) as the float model expects")
    if array.size == 0:
        raise UsageError(f"{what}: the array is empty (shape {list(array.shape)}); give at least "
                         f"{MIN_SAMPLES} samples (100 or more calibrate better)")
    if array.shape == shape:
        raise UsageError(f"{what}: a single sample of shape {list(shape)}; calibration needs at least "
                         f"{MIN_SAMPLES} (100 or more calibrate better), stacked along a new first axis")
    if array.shape[1:] == shape:
        records = array
    elif shape and shape[0] == 1 and array.shape[1:] == shape[1:]:
        records = array.reshape((array.shape[0], *shape))
    else:
        accepted = f"[N, {', '.join(map(str, shape))}]"
        if shape and shape[0] == 1:
            accepted += f" or [N, {', '.join(map(str, shape[1:]))}]"
        raise UsageError(f"{what}: shape {list(array.shape)} does not match the input; expected {accepted}")
    if len(records) < MIN_SAMPLES:
        raise UsageError(f"{what}: a single sample (shape {list(array.shape)}); calibration needs at least "
                         f"{MIN_SAMPLES} (100 or more calibrate better)")
    finite = np.isfinite(records.reshape(len(records), -1)).all(axis=1)
    if not finite.all():
        bad = int(np.argmin(finite))
        raise UsageError(f"{what}: sample {bad} holds NaN or infinite values ({int((~finite).sum())} bad "
                         "sample(s)); remove them")
    return np.ascontiguousarray(records, dtype=np.float32)


def load_calibration(path: str | Path, graph: Graph) -> list[np.ndarray]:
    """One float32 array [N, *input_shape] per model input, in the model's input order."""
    path = Path(path)
    float_inputs = [v for v in graph.inputs if v.type.dtype == "float32"]
    if len(float_inputs) != len(graph.inputs):
        bad = next(v for v in graph.inputs if v.type.dtype != "float32")
        raise UsageError(f"model input {bad.name!r} is {bad.type.dtype}; --quantize int8 calibrates float32 "
                         "inputs only")
    if not path.exists():
        raise UsageError(f"calibration data {path}: no such file or folder")
    if path.is_dir():
        arrays = _from_folder(path, graph)
    elif path.suffix.lower() == ".npz":
        arrays = _by_key(path, _read_npz(path), graph)
    elif path.suffix.lower() == ".npy":
        if len(graph.inputs) != 1:
            raise UsageError(f"calibration file {path}: one .npy array for a model with {len(graph.inputs)} inputs "
                             f"({_input_names(graph)}); use an .npz archive with one array per input")
        arrays = [_read_npy(path)]
    else:
        raise UsageError(f"calibration data {path}: expected an .npz or .npy file or a folder of .npy files")
    records = [_samples(path, a, v) for a, v in zip(arrays, graph.inputs, strict=True)]
    counts = {len(r) for r in records}
    if len(counts) > 1:
        raise UsageError(f"calibration data {path}: the inputs have different sample counts "
                         f"({', '.join(str(len(r)) for r in records)}); give the same number for every input")
    return records
