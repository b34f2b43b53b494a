"""Build TFLite models in TFLite's sparse tensor format with the converter (run by tensorflow's python).

    python tests/sparse_tflite_build.py OUT_DIR

A Keras MLP whose Dense kernels are 80% zero (seeded) is converted with Optimize.EXPERIMENTAL_SPARSITY
to float (sparse_float.tflite) and to full-integer int8 (sparse_int8.tflite), and the same model without
the sparsity option (dense_float.tflite, dense_int8.tflite) on the same representative inputs, so a
test can compare the sparse files with TFLM running their dense twins.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np


def build(out: Path) -> None:
    import tensorflow as tf

    rng = np.random.default_rng(0)
    inputs = tf.keras.Input((32,))
    x = tf.keras.layers.Dense(64, activation="relu")(inputs)
    x = tf.keras.layers.Dense(48, activation="relu")(x)
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(10)(x))
    for layer in model.layers[1:]:
        kernel, bias = layer.get_weights()
        kernel[rng.random(kernel.shape) < 0.8] = 0
        layer.set_weights([kernel, rng.standard_normal(bias.shape).astype(np.float32) * 0.1])
    samples = [rng.standard_normal((1, 32)).astype(np.float32) for _ in range(16)]
    for sparse in (True, False):
        for kind in ("float", "int8"):
            data = convert(model, samples if kind == "int8" else None, sparse)
            (out / f"{'sparse' if sparse else 'dense'}_{kind}.tflite").write_bytes(data)


def convert(model: Any, samples: list[np.ndarray] | None, sparse: bool) -> bytes:
    """The converter on a Keras model: float, or with representative `samples` full-integer int8
    (int8 input and output); `sparse`: with Optimize.EXPERIMENTAL_SPARSITY (TFLite's sparse format)."""
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY] if sparse else []
    if samples is not None:
        converter.optimizations.append(tf.lite.Optimize.DEFAULT)
        converter.representative_dataset = lambda: ([s] for s in samples)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = converter.inference_output_type = tf.int8
    return bytes(converter.convert())


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    build(target)
