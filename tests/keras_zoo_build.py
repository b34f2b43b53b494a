"""Build the Keras zoo and convert it with the TFLite converter, as users export their models.

Run by the Python of a venv with tensorflow-cpu (not nn2c's: tensorflow pins clash with it):

    .venv-tf/bin/python tests/keras_zoo_build.py OUT_DIR                        # everything
    .venv-tf/bin/python tests/keras_zoo_build.py OUT_DIR --only resnet8_32,tcn_conv1d_49x10:int8

Each model is built from Keras 3 applications / layers with seeded random weights (nothing is
downloaded; normalization layers are set as training leaves them: random gamma and beta,
BatchNormalization statistics measured on a calibration batch) at a small input size, with batch 1
(`keras.Input(..., batch_size=1)`, static shapes as microcontroller runtimes need), and converted:
- float: `TFLiteConverter.from_keras_model` with its defaults;
- int8: full-integer post-training quantization (`Optimize.DEFAULT`, REPRESENTATIVE_SAMPLES seeded
  representative inputs, `TFLITE_BUILTINS_INT8` only) with int8 input and output, the usual
  microcontroller export; mobilenet_v2 also with float input and output (int8_float_io: int8
  inside, QUANTIZE / DEQUANTIZE at the ends, the converter's default I/O).
Keras 3 writes GRU and LSTM layers as TFLite WHILE loops (no fused LSTM kernel); the zoo has them so
and with unroll=True (straight-line steps), the usual way to get them onto a microcontroller. The
int8 conversion of the loops crashes the converter (TF 2.14 and later: the calibrator reads a WHILE
output that the loop freed, tensorflow/tensorflow issues #62281 and #75140; a frozen concrete function
with a fixed input signature and Keras 2 GRUs crash the same way). Keras 2 (the `tf_keras`
package, as TFLite Micro users export int8 LSTMs) has the converter fuse an LSTM layer into the
UNIDIRECTIONAL_SEQUENCE_LSTM builtin, which quantizes: lstm_fused_20x8 is that model.
TFLite Micro has no GELU kernel, so the transformer is there also with a ReLU MLP that TFLM can judge.
Conversions run in a child process: the converter can crash, and a crash is then one failed row; a
new child goes on with the rest.
OUT_DIR/manifest.json lists every conversion (file or the converter's error, settings, seconds) and
the tensorflow / keras / tf_keras versions; tests/test_keras_zoo.py and bench/keras_zoo.py read it. This file
imports nothing of nn2c (it runs in the tensorflow venv).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # the converter's C++ logging floods the output

SEED = 0
REPRESENTATIVE_SAMPLES = 16
NORMALIZATION_SAMPLES = 8  # the batch that sets BatchNormalization's statistics
CHILD_TIMEOUT_S = 1800  # one child converts many models

FLOAT_SETTINGS = "from_keras_model, defaults (float32)"
INT8_SETTINGS = (f"Optimize.DEFAULT, {REPRESENTATIVE_SAMPLES} seeded representative inputs, "
                 "TFLITE_BUILTINS_INT8, int8 input and output")
INT8_FLOAT_IO_SETTINGS = (f"Optimize.DEFAULT, {REPRESENTATIVE_SAMPLES} seeded representative inputs, "
                          "TFLITE_BUILTINS_INT8, float input and output")
VARIANTS = {"float": FLOAT_SETTINGS, "int8": INT8_SETTINGS, "int8_float_io": INT8_FLOAT_IO_SETTINGS}
# the int8 conversion of a Keras loop (GRU / LSTM as a WHILE) segfaults in the calibrator since TF 2.14
WHILE_CALIBRATION_CRASH = "upstream: tensorflow/tensorflow issues #62281, #75140"
TF_KERAS_PIN = "tf-keras==2.21.0"  # Keras 2, matching tensorflow-cpu 2.21.0 (make tf-venv installs it)


@dataclass(frozen=True)
class KerasModel:
    name: str
    source: str  # what the architecture comes from (keras.applications, keras.layers)
    input_shape: tuple[int, ...]  # without the batch axis (always 1)
    build: Callable[[Any, Any], Any]  # (keras, input tensor) -> keras.Model
    sample: str = "normal"  # the representative data: "normal", "unit" (-1..1) or "pixels" (0..255)
    variants: tuple[str, ...] = ("float", "int8")
    framework: str = "keras"  # the module that builds it: "keras" (Keras 3) or "tf_keras" (Keras 2)
    known_issue: str = ""  # the upstream bug behind a converter failure of this model, if it fails


# --- the architectures (keras is passed in: this module is imported without tensorflow too) ------
def mobilenet_v2(keras: Any, x: Any) -> Any:
    return keras.applications.MobileNetV2(input_tensor=x, alpha=0.35, weights=None, classes=10)


def mobilenet_v3_small(keras: Any, x: Any) -> Any:
    # include_preprocessing (the default) keeps the Rescaling to -1..1 in the model: pixel input
    return keras.applications.MobileNetV3Small(input_tensor=x, alpha=0.75, weights=None, classes=10)


def efficientnet_b0(keras: Any, x: Any) -> Any:
    model = keras.applications.EfficientNetB0(input_tensor=x, weights=None, classes=10)
    # its head's initialiser scales by fan-out (meant for 1,000 classes): with 10, the logits reach
    # +-20 and the softmax saturates, which hides differences; a trained head's logits are moderate
    head = model.get_layer("predictions")
    head.kernel.assign(keras.initializers.GlorotUniform(seed=SEED)(head.kernel.shape))
    return model


def resnet8(keras: Any, x: Any) -> Any:
    """MLPerf Tiny's image-classification ResNet (three residual stages, 1x1 projections)."""
    layers = keras.layers
    inputs = x
    x = layers.Conv2D(16, 3, padding="same", use_bias=False)(x)
    x = layers.ReLU()(layers.BatchNormalization()(x))
    for filters, stride in ((16, 1), (32, 2), (64, 2)):
        y = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False)(x)
        y = layers.ReLU()(layers.BatchNormalization()(y))
        y = layers.BatchNormalization()(layers.Conv2D(filters, 3, padding="same", use_bias=False)(y))
        if stride != 1 or x.shape[-1] != filters:
            x = layers.Conv2D(filters, 1, strides=stride, use_bias=False)(x)
        x = layers.ReLU()(layers.Add()([x, y]))
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, layers.Dense(10, activation="softmax")(x))


