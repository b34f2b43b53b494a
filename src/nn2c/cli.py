"""The `nn2c` command: a thin layer over nn2c.api. Errors end as one line on stderr and an exit code.

Output contract: results go to stdout (text, or one JSON document with --json); progress spinners,
-v step timings and errors go to stderr. Spinners appear only on a terminal (nn2c.progress).
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np

from nn2c import __version__
from nn2c.boards import BOARDS, board_options, get_board, on_board
from nn2c.errors import NN2CError, UsageError
from nn2c.options import OPTIMIZE, SCHEDULES
from nn2c.progress import Progress
from nn2c.target import TARGETS, bench_targets

EXIT_CODES = {
    0: "success",
    1: "other error",
    2: "invalid model file",
    3: "unsupported operator (named, with its index)",
    4: "over --ram-budget / --flash-budget (names the operator at the peak)",
    5: "C compiler, cross toolchain or built program failed",
    6: "outputs differ from the reference runtime, or no reference could run the model",
    7: "bad usage (missing file, output folder exists, wrong option)",
    130: "interrupted",
}


@dataclass
class _Settings:
    quiet: bool = False
    verbose: int = 0


def _settings() -> _Settings:
    ctx = click.get_current_context(silent=True)
    root = ctx.find_root() if ctx is not None else None
    if root is None or not isinstance(root.obj, _Settings):
        return _Settings()
    return root.obj


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        root = ctx.find_root()
        root.obj = root.obj if isinstance(root.obj, _Settings) else _Settings()
        root.obj.quiet = True


def _set_verbose(ctx: click.Context, _param: click.Parameter, value: int) -> None:
    if value:
        root = ctx.find_root()
        root.obj = root.obj if isinstance(root.obj, _Settings) else _Settings()
        root.obj.verbose = max(root.obj.verbose, value)


_QUIET_HELP = "Print only errors and the requested output (no progress, no summary lines)."
_VERBOSE_HELP = "Say more on stderr: every step with its duration, and where the arena peaks."


def _output_options(function):
    """-q / -v on every subcommand too, so `nn2c compile -q ...` works as well as `nn2c -q compile ...`."""
    function = click.option("-v", "--verbose", count=True, expose_value=False, callback=_set_verbose,
                            help=_VERBOSE_HELP)(function)
    return click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_set_quiet,
                        help=_QUIET_HELP)(function)


def _progress() -> Progress:
    settings = _settings()
    return Progress(quiet=settings.quiet, verbose=settings.verbose)


def _say(text: str = "", nl: bool = True) -> None:
    """A result line for a person (stdout); --quiet drops it."""
    if not _settings().quiet:
        click.echo(text, nl=nl)


def _print_json(payload: Any) -> None:
    click.echo(json.dumps(payload, indent=2, default=_json_default))


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    return str(value)


def _one_line_errors(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        # numpy warns on overflowing scale arithmetic in hostile models; the error that follows says it
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            return function(*args, **kwargs)
        except NN2CError as exc:
            click.echo(f"nn2c: error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("nn2c: interrupted", err=True)
            sys.exit(130)
        except MemoryError:
            click.echo("nn2c: error: out of memory while compiling; the model may be corrupt", err=True)
            sys.exit(1)

    return wrapper


def _board_options(options: Any, board: str | None) -> Any:
    """--board: the board's target and budgets (nn2c.boards); an explicit --target must agree."""
    if board is None:
        return options
    from click.core import ParameterSource

    ctx = click.get_current_context()
    return board_options(options, board, ctx.get_parameter_source("target") != ParameterSource.DEFAULT)


_BOARD_HELP = ("Board to fit (sets the target core, the RAM and flash budgets: exit 4 when the model does not fit): "
               + ", ".join(BOARDS) + "; their figures: docs/user-guide.md.")
_EXIT_HELP = "\n".join(f"  {code:<4d} {meaning}" for code, meaning in EXIT_CODES.items())


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog="\b\nExit codes:\n" + _EXIT_HELP)
@click.version_option(__version__, prog_name="nn2c", help="Print nn2c's version and exit.")
@click.option("-q", "--quiet", is_flag=True, help=_QUIET_HELP)
@click.option("-v", "--verbose", count=True, help=_VERBOSE_HELP)
@click.pass_context
def main(ctx: click.Context, quiet: bool, verbose: int) -> None:
    """nn2c: compile TensorFlow Lite and ONNX models to standalone C for microcontrollers.

    Every command prints one JSON document on stdout with --json (verify: --json -);
    progress and errors go to stderr. An error is one line starting with "nn2c: error:" and sets the exit code below.
    """
    ctx.obj = _Settings(quiet=quiet, verbose=0 if quiet else verbose)


