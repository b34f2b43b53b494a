"""compile_model: the compiler's stages, one call each, in the order they run.

    load        model file -> Graph                       (frontends/)
    optimise    Graph -> Graph, PipelineReport            (passes/, -O0 / -O1 / -O2)
    quantize    float Graph -> int8 Graph, SQNR report    (quant/; only with --quantize, then optimise again)
    lower       Graph, Target -> LoweredModel             (codegen/lower.py + codegen/ops/: kernel calls)
    schedule    Graph -> Schedule                         (memory/schedule.py: execution order;
                                                           memory/fusion.py: row groups, by cost)
    plan_memory Graph, LoweredModel -> ArenaPlan          (memory/arena.py: one offset per buffer)
    render      LoweredModel, ArenaPlan -> GeneratedCode  (codegen/render.py: the files)

Then the folder's build files are added (codegen/package.py) and the budgets checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from nn2c.codegen.cnames import c_identifier
from nn2c.codegen.context import NodeCode
from nn2c.codegen.lower import LoweredModel, lower
from nn2c.codegen.package import library_files
from nn2c.codegen.render import render
from nn2c.codegen.stream import RowGroup, chain_tables, group_code
from nn2c.errors import BudgetExceededError, InvalidModelError, UsageError
from nn2c.frontends.tflite_frontend import is_tflite, load_tflite
from nn2c.ir import Graph, verify
from nn2c.memory.arena import ArenaPlan, plan_arena
from nn2c.memory.fusion import choose_steps
from nn2c.memory.requests import live_bytes_per_step
from nn2c.memory.schedule import Schedule, schedule
from nn2c.options import SCHEDULES, CompileOptions
from nn2c.passes.int8_io import expose_int8_io
from nn2c.passes.pipeline import PipelineReport, optimize
from nn2c.result import CompileResult
from nn2c.target import get_target


def load_model(path: str | Path, nhwc_io: bool = False) -> Graph:
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such model file")
    data = path.read_bytes()
    if is_tflite(data):
        graph = load_tflite(path, data)
    elif path.suffix.lower() == ".onnx":
        from nn2c.frontends.onnx import load_onnx  # onnx is imported only for ONNX models

        graph = load_onnx(path, data, nhwc_io=nhwc_io)
    else:
        raise InvalidModelError(
            f"{path}: not a TensorFlow Lite model (no 'TFL3' identifier at byte 4) nor an .onnx file; "
            "pass a .tflite flatbuffer or an .onnx model"
        )
    verify(graph)
    return graph


def _op_counts(graph: Graph) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in graph.nodes:
        counts[node.op] = counts.get(node.op, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _quantize(graph: Graph, path: str | Path, options: CompileOptions, passes: PipelineReport,
              step: Callable[[str], None]) -> tuple[Graph, object, bytes | None]:
    """The quantize stage: calibrate, rewrite to int8, (export the .tflite,) optimise again."""
    from nn2c.quant.ptq import quantize_for_compile  # calibration runs only when asked for

    step(f"calibrating and quantizing to {options.quantize}")
    graph, quant = quantize_for_compile(graph, options)
    tflite_bytes = None
    if options.write_tflite is not None:
        # the graph as quantized, before the re-optimisation below (which may introduce nn2c-only forms)
        from nn2c.export.tflite_writer import graph_to_tflite

        step("writing the quantized graph as a TFLite flatbuffer")
        tflite_bytes = graph_to_tflite(graph, f"nn2c int8 post-training quantization of {Path(path).name}")
    again = optimize(graph, options.opt_level)  # clean up the quantize/dequantize edges it created
    for pass_name, stats in again.per_pass.items():
        passes.per_pass[pass_name] += stats
    passes.ops_after = again.ops_after
    return graph, quant, tflite_bytes


def compile_model(path: str | Path, options: CompileOptions | None = None,
                  progress: Callable[[str], None] | None = None) -> CompileResult:
    """Run every stage on the model at `path`. `progress(step)` is told when each step starts."""
    options = options or CompileOptions()
    step = progress or (lambda _text: None)
    get_target(options.target)  # an unknown target fails before the model is read
    if options.write_tflite is not None:
        _check_tflite_path(path, options)
    if options.write_onnx is not None:
        _check_onnx_path(path, options)
    step("reading the model")
    graph = load_model(path, nhwc_io=options.nhwc_io)
    ops_before = _op_counts(graph)
    pruning = None
    if options.prune:
        from nn2c.prune import prune_stage

        pruning = prune_stage(graph, options, step, source=Path(path))
    passes = optimise_stage(graph, options, step)
    quant, tflite_bytes = None, None
    if pruning is not None:
        tflite_bytes = pruning.tflite
    if options.quantize:
        graph, quant, tflite_bytes = _quantize(graph, path, options, passes, step)
    plan_options = options
    if options.npu is not None:  # (the partition stage runs in plan_stages, after the lower stage)
        from nn2c.npu.stage import schedule_options

        plan_options = schedule_options(options)
    name = c_identifier(options.name or Path(path).stem)
    lowered, order, step_codes, arena = plan_stages(graph, name, plan_options, step)
    step("writing C")
    code = render(lowered, arena, Path(path).name, step_codes)
    if "npu" in graph.metadata:
        from nn2c.npu.emit import add_npu_files

        add_npu_files(code.files, graph.metadata["npu"], graph, name)
    files = dict(code.files)
    files.update(library_files(name, code.files, graph, code.plan.arena_bytes, code.state_bytes,
                               code.weight_bytes, Path(path).name, options.target))
    if "npu" in graph.metadata:
        from nn2c.npu.emit import add_build_option

        add_build_option(files, name)
    result = CompileResult(name, graph, code, files, passes, quant, source=Path(path).name, options=options,
                           ops_before=ops_before, tflite=tflite_bytes, schedule=order,
                           onnx=pruning.onnx if pruning is not None else None)
    if pruning is not None:
        step("compiling without --prune for the before figures")
        result.prune = pruning.finish(result, path, options)
    _check_budgets(result, options)
    return result


def optimise_stage(graph: Graph, options: CompileOptions, step: Callable[[str], None]) -> PipelineReport:
    """The optimise stage (and --io int8), in place on `graph`; shared by compile_model and nn2c.profile."""
    step(f"optimising the graph (-O{options.opt_level})")
    passes = optimize(graph, options.opt_level)
    if options.io == "int8" and not options.quantize:
        step("exposing the int8 inputs and outputs")
        graph.metadata["int8_io"] = expose_int8_io(graph)  # one line per input / output, for the CLI
        passes.ops_after = len(graph.nodes)
    return passes


def plan_stages(graph: Graph, name: str, options: CompileOptions, step: Callable[[str], None]
                ) -> tuple[LoweredModel, Schedule, list[NodeCode], ArenaPlan]:
    """lower, schedule (with row groups) and plan_memory: everything before render. compile_model and
    nn2c.profile both call this, so a profile's RAM is compile's byte for byte.

    Sparse layers summed in row pairs or run over pair tables, depthwise layers over channel planes and 1x1 layers
    over pixel triples take more scratch (EmitContext.extra_scratch): where some did, the stages run again without any, and they all stay if the
    arena is no larger; else those whose step's live bytes with them stay within that arena (fitting_extras) are
    planned once more and stay if the arena is still no larger. --optimize speed keeps them all (kws_ref_model pruned
    1:8 on the Cortex-M4: 336 bytes more for its row pairs at the default schedule; ad01_int8 2,560 more for all its
    pair tables, where a balanced build keeps the one of its 8-input layer, in the same 768-byte arena; a lone
    48x48x8 depthwise layer 3,264 more for its planes, which a balanced build leaves out). The triples' code comes
    on top of the pixel pairs' where other convolutions run over pairs: 945-1,264 B more on the Cortex-M4 for
    kws_ref_model, person_detect and tinyengine/vww, each 4-6% fewer instructions (bench/cortexm.py)."""
    staged = _plan_stages(graph, name, options, step, extra_scratch=True)
    return _fitting_stages(graph, name, options, step, staged)


def _fitting_stages(graph: Graph, name: str, options: CompileOptions, step: Callable[[str], None],
                    staged: tuple[LoweredModel, Schedule, list[NodeCode], ArenaPlan]
                    ) -> tuple[LoweredModel, Schedule, list[NodeCode], ArenaPlan]:
    """staged (planned with the extra scratch its nodes took), or the stages again with those of them that keep
    the arena of the stages without any, or without any."""
    if not staged[0].ctx.took_extra_scratch or options.npu is not None or options.optimize == "speed":
        return staged
    step("planning again without the extra scratch of row pairs, pair tables and channel planes")
    without = _plan_stages(graph, name, options, step, extra_scratch=False)
    if staged[3].arena_bytes <= without[3].arena_bytes:
        return staged
    ctx = staged[0].ctx
    # (then without the pixel triples, whose scratch may keep the others' from fitting)
    tries = [ctx.took_extra_scratch] + ([ctx.took_extra_scratch - ctx.took_triples] if ctx.took_triples else [])
    for took in tries:
        keep = fitting_extras(took, staged[2], staged[3], without[3].plan.arena_bytes)
        if keep:
            step(f"planning again with the extra scratch of the {len(keep)} layer(s) whose steps stay within the "
                 "arena")
            chosen = _plan_stages(graph, name, options, step, extra_scratch=keep)
            if chosen[3].arena_bytes <= without[3].arena_bytes:
                return chosen
    return without


def fitting_extras(took: set[int], step_codes: list[NodeCode], arena: ArenaPlan, limit: int) -> frozenset[int]:
    """The nodes (id) of `took` that run as steps of their own whose live bytes, every buffer live there counted
    apart (an in-place pair overlaps: an overestimate), stay within `limit` in `arena`'s plan."""
    live = live_bytes_per_step(arena.requests)
    return frozenset(id(code.node) for k, code in enumerate(step_codes)
                     if id(code.node) in took and live.get(k, 0) <= limit)


