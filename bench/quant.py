"""Post-training quantization benchmark: nn2c's int8 against the official int8 models and against
TensorFlow Lite's converter.

Part 1 (MLPerf Tiny): each float model in models/mlcommons_tiny is quantized by nn2c
(--quantize int8, MSE and min/max ranges) on seeded, structured synthetic inputs (smooth random
images; smooth random spectrograms in the range the official int8 model's input covers), compiled
to C and run on the host. The same inputs are evaluated: output SQNR against the float model (run
by LiteRT) and top-1 agreement, side by side with the official int8 model run by TFLite Micro.
Part 2 (needs tensorflow): small Keras models of the MLPerf Tiny kinds (DS-CNN, ResNet-8,
MobileNetV1 0.25, dense autoencoder; random weights, batch-norm statistics set from the data) are
converted to float .tflite; TFLite's converter quantizes them fully to int8 with the same
calibration samples as nn2c. SQNR of each int8 output against the float output, same samples.
Writes the `quant` section of docs/BENCHMARKS.md.

    python bench/quant.py [--samples 100] [--skip-converter] [--no-write]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from report_file import replace_section  # noqa: E402

from nn2c import CompileOptions, compile_model  # noqa: E402
from nn2c.api import load_model  # noqa: E402
from nn2c.verify.oracle import run_litert, run_tflm  # noqa: E402
from nn2c.verify.runner import run_folder  # noqa: E402

TINY = ROOT / "models" / "mlcommons_tiny"
# float model, official int8 model, kind of input, classifier?
MLPERF = [
    ("vww_96_float", "vww_96_int8", "image", True),
    ("pretrainedResnet", "pretrainedResnet_quant", "image", True),
    ("kws_ref_model_float32", "kws_ref_model", "spectrogram", True),
    ("ad01_fp32", "ad01_int8", "spectrogram", False),
]
METHODS = ("mse", "minmax")


# --- inputs ------------------------------------------------------------------------------------------
def _smooth(rng: np.random.Generator, shape: tuple[int, ...], coarse: tuple[int, ...]) -> np.ndarray:
    """Low-frequency random field: coarse noise upsampled (separable linear interpolation), plus fine noise."""
    field = rng.normal(size=coarse)
    for axis, (n_out, n_in) in enumerate(zip(shape, coarse, strict=True)):
        if n_out == n_in:
            continue
        grid = np.linspace(0, n_in - 1, n_out)
        lo = np.floor(grid).astype(int)
        hi = np.minimum(lo + 1, n_in - 1)
        w = (grid - lo).reshape([-1 if a == axis else 1 for a in range(len(shape))])
        field = np.take(field, lo, axis=axis) * (1 - w) + np.take(field, hi, axis=axis) * w
    return field + 0.15 * rng.normal(size=shape)


def make_inputs(shape: tuple[int, ...], kind: str, count: int, seed: int, lo: float, hi: float) -> np.ndarray:
    """count structured samples of shape (batch dim included), spread over [lo, hi]."""
    rng = np.random.default_rng(seed)
    body = shape[1:]
    samples = []
    for _ in range(count):
        if kind == "image":  # [H, W, C]: smooth colour blobs, random contrast and brightness
            coarse = (max(body[0] // 12, 2), max(body[1] // 12, 2), body[2])
        else:  # spectrogram-like: smooth along both axes, flattened if the model takes it flat
            coarse = tuple(max(d // 6, 2) for d in body)
        x = _smooth(rng, body, coarse)
        x = (x - x.min()) / (x.max() - x.min() + 1e-9)
        x = rng.uniform(0.0, 0.3) + x * rng.uniform(0.5, 1.0) * (1 - 0.3)
        samples.append(lo + np.clip(x, 0, 1) * (hi - lo))
    return np.stack(samples).reshape((count, *shape)).astype(np.float32)


def input_range(int8_model: Path) -> tuple[float, float]:
    """The real range the official int8 model's input covers (its training data's range)."""
    value = load_model(int8_model).inputs[0]
    quant = value.type.quant
    assert quant is not None
    s, z = quant.scale[0], quant.zero_point[0]
    return s * (-128 - z), s * (127 - z)


# --- runs --------------------------------------------------------------------------------------------
def run_nn2c(model: Path, x: np.ndarray, method: str, work: Path) -> tuple[np.ndarray, object, float]:
    np.save(work / "calibration.npy", x)
    started = time.time()
    result = compile_model(model, CompileOptions(quantize="int8", calibration=str(work / "calibration.npy"),
                                                 calibration_method=method))
    seconds = time.time() - started
    out = result.write(work / f"{model.stem}_{method}", force=True)
    y = run_folder(out, [x])[0]
    return y.reshape(len(x), -1).astype(np.float64), result.quant, seconds


def run_float(model: Path, x: np.ndarray) -> np.ndarray:
    outs = run_litert(model, [[r] for r in x], 1)
    return np.stack([o[0] for o in outs]).reshape(len(x), -1).astype(np.float64)


def run_int8_tflite(model: Path, x: np.ndarray) -> np.ndarray:
    """An int8 .tflite on TFLite Micro: float inputs are quantized and outputs dequantized as needed."""
    graph = load_model(model)
    inp, out = graph.inputs[0], graph.outputs[0]
    records = []
    for r in x:
        if inp.type.dtype == "int8":
            s, z = inp.type.quant.scale[0], inp.type.quant.zero_point[0]  # type: ignore[union-attr]
            r = np.clip(np.round(r / s) + z, -128, 127).astype(np.int8)
        records.append([r.reshape(inp.type.shape)])
    outs = np.stack([o[0] for o in run_tflm(model, records, 1)]).reshape(len(x), -1).astype(np.float64)
    if out.type.dtype == "int8":
        s, z = out.type.quant.scale[0], out.type.quant.zero_point[0]  # type: ignore[union-attr]
        outs = (outs - z) * s
    return outs


def sqnr(ref: np.ndarray, got: np.ndarray) -> float:
    noise = float(np.sum((ref - got) ** 2))
    return math.inf if noise == 0 else 10 * math.log10(float(np.sum(ref**2)) / noise)


def top1(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(a.argmax(1) == b.argmax(1)))


# --- part 1 ------------------------------------------------------------------------------------------
def mlperf(samples: int, work: Path) -> list[dict]:
    rows = []
    for float_name, int8_name, kind, classifier in MLPERF:
        float_path, int8_path = TINY / f"{float_name}.tflite", TINY / f"{int8_name}.tflite"
        lo, hi = input_range(int8_path)
        shape = load_model(float_path).inputs[0].type.shape
        x = make_inputs(shape, kind, samples, seed=1, lo=lo, hi=hi)
        ref = run_float(float_path, x)
        official = run_int8_tflite(int8_path, x)
        row = {"model": float_name, "official": int8_name, "input": f"[{lo:.4g}, {hi:.4g}]",
               "official_sqnr": sqnr(ref, official), "classifier": classifier}
        if classifier:
            row["official_top1"] = top1(ref, official)
        for method in METHODS:
            y, report, seconds = run_nn2c(float_path, x, method, work)
            row[f"{method}_sqnr"] = sqnr(ref, y)
            row[f"{method}_seconds"] = seconds
            row[f"{method}_report_sqnr"] = report.output_sqnr_db  # type: ignore[attr-defined]
            if classifier:
                row[f"{method}_top1"] = top1(ref, y)
                row[f"{method}_top1_official"] = top1(official, y)
        rows.append(row)
        print(f"{float_name}: " + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                                            for k, v in row.items()), flush=True)
    return rows


# --- part 2 ------------------------------------------------------------------------------------------
def _keras_models():
    import keras
    from keras import layers as L

    def bn_relu(x, relu=True):
        x = L.BatchNormalization(momentum=0.0)(x)
        return L.ReLU()(x) if relu else x

    def ds_cnn():
        inp = keras.Input((49, 10, 1), batch_size=1)
        x = bn_relu(L.Conv2D(64, (10, 4), strides=2, padding="same")(inp))
        for _ in range(4):
            x = bn_relu(L.DepthwiseConv2D(3, padding="same")(x))
            x = bn_relu(L.Conv2D(64, 1)(x))
        x = L.Flatten()(L.AveragePooling2D(pool_size=(25, 5))(x))
        return keras.Model(inp, L.Dense(12, activation="softmax")(x))

    def resnet8():
        inp = keras.Input((32, 32, 3), batch_size=1)
        x = bn_relu(L.Conv2D(16, 3, padding="same")(inp))
        for filters, stride in ((16, 1), (32, 2), (64, 2)):
            y = bn_relu(L.Conv2D(filters, 3, strides=stride, padding="same")(x))
            y = bn_relu(L.Conv2D(filters, 3, padding="same")(y), relu=False)
            if stride != 1:
                x = L.Conv2D(filters, 1, strides=stride)(x)
            x = L.ReLU()(L.Add()([x, y]))
        x = L.Flatten()(L.AveragePooling2D(8)(x))
        return keras.Model(inp, L.Dense(10, activation="softmax")(x))

    def mobilenet_v1():
        inp = keras.Input((96, 96, 3), batch_size=1)
        x = bn_relu(L.Conv2D(8, 3, strides=2, padding="same")(inp))
        for filters, stride in ((16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2), *[(128, 1)] * 5, (256, 2),
                                (256, 1)):
            x = bn_relu(L.DepthwiseConv2D(3, strides=stride, padding="same")(x))
            x = bn_relu(L.Conv2D(filters, 1)(x))
        x = L.Flatten()(L.AveragePooling2D(3)(x))
        return keras.Model(inp, L.Dense(2, activation="softmax")(x))

    def autoencoder():
        inp = keras.Input((640,), batch_size=1)
        x = inp
        for units in (128, 128, 128, 128, 8, 128, 128, 128, 128):
            x = bn_relu(L.Dense(units)(x))
        return keras.Model(inp, L.Dense(640)(x))

    return [("DS-CNN (KWS)", ds_cnn, "spectrogram", (-123.4, 25.7), True),
            ("ResNet-8 (IC)", resnet8, "image", (0.0, 1.0), True),
            ("MobileNetV1 0.25 (VWW)", mobilenet_v1, "image", (0.0, 1.0), True),
            ("Dense autoencoder (AD)", autoencoder, "spectrogram", (-85.0, 14.5), False)]


@contextlib.contextmanager
def _quiet():
    """TensorFlow's converter logs to the C-level stderr and prints signatures to stdout."""
    sys.stdout.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        os.dup2(devnull.fileno(), 1)
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            for fd, target in zip(saved, (1, 2), strict=True):
                os.dup2(fd, target)
                os.close(fd)