@main.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output folder: NAME.h, NAME.c, NAME_weights.c/.h, nn2c_kernels/, main.c, CMakeLists.txt, "
                   "nn2c.mk, README.md.")
@click.option("--name", default=None, help="C prefix and file stem (default: the model's file name).")
@click.option("--ram-budget", type=int, default=None,
              help="Fail (exit 4) if static RAM (arena + state) exceeds this many bytes.")
@click.option("--flash-budget", type=int, default=None, help="Fail (exit 4) if the weights exceed this many bytes.")
@click.option("--force", is_flag=True, help="Replace a non-empty output folder.")
@click.option("--planner", type=click.Choice(["exact", "greedy"]), default="exact", show_default=True,
              help="Arena planner: exact (ILP, optimal within the time limit) or greedy (TFLite Micro's).")
@click.option("--no-inplace", is_flag=True, help="Keep every tensor in its own buffer (no output over input).")
@click.option("-O", "opt_level", type=click.IntRange(0, 2), default=2, show_default=True,
              help="Graph optimisation level: 0 none, 1 safe clean-ups, 2 everything.")
@click.option("--report", is_flag=True,
              help="Also write report.html (self-contained) and report.md: per-layer table, memory plan, "
                   "budgets, passes; plus memory_plan.png and live_bytes.png.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary on stdout instead of text.")
@click.option("--nhwc-io", is_flag=True,
              help="ONNX models: take and return 3-D / 4-D tensors channels-last (no transposes at the edges).")
@click.option("--passes-report", is_flag=True,
              help="Print what each optimisation pass changed (operators removed or fused, tensors, bytes).")
@click.option("--target", type=click.Choice(list(TARGETS)), default="host",
              show_default=True,
              help="Kernel variants: host is portable C99; cortex-m4/m7 use Arm DSP SIMD, cortex-m55 Helium MVE.")
@click.option("--board", default=None, metavar="NAME", help=_BOARD_HELP)
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
              help="float keeps the model's float inputs/outputs; int8 exposes the int8 tensors instead "
                   "(with --quantize, or on a quantized model whose edges are QUANTIZE / DEQUANTIZE).")
@click.option("--schedule", type=click.Choice(list(SCHEDULES)), default="auto", show_default=True,
              help="Row groups (several layers run a row at a time, intermediates never whole): auto = the "
                   "least RAM within 5% extra estimated cost, min-ram = the least RAM, layer = none. With "
                   "--ram-budget: the cheapest schedule that fits.")
@click.option("--write-tflite", "write_tflite", type=click.Path(), default=None,
              help="With --quantize: also write the int8 model as a .tflite file (TFLite Micro and LiteRT "
                   "run it; its int8 outputs equal the generated C's). With --prune: the pruned model.")
@click.option("--write-onnx", "write_onnx", type=click.Path(), default=None,
              help="With --prune on an ONNX model: also write that model with the pruned zeros in its weights "
                   "(nothing else changed), to fine-tune and compile again.")
@click.option("--prune", "prune", default=None, metavar="structured:FRACTION|magnitude:SPARSITY|N:M",
              help="Zero weights before compiling: the FRACTION of filters with the smallest L1 norm, or the "
                   "SPARSITY of individual weights with the smallest magnitude, in every CONV_2D, DEPTHWISE_CONV_2D "
                   "and FULLY_CONNECTED, or all but the N largest of every M weights along the input channels "
                   "(N:M, e.g. 1:8); reports the SQNR against the unpruned model (on --calibration data if "
                   "given). No fine-tuning: accuracy drops.")
@click.option("--prune-skip", "prune_skip", default=None, metavar="OPINDEX,...",
              help="With --prune: leave these operators (indices as `nn2c inspect` shows them) dense.")
@click.option("--sparse", "sparse", type=click.Choice(["auto", "off", "always"]), default="auto", show_default=True,
              help="Sparse kernels for int8 FULLY_CONNECTED and 1x1 CONV_2D layers with mostly-zero filters (only "
                   "the nonzero weights stored and multiplied): auto where the target's cost model (fitted in QEMU) "
                   "predicts them faster, off never, always wherever a layer allows it.")
@click.option("--optimize", "optimize", type=click.Choice(list(OPTIMIZE)), default="balanced", show_default=True,
              help="Where a kernel has a choice of weight layouts or scratch (int8 FULLY_CONNECTED, LSTM, SVDF, "
                   "DEPTHWISE_CONV_2D and sparse layers on Cortex-M): speed = the fastest (Arm DSP: filters widened "
                   "to int16, 3x3 depthwise over channel planes, sparse pair tables and row pairs even where they "
                   "raise the arena), size = the least flash (weights no larger than the model's), balanced = "
                   "between (more scratch only where the arena stays as it is: channel planes for output rows of "
                   "24 or more).")