def _plan_stages(graph: Graph, name: str, options: CompileOptions, step: Callable[[str], None],
                 extra_scratch: bool | frozenset[int]
                 ) -> tuple[LoweredModel, Schedule, list[NodeCode], ArenaPlan]:
    target = get_target(options.target)
    step(f"lowering to kernels for {target.name}")
    lowered = lower(graph, name, target, options.debug, options.sparse, options.optimize, extra_scratch)
    if options.npu is not None:  # compile_model only (nn2c.profile refuses --npu)
        from nn2c.npu.stage import partition_stage

        step(f"partitioning between the CPU and the {options.npu} NPU (Vela)")
        partition_stage(graph, options, lowered.code_in(graph.nodes))
    step("choosing the operator order")
    order = schedule(graph, reorder=options.reorder)
    step(f"choosing row groups (--schedule {options.schedule})")
    order, step_codes = _fuse(graph, lowered, order, options)
    if "npu" in graph.metadata:  # --npu: the partition stage ran (compile_model)
        from nn2c.npu.emit import driver_steps

        step_codes = driver_steps(graph.metadata["npu"], graph, step_codes, lowered.ctx, name)
    planner = (f"exact planner, up to {options.plan_time_limit:g} s" if options.planner == "exact"
               else f"{options.planner} planner")
    step(f"planning memory ({planner})")
    scratch = [code.scratch for code in step_codes]
    # the schedule stage planned the steps it chose; without the NPU's driver steps, that is this plan
    planned = order.fusion.planned if order.fusion is not None and "npu" not in graph.metadata else None
    arena = plan_arena(graph, lowered.aliases, scratch, options.planner, options.inplace,
                       options.plan_time_limit, options.debug, steps=order.steps, planned=planned)
    return lowered, order, step_codes, arena