def converter(samples: int, work: Path) -> tuple[list[dict], str]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import keras
        import tensorflow as tf
    except ImportError as exc:
        return [], f"tensorflow is not installed ({exc}); part 2 skipped"
    keras.utils.set_random_seed(0)
    rows = []
    for k, (name, build, kind, (lo, hi), classifier) in enumerate(_keras_models()):
        model = build()
        shape = tuple(int(d) for d in model.inputs[0].shape)
        x = make_inputs(shape, kind, samples, seed=10 + k, lo=lo, hi=hi)
        batch = x.reshape((samples, *shape[1:]))
        model(batch, training=True)  # momentum 0: batch-norm statistics := the data's
        for layer in model.layers:  # random affine so that activations are not just normalised
            if isinstance(layer, keras.layers.BatchNormalization):
                rng = np.random.default_rng(k)
                channels = layer.gamma.shape[0]
                layer.gamma.assign(rng.uniform(0.5, 1.5, channels).astype(np.float32))
                layer.beta.assign(rng.uniform(-0.5, 0.5, channels).astype(np.float32))
        with _quiet():
            float_bytes = tf.lite.TFLiteConverter.from_keras_model(model).convert()
            conv = tf.lite.TFLiteConverter.from_keras_model(model)
            conv.optimizations = [tf.lite.Optimize.DEFAULT]
            conv.representative_dataset = lambda x=x: ([r] for r in x)
            conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            int8_bytes = conv.convert()
        stem = name.split()[0].replace("-", "_").lower()
        float_path, int8_path = work / f"{stem}_float.tflite", work / f"{stem}_tf_int8.tflite"
        float_path.write_bytes(float_bytes)
        int8_path.write_bytes(int8_bytes)
        ref = run_float(float_path, x)
        tf_out = run_int8_tflite(int8_path, x)
        row = {"model": name, "tf_sqnr": sqnr(ref, tf_out), "classifier": classifier}
        if classifier:
            row["tf_top1"] = top1(ref, tf_out)
        for method in METHODS:
            y, _, _ = run_nn2c(float_path, x, method, work)
            row[f"{method}_sqnr"] = sqnr(ref, y)
            if classifier:
                row[f"{method}_top1"] = top1(ref, y)
        rows.append(row)
        print(f"{name}: " + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                                      for k, v in row.items()), flush=True)
    return rows, f"tensorflow {tf.__version__}"