@click.option("--npu", default=None, metavar="ethos-u55-128|ethos-u55-256|ethos-u65-256",
              help="Partition an int8 model between the CPU and an Arm Ethos-U NPU (Vela decides what may run "
                   "on it, a cost model what should); simulation build. Needs pip install 'nn2c[npu]'.")
@click.option("--npu-system-config", default=None,
              help="With --npu: Vela's system configuration (a section of its Arm/vela.ini).")
@click.option("--npu-memory-mode", default=None, help="With --npu: Vela's memory mode (Arm/vela.ini).")
@_output_options
@_one_line_errors
def compile(model, out_dir, name, ram_budget, flash_budget, force, planner, no_inplace, opt_level, report,
            as_json, nhwc_io, passes_report, target, debug, quantize, calibration, calibration_method, keep_float,
            io_dtype, schedule, write_tflite, npu, npu_system_config, npu_memory_mode, board, prune=None,
            prune_skip=None, sparse="auto", write_onnx=None, optimize="balanced") -> None:
    """Compile MODEL (.tflite or .onnx) into C sources in the output folder."""
    from nn2c.api import CompileOptions, compile_model

    if calibration and not quantize and not prune:
        raise UsageError("--calibration is only used with --quantize int8 or --prune")
    skip: tuple[int, ...] = ()
    if prune is not None or prune_skip:
        from nn2c.prune import parse_skip, parse_spec

        if prune is None:
            raise UsageError("--prune-skip is only used with --prune")
        parse_spec(prune)  # a malformed spec fails before the model is read
        skip = parse_skip(prune_skip)
    options = CompileOptions(name=name, ram_budget=ram_budget, flash_budget=flash_budget, planner=planner,
                             inplace=not no_inplace, opt_level=opt_level, nhwc_io=nhwc_io, target=target,
                             debug=debug, quantize=quantize, calibration=calibration,
                             calibration_method=calibration_method, keep_float=tuple(keep_float), io=io_dtype,
                             write_tflite=write_tflite, schedule=schedule, npu=npu,
                             npu_system_config=npu_system_config, npu_memory_mode=npu_memory_mode, sparse=sparse,
                             optimize=optimize)
    if prune is not None or write_onnx is not None:
        from dataclasses import replace

        options = replace(options, prune=prune, prune_skip=skip, write_onnx=write_onnx)
    if (npu_system_config or npu_memory_mode) and not npu:
        raise UsageError("--npu-system-config and --npu-memory-mode are only used with --npu")
    options = _board_options(options, board)
    progress = _progress()
    try:
        result = on_board(board, lambda: compile_model(model, options, progress=progress.update),
                          user_budgets=ram_budget is not None or flash_budget is not None)
        progress.update(f"writing {out_dir}")
        result.write(out_dir, force=force)
        report_files: list[str] = []
        if report:
            from nn2c.report.html import write_report

            progress.update("writing the report")
            written = write_report(result, out_dir, ram_budget=ram_budget, flash_budget=flash_budget)
            report_files = sorted(p.name for p in written)
    finally:
        progress.done()
    if passes_report and result.passes is not None and not as_json:
        from nn2c.passes.pipeline import format_report

        _say(format_report(result.passes), nl=False)
    plan = result.code.plan
    summary: dict[str, Any] = {
        "model": str(model), "name": result.name, "output": str(out_dir), "target": options.target, "board": board,
        "operators": len(result.graph.nodes), "steps": len(result.schedule.steps) if result.schedule else 0,
        "arena_bytes": plan.arena_bytes,
        "lower_bound_bytes": plan.lower_bound, "state_bytes": result.code.state_bytes,
        "ram_bytes": result.ram_bytes, "weight_bytes": result.code.weight_bytes, "planner": plan.planner,
        "inplace_operators": len(result.code.inplace), "files": sorted(result.files),
        "decoded": result.graph.metadata.get("decode"),
    }
    from nn2c.report.layers import schedule_dict

    summary["schedule"] = schedule_dict(result)
    if report:
        summary["report_files"] = report_files
    if "int8_io" in result.graph.metadata:
        summary["int8_io"] = result.graph.metadata["int8_io"]
    if write_tflite:
        summary["tflite"] = str(write_tflite)
    if write_onnx:
        summary["onnx"] = str(write_onnx)
    if "npu" in result.graph.metadata:
        summary["npu"] = result.graph.metadata["npu"].as_dict()
    if passes_report and result.passes is not None:
        from nn2c.passes.pipeline import report_dict

        summary["passes"] = report_dict(result.passes)
    if result.quant is not None:
        from nn2c.report.html import quant_dict

        summary["quantization"] = quant_dict(result.quant)
    if result.prune is not None:
        summary["pruning"] = result.prune.to_dict()
    if as_json:
        _print_json(summary)
        return
    ratio = plan.arena_bytes / plan.lower_bound if plan.lower_bound else 1.0
    _say(f"compiled {model} -> {out_dir}/{result.name}.c ({len(result.graph.nodes)} operators)")
    _say(f"  arena {plan.arena_bytes:,} B (lower bound {plan.lower_bound:,} B, ratio {ratio:.2f}), "
         f"state {result.code.state_bytes:,} B, weights {result.code.weight_bytes:,} B")
    if board is not None:
        _say(_board_line(_board_fit(board, None, result.ram_bytes, result.code.weight_bytes), "", " (weights)"))
    for line in result.graph.metadata.get("int8_io", []):
        _say(f"  --io int8: {line}")
    decoded = result.graph.metadata.get("decode")
    if decoded:
        _say(f"  TFLM-compressed model: {decoded['tensors']} tensor(s) decoded at compile time, "
             f"{decoded['encoded_bytes']:,} B encoded -> {decoded['decoded_bytes']:,} B dense in flash")
    from nn2c.report.layers import schedule_dict

    fusion = schedule_dict(result)
    if fusion["row_groups"]:
        spans = ", ".join(f"ops {g['ops'][0]}-{g['ops'][-1]}"
                          + (f" in {g['column_bands']} column bands" if g["column_bands"] > 1 else "")
                          for g in fusion["row_groups"])
        _say(f"  row groups ({fusion['policy']}): {len(fusion['row_groups'])} ({spans}); arena "
             f"{fusion['layer_by_layer_arena_bytes']:,} B layer by layer, estimated cost "
             f"+{100 * fusion['added_cost_fraction']:.1f}%"
             + (f", {fusion['recomputed_macs']:,} MACs recomputed" if fusion["recomputed_macs"] else ""))
        for group in fusion["row_groups"]:
            for slower in group["slower_kernels"]:
                _say(f"  row group runs {slower} (slower; --schedule layer keeps the SIMD kernel)")
    if fusion["relocations"]:
        moved = sum(r["bytes"] for r in fusion["relocations"])
        _say(f"  relocations: {len(fusion['relocations'])} tensor(s) moved back after an in-place step "
             f"({moved:,} B copied per inference) to undo the in-place drift")
    worst = getattr(result.quant, "output_sqnr_db", None)
    if worst is not None:
        _say(f"  quantized to int8: worst output SQNR {worst:.1f} dB (-v or --report for every tensor)")
    if result.prune is not None:
        for line in result.prune.lines():
            _say(f"  {line}")
    if write_tflite:
        _say(f"  {'int8' if quantize else 'pruned'} model as TFLite: {write_tflite}")
    if write_onnx:
        _say(f"  pruned model as ONNX: {write_onnx}")
    if "npu" in result.graph.metadata:
        for line in result.graph.metadata["npu"].lines():
            _say(f"  {line}")
    if report:
        _say(f"  report: {Path(out_dir) / 'report.html'}")
    if _settings().verbose and result.quant is not None:
        progress.detail(str(result.quant).rstrip("\n"))
    if _settings().verbose and result.prune is not None:
        progress.detail(str(result.prune).rstrip("\n"))
    if _settings().verbose:
        from nn2c.report.layers import peak

        top = peak(result)
        if top is not None:
            progress.detail(f"nn2c: arena {top.describe(limit=8)}")