def _fuse(graph: Graph, lowered: LoweredModel, order: Schedule,
          options: CompileOptions) -> tuple[Schedule, list[NodeCode]]:
    """The row groups of the schedule (memory/fusion.py) and the code of every step."""
    if options.schedule not in SCHEDULES:
        raise UsageError(f"unknown --schedule {options.schedule!r}; choose one of {', '.join(SCHEDULES)}")
    codes = lowered.code_in(graph.nodes)
    budget = None
    if options.ram_budget is not None:
        budget = options.ram_budget - lowered.state_bytes
    inplace = options.inplace and not options.debug
    choice = choose_steps(graph, codes, lowered.ctx, lowered.aliases, options.schedule, budget, inplace,
                          planner=options.planner)
    by_node = {id(c.node): c for c in codes}
    tables = chain_tables([s for s in choice.steps if isinstance(s, RowGroup)], lowered.ctx)
    step_codes = [group_code(s, lowered.ctx, tables) if isinstance(s, RowGroup) else by_node[id(s)]
                  for s in choice.steps]
    for group in (s for s in choice.steps if isinstance(s, RowGroup)):
        for op in group.ops:
            if op.planes:  # (its rows through the tap loop: StreamOp.planes)
                lowered.ctx.release_path("DSP_DW_PLANES", op.node)
    return replace(order, steps=tuple(choice.steps), fusion=choice), step_codes