def tiny_transformer(keras: Any, x: Any, activation: str = "gelu") -> Any:
    """A pre-norm encoder block over 16 tokens: LayerNormalization, 2-head self-attention, GELU MLP."""
    layers = keras.layers
    inputs = x
    x = layers.Dense(32)(x)
    h = layers.LayerNormalization(epsilon=1e-5)(x)
    x = layers.Add()([x, layers.MultiHeadAttention(num_heads=2, key_dim=16)(h, h)])
    h = layers.LayerNormalization(epsilon=1e-5)(x)
    h = layers.Dense(32)(layers.Dense(64, activation=activation)(h))
    x = layers.LayerNormalization(epsilon=1e-5)(layers.Add()([x, h]))
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, layers.Dense(4, activation="softmax")(x))


def tiny_transformer_relu(keras: Any, x: Any) -> Any:
    """The same block with a ReLU MLP: TFLite Micro has no GELU kernel, so this one it can judge."""
    return tiny_transformer(keras, x, "relu")


def gru(keras: Any, x: Any, unroll: bool = False) -> Any:
    """Keras 3 writes a GRU as a loop (a TFLite WHILE); with unroll=True, as straight-line steps."""
    layers = keras.layers
    h = layers.GRU(16, return_sequences=True, unroll=unroll)(x)
    return keras.Model(x, layers.Dense(4, activation="softmax")(layers.GRU(12, unroll=unroll)(h)))