def _tensor_json(value) -> dict[str, Any]:
    t = value.type
    spec: dict[str, Any] = {"name": value.name, "dtype": t.dtype, "shape": list(t.shape), "bytes": t.num_bytes}
    if value.is_constant:
        spec["constant"] = True
    if value.is_variable:
        spec["state"] = True
    if t.quant is not None:
        if t.quant.per_channel:
            spec["quantization"] = {"axis": t.quant.axis, "channels": len(t.quant.scale)}
        else:
            spec["quantization"] = {"scale": float(t.quant.scale[0]), "zero_point": int(t.quant.zero_point[0])}
    return spec


def _inspect_json(graph) -> dict[str, Any]:
    from nn2c.ir.cost import macs, weight_bytes

    layers = [{
        "step": step, "index": node.index, "op": node.op, "name": node.name,
        "attributes": {k: node.attrs[k] for k in sorted(node.attrs)},
        "inputs": [_tensor_json(v) if v is not None else None for v in node.inputs],
        "outputs": [_tensor_json(v) for v in node.outputs],
        "macs": macs(node), "weight_bytes": weight_bytes(node),
    } for step, node in enumerate(graph.nodes)]
    counts: dict[str, int] = {}
    for node in graph.nodes:
        counts[node.op] = counts.get(node.op, 0) + 1
    return {
        "graph": graph.name, "inputs": [_tensor_json(v) for v in graph.inputs],
        "outputs": [_tensor_json(v) for v in graph.outputs], "operators": len(graph.nodes),
        "operator_counts": dict(sorted(counts.items())), "macs": sum(x["macs"] for x in layers),
        "weight_bytes": sum(x["weight_bytes"] for x in layers), "layers": layers,
    }


