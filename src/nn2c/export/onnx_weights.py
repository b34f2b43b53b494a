"""`--prune ... --write-onnx FILE`: the ONNX model the user gave, with the pruned zeros in its weights.

nn2c prunes its own graph, whose filters are the ONNX initializers in nn2c's layout (a Conv's OIHW
weights become OHWI, a Gemm's transposed B becomes [out, in]). To hand the user back *their* model,
ready to fine-tune and compile again, each pruned filter is matched to the initializer that holds
it (the array equal to the unpruned filter under some transpose) and that initializer gets the
zeros, transposed back. Nothing else in the model changes. A filter the importer computed (no
initializer equals it, e.g. weights behind a DequantizeLinear) cannot be written back: the error
names the layer and points to --write-tflite.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np

from nn2c.errors import UsageError


def _match(original: np.ndarray, initializers: dict[str, np.ndarray]) -> list[tuple[str, tuple[int, ...]]]:
    """(initializer name, perm) for every initializer equal to `original` after transposing by perm."""
    found = []
    for name, array in initializers.items():
        if array.size != original.size or array.ndim != original.ndim or array.dtype.kind != original.dtype.kind:
            continue
        for perm in itertools.permutations(range(array.ndim)):
            if array.transpose(perm).shape == original.shape and np.array_equal(array.transpose(perm), original):
                found.append((name, perm))
                break
    return found


def pruned_onnx(source: str | Path, layers: list[tuple[str, np.ndarray, np.ndarray]]) -> bytes:
    """The serialized ONNX model of `source` with each (where, unpruned filter, pruned filter) of
    `layers` written into its initializer; UsageError (exit 7) for a filter no initializer holds."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source), load_external_data=False)
    initializers = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    replaced: dict[str, np.ndarray] = {}
    for where, original, pruned in layers:
        if np.array_equal(original, pruned):
            continue
        matches = _match(np.asarray(original), initializers)
        if not matches:
            raise UsageError(f"--write-onnx: the weights of {where} are not stored as an initializer of the ONNX "
                             "model (the importer computed them); write the pruned model with --write-tflite instead")
        for name, perm in matches:
            inverse = tuple(int(k) for k in np.argsort(perm))
            replaced[name] = np.ascontiguousarray(np.asarray(pruned).transpose(inverse)).astype(initializers[name].dtype)
    tensors: list[Any] = list(model.graph.initializer)
    for k, tensor in enumerate(tensors):
        if tensor.name in replaced:
            model.graph.initializer[k].CopyFrom(numpy_helper.from_array(replaced[tensor.name], tensor.name))
    return model.SerializeToString()