def _check_tflite_path(model: str | Path, options: CompileOptions) -> None:
    target = Path(options.write_tflite or "")
    if not options.quantize and not options.prune:
        raise UsageError("--write-tflite writes the model nn2c quantized; it needs --quantize int8 "
                         "(or --prune: the pruned model; without them the model is not changed: use the model file itself)")
    if not options.write_tflite or target.is_dir():
        raise UsageError(f"--write-tflite {str(target)!r}: give a file name for the .tflite model, not a folder")
    if target.exists() and Path(model).exists() and target.resolve() == Path(model).resolve():
        raise UsageError(f"--write-tflite {target}: that is the float model being compiled; choose another file")


def _check_onnx_path(model: str | Path, options: CompileOptions) -> None:
    target = Path(options.write_onnx or "")
    if not options.prune:
        raise UsageError("--write-onnx writes the pruned ONNX model; it needs --prune")
    if Path(model).suffix.lower() != ".onnx":
        raise UsageError(f"--write-onnx writes an ONNX model back, and {Path(model).name} is not one; "
                         "use --write-tflite")
    if not options.write_onnx or target.is_dir():
        raise UsageError(f"--write-onnx {str(target)!r}: give a file name for the .onnx model, not a folder")
    if target.exists() and Path(model).exists() and target.resolve() == Path(model).resolve():
        raise UsageError(f"--write-onnx {target}: that is the model being compiled; choose another file")


def _check_budgets(result: CompileResult, options: CompileOptions) -> None:
    """Over a budget: say by how much and which operators to look at (the arena peak, the heaviest weights)."""
    code, source = result.code, result.source
    if options.ram_budget is not None and result.ram_bytes > options.ram_budget:
        from nn2c.report.layers import peak

        top = peak(result)
        where = f"; arena {top.describe(limit=3)}" if top is not None else ""
        fusion = result.schedule.fusion if result.schedule is not None else None
        smallest = ""
        if fusion is not None and fusion.curve:
            least = min(ram for ram, _ in fusion.curve) + code.state_bytes
            smallest = f"; the least RAM any schedule reaches is {least:,} bytes"
        raise BudgetExceededError(
            f"{source} needs {result.ram_bytes:,} bytes of RAM (arena {result.arena_bytes:,} + "
            f"state {code.state_bytes:,}), over the budget of {options.ram_budget:,}{where}{smallest}; "
            "use a smaller model, try -O2 and the default planner, or raise --ram-budget"
        )
    if options.flash_budget is not None and code.weight_bytes > options.flash_budget:
        from nn2c.ir.cost import weight_bytes

        heavy = sorted(((weight_bytes(n), step, n.op) for step, n in enumerate(result.graph.nodes)),
                       key=lambda x: (-x[0], x[1]))[:3]
        names = ", ".join(f"op {step} {op} {size:,} B" for size, step, op in heavy if size)
        raise BudgetExceededError(
            f"{source} needs {code.weight_bytes:,} bytes of flash for weights, over the budget "
            f"of {options.flash_budget:,}" + (f"; largest: {names}" if names else "")
            + "; use a smaller model or raise --flash-budget"
        )
