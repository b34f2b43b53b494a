"""Prune a Keras 2 model with the TensorFlow Model Optimization toolkit and convert it (run by tensorflow's python).

    python tests/tfmot_prune_build.py OUT_DIR

The way TFLite Micro users prune: `tfmot.sparsity.keras.prune_low_magnitude` (ConstantSparsity 0.9)
wraps a small keyword-spotting-style network (Conv2D, a depthwise-separable block with 1x1
convolutions, Dense layers; Keras 2 through `tf_keras`, which tfmot needs), a few seeded training
steps let its UpdatePruningStep callback apply the masks, `strip_pruning` removes the wrappers, and
the converter writes full-integer int8 (16 seeded representative inputs): `pruned_int8.tflite`
dense, `pruned_sparse_int8.tflite` with Optimize.EXPERIMENTAL_SPARSITY (TFLite's sparse tensor
format). `sparsity.txt` lists each pruned layer's share of zero weights as tfmot left it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from sparse_tflite_build import convert  # this folder is the script's: on sys.path


def build(out: Path) -> None:
    import tensorflow as tf
    import tensorflow_model_optimization as tfmot
    import tf_keras as keras

    tf.random.set_seed(0)
    rng = np.random.default_rng(0)
    inputs = keras.Input((24, 10, 1))
    x = keras.layers.Conv2D(16, (5, 3), strides=(2, 1), padding="same", activation="relu")(inputs)
    x = keras.layers.DepthwiseConv2D(3, padding="same", activation="relu")(x)
    x = keras.layers.Conv2D(64, 1, activation="relu")(x)
    x = keras.layers.Conv2D(64, 1, activation="relu")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dense(128, activation="relu")(x)
    model = keras.Model(inputs, keras.layers.Dense(12)(x))

    schedule = tfmot.sparsity.keras.ConstantSparsity(0.9, begin_step=0, frequency=1)
    pruned = tfmot.sparsity.keras.prune_low_magnitude(model, pruning_schedule=schedule)
    pruned.compile(optimizer=keras.optimizers.Adam(1e-3),
                   loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    data = rng.standard_normal((64, 24, 10, 1)).astype(np.float32)
    labels = rng.integers(0, 12, 64)
    pruned.fit(data, labels, batch_size=16, epochs=2, verbose=0,
               callbacks=[tfmot.sparsity.keras.UpdatePruningStep()])
    stripped = tfmot.sparsity.keras.strip_pruning(pruned)
    lines = []
    for layer in stripped.layers:
        weights = layer.get_weights()
        if weights and layer.__class__.__name__ in ("Conv2D", "Dense"):
            lines.append(f"{layer.name} {float(np.mean(weights[0] == 0)):.4f}")
    (out / "sparsity.txt").write_text("\n".join(lines) + "\n")

    samples = [rng.standard_normal((1, 24, 10, 1)).astype(np.float32) for _ in range(16)]
    for name, sparse in (("pruned_int8", False), ("pruned_sparse_int8", True)):
        (out / f"{name}.tflite").write_bytes(convert(stripped, samples, sparse))


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    build(target)