def lstm(keras: Any, x: Any, unroll: bool = False) -> Any:
    """Keras 3's LSTM has no fused TFLite kernel either (TF 2.21): a WHILE loop, or unrolled steps.
    Built with Keras 2 (tf_keras), the converter fuses each layer into UNIDIRECTIONAL_SEQUENCE_LSTM."""
    layers = keras.layers
    h = layers.LSTM(16, return_sequences=True, unroll=unroll)(x)
    return keras.Model(x, layers.Dense(4, activation="softmax")(layers.LSTM(12, unroll=unroll)(h)))


def gru_unrolled(keras: Any, x: Any) -> Any:
    return gru(keras, x, unroll=True)


def lstm_unrolled(keras: Any, x: Any) -> Any:
    return lstm(keras, x, unroll=True)


def tcn_conv1d(keras: Any, x: Any) -> Any:
    """A keyword-spotting TCN over 49 frames of 10 MFCCs: causal dilated Conv1D residual blocks."""
    layers = keras.layers
    inputs = x
    x = layers.Conv1D(24, 3, padding="causal", activation="relu")(x)
    for dilation in (1, 2, 4):
        y = layers.Conv1D(24, 3, padding="causal", dilation_rate=dilation, use_bias=False)(x)
        y = layers.ReLU()(layers.BatchNormalization()(y))
        y = layers.Conv1D(24, 3, padding="causal", dilation_rate=dilation)(y)
        x = layers.ReLU()(layers.Add()([x, y]))
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, layers.Dense(12, activation="softmax")(x))


ZOO = [
    KerasModel("mobilenet_v2_035_96", "keras.applications", (96, 96, 3), mobilenet_v2, "unit",
               ("float", "int8", "int8_float_io")),
    KerasModel("mobilenet_v3_small_075_64", "keras.applications", (64, 64, 3), mobilenet_v3_small, "pixels"),
    KerasModel("efficientnet_b0_64", "keras.applications", (64, 64, 3), efficientnet_b0, "pixels"),
    KerasModel("resnet8_32", "keras.layers", (32, 32, 3), resnet8),
    KerasModel("transformer_16x24", "keras.layers", (16, 24), tiny_transformer),
    KerasModel("transformer_relu_16x24", "keras.layers", (16, 24), tiny_transformer_relu),
    KerasModel("gru_20x8", "keras.layers", (20, 8), gru, known_issue=WHILE_CALIBRATION_CRASH),
    KerasModel("lstm_20x8", "keras.layers", (20, 8), lstm, known_issue=WHILE_CALIBRATION_CRASH),
    KerasModel("gru_unrolled_20x8", "keras.layers", (20, 8), gru_unrolled),
    KerasModel("lstm_unrolled_20x8", "keras.layers", (20, 8), lstm_unrolled),
    KerasModel("lstm_fused_20x8", "tf_keras.layers (Keras 2)", (20, 8), lstm, framework="tf_keras"),
    KerasModel("tcn_conv1d_49x10", "keras.layers", (49, 10), tcn_conv1d),
]
BY_NAME = {m.name: m for m in ZOO}


# --- building and converting (in the child process) ----------------------------------------------
def _realistic_normalization(keras: Any, model: Any, calibration: Any, rng: Any) -> None:
    """Normalization layers as training leaves them, not as Keras initialises them (the identity).

    Gamma and beta are drawn at random; BatchNormalization's moving statistics are then set to the
    statistics of the activations on a batch of calibration inputs (one training-mode pass with
    momentum 0), as a trained network's are. Without that, Keras' small initial depthwise kernels
    shrink the signal layer after layer and the output of a deep model no longer depends on its input.
    """
    batch_norms = []
    for layer in model.layers:  # no model here nests another
        if isinstance(layer, keras.layers.BatchNormalization | keras.layers.LayerNormalization):
            weights = layer.get_weights()  # gamma, beta first (then BatchNormalization's statistics)
            weights[0] = rng.uniform(0.5, 1.5, weights[0].shape)
            weights[1] = rng.uniform(-0.3, 0.3, weights[1].shape)
            layer.set_weights(weights)
        if isinstance(layer, keras.layers.BatchNormalization):
            batch_norms.append((layer, layer.momentum))
            layer.momentum = 0.0
    if batch_norms:
        model([calibration], training=True)
    for layer, momentum in batch_norms:
        layer.momentum = momentum