# --- report ------------------------------------------------------------------------------------------
def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _db(value: float) -> str:
    return "exact" if math.isinf(value) else f"{value:.1f}"


def markdown(samples: int, part1: list[dict], part2: list[dict], tf_note: str, seconds: float) -> str:
    lines = [
        "## Post-training int8 quantization: SQNR against float",
        "",
        f"Written by `bench/quant.py` ({samples} seeded, structured synthetic inputs per model, used both to "
        "calibrate and to evaluate; SQNR = 10 log10(sum y^2 / sum (y - y_int8)^2) of the model output against "
        "the float model run by LiteRT; nn2c's int8 outputs come from the generated C run on the host; "
        f"{seconds:.0f} s).",
        "",
        "### MLPerf Tiny: nn2c's quantization of the float model against the official int8 model",
        "",
        "The official int8 models (quantized by their authors with TFLite's converter on real data) run on "
        "TFLite Micro, their input quantized with their own parameters. Top-1 = the share of samples whose "
        "argmax matches.",
        "",
        "| float model | official int8 | input range | SQNR dB: nn2c (mse) | nn2c (minmax) | official int8 | "
        "top-1 = float: nn2c (mse) | official | top-1 nn2c (mse) = official |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in part1:
        c = r["classifier"]
        lines.append(
            f"| {r['model']} | {r['official']} | {r['input']} | {_db(r['mse_sqnr'])} | {_db(r['minmax_sqnr'])} | "
            f"{_db(r['official_sqnr'])} | {_pct(r.get('mse_top1')) if c else 'n/a'} | "
            f"{_pct(r.get('official_top1')) if c else 'n/a'} | {_pct(r.get('mse_top1_official')) if c else 'n/a'} |")
    lines += ["", "### Small Keras models: nn2c against TFLite's converter (full-integer, same calibration samples)", ""]
    if not part2:
        lines.append(f"Not run: {tf_note}.")
    else:
        lines += [
            f"Random weights, batch-norm statistics set from the samples, random batch-norm affine ({tf_note}). "
            "Both quantize the same float .tflite; TFLite's int8 model runs on TFLite Micro.",
            "",
            "| model | SQNR dB: TFLite converter | nn2c (mse) | nn2c (minmax) | nn2c (mse) - converter | "
            "top-1 = float: converter | nn2c (mse) |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for r in part2:
            c = r["classifier"]
            lines.append(
                f"| {r['model']} | {_db(r['tf_sqnr'])} | {_db(r['mse_sqnr'])} | {_db(r['minmax_sqnr'])} | "
                f"{r['mse_sqnr'] - r['tf_sqnr']:+.1f} | {_pct(r.get('tf_top1')) if c else 'n/a'} | "
                f"{_pct(r.get('mse_top1')) if c else 'n/a'} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--skip-converter", action="store_true", help="skip part 2 (TensorFlow)")
    parser.add_argument("--no-write", action="store_true", help="print the section, do not write BENCHMARKS.md")
    args = parser.parse_args()
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="nn2c_quant_bench_") as tmp:
        part1 = mlperf(args.samples, Path(tmp))
        part2, note = ([], "skipped (--skip-converter)") if args.skip_converter else converter(args.samples, Path(tmp))
    text = markdown(args.samples, part1, part2, note, time.time() - started)
    print(text)
    if not args.no_write:
        replace_section("quant", text)


if __name__ == "__main__":
    main()
