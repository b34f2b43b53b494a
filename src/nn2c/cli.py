"""The `nn2c` command: a thin layer over nn2c.api. Errors end as one line on stderr and an exit code."""

from __future__ import annotations

import functools
import json
import sys
import warnings
from pathlib import Path

import click
import numpy as np

from nn2c import __version__
from nn2c.errors import NN2CError, UsageError


def _one_line_errors(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        # numpy warns on overflowing scale arithmetic in hostile models; the error that follows says it
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return function(*args, **kwargs)
        except NN2CError as exc:
            click.echo(f"nn2c: error: {exc}".splitlines()[0] if "\n" not in str(exc)[:300] else
                       f"nn2c: error: {str(exc).splitlines()[0]}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("nn2c: interrupted", err=True)
            sys.exit(130)
        except MemoryError:
            click.echo("nn2c: error: out of memory while compiling; the model may be corrupt", err=True)
            sys.exit(1)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nn2c")
def main() -> None:
    """nn2c: compile TensorFlow Lite models to standalone C for microcontrollers.

    Exit codes: 0 success, 1 error, 2 invalid model, 3 unsupported operator, 4 over budget,
    5 build or run failure, 6 verification mismatch, 7 bad usage.
    """


@main.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output folder for NAME.h, NAME.c, NAME_weights.c, kernels and main.c.")
@click.option("--name", default=None, help="C prefix and file stem (default: the model's file name).")
@click.option("--ram-budget", type=int, default=None, help="Fail if static RAM exceeds this many bytes.")
@click.option("--flash-budget", type=int, default=None, help="Fail if weights exceed this many bytes.")
@click.option("--force", is_flag=True, help="Replace a non-empty output folder.")
@click.option("--planner", type=click.Choice(["exact", "greedy"]), default="exact", show_default=True,
              help="Arena planner: exact (ILP, optimal within the time limit) or greedy (TFLite Micro's).")
@click.option("--no-inplace", is_flag=True, help="Keep every tensor in its own buffer (no output over input).")
@click.option("-O", "opt_level", type=click.IntRange(0, 2), default=2, show_default=True,
              help="Graph optimisation level: 0 none, 1 safe clean-ups, 2 everything.")
@click.option("--report", is_flag=True, help="Also write memory_plan.png and live_bytes.png into the output folder.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of text.")
@click.option("--nhwc-io", is_flag=True,
              help="ONNX models: take and return 3-D / 4-D tensors channels-last (no transposes at the edges).")
@click.option("--passes-report", is_flag=True,
              help="Print what each optimisation pass changed (operators removed or fused, tensors, bytes).")
@click.option("--target", type=click.Choice(["host", "cortex-m4", "cortex-m7", "cortex-m55"]), default="host",
              show_default=True,
              help="Kernel variants: host is portable C99; cortex-m4/m7 use Arm DSP SIMD, cortex-m55 Helium MVE.")
@click.option("--debug", is_flag=True,
              help="Debug build: canaries around the arena and bounds checks, reported by NAME_check().")
@click.option("--quantize", type=click.Choice(["int8"]), default=None,
              help="Quantize a float model to integer-only int8 (needs --calibration).")
@click.option("--calibration", type=click.Path(exists=True), default=None,
              help="Representative inputs: .npz (one array per input, by order or name), .npy, or a folder of .npy.")
@click.option("--calibration-method", type=click.Choice(["minmax", "percentile", "mse"]), default="mse",
              show_default=True, help="How activation ranges are estimated from the calibration data.")
@click.option("--keep-float", multiple=True,
              help="Leave this operator type (e.g. SOFTMAX) or output tensor name in float; repeatable.")
@click.option("--io", "io_dtype", type=click.Choice(["float", "int8"]), default="float", show_default=True,
              help="Quantized float models: keep float inputs/outputs, or expose the int8 tensors.")
@_one_line_errors
def compile(model, out_dir, name, ram_budget, flash_budget, force, planner, no_inplace, opt_level, report,
            as_json, nhwc_io, passes_report, target, debug, quantize, calibration, calibration_method, keep_float,
            io_dtype) -> None:
    """Compile MODEL (.tflite or .onnx) into C sources in the output folder."""
    from nn2c.api import CompileOptions, compile_model

    if calibration and not quantize:
        raise UsageError("--calibration is only used with --quantize int8")
    options = CompileOptions(name=name, ram_budget=ram_budget, flash_budget=flash_budget, planner=planner,
                             inplace=not no_inplace, opt_level=opt_level, nhwc_io=nhwc_io, target=target,
                             debug=debug, quantize=quantize, calibration=calibration,
                             calibration_method=calibration_method, keep_float=tuple(keep_float), io=io_dtype)
    result = compile_model(model, options)
    if passes_report and result.passes is not None and not as_json:
        from nn2c.passes.pipeline import format_report

        click.echo(format_report(result.passes), nl=False)
    result.write(out_dir, force=force)
    if report:
        from nn2c.report.memory_plot import plot_live_bytes, plot_plan

        code = result.code
        plot_plan(code.buffers, code.plan, code.inplace, result.name, Path(out_dir) / "memory_plan.png")
        plot_live_bytes(code.buffers, code.plan, result.name, Path(out_dir) / "live_bytes.png")
    plan = result.code.plan
    summary = {
        "model": str(model), "name": result.name, "output": str(out_dir),
        "operators": len(result.graph.nodes), "arena_bytes": plan.arena_bytes,
        "lower_bound_bytes": plan.lower_bound, "state_bytes": result.code.state_bytes,
        "weight_bytes": result.code.weight_bytes, "files": sorted(result.files),
    }
    if passes_report and result.passes is not None:
        from nn2c.passes.pipeline import report_dict

        summary["passes"] = report_dict(result.passes)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    ratio = plan.arena_bytes / plan.lower_bound if plan.lower_bound else 1.0
    click.echo(f"compiled {model} -> {out_dir}/{result.name}.c ({len(result.graph.nodes)} operators)")
    click.echo(f"  arena {plan.arena_bytes:,} B (lower bound {plan.lower_bound:,} B, ratio {ratio:.2f}), "
               f"state {result.code.state_bytes:,} B, weights {result.code.weight_bytes:,} B")


@main.command()
@click.argument("model", type=click.Path(dir_okay=False))
@_one_line_errors
def inspect(model) -> None:
    """Print MODEL's graph: shapes, quantization, MACs and weight bytes per operator."""
    from nn2c.api import load_model
    from nn2c.ir import dump

    click.echo(dump(load_model(model)), nl=False)


@main.command()
@click.argument("out_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--input", "inputs", multiple=True, required=True, type=click.Path(dir_okay=False, exists=True),
              help="A .npy file per model input, in model order (a leading axis of N runs N inferences).")
@click.option("--output", "output", required=True, type=click.Path(dir_okay=False),
              help="Where to write the outputs (.npz with arrays output_0, output_1, ...).")
@click.option("--model", "model", type=click.Path(dir_okay=False, exists=True), default=None,
              help="The model the folder was compiled from (default: read the shapes from the folder).")
@_one_line_errors
def run(out_dir, inputs, output, model) -> None:
    """Build the compiled folder OUT_DIR with the host C compiler and run it on .npy inputs."""
    from nn2c.verify.runner import run_folder

    outputs = run_folder(Path(out_dir), [np.load(p) for p in inputs])
    np.savez(output, **{f"output_{i}": a for i, a in enumerate(outputs)})  # type: ignore[arg-type]
    click.echo(f"wrote {len(outputs)} output(s) to {output}")


@main.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--inputs", "count", type=int, default=3, show_default=True, help="Number of seeded random inputs.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the comparison as JSON to this file ('-' for stdout).")
@_one_line_errors
def verify(model, count, seed, json_path) -> None:
    """Compile, build and run MODEL on seeded inputs; compare every output with the reference runtimes.

    .tflite models are compared with TFLM (bit-exact, the judge) and LiteRT; .onnx models with onnxruntime
    (float outputs within 1e-4 relative).
    """
    from nn2c.errors import VerificationError

    if Path(model).suffix.lower() == ".onnx":
        from nn2c.verify.onnx_oracle import verify_onnx

        report = verify_onnx(model, count=count, seed=seed)
    else:
        from nn2c.verify.compare import verify_model

        report = verify_model(model, count=count, seed=seed)
    if json_path != "-":
        for c in report.comparisons:
            status = "bit-exact" if c.max_abs_diff == 0 else ("within tolerance" if c.mismatches == 0 else "MISMATCH")
            if c.reference != report.judge:
                status += f" (informational: {report.judge} is the reference)"
            click.echo(f"{c.reference:6s} output {c.output} ({c.elements} values over {report.records} inputs): "
                       f"max abs diff {c.max_abs_diff:g}, max rel diff {c.max_rel_diff:.3g} -> {status}")
        for ref, why in report.skipped.items():
            click.echo(f"{ref:6s} could not run this model: {why}")
    if json_path:
        payload = json.dumps({
            "model": report.model, "inputs": report.records, "arena_bytes": report.arena_bytes,
            "passed": report.passed(), "skipped": report.skipped,
            "comparisons": [c.__dict__ for c in report.comparisons],
        }, indent=2)
        if json_path == "-":
            click.echo(payload)
        else:
            Path(json_path).write_text(payload)
    if not report.passed():
        raise VerificationError(f"{model}: outputs differ from the reference runtime (see above)")


@main.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--target", type=click.Choice(["cortex-m4", "cortex-m7", "cortex-m55"]), default="cortex-m4",
              show_default=True, help="Core to cross-build for (QEMU mps2-an386, mps2-an500, mps3-an547).")
@click.option("--inputs", "count", type=click.IntRange(1, 1000), default=3, show_default=True,
              help="Number of seeded random inputs (one inference each).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--top", type=click.IntRange(0, None), default=10, show_default=True,
              help="Layers to list in the profile (0: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON instead of text.")
@_one_line_errors
def bench(model, target, count, seed, top, as_json) -> None:
    """Cross-build MODEL for a Cortex-M core, run it in QEMU and count instructions.

    Checks the outputs against TFLM bit for bit and reports instructions per inference and per
    MAC, a per-layer profile, flash (code, weights), RAM and the measured stack high-water mark.
    Needs arm-none-eabi-gcc (gcc-arm-none-eabi, libnewlib-arm-none-eabi) and qemu-system-arm.
    """
    from nn2c.errors import VerificationError
    from nn2c.targets.cortexm_bench import bench_model, format_report

    report = bench_model(model, target=target, count=count, seed=seed)
    if as_json:
        click.echo(json.dumps(report.as_dict(top=top or None), indent=2))
    else:
        click.echo(format_report(report, top=top or len(report.layers)))
    if not report.passed():
        raise VerificationError(f"{model}: Cortex-M outputs differ from the reference runtime (see above)")