@main.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True,
              help="Print the graph as JSON: inputs, outputs and per layer the operator, attributes, tensor "
                   "shapes, dtypes, quantization, MACs and weight bytes.")
@click.option("--nhwc-io", is_flag=True, help="ONNX models: show the graph with channels-last inputs/outputs.")
@_output_options
@_one_line_errors
def inspect(model, as_json, nhwc_io) -> None:
    """Print MODEL's graph: shapes, quantization, MACs and weight bytes per operator (as imported, before passes)."""
    from nn2c.api import load_model
    from nn2c.ir import dump

    with _progress().step("reading the model"):
        graph = load_model(model, nhwc_io=nhwc_io)
    if as_json:
        _print_json(_inspect_json(graph))
    else:
        click.echo(dump(graph), nl=False)


@main.command()
@click.argument("out_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--input", "inputs", multiple=True, required=True, type=click.Path(dir_okay=False, exists=True),
              help="A .npy file per model input, in model order (a leading axis of N runs N inferences).")
@click.option("--output", "output", required=True, type=click.Path(dir_okay=False),
              help="Where to write the outputs (.npz with arrays output_0, output_1, ...).")
@click.option("--model", "model", type=click.Path(dir_okay=False, exists=True), default=None,
              help="The model the folder was compiled from (default: read the shapes from the folder).")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON summary (output file, and per output its name, dtype and shape) on stdout.")
@_output_options
@_one_line_errors
def run(out_dir, inputs, output, model, as_json) -> None:
    """Build the compiled folder OUT_DIR with the host C compiler and run it on .npy inputs."""
    from nn2c.verify.runner import run_folder

    with _progress().step("building with the host C compiler and running"):
        outputs = run_folder(Path(out_dir), [np.load(p) for p in inputs])
    np.savez(output, **{f"output_{i}": a for i, a in enumerate(outputs)})  # type: ignore[arg-type]
    if as_json:
        _print_json({"folder": str(out_dir), "output_file": str(output), "outputs": [
            {"name": f"output_{i}", "dtype": str(a.dtype), "shape": list(a.shape)} for i, a in enumerate(outputs)]})
        return
    _say(f"wrote {len(outputs)} output(s) to {output}")


@main.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--inputs", "count", type=int, default=3, show_default=True, help="Number of seeded random inputs.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the comparison as JSON to this file ('-' for stdout, instead of the text).")
@_output_options
@_one_line_errors
def verify(model, count, seed, json_path) -> None:
    """Compile, build and run MODEL on seeded inputs; compare every output with the reference runtimes.

    .tflite models are compared with TFLM (bit-exact, the judge) and LiteRT; .onnx models with onnxruntime
    (float outputs within 1e-4 relative).
    """
    from nn2c.errors import VerificationError

    with _progress().step(f"compiling, building and running {count} input(s) against the reference runtimes"):
        if Path(model).suffix.lower() == ".onnx":
            from nn2c.verify.onnx_oracle import verify_onnx

            report = verify_onnx(model, count=count, seed=seed)
        else:
            from nn2c.verify.compare import verify_model

            report = verify_model(model, count=count, seed=seed)
    if json_path != "-":
        for c in report.comparisons:
            status = "bit-exact" if c.max_abs_diff == 0 else ("within tolerance" if c.mismatches == 0 else "MISMATCH")
            if c.int_tolerance and c.max_abs_diff:
                status += (f" ({c.reference}'s reference kernels round differently from TFLM: integers may "
                           f"differ by {c.int_tolerance})")
            if c.reference != report.judge:
                status += f" (informational: {report.judge} is the reference)"
            line = (f"{c.reference:6s} output {c.output} ({c.elements} values over {report.records} inputs): "
                    f"max abs diff {c.max_abs_diff:g}, max rel diff {c.max_rel_diff:.3g} -> {status}")
            click.echo(line) if c.mismatches else _say(line)
        for ref, why in report.skipped.items():
            if ref in report.missing:
                from nn2c.verify.oracle import INSTALL_ORACLE, describe

                _say(f"{ref:6s} not compared: {describe(ref)} is not installed ({INSTALL_ORACLE} adds it); "
                     f"{report.judge} is the reference")
            else:
                _say(f"{ref:6s} could not run this model: {why}")
    if json_path:
        payload = json.dumps({
            "model": report.model, "inputs": report.records, "arena_bytes": report.arena_bytes,
            "passed": report.passed(), "skipped": report.skipped, "missing": report.missing,
            "comparisons": [c.__dict__ for c in report.comparisons],
        }, indent=2, default=_json_default)
        if json_path == "-":
            click.echo(payload)
        else:
            Path(json_path).write_text(payload)
    if not report.passed():
        if not report.comparisons:  # every reference installed refused (or crashed on) the model
            raise VerificationError(f"{model}: no reference runtime could run this model (see above), so nn2c's "
                                    "outputs were compared with none; check the model with the runtime it is meant for")
        if "tflm" in report.missing:
            from nn2c.verify.oracle import INSTALL_ORACLE

            raise VerificationError(f"{model}: outputs differ from {report.judge} (see above); TFLM, the bit-exact "
                                    f"reference, is not installed: {INSTALL_ORACLE} adds it")
        raise VerificationError(f"{model}: outputs differ from the reference runtime (see above)")


