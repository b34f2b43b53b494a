"""Fit nn2c's per-kernel cost model against QEMU instruction counts, and report its error.

For every model of models/ that the bench image runs (tflite and onnx; the one huge model is
skipped), plus generated MCUNet-style candidates (--candidates N), and every core: `nn2c bench`'s
per-step instruction counts (nn2c.targets.cortexm_bench, one seeded input, outputs checked against
TFLM, the 4 MiB memory map where the standard one is too small) are joined with the steps of
nn2c.profile for the same model and core (the same compile stages, so the same steps). Per core:
- per operator + kernel functions (e.g. CONV_2D:nn2c_conv_s8_simd), per kernel functions alone,
  per operator type and over all steps (the fallbacks, most specific first): instructions =
  a*MACs + b*patch elements (MACs / output channels) + c*window taps (output pixels * kh * kw of a
  convolution or pooling) + d*output elements + e*input elements + f*output pixels + g, fitted by non-negative least squares on relative error (each row divided
  by its measured count); a model of models/ whose default schedule runs row groups is measured
  layer by layer too, so that every one of its operators is a sample of its kernel whatever the
  schedule (add_layer_samples);
- row groups: factor * (sum of the members' predictions) + per-operator * members + constant;
- invoke's own overhead: constant + per-step * steps + per byte the relocations move (word-wise,
  byte-wise; exact from the plan); code bytes: constant + per-step * steps + a
  fitted size per kernel function used (the model code of the bench image's map file).
Writes src/nn2c/data/cost_model.json (package data) and the `costmodel` section of
docs/BENCHMARKS.md: per-model total error and per-layer error, in sample and leaving each model
out of the fit; measurements are kept in test-artifacts/costmodel_measurements.json for --refit.

    python bench/costmodel.py [--targets cortex-m4 cortex-m55] [--models kws_ref_model ...]  # (--models: only
                                                # these measured again, the saved rows of the others kept)
    python bench/costmodel.py --candidates 202  # + 202 generated candidates (2 have an inf scale: refused)
    python bench/costmodel.py --refit --speed   # fit again without QEMU; + time nn2c.profile on tinyengine/vww
    python bench/costmodel.py --layer-samples   # saved models with row groups measured layer by layer too
    python bench/costmodel.py --rekey           # the saved steps' kernel keys from nn2c.profile again, refit
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import nnls

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from report_file import replace_section  # noqa: E402

from nn2c.errors import NN2CError  # noqa: E402
from nn2c.memory.exact import NODE_LIMIT  # noqa: E402
from nn2c.profiler import (  # noqa: E402
    FEATURES,
    StepProfile,
    code_bytes,
    feature_values,
    invoke_overhead,
    kernel_key,
    kernels_used,
    predict_step,
    profile,
)
from nn2c.targets.cortexm_bench import bench_model  # noqa: E402
from nn2c.targets.cortexm_build import missing_tools  # noqa: E402

DATA_FILE = ROOT / "src" / "nn2c" / "data" / "cost_model.json"
MEASUREMENTS = ROOT / "test-artifacts" / "costmodel_measurements.json"
CANDIDATES = ROOT / "test-artifacts" / "candidates"
# the one huge model of models/: 300.8 M MACs and 3.5 MB of weights (nn2c inspect), MobileNetV2 at 224x224
SKIP = {"tflite_micro/mobilenet_v2_quantized_1x3x224x224": "300.8 M MACs, 3.5 MB of weights: the huge one"}
# the Cortex-M7 runs the M4's kernels and QEMU's counts are the same: it takes the M4's fit (fit_and_write)
TARGETS = ["cortex-m4", "cortex-m55"]
# invoke's own instructions: a constant, per step, per byte of relocation moved word-wise, byte-wise
OVERHEAD_FEATURES = ("constant", "per_step", "per_moved_word_byte", "per_moved_byte")
# the features of a kernel fitted on fewer samples than FEATURES, in order of preference
SMALL_FIT_FEATURES = ("macs", "output_elements", "output_pixels", "input_elements")
ERROR_BANDS = ((0, 2), (2, 5), (5, 10), (10, 25), (25, float("inf")))  # % absolute error, for the distribution
MIN_INSTRUCTIONS = 50  # steps below this (a copy of a few bytes) are left out of the error statistics


def models() -> list[Path]:
    found = sorted((ROOT / "models").glob("*/*.tflite")) + sorted((ROOT / "models").glob("*/*.onnx"))
    return [p for p in found if _key(p) not in SKIP]


def _key(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def saved_paths() -> dict[str, Path]:
    """The file of each network the measurements may hold, by its key: models/ and the candidates written."""
    return {_key(p): p for p in [*models(), *sorted(CANDIDATES.glob("*.tflite"))]}


def candidates(count: int, seed: int, folder: Path) -> list[Path]:
    """MCUNet-style int8 candidates with seeded random weights (tests/test_row_groups.py's generator, whose
    Net writes the .tflite with nn2c's own writer), written to `folder`."""
    sys.path.insert(0, str(ROOT))  # the tests' int8 network builder
    from tests.test_row_groups import mcunet_candidates

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, model in enumerate(mcunet_candidates(count, seed)):
        path = folder / f"c{i:03d}.tflite"
        path.write_bytes(model)
        paths.append(path)
    return paths


def measure(paths: list[Path], targets: list[str], layer_samples: bool = True) -> dict[str, Any]:
    """QEMU counts per step at the default schedule; with layer_samples, a model whose default runs row
    groups is measured layer by layer too (add_layer_samples)."""
    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = dict(SKIP)
    for path in paths:
        for target in targets:
            started = time.time()
            try:
                report = bench_model(path, target=target, count=1, seed=0, large_memory=None)
                prof = profile(path, target=target)
            except NN2CError as exc:
                skipped[f"{_key(path)} ({target})"] = str(exc).splitlines()[0][:160]
                print(f"  {_key(path)} {target}: skipped: {skipped[f'{_key(path)} ({target})']}", flush=True)
                continue
            if not report.passed():
                skipped[f"{_key(path)} ({target})"] = f"outputs differ from {report.reference}"
                continue
            rows.append({"model": _key(path), "target": target, "steps": _measured_steps(prof, report),
                         "measured_total": report.instructions_per_inference,
                         "invoke_overhead": report.invoke_overhead, "moved": prof.moved,
                         "flash_code": report.footprint.flash_code,
                         "kernels": len({k for s in prof.steps for k in s.kernels})})
            print(f"  {_key(path)} {target}: {report.instructions_per_inference:,} instructions, "
                  f"{len(rows[-1]['steps'])} steps ({time.time() - started:.1f} s)", flush=True)
            if layer_samples:
                add_layer_samples(rows[-1], path)
    return {"rows": rows, "skipped": skipped}


def _measured_steps(prof: Any, report: Any) -> list[dict[str, Any]]:
    measured = {x.index: x.instructions for x in report.layers}
    return [{**_step_json(step), "measured": measured.get(step.step, 0.0)} for step in prof.steps]


def add_layer_samples(row: dict[str, Any], path: Path) -> bool:
    """The operators a row group runs are no samples of their kernels, so what the fit sees would follow
    the schedule it chose: micro_speech on Cortex-M55 measured layer by layer gave its convolution a fit,
    then streamed by rows, and the next fit, without that sample, predicted its base cost at half (and
    --schedule auto stopped streaming it). A row whose default schedule has row groups gets the steps of
    the same model measured with --schedule layer as well ("layer_steps": kernel samples only, not a
    network of the error statistics). Returns whether it measured."""
    from nn2c.api import CompileOptions

    if "layer_steps" in row or not any(s["op"] == "ROW_GROUP" for s in row["steps"]):
        return False
    options = CompileOptions(target=row["target"], schedule="layer")
    report = bench_model(path, target=row["target"], count=1, seed=0, options=options, large_memory=None)
    if not report.passed():
        raise SystemExit(f"costmodel: {row['model']} ({row['target']}) layer by layer differs from {report.reference}")
    row["layer_steps"] = _measured_steps(profile(path, target=row["target"], options=options), report)
    print(f"  {row['model']} {row['target']} layer by layer: {report.instructions_per_inference:,} instructions",
          flush=True)
    return True


def _step_json(step: StepProfile) -> dict[str, Any]:
    return {"step": step.step, "op": step.op, "kernel": kernel_key(step.kernels, step.variant),
            "kernels": step.kernels, "variant": step.variant, "features": step.features(), "members": step.members,
            "has_code": step.has_code}


def _as_step(row: dict[str, Any]) -> StepProfile:
    f = row["features"]
    return StepProfile(row["step"], row["op"], "", [], row["kernels"], int(f["macs"]), int(f["output_elements"]),
                       int(f["input_elements"]), int(f["output_pixels"]), 0,
                       window_taps=int(f.get("window_taps", 0)), members=row["members"], has_code=row["has_code"],
                       variant=row.get("variant", ""))


def rekey(data: dict[str, Any]) -> int:
    """The profile side of the saved measurements again, without QEMU: each saved network profiled as it was
    measured (its default schedule, and layer by layer for its "layer_steps"), and every step's kernel key,
    variant and row-group members taken from that profile (the keys change when the lowering tells a kernel's
    paths apart: NodeCode.variant). The measured counts stay. Returns the steps whose key changed."""
    from nn2c.api import CompileOptions

    paths = saved_paths()
    changed = 0
    for row in data["rows"]:
        path = paths.get(row["model"])
        if path is None:
            raise SystemExit(f"costmodel: --rekey: {row['model']} is not in models/ nor {CANDIDATES}")
        for field_name, options in (("steps", CompileOptions(target=row["target"])),
                                    ("layer_steps", CompileOptions(target=row["target"], schedule="layer"))):
            if field_name not in row:
                continue
            steps = profile(path, target=row["target"], options=options).steps
            saved = row[field_name]
            if [s.op for s in steps] != [s["op"] for s in saved]:
                raise SystemExit(f"costmodel: --rekey: {row['model']} ({row['target']}) no longer compiles to the "
                                 "steps measured: measure it again")
            for step, old in zip(steps, saved, strict=True):
                new = _step_json(step)
                changed += new["kernel"] != old["kernel"] or new["members"] != old["members"]
                old.update({k: new[k] for k in ("kernel", "kernels", "variant", "members")})
    return changed


def _fit_linear(samples: list[tuple[dict[str, float], float]]) -> dict[str, float]:
    """Non-negative least squares on relative error: minimise sum ((x.c - y) / y)^2. With fewer samples
    than features, one size feature alone (MACs, else output elements): a constant fitted to a few
    layers would not scale to a larger one."""
    features = list(FEATURES)
    if len(samples) < len(FEATURES):
        # as many size features as samples (all nonzero, so they scale), MACs first; no constant
        sizes = [k for k in SMALL_FIT_FEATURES if all(s[k] > 0 for s, _ in samples)][:len(samples)]
        features = sizes or ["one"]
    a = np.array([[feature_values(s)[k] / y for k in features] for s, y in samples])
    # scale the columns so that MACs (millions) and the constant (one) are fitted alike
    scale = np.maximum(np.abs(a).max(axis=0), 1e-12)
    coef, _ = nnls(a / scale, np.ones(len(samples)), maxiter=2000)
    fit = dict.fromkeys(FEATURES, 0.0)
    fit.update({k: float(c / s) for k, c, s in zip(features, coef, scale, strict=True)})
    return fit


def _fit_absolute(xs: list[list[float]], ys: list[float], names: list[str]) -> dict[str, float]:
    a, y = np.array(xs, dtype=float), np.array(ys, dtype=float)
    scale = np.maximum(np.abs(a).max(axis=0), 1e-12)
    coef, _ = nnls(a / scale, y, maxiter=2000)
    return {k: float(c / s) for k, c, s in zip(names, coef, scale, strict=True)}


def fit_core(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The cost model of one core from its measured rows (nn2c.profile's cost_model()[core])."""
    plain = [(s, s["measured"]) for r in rows for s in [*r["steps"], *r.get("layer_steps", [])]
             if s["op"] != "ROW_GROUP" and s["has_code"] and s["measured"] >= MIN_INSTRUCTIONS]
    by_kernel: dict[str, list] = {}
    by_op: dict[str, list] = {}
    by_op_kernel: dict[str, list] = {}
    for s, y in plain:
        by_op_kernel.setdefault(f"{s['op']}:{s['kernel']}", []).append((s["features"], y))
        by_kernel.setdefault(s["kernel"], []).append((s["features"], y))
        by_op.setdefault(s["op"], []).append((s["features"], y))
    costs: dict[str, Any] = {
        "op_kernels": {k: _fit_linear(v) for k, v in sorted(by_op_kernel.items())},
        "kernels": {k: _fit_linear(v) for k, v in sorted(by_kernel.items())},
        "ops": {k: _fit_linear(v) for k, v in sorted(by_op.items())},
        "fallback": _fit_linear([(s["features"], y) for s, y in plain]) if plain else dict.fromkeys(FEATURES, 0.0),
        "row_group": {"factor": 1.0, "per_operator": 0.0, "constant": 0.0},
        "samples": {k: len(v) for k, v in sorted(by_kernel.items())},
    }
    groups = [s for r in rows for s in r["steps"] if s["op"] == "ROW_GROUP" and s["measured"] >= MIN_INSTRUCTIONS]
    if groups:
        xs, ys = [], []
        for s in groups:
            members = predict_step({**costs, "row_group": {"factor": 1.0, "per_operator": 0.0, "constant": 0.0}},
                                   _as_step(s))
            xs.append([members / s["measured"], len(s["members"]) / s["measured"], 1.0 / s["measured"]])
            ys.append(1.0)
        group = _fit_absolute(xs, ys, ["factor", "per_operator", "constant"])
        costs["row_group"] = group
    # each network's overhead weighed by its total: what matters is the error it adds to the total (an
    # unexplained 1,500 instructions of a 200,000 one must not give hello_world's 800 a constant of 600)
    weights = [1.0 / max(r["measured_total"], 1.0) for r in rows]
    costs["overhead"] = _fit_absolute([[w * x for x in _overhead_features(r)] for r, w in zip(rows, weights, strict=True)],
                                      [w * r["invoke_overhead"] for r, w in zip(rows, weights, strict=True)],
                                      list(OVERHEAD_FEATURES))
    costs["code_bytes"] = _fit_code(rows)
    return costs


def _overhead_features(row: dict[str, Any]) -> list[float]:
    """OVERHEAD_FEATURES of a measured row (nn2c.profiler.invoke_overhead's terms)."""
    moved = row["moved"]
    return [1.0, float(len(row["steps"])), float(moved["words"]), float(moved["bytes"])]


def add_moved(data: dict[str, Any]) -> int:
    """Measurements saved before the relocations were recorded: profile those models again for them
    (exact and QEMU-free: the plan's moves). Returns how many rows were completed."""
    paths = saved_paths()
    done = 0
    for row in data["rows"]:
        if "moved" not in row and row["model"] in paths:
            row["moved"] = profile(paths[row["model"]], target=row["target"]).moved
            done += 1
    data["rows"] = [r for r in data["rows"] if "moved" in r]
    return done


def _row_kernels(row: dict[str, Any]) -> set[str]:
    return kernels_used([_as_step(s) for s in row["steps"]])


def _fit_code(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Model code bytes = constant + per step + the size of each kernel function used (NNLS)."""
    names = sorted({k for r in rows for k in _row_kernels(r)})
    xs = [[1.0, len(r["steps"])] + [1.0 if k in _row_kernels(r) else 0.0 for k in names] for r in rows]
    fit = _fit_absolute(xs, [r["flash_code"] for r in rows], ["constant", "per_step", *names])
    sizes = {k: fit[k] for k in names}
    seen = [v for v in sizes.values() if v > 0]
    return {"constant": fit["constant"], "per_step": fit["per_step"], "kernels": sizes,
            "unseen_kernel": float(np.percentile(seen, 25)) if seen else 0.0}


def predict_row(costs: dict[str, Any], row: dict[str, Any]) -> tuple[float, list[float]]:
    steps = [predict_step(costs, _as_step(s)) for s in row["steps"]]
    return sum(steps) + invoke_overhead(costs, len(row["steps"]), row["moved"]), steps


def evaluate(rows: list[dict[str, Any]], costs_of: Any) -> dict[str, Any]:
    """Per model total error, per layer error and code-bytes error; costs_of(row) gives the cost model
    to judge it with."""
    totals, layers, code = [], [], []
    for row in rows:
        costs = costs_of(row)
        guess = code_bytes(costs, len(row["steps"]), _row_kernels(row))
        code.append((guess - row["flash_code"]) / row["flash_code"])
        total, steps = predict_row(costs, row)
        totals.append((row["model"], total, row["measured_total"], (total - row["measured_total"])
                       / row["measured_total"]))
        for s, p in zip(row["steps"], steps, strict=True):
            if s["measured"] >= MIN_INSTRUCTIONS:
                layers.append((row["model"], s["step"], s["op"], s["kernel"], p, s["measured"],
                               (p - s["measured"]) / s["measured"]))
    return {"totals": totals, "layers": layers, "code": code}


def _share(errors: list[float], bound: float) -> float:
    return 100.0 * sum(abs(e) <= bound for e in errors) / max(len(errors), 1)


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.abs(values), q)) * 100 if values else 0.0


SPEED_MODEL = "tinyengine/vww"
SPEED_MODES = [("auto", "exact"), ("layer", "exact"), ("layer", "greedy")]


def measure_speed(runs: int) -> list[dict[str, Any]]:
    """nn2c.profile's time on SPEED_MODEL after loading it (an in-memory Graph, as a search loop would pass),
    per (schedule, planner), after a first run (as measure_candidate_speed), with the median time of each stage."""
    from nn2c.api import CompileOptions, load_model

    graph = load_model(ROOT / "models" / f"{SPEED_MODEL}.tflite")
    results = []
    for schedule, planner in SPEED_MODES:
        options = CompileOptions(schedule=schedule, planner=planner)
        totals: list[float] = []
        stages: dict[str, list[float]] = {}
        ram = profile(graph, target="cortex-m4", options=options).ram_bytes  # (a first run, untimed: as a search's)
        for _ in range(runs):
            stamps: list[tuple[float, str]] = []
            prof = profile(graph, target="cortex-m4", options=options,
                           progress=lambda text, stamps=stamps: stamps.append((time.perf_counter(), text)))
            end = stamps[0][0] + prof.seconds
            for (start, text), (stop, _) in zip(stamps, [*stamps[1:], (end, "")], strict=True):
                stages.setdefault(text.split(" (")[0], []).append(stop - start)
            totals.append(prof.seconds)
        results.append({"schedule": schedule, "planner": planner, "runs": runs, "ram_bytes": ram,
                        "median_ms": 1000 * float(np.median(totals)), "p95_ms": 1000 * float(np.percentile(totals, 95)),
                        "stages_ms": {k: 1000 * float(np.median(v)) for k, v in stages.items()}})
        print(f"  profile {SPEED_MODEL} --schedule {schedule} --planner {planner}: median "
              f"{results[-1]['median_ms']:.0f} ms, p95 {results[-1]['p95_ms']:.0f} ms, RAM {ram:,} B", flush=True)
    return results


SPEED_CANDIDATES = 40  # the first candidates, profiled one by one at the defaults


def measure_candidate_speed(count: int = SPEED_CANDIDATES) -> dict[str, Any]:
    """nn2c.profile's time per candidate at the defaults (auto / exact, cortex-m4): each candidate's median
    of 3 runs on its in-memory Graph, after a first run; then the median and p95 over candidates."""
    from nn2c.api import load_model

    times: dict[str, float] = {}
    for path in candidates(count, 0, CANDIDATES):
        try:
            graph = load_model(path)
            profile(graph, target="cortex-m4")
        except NN2CError:  # (the two with an infinite scale: refused, as in the measurement)
            continue
        times[_key(path)] = float(np.median([profile(graph, target="cortex-m4").seconds for _ in range(3)]))
    values = sorted(times.values())
    result = {"count": len(values), "median_ms": 1000 * float(np.median(values)),
              "p95_ms": 1000 * float(np.percentile(values, 95)), "max_ms": 1000 * values[-1],
              "slowest": sorted(times, key=times.__getitem__)[-3:]}
    print(f"  profile of {len(values)} candidates: median {result['median_ms']:.0f} ms, p95 {result['p95_ms']:.0f} ms",
          flush=True)
    return result


def render_speed(speed: list[dict[str, Any]]) -> list[str]:
    stages = list(speed[0]["stages_ms"])
    lines = ["", f"### Profile time ({SPEED_MODEL}, cortex-m4, after loading and a first run; {speed[0]['runs']} runs each, "
             "this shared 2-core machine)", "",
             "| --schedule | --planner | RAM (= compile's with the same options) | median | p95 | "
             + " | ".join(stages) + " |",
             "|---|---|---|---|---|" + "---|" * len(stages)]
    for row in speed:
        lines.append(f"| {row['schedule']} | {row['planner']} | {row['ram_bytes']:,} B | {row['median_ms']:.0f} ms | "
                     f"{row['p95_ms']:.0f} ms | " + " | ".join(f"{row['stages_ms'].get(k, 0):.0f} ms" for k in stages)
                     + " |")
    return lines


def render_candidate_speed(speed: dict[str, Any]) -> list[str]:
    slowest = ", ".join(reversed(speed["slowest"]))
    return ["", f"Per candidate (the first {speed['count']} candidates, cortex-m4, --schedule auto --planner exact, "
            f"each the median of 3 runs after a first): median {speed['median_ms']:.0f} ms, p95 "
            f"{speed['p95_ms']:.0f} ms, slowest {speed['max_ms']:.0f} ms ({slowest}). The slow ones are those whose "
            "least-RAM schedules the exact planner cannot prove optimal quickly: its full search (up to "
            f"{NODE_LIMIT:,} branch-and-bound nodes) runs for each schedule whose bound is below the best arena found."]


def render(results: dict[str, dict[str, Any]], skipped: dict[str, str], seconds: float,
           speed: list[dict[str, Any]] | None = None, candidate_speed: dict[str, Any] | None = None) -> str:
    lines = [
        "## Cost model: predicted against measured instructions",
        "",
        "`nn2c profile` predicts instructions per step from a linear model per operator and kernel function",
        "(MACs, patch elements = MACs / output channels, window taps = output pixels * kh * kw of a convolution or pooling, output and input elements, output pixels, a constant;",
        "row groups: a factor on their members' sum, their ring-buffer moves included) fitted by `bench/costmodel.py`",
        "against the QEMU instruction counts of `nn2c bench` (one seeded input, outputs checked against TFLM) of every",
        "network below (a model whose default runs row groups measured layer by layer too, for the kernels' samples);",
        "invoke's own instructions from a constant, the steps and the bytes the relocations move (exact",
        "from the memory plan). *In sample*: fitted and judged on the same networks; *left out*: each network judged",
        "by a fit without it. The Cortex-M7 uses the Cortex-M4's fit (same kernels; QEMU counts instructions, which",
        "do not depend on the M7's dual issue).",
        f"Steps under {MIN_INSTRUCTIONS} instructions are left out of the per-layer figures. Run took "
        f"{seconds / 60:.1f} min of measurement.",
        "",
        "| core | networks | count | layers | total within ±10%: in sample / left out | total abs error, left out: "
        "median / p95 / max | layers within ±10% / ±25%, left out | layer abs error, left out: median / p90 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    subsets = [("all", lambda m: True), ("models/", lambda m: not m.startswith(f"{CANDIDATES.name}/")),
               ("candidates", lambda m: m.startswith(f"{CANDIDATES.name}/"))]
    for core, res in results.items():
        ins, out = res["in_sample"], res["left_out"]
        for label, keep in subsets:
            te_in = [t[3] for t in ins["totals"] if keep(t[0])]
            te_out = [t[3] for t in out["totals"] if keep(t[0])]
            le = [x[6] for x in out["layers"] if keep(x[0])]
            if not te_in:
                continue
            lines.append(f"| {core} | {label} | {len(te_in)} | {len(le)} | {_share(te_in, 0.10):.0f}% / "
                         f"{_share(te_out, 0.10):.0f}% | {_pct(te_out, 50):.1f}% / {_pct(te_out, 95):.1f}% / "
                         f"{_pct(te_out, 100):.1f}% | {_share(le, 0.10):.0f}% / {_share(le, 0.25):.0f}% | "
                         f"{_pct(le, 50):.1f}% / {_pct(le, 90):.1f}% |")
    lines += ["", "Code bytes (`code_bytes_estimate`: constant + per step + a fitted size per kernel function used, fitted to the bench "
              "images' model code from the map file), absolute error over the models, left out: "
              + "; ".join(f"{core} median {_pct(res['left_out']['code'], 50):.0f}%, max "
                          f"{_pct(res['left_out']['code'], 100):.0f}%" for core, res in results.items()) + "."]
    lines += ["", "Distribution of the total error, left out (share of networks per band of absolute error):", "",
              "| core | networks | count | " + " | ".join(f"{a:g}-{b:g}%" for a, b in ERROR_BANDS) + " |",
              "|---|---|---|" + "---|" * len(ERROR_BANDS)]
    for core, res in results.items():
        for label, keep in subsets[1:]:
            errors = [abs(t[3]) for t in res["left_out"]["totals"] if keep(t[0])]
            if errors:
                shares = [100 * sum(a / 100 <= e < b / 100 for e in errors) / len(errors) for a, b in ERROR_BANDS]
                lines.append(f"| {core} | {label} | {len(errors)} | " + " | ".join(f"{x:.0f}%" for x in shares) + " |")
    for core, res in results.items():
        lines += ["", f"### {core}: per model of models/ (total instructions per inference)", "",
                  "| model | measured | predicted (in sample) | error | predicted (left out) | error |",
                  "|---|---|---|---|---|---|"]
        for (model, p_in, y, e_in), (_, p_out, _, e_out) in zip(res["in_sample"]["totals"],
                                                                res["left_out"]["totals"], strict=True):
            if not model.startswith(f"{CANDIDATES.name}/"):
                lines.append(f"| {model} | {y:,.0f} | {p_in:,.0f} | {100 * e_in:+.1f}% | {p_out:,.0f} | "
                             f"{100 * e_out:+.1f}% |")
        worst = sorted((t for t in res["left_out"]["totals"] if t[0].startswith(f"{CANDIDATES.name}/")),
                       key=lambda t: -abs(t[3]))[:5]
        if worst:
            lines += ["", f"Worst candidates on {core}, left out: " + ", ".join(
                f"{model} {100 * e:+.1f}%" for model, _, _, e in worst) + "."]
        worst = sorted(res["left_out"]["layers"], key=lambda x: -abs(x[6]) * x[5])[:6]
        lines += ["", f"Worst layers on {core} (most instructions mispredicted, left out):", "",
                  "| model | step | op | kernel | measured | predicted | error |", "|---|---|---|---|---|---|---|"]
        for model, step, op, kernel, p, y, e in worst:
            lines.append(f"| {model} | {step} | {op} | {kernel or '-'} | {y:,.0f} | {p:,.0f} | {100 * e:+.1f}% |")
    if skipped:
        lines += ["", "Not measured: " + "; ".join(f"{k}: {v}" for k, v in sorted(skipped.items())) + "."]
    if speed:
        lines += render_speed(speed)
    if candidate_speed:
        lines += render_candidate_speed(candidate_speed)
    lines += ["", "Candidates: MCUNet-style int8 networks (`candidates()` here: input 48-112, width 0.35-1.0, 1-3 "
              "blocks per stage, kernels 3/5/7, expand 3/4/6, seeded random weights), benched like the models. "
              "In sample figures overstate the accuracy on unseen networks; the left-out columns (each network "
              "judged by a fit without it) are the honest ones. Left-out outliers among the models are the ones "
              "with an operator no other model has (LSTM, SVDF, hybrid float/int8 convolutions, the audio "
              "front end): their fit falls back to a coarser one."]
    return "\n".join(lines)


def fit_and_write(data: dict[str, Any], write_docs: bool, seconds: float) -> None:
    by_core: dict[str, list] = {}
    for row in data["rows"]:
        by_core.setdefault(row["target"], []).append(row)
    cores = {core: fit_core(rows) for core, rows in sorted(by_core.items())}
    if "cortex-m7" not in cores and "cortex-m4" in cores:
        # same kernels and lowering; QEMU does not model the M7's dual issue, so its counts equal the M4's
        cores["cortex-m7"] = {**cores["cortex-m4"], "note": "the Cortex-M4 fit: same kernels, and QEMU counts "
                              "instructions, which do not depend on the M7's dual issue"}
    DATA_FILE.parent.mkdir(parents=True, exist_ok=True)
    DATA_FILE.write_text(json.dumps({
        "about": "nn2c per-kernel cost model, fitted by bench/costmodel.py against QEMU instruction counts",
        "features": list(FEATURES), "cores": cores}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {DATA_FILE.relative_to(ROOT)}")
    results = {}
    for core, rows in sorted(by_core.items()):
        results[core] = {
            "in_sample": evaluate(rows, lambda _row, core=core: cores[core]),
            "left_out": evaluate(rows, lambda row, rows=rows: fit_core([r for r in rows if r["model"] != row["model"]])),
        }
    text = render(results, data.get("skipped", {}), seconds, data.get("speed"), data.get("candidate_speed"))
    print(text)
    if write_docs:
        replace_section("costmodel", text)
        print("wrote the costmodel section of docs/BENCHMARKS.md")


def _merged(saved: dict[str, Any], again: dict[str, Any], models: set[str]) -> dict[str, Any]:
    """The saved measurements with the rows of `models` replaced in place by their new ones (after a
    kernel of theirs changed), the rest (candidates, speed, the time they took) kept."""
    fresh = {(r["model"], r["target"]): r for r in again["rows"]}
    rows = [fresh.pop((r["model"], r["target"]), r) for r in saved["rows"]
            if r["model"] not in models or (r["model"], r["target"]) in fresh]
    skipped = {k: v for k, v in saved["skipped"].items() if k.split(" (")[0] not in models}
    return {**saved, "rows": rows + list(fresh.values()), "skipped": {**skipped, **again["skipped"]}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", nargs="+", default=TARGETS)
    parser.add_argument("--models", nargs="+", default=None, help="model stems (default: all of models/)")
    parser.add_argument("--refit", action="store_true", help="fit from the saved measurements, no QEMU runs")
    parser.add_argument("--candidates", type=int, default=0, metavar="N",
                        help="measure N generated MCUNet-style candidates and add them to the saved measurements")
    parser.add_argument("--no-docs", action="store_true", help="do not write docs/BENCHMARKS.md")
    parser.add_argument("--layer-samples", action="store_true",
                        help="measure the saved models whose default runs row groups layer by layer too, and refit")
    parser.add_argument("--rekey", action="store_true",
                        help="take the saved measurements' kernel keys from nn2c.profile again (no QEMU), and refit")
    parser.add_argument("--speed", type=int, nargs="?", const=20, default=0, metavar="RUNS",
                        help=f"also time nn2c.profile on {SPEED_MODEL} (RUNS runs per mode, default 20)")
    args = parser.parse_args()
    started = time.time()
    if not (args.refit or args.rekey) and missing_tools():
        print(f"costmodel: needs {', '.join(missing_tools())}", file=sys.stderr)
        return 1
    if args.refit or args.candidates or args.layer_samples or args.rekey:
        data = json.loads(MEASUREMENTS.read_text())
        if add_moved(data):
            MEASUREMENTS.write_text(json.dumps(data))
        if args.rekey:
            print(f"{rekey(data)} steps have another kernel key", flush=True)
            MEASUREMENTS.write_text(json.dumps(data))
        if args.layer_samples:
            paths = {_key(p): p for p in models()}
            added = sum(add_layer_samples(row, paths[row["model"]]) for row in data["rows"] if row["model"] in paths)
            print(f"{added} rows measured layer by layer too", flush=True)
            MEASUREMENTS.write_text(json.dumps(data))
    else:
        paths = models()
        if args.models:
            paths = [p for p in paths if p.stem in args.models or _key(p) in args.models]
        data = measure(paths, args.targets)
        data["seconds"] = time.time() - started
        if args.models and MEASUREMENTS.exists():  # these models measured again: every other row stays
            data = _merged(json.loads(MEASUREMENTS.read_text()), data, {_key(p) for p in paths})
    if args.candidates:
        # (their standard kernels have samples enough in every network: no second, layer-by-layer run)
        extra = measure(candidates(args.candidates, 0, CANDIDATES), args.targets, layer_samples=False)
        data["rows"] = [r for r in data["rows"] if not r["model"].startswith(f"{CANDIDATES.name}/")] + extra["rows"]
        data["skipped"].update({k: v for k, v in extra["skipped"].items() if k not in SKIP})
        data["candidates"] = args.candidates
        data["seconds"] = data.get("seconds", 0.0) + time.time() - started
    if not args.refit or args.candidates:
        MEASUREMENTS.parent.mkdir(parents=True, exist_ok=True)
        MEASUREMENTS.write_text(json.dumps(data))
    if args.speed:
        data["speed"] = measure_speed(args.speed)
        data["candidate_speed"] = measure_candidate_speed()
        MEASUREMENTS.write_text(json.dumps(data))
    fit_and_write(data, not args.no_docs, data.get("seconds", time.time() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
