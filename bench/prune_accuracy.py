"""Accuracy of `nn2c compile --prune` without fine-tuning: a digits CNN at rising sparsity.

A small CNN (conv-ReLU x2, max-pool, conv-ReLU, dense; the architecture of tests/test_quant_digits.py)
is trained with PyTorch on scikit-learn's load_digits (seeded, 70% train / 30% test), exported to ONNX,
and compiled by nn2c with `--prune magnitude:S` (S = 0 ... 0.9) and `--prune structured:F`
(F = 0 ... 0.75) three ways: the float model; the int8 model (nn2c's `--quantize int8 --write-tflite` of
it, calibrated on 200 training images) pruned as an int8 model; and the float model pruned, then
quantized (`--prune ... --quantize int8`: pruning runs first). Each compile's generated C is built and run on the 540 test images; the table gives
its test accuracy, the report's output SQNR against the unpruned model (on the calibration images) and
the MACs of the compiled model. No fine-tuning anywhere: this is the accuracy a user gets by pruning a
trained model at compile time. Writes the `prune_accuracy` section of docs/BENCHMARKS.md.

    python bench/prune_accuracy.py [--no-write]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from report_file import replace_section  # noqa: E402

from nn2c.api import CompileOptions, compile_model  # noqa: E402
from nn2c.ir.cost import macs  # noqa: E402
from nn2c.verify.runner import run_folder  # noqa: E402

MAGNITUDE = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
STRUCTURED = (0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75)


def train(folder: Path) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    """The trained float model as ONNX, the calibration archive, the test images and labels."""
    import torch
    from sklearn.datasets import load_digits

    nn = torch.nn
    data = load_digits()
    x = (data.images / 16.0).astype(np.float32)[:, None]
    y = data.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    split = int(0.7 * len(x))
    x_train, y_train, x_test, y_test = x[:split], y[:split], x[split:], y[split:]
    torch.manual_seed(0)
    torch.set_num_threads(1)

    class DigitsNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 12, 3, padding=1), nn.BatchNorm2d(12), nn.ReLU(),
                nn.Conv2d(12, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(16, 24, 3, padding=1), nn.ReLU())
            self.head = nn.Linear(24 * 4 * 4, 10)

        def forward(self, inputs):
            return self.head(self.features(inputs).flatten(1))

    model = DigitsNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(x_train), torch.from_numpy(y_train)
    generator = torch.Generator().manual_seed(0)
    for _ in range(12):
        for batch in torch.randperm(len(xt), generator=generator).split(64):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xt[batch]), yt[batch]).backward()
            optimizer.step()
    model.eval()
    path = folder / "digits.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.zeros(1, 1, 8, 8),), str(path), dynamo=False, opset_version=13,
                          input_names=["image"], output_names=["logits"])
    calibration = folder / "calibration.npz"
    np.savez(calibration, image=x_train[:200])
    return path, calibration, x_test, y_test


def measure(path: Path, calibration: Path, x: np.ndarray, y: np.ndarray, spec: str | None, quantize: bool,
            folder: Path) -> dict:
    options = CompileOptions(prune=spec, calibration=str(calibration), quantize="int8" if quantize else None)
    result = compile_model(path, options)
    logits = run_folder(result.write(folder, force=True), [x])[0].reshape(len(x), -1)
    row = {"accuracy": float(np.mean(logits.argmax(1) == y)), "macs": sum(macs(n) for n in result.graph.nodes),
           "sqnr": None, "zero": 0.0}
    if result.prune is not None:
        row["sqnr"] = result.prune.output_sqnr_db
        layers = result.prune.layers
        row["zero"] = sum(x.weights * x.zeroed_fraction for x in layers) / sum(x.weights for x in layers)
    return row


def _db(value: float | None) -> str:
    if value is None:
        return "-"
    return "exact" if value == float("inf") else f"{value:.1f}"


def table(rows: list[dict], dense: dict[str, dict], seconds: float) -> str:
    lines = [
        "## Pruning accuracy (no fine-tuning)",
        "",
        "Written by `bench/prune_accuracy.py`. A digits CNN (scikit-learn's load_digits 8x8 images; conv-ReLU x2,",
        "max-pool, conv-ReLU, dense; trained with PyTorch, seeded; ONNX) is compiled with `nn2c compile --prune`",
        "three ways: float; int8 (the int8 .tflite nn2c's `--quantize int8 --write-tflite` made of it, pruned as",
        "an int8 model); and float pruned then quantized (`--prune ... --quantize int8`: pruning runs first, then",
        "calibration on 200 training images). The generated C runs the 540 test images.",
        "Pruning zeroes weights of a trained model without fine-tuning,",
        "so accuracy drops as sparsity rises: fine-tune the model written by `--write-tflite` (or prune during",
        "training) before relying on high sparsity. SQNR: the compile report's output SQNR against the unpruned",
        "model on the calibration images (for prune-then-quantize it is the float pruning's alone, measured",
        "before quantization, so it equals the float column). MACs: the compiled model's. Magnitude pruning leaves the MACs as they",
        "are (dense kernels multiply by the zeros) unless a whole filter became zero. Float structured pruning",
        "removes no channel (a zeroed float filter still outputs its bias, which is not folded into a float",
        "layer); in an int8 model prune-channels removes those channels.",
        "",
        f"Unpruned: float accuracy {dense['float']['accuracy']:.2%} ({dense['float']['macs']:,} MACs), int8 "
        f"{dense['int8']['accuracy']:.2%} ({dense['int8']['macs']:,} MACs).",
        "",
        "| --prune | float: weights zero | accuracy | SQNR dB | MACs | int8 model: accuracy | SQNR dB | MACs "
        "| prune, then quantize: accuracy | MACs |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        f, q, p = r["float"], r["int8"], r["ptq"]
        lines.append(f"| {r['spec']} | {f['zero']:.1%} | {f['accuracy']:.2%} | {_db(f['sqnr'])} | {f['macs']:,} "
                     f"| {q['accuracy']:.2%} | {_db(q['sqnr'])} | {q['macs']:,} | {p['accuracy']:.2%} "
                     f"| {p['macs']:,} |")
    lines += ["", f"({len(rows) * 3 + 3} compiles, built and run, in {seconds:.0f} s.)"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-write", action="store_true", help="Print the table; leave docs/BENCHMARKS.md alone.")
    args = parser.parse_args()
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        path, calibration, x, y = train(work)
        int8_path = work / "digits_int8.tflite"
        compile_model(path, CompileOptions(quantize="int8", calibration=str(calibration),
                                           write_tflite=str(int8_path))).write(work / "q", force=True)
        models = {"float": (path, False), "int8": (int8_path, False), "ptq": (path, True)}
        dense = {kind: measure(model, calibration, x, y, None, quantize, work / "out")
                 for kind, (model, quantize) in models.items()}
        rows = []
        specs = [f"magnitude:{s:g}" for s in MAGNITUDE] + [f"structured:{f:g}" for f in STRUCTURED]
        for spec in specs:
            row: dict = {"spec": f"`{spec}`"}
            for kind, (model, quantize) in models.items():
                row[kind] = measure(model, calibration, x, y, spec, quantize, work / "out")
                print(f"{spec} {kind}: accuracy {row[kind]['accuracy']:.2%}, SQNR {_db(row[kind]['sqnr'])} dB, "
                      f"MACs {row[kind]['macs']:,}", flush=True)
            rows.append(row)
    text = table(rows, dense, time.monotonic() - start)
    print(text)
    if not args.no_write:
        replace_section("prune_accuracy", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