@main.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--target", type=click.Choice(bench_targets()), default="cortex-m4",
              show_default=True, help="Core to cross-build for (QEMU mps2-an386, mps2-an500, mps3-an547).")
@click.option("--board", default=None, metavar="NAME",
              help="Board to fit (sets the core and the RAM / flash budgets, picks a QEMU memory map the model "
                   "fits, adds an estimated latency): " + ", ".join(BOARDS) + ".")
@click.option("--inputs", "count", type=click.IntRange(1, 1000), default=3, show_default=True,
              help="Number of seeded random inputs (one inference each).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--top", type=click.IntRange(0, None), default=10, show_default=True,
              help="Layers to list in the profile (0: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON instead of text.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False), default=None,
              help="Also write report.html / report.md into this folder, with the measured instructions per layer.")
@click.option("--optimize", "optimize", type=click.Choice(list(OPTIMIZE)), default="balanced", show_default=True,
              help="As for nn2c compile: speed, balanced or size.")
@click.option("--sparse", "sparse", type=click.Choice(["auto", "off", "always"]), default="auto", show_default=True,
              help="As for nn2c compile: the sparse kernels for pruned layers where predicted faster (auto), never "
                   "(off: nn2c's dense kernels, to compare) or wherever a layer allows it (always).")
@_output_options
@_one_line_errors
def bench(model, target, count, seed, top, as_json, report_dir, board, optimize="balanced", sparse="auto") -> None:
    """Cross-build MODEL for a Cortex-M core, run it in QEMU and count instructions and memory accesses.

    Checks the outputs against TFLM bit for bit and reports instructions, loads and stores per
    inference, instructions per MAC, a per-layer profile (instructions, loads, stores, and
    measured / lower bound for the core: nn2c.targets.bounds), flash (code, weights), RAM and the
    measured stack high-water mark. Cortex-M55 loads and stores count per element (QEMU's Helium
    helpers) and do not compare with M4's; QEMU does not model the M7's dual issue.
    Needs arm-none-eabi-gcc (gcc-arm-none-eabi, libnewlib-arm-none-eabi) and qemu-system-arm.
    """
    from nn2c.api import CompileOptions
    from nn2c.errors import VerificationError
    from nn2c.targets.cortexm_bench import bench_model, format_report

    options = (None if optimize == "balanced" and sparse == "auto"
               else CompileOptions(target=target, optimize=optimize, sparse=sparse))
    large_memory: bool | None = False  # None: the larger QEMU memory map when the model needs it
    if board is not None:
        spec = get_board(board)
        if spec.bench_target is None:
            raise UsageError(f"--board {spec.name}: {spec.note}")
        options = _board_options(CompileOptions(target=target, optimize=optimize, sparse=sparse), board)
        target, large_memory = options.target, None
    progress = _progress()
    with progress.step(f"cross-building for {target} and running {count} input(s) in QEMU"):
        report = on_board(board, lambda: bench_model(model, target=target, count=count, seed=seed, options=options,
                                                     large_memory=large_memory))
    if report_dir is not None:
        from nn2c.api import compile_model
        from nn2c.report.html import write_report

        with progress.step("writing the report"):
            # the same compile bench_model did (deterministic), kept for the layer table
            result = compile_model(model, options or CompileOptions(target=target))
            write_report(result, report_dir, instructions={x.index: x.instructions for x in report.layers},
                         accesses={x.index: x.loads + x.stores for x in report.layers})
    if as_json:
        payload = report.as_dict(top=top or None)
        if board is not None:
            payload["board"] = _board_fit(board, report.instructions_per_inference, report.footprint.ram_model,
                                          report.footprint.flash_code + report.footprint.flash_weights)
        if report_dir is not None:
            payload["report_files"] = [str(Path(report_dir) / f) for f in ("report.html", "report.md")]
        _print_json(payload)
    else:
        text = format_report(report, top=top or len(report.layers))
        click.echo(text) if not report.passed() else _say(text)
        if board is not None:
            fit = _board_fit(board, report.instructions_per_inference, report.footprint.ram_model,
                             report.footprint.flash_code + report.footprint.flash_weights)
            _say(_board_line(fit, "measured instructions", " (model code + weights)"))
            if not fit["fits_flash"]:
                click.echo(f"nn2c: warning: the model's code and weights ({fit['flash_used']:,} B) exceed the flash "
                           f"of board {fit['name']} ({fit['flash_bytes']:,} B)", err=True)
        if report_dir is not None:
            _say(f"  report: {Path(report_dir) / 'report.html'}")
    if not report.passed():
        raise VerificationError(f"{model}: Cortex-M outputs differ from the reference runtime (see above)")