def _samples(entry: KerasModel, count: int, seed: int) -> list[Any]:
    import numpy as np

    rng = np.random.default_rng(seed)
    shape = (1, *entry.input_shape)
    if entry.sample == "pixels":
        return [rng.uniform(0, 255, shape).astype(np.float32) for _ in range(count)]
    if entry.sample == "unit":
        return [rng.uniform(-1, 1, shape).astype(np.float32) for _ in range(count)]
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def _framework(name: str) -> Any:
    """keras or tf_keras (which an older tensorflow venv may lack: the row then says how to add it)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if name == "tf_keras":
            raise ModuleNotFoundError(f"no tf_keras in the tensorflow venv: `pip install --no-deps {TF_KERAS_PIN}` "
                                      "into it, or remake it with `make tf-venv`") from exc
        raise


def _build(entry: KerasModel) -> Any:
    import numpy as np

    keras = _framework(entry.framework)
    keras.utils.set_random_seed(SEED)
    model = entry.build(keras, keras.Input(entry.input_shape, batch_size=1))
    calibration = np.concatenate(_samples(entry, NORMALIZATION_SAMPLES, SEED + 2))
    _realistic_normalization(keras, model, calibration, np.random.default_rng(SEED))
    return model


def _convert(model: Any, entry: KerasModel, variant: str) -> bytes:
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if variant != "float":
        samples = _samples(entry, REPRESENTATIVE_SAMPLES, SEED + 1)
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = lambda: ([s] for s in samples)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if variant == "int8":
            converter.inference_input_type = tf.int8
            converter.inference_output_type = tf.int8
    return converter.convert()


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    # the converter's errors end with the MLIR diagnostic that says what failed
    error_lines = [line for line in lines if "error:" in line]
    return f"{type(exc).__name__}: {(error_lines or lines or [''])[0][:300]}"


def _status_file(out: Path, name: str, variant: str) -> Path:
    return out / f"{name}_{variant}.json"


def convert_pairs(out: Path, pairs: list[tuple[str, str]]) -> None:
    """The child process: convert (model, variant) pairs in order, each model built once. A status file
    says "converting" while a conversion runs and its outcome after, so that when the converter
    crashes the parent knows which conversion it was and starts a new child for the rest."""
    import keras
    import tensorflow as tf

    versions_file = out / "versions.json"  # an earlier child's, when the converter crashed in it
    versions = json.loads(versions_file.read_text()) if versions_file.exists() else {}
    versions.update(tensorflow=tf.__version__, keras=keras.__version__, python=sys.version.split()[0])
    if any(BY_NAME[name].framework == "tf_keras" for name, _ in pairs):
        with contextlib.suppress(ModuleNotFoundError):  # those rows say so
            versions["tf_keras"] = importlib.import_module("tf_keras").__version__
    versions_file.write_text(json.dumps(versions))
    built: dict[str, Any] = {}
    for name, variant in pairs:
        status_file = _status_file(out, name, variant)
        status_file.write_text(json.dumps({"status": "converting"}))
        started = time.perf_counter()
        status: dict[str, Any] = {"status": "ok"}
        try:
            if name not in built:
                built[name] = _build(BY_NAME[name])
            (out / f"{name}_{variant}.tflite").write_bytes(_convert(built[name], BY_NAME[name], variant))
        except Exception as exc:  # one failed conversion is one row of the table
            status = {"status": "converter failed", "error": _first_line(exc)}
        status["seconds"] = round(time.perf_counter() - started, 1)  # the first variant's includes the build
        status_file.write_text(json.dumps(status))


# --- the parent: children until every pair has an outcome, then the manifest ---------------------
def _child_failure(done: subprocess.CompletedProcess[str] | None) -> str:
    """The converter's crash in one line: Python's fault handler names the signal and the innermost
    frame (the child runs with -X faulthandler)."""
    if done is None:
        return f"converter failed: no result within {CHILD_TIMEOUT_S} s"
    how = f"killed by signal {-done.returncode}" if done.returncode < 0 else f"exit status {done.returncode}"
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    fatal = next((i for i, line in enumerate(lines) if line.startswith("Fatal Python error:")), None)
    if fatal is None:
        return f"converter crashed ({how})" + (f": {lines[-1][:200]}" if lines else "")
    frame = next((line for line in lines[fatal:] if line.startswith("File ")), "")
    where = re.match(r'File ".*?site-packages/(.+?)", line (\d+) in (\S+)', frame)
    at = f" in {where[1]}:{where[2]} {where[3]}()" if where else ""
    return f"converter crashed: {lines[fatal].removeprefix('Fatal Python error: ')}{at}"


def _run_child(out: Path, pairs: list[tuple[str, str]]) -> subprocess.CompletedProcess[str] | None:
    command = [sys.executable, "-X", "faulthandler", __file__, str(out),
               "--child", ",".join(f"{name}:{variant}" for name, variant in pairs)]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None


def build_all(out: Path, pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Convert every pair into out and write out/manifest.json (one row per pair, in order)."""
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    manifest: dict[str, Any] = {"models": []}
    outcomes: dict[tuple[str, str], dict[str, Any]] = {}
    pending = list(pairs)
    for name, variant in pending:
        _status_file(out, name, variant).unlink(missing_ok=True)
    (out / "versions.json").unlink(missing_ok=True)
    while pending:
        done = _run_child(out, pending)
        for pair in pending:
            status_file = _status_file(out, *pair)
            if not status_file.exists():
                break
            status = json.loads(status_file.read_text())
            if status["status"] == "converting":  # the child died in this conversion
                status = {"status": "converter failed", "error": _child_failure(done)}
            outcomes[pair] = status
            print(f"{pair[0]} {pair[1]}: {status['status']} {status.get('error', '')}", file=sys.stderr)
        if not any(pair in outcomes for pair in pending):  # died before its first conversion began
            outcomes[pending[0]] = {"status": "converter failed", "error": _child_failure(done)}
        pending = [pair for pair in pending if pair not in outcomes]
    for name, variant in pairs:
        entry = BY_NAME[name]
        row: dict[str, Any] = {"model": name, "variant": variant, "source": entry.source,
                               "framework": entry.framework, "input_shape": [1, *entry.input_shape],
                               "input_sample": entry.sample, "settings": VARIANTS[variant]}
        row.update(outcomes[(name, variant)])
        if row["status"] != "ok" and entry.known_issue:
            row["known_issue"] = entry.known_issue
        row["file"] = f"{name}_{variant}.tflite" if row["status"] == "ok" else None
        manifest["models"].append(row)
    versions = out / "versions.json"  # written by the children
    manifest["versions"] = json.loads(versions.read_text()) if versions.exists() else {}
    manifest["seconds"] = round(time.perf_counter() - started, 1)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def parse_selection(text: str | None) -> list[tuple[str, str]]:
    """"a,b:int8" -> every variant of a and b's int8; None -> every variant of every model."""
    if not text:
        return [(m.name, v) for m in ZOO for v in m.variants]
    pairs = []
    for item in text.split(","):
        name, _, variant = item.strip().partition(":")
        if name not in BY_NAME:
            raise ValueError(f"unknown model {name!r}; known: {', '.join(BY_NAME)}")
        variants = BY_NAME[name].variants
        if variant and variant not in variants:
            raise ValueError(f"{name} has no variant {variant!r}; it has {', '.join(variants)}")
        pairs += [(name, v) for v in ([variant] if variant else variants)]
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the .tflite files and manifest.json")
    parser.add_argument("--only", help="comma-separated MODEL or MODEL:VARIANT (default: everything)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # a child process: convert these pairs
    args = parser.parse_args()
    try:
        pairs = parse_selection(args.child or args.only)
    except ValueError as exc:
        print(f"keras_zoo_build: {exc}", file=sys.stderr)
        return 2
    if args.child:
        convert_pairs(args.out, pairs)
    else:
        build_all(args.out, pairs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