def _board_fit(board: str, instructions: float | None, ram: int, flash: int | None) -> dict[str, Any]:
    """The board's figures, whether `ram` / `flash` bytes fit it, and the estimated latency."""
    spec = get_board(board)
    fit = spec.as_dict()
    fit.update({"ram_used": ram, "flash_used": flash, "fits_ram": ram <= spec.ram_bytes,
                "fits_flash": flash is None or flash <= spec.flash_bytes,
                "latency_ms_estimate": spec.latency_ms(instructions) if instructions is not None else None})
    return fit


def _board_line(fit: dict[str, Any], basis: str, flash_what: str = "") -> str:
    flash = "-" if fit["flash_used"] is None else f"{fit['flash_used']:,}"
    line = (f"  board {fit['name']} ({fit['core']}, {fit['clock_mhz']:g} MHz): RAM {fit['ram_used']:,} of "
            f"{fit['ram_bytes']:,} B, flash {flash} of {fit['flash_bytes']:,} B{flash_what}")
    if fit["latency_ms_estimate"] is not None:
        line += (f"; latency ~{fit['latency_ms_estimate']:.1f} ms, an estimate ({basis} x {fit['cpi_assumed']:g} "
                 f"cycles per instruction, assumed, / {fit['clock_mhz']:g} MHz)")
    return line


@main.command()
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("--target", type=click.Choice(list(TARGETS)), default=None,
              help="Core whose kernels are profiled (default: cortex-m4, or the board's). cortex-m4 also predicts "
                   "cortex-m7 (the same kernels); host has no instruction prediction.")
@click.option("--board", default=None, metavar="NAME",
              help="Board to fit (its core and budgets; estimated latency): " + ", ".join(BOARDS) + ".")
@click.option("--schedule", type=click.Choice(list(SCHEDULES)), default="auto", show_default=True,
              help="Row groups, as for nn2c compile (the profile follows compile's choice).")
@click.option("--planner", type=click.Choice(["exact", "greedy"]), default="exact", show_default=True,
              help="Arena planner, as for nn2c compile.")
@click.option("--ram-budget", type=int, default=None, help="As for nn2c compile: the schedule that fits it.")
@click.option("-O", "opt_level", type=click.IntRange(0, 2), default=2, show_default=True,
              help="Graph optimisation level, as for nn2c compile.")
@click.option("--nhwc-io", is_flag=True, help="ONNX models: channels-last inputs/outputs, as for nn2c compile.")
@click.option("--top", type=click.IntRange(0, None), default=10, show_default=True,
              help="Layers to list (0: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the profile as JSON.")
@click.option("--optimize", "optimize", type=click.Choice(list(OPTIMIZE)), default="balanced", show_default=True,
              help="As for nn2c compile: speed, balanced or size.")
@_output_options
@_one_line_errors
def profile(model, target, board, schedule, planner, ram_budget, opt_level, nhwc_io, top, as_json,
            optimize="balanced") -> None:
    """Profile MODEL without building C: static RAM (exactly nn2c compile's arena + state), flash (weights
    exact, code estimated), MACs, and instructions per layer predicted by a cost model fitted against
    QEMU counts (an estimate; bench/costmodel.py, docs/BENCHMARKS.md "Cost model"). With --board: whether
    it fits (exit 4 when not) and an estimated latency.
    """
    from nn2c.api import CompileOptions
    from nn2c.errors import BudgetExceededError
    from nn2c.profiler import profile as run_profile

    options = CompileOptions(schedule=schedule, planner=planner, ram_budget=ram_budget, opt_level=opt_level,
                             nhwc_io=nhwc_io, optimize=optimize)
    with _progress().step("profiling (compile's stages up to the memory plan; no C)"):
        result = run_profile(model, target=target, board=board, options=options)
    fit = None
    if result.board is not None:
        core = result.board.target
        fit = _board_fit(result.board.name, result.predicted.get(core), result.ram_bytes,
                         result.flash_bytes_estimate if result.flash_bytes_estimate is not None
                         else result.weight_bytes)
    if as_json:
        payload = result.as_dict()
        if fit is not None:
            payload["board"] = fit
        layers = payload["layers"]
        if top:
            key = result.target if result.target in result.predicted else None
            payload["layers"] = sorted(layers, key=lambda x: -(x["predicted_instructions"].get(key, 0)
                                                              if key else x["macs"]))[:top]
        _print_json(payload)
    else:
        _say(_profile_text(result, top))
        if fit is not None:
            estimated = result.flash_bytes_estimate is not None
            _say(_board_line(fit, "predicted instructions",
                             " (weights + estimated code)" if estimated else " (weights; code not estimated)"))
    if fit is not None and not (fit["fits_ram"] and fit["fits_flash"]):
        raise BudgetExceededError(
            f"{model} does not fit board {fit['name']}: RAM {fit['ram_used']:,} B of {fit['ram_bytes']:,}, "
            f"flash {fit['flash_used']:,} B of {fit['flash_bytes']:,} (weights exact + code estimated)")


@main.command()
@click.argument("space", type=click.Path(dir_okay=False))
@click.option("-o", "--output", "out_dir", default="sweep_out", show_default=True, type=click.Path(file_okay=False),
              help="Folder of results.csv (appended as candidates finish; a re-run skips the done ones), "
                   "results.parquet (with pyarrow), pareto.png and index.html.")
@click.option("--address", default=None, metavar="RAY_ADDRESS",
              help="An existing Ray cluster (HOST:PORT, ray://HOST:PORT or auto); default: a local one.")
@click.option("--board", default=None, metavar="NAME", help="The board to fit and estimate latency on "
              "(overrides the space's `board:`).")
@click.option("--workers", type=click.IntRange(1, None), default=None,
              help="CPUs of the local Ray cluster (default: all); with --address, at most 2N candidates in flight.")
@_output_options
@_one_line_errors
def sweep(space, out_dir, address, board, workers) -> None:
    """Profile every candidate of the search space SPACE.yaml (MCUNet-style generated int8 networks, or
    model files) in parallel on Ray: exact RAM, weights, MACs, predicted instructions and estimated
    latency per candidate, one CSV row each; a candidate nn2c cannot compile is a failed row."""
    from nn2c.sweep import load_space, run_sweep

    loaded = load_space(space)
    result = run_sweep(loaded, out_dir, board=board, address=address, workers=workers,
                       progress=not _settings().quiet)
    ok = [r for r in result.rows if r["status"] == "ok"]
    fits = [r for r in ok if r.get("fits") == "yes"]
    _say(f"sweep: {len(result.rows)} candidates ({result.evaluated} evaluated now, {result.skipped} already done) "
         f"in {result.seconds:.1f} s: {len(ok)} profiled, {len(result.failed)} failed"
         + (f", {len(fits)} fit {board or loaded.board}" if (board or loaded.board) else ""))
    for path in (result.csv, result.parquet, result.plot, result.html):
        if path is not None:
            _say(f"  {path}")


def _profile_text(result: Any, top: int) -> str:
    code = result.code_bytes_estimate.get(result.target)
    lines = [
        f"{Path(result.model).name} on {result.target} ({len(result.steps)} steps, schedule "
        f"{result.options.schedule}; no C built; {1000 * result.seconds:.0f} ms after loading)",
        f"  RAM: {result.ram_bytes:,} B (arena {result.arena_bytes:,} + state {result.state_bytes:,}), exact: "
        f"nn2c compile's, {result.planner} planner",
        f"  flash: weights {result.weight_bytes:,} B (exact)"
        + (f", code ~{code:,} B (estimated)" if code is not None else ", code not estimated for host"),
        f"  MACs: {result.macs:,}",
    ]
    if result.predicted:
        per_core = ", ".join(f"{core} {n:,.0f}" for core, n in result.predicted.items())
        lines.append(f"  predicted instructions per inference (cost model, an estimate): {per_core}")
        if any(s.op == "WHILE" for s in result.steps):
            lines.append("  (a WHILE whose number of iterations is run-time data counts as one iteration)")
        core = result.target if result.target in result.predicted else next(iter(result.predicted))
        ranked = sorted(result.steps, key=lambda s: -s.predicted.get(core, 0.0))[:top or len(result.steps)]
        total = max(result.predicted[core], 1.0)
        lines.append(f"  top layers by predicted {core} instructions:")
        for s in ranked:
            kernels = ", ".join(s.kernels) or {"ROW_GROUP": "by rows",
                                               "WHILE": "one iteration: the count is run-time data"}.get(s.op, "-")
            lines.append(f"    [{s.step:3d}] {s.op:22s} {s.predicted.get(core, 0.0):14,.0f} "
                         f"{100 * s.predicted.get(core, 0.0) / total:5.1f}%  MACs {s.macs:,}  {kernels}")
    else:
        lines.append(f"  no instruction prediction for {result.target} (the cost model covers cortex-m4, "
                     "cortex-m7, cortex-m55)")
    return "\n".join(lines)
