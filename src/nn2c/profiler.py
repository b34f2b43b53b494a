"""`nn2c.profile()` / `nn2c profile`: what a model costs on a core, without building any C.
(The module is nn2c.profiler, so that `nn2c.profile` stays the function.)

RAM is exact: the profile runs compile's own stages (nn2c.compile.optimise_stage and plan_stages:
the optimiser, the lowering, the schedule with its row groups, the arena planner), so its arena +
state equal `nn2c compile`'s byte for byte with the same options. Weight bytes are exact too (the
flash arrays the steps' code names, as render keeps them). What is estimated, and says so:
- code bytes, from a fit of the bench images' model code (kernels + invoke + parameter structs);
- instructions per step and in total, from the per-kernel cost model (src/nn2c/data/cost_model.json,
  fitted against QEMU instruction counts by bench/costmodel.py);
- latency on a board: instructions x an assumed cycles-per-instruction factor / clock (nn2c.boards).

The cost model: for each operator with the kernel functions its step calls (CONV_2D with
nn2c_conv_s8_simd, ...) and each core, instructions = a*MACs + b*patch elements (MACs / output
channels) + c*window taps (output pixels * kh * kw) + d*output elements + e*input elements + f*output
pixels + g. A kernel the fit has not
seen with this operator falls back to the kernel's fit over all operators, then to the operator's,
then to the core's overall fit. A row group (several operators run a few rows at a time) costs a
fitted factor times the sum of its members' predictions plus a constant.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from nn2c.boards import Board, board_budget, board_target, get_board
from nn2c.codegen.cnames import c_identifier
from nn2c.codegen.context import NodeCode
from nn2c.codegen.ops.sparse import (
    PACKED_VARIANT,
    PAIRS_VARIANT,
    SPARSE_KERNELS,
    TABLE_VARIANT,
    sparse_instructions,
)
from nn2c.codegen.render import used_params, used_weights
from nn2c.compile import load_model, optimise_stage, plan_stages
from nn2c.errors import UsageError
from nn2c.ir import Graph, Node, verify
from nn2c.ir.cost import macs
from nn2c.memory.arena import Move
from nn2c.options import CompileOptions
from nn2c.target import TARGETS, Target, get_target

# patch_elements = MACs / output channels: a convolution's im2col patch bytes over all output pixels
# (kh * kw * input channels per pixel), which costs per pixel whatever the output channels;
# window_taps = output pixels * kh * kw of a convolution or pooling window: the im2col copies and tap
# tables cost per tap whatever its channels (a first 3x3 convolution of 3 channels copies 9 taps of 3 bytes)
FEATURES = ("macs", "patch_elements", "window_taps", "output_elements", "input_elements", "output_pixels", "one")
COST_MODEL_FILE = "cost_model.json"
ESTIMATE_NOTE = ("instructions are predicted by a per-kernel cost model fitted against QEMU counts; code bytes "
                 "and latency are estimates (latency = instructions x assumed cycles per instruction / clock)")


@dataclass
class StepProfile:
    step: int  # position in invoke()
    op: str  # operator, or ROW_GROUP
    name: str
    ops: list[int]  # graph node indices the step runs
    kernels: list[str]  # the kernel functions its code calls
    macs: int
    output_elements: int
    input_elements: int
    output_pixels: int
    weight_bytes: int
    window_taps: int = 0  # output pixels * window taps (convolutions and pooling; FEATURES)
    predicted: dict[str, float] = field(default_factory=dict)  # core -> instructions
    # a row group's operators, or a run-time WHILE's (one iteration: condition and body):
    # {"op", "kernel", "features"} each, predicted one by one
    members: list[dict[str, Any]] = field(default_factory=list)
    has_code: bool = True  # False: an aliased reshape, which runs nothing
    variant: str = ""  # a kernel path fitted apart (NodeCode.variant)

    def features(self) -> dict[str, float]:
        return {"macs": self.macs, "output_elements": self.output_elements, "input_elements": self.input_elements,
                "output_pixels": self.output_pixels, "window_taps": self.window_taps, "one": 1.0}

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "op": self.op, "name": self.name, "ops": self.ops, "kernels": self.kernels,
                "macs": self.macs, "output_elements": self.output_elements, "input_elements": self.input_elements,
                "output_pixels": self.output_pixels, "weight_bytes": self.weight_bytes,
                "predicted_instructions": {k: round(v) for k, v in self.predicted.items()}}


@dataclass
class Profile:
    model: str
    name: str
    target: str
    options: CompileOptions
    arena_bytes: int  # exact: compile's arena
    state_bytes: int  # exact: compile's state tensors
    weight_bytes: int  # exact: compile's flash arrays
    macs: int
    steps: list[StepProfile]
    planner: str
    predicted: dict[str, float]  # core -> predicted instructions per inference (estimate)
    code_bytes_estimate: dict[str, int]  # core -> estimated code bytes (kernels, invoke, params structs)
    board: Board | None = None
    seconds: float = 0.0  # time of the profile after loading the model
    # relocations (memory/arena.py Move: nn2c_move after in-place steps), exact, in invoke outside any step
    moved: dict[str, int] = field(default_factory=dict)

    @property
    def ram_bytes(self) -> int:
        """Static RAM: arena + state, equal to `nn2c compile`'s."""
        return self.arena_bytes + self.state_bytes

    @property
    def flash_bytes_estimate(self) -> int | None:
        """Weights (exact) + estimated code of the profiled core."""
        code = self.code_bytes_estimate.get(self.target)
        return None if code is None else self.weight_bytes + code

    @property
    def latency_ms(self) -> float | None:
        """Estimated latency on the board (None without a board or a prediction for its core)."""
        if self.board is None or self.board.target not in self.predicted:
            return None
        return self.board.latency_ms(self.predicted[self.board.target])

    def fits(self) -> dict[str, bool] | None:
        """RAM and flash against the board (flash: weights + estimated code), None without a board."""
        if self.board is None:
            return None
        flash = self.flash_bytes_estimate if self.flash_bytes_estimate is not None else self.weight_bytes
        ram_budget = self.options.ram_budget if self.options.ram_budget is not None else self.board.ram_bytes
        return {"ram": self.ram_bytes <= ram_budget, "flash": flash <= self.board.flash_bytes}

    def as_dict(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model, "name": self.name, "target": self.target,
            "arena_bytes": self.arena_bytes, "state_bytes": self.state_bytes, "ram_bytes": self.ram_bytes,
            "weight_bytes": self.weight_bytes, "code_bytes_estimate": self.code_bytes_estimate,
            "flash_bytes_estimate": self.flash_bytes_estimate, "macs": self.macs, "planner": self.planner,
            "schedule": self.options.schedule, "steps": len(self.steps), "relocated_bytes": self.moved,
            "predicted_instructions": {k: round(v) for k, v in self.predicted.items()},
            "estimate_note": ESTIMATE_NOTE, "profile_seconds": self.seconds,
            "layers": [s.as_dict() for s in self.steps],
        }
        if self.board is not None:
            payload["board"] = self.board.as_dict()
            payload["latency_ms_estimate"] = self.latency_ms
            payload["fits"] = self.fits()
        return payload


def profile(model: str | Path | Graph, target: str | None = None, board: str | Board | None = None,
            options: CompileOptions | None = None, progress: Callable[[str], None] | None = None) -> Profile:
    """Profile `model` (a .tflite / .onnx path, or an in-memory Graph, which is left unchanged) for
    `target` (default cortex-m4) or `board` (which sets the target and the RAM / flash budgets as
    `nn2c compile --board` does). `options` are compile's (schedule, planner, -O, ...); their target
    and budgets are overridden by `target` / `board`. Raises what compile raises for a model it
    cannot compile; a model over the board's budget is *not* an error here: see Profile.fits().
    `progress(step)` is told when each stage starts."""
    options = options or CompileOptions()
    if options.npu is not None:
        raise UsageError("profile does not model --npu partitions; profile the CPU-only model")
    if options.quantize:
        raise UsageError("profile takes an int8 or float model as it is; quantize it first "
                         "(nn2c compile --quantize int8 --write-tflite q.tflite) and profile q.tflite")
    board_spec = get_board(board) if board is not None else None
    if board_spec is not None:
        chosen = board_target(board_spec, target)
        ram, flash = board_budget(board_spec, options.ram_budget, options.flash_budget)
        options = replace(options, target=chosen, ram_budget=ram, flash_budget=flash)
    else:
        options = replace(options, target=target or "cortex-m4")
    get_target(options.target)
    step = progress or _silent
    started = time.perf_counter()  # an in-memory graph's copy counts: a search loop pays it per candidate
    if isinstance(model, Graph):
        step("copying the graph")
        graph, source = copy.deepcopy(model), model.name
        verify(graph)
    else:
        graph, source = load_model(model, nhwc_io=options.nhwc_io), str(model)
        started = time.perf_counter()
    name = c_identifier(options.name or (Path(str(model)).stem if not isinstance(model, Graph) else graph.name))
    optimise_stage(graph, options, step)
    lowered, order, step_codes, arena = plan_stages(graph, name, options, step)
    statements = [code.statements + code.definitions for code in step_codes]
    weights = used_weights(lowered.ctx.weights, used_params(lowered.ctx.params, statements), statements)
    step("predicting instructions (cost model)")
    member_codes = {id(code.node): code for code in lowered.ctx.code}
    steps = [_step_profile(i, s, code, member_codes) for i, (s, code) in enumerate(zip(order.steps, step_codes,
                                                                                        strict=True))]
    model_costs = cost_model()
    moved = moved_bytes(arena.moves)
    predicted: dict[str, float] = {}
    code_bytes: dict[str, int] = {}
    for core in same_lowering(options.target):
        costs = model_costs.get(core)
        if costs is None:
            continue
        for step_info, (node, code) in zip(steps, zip(order.steps, step_codes, strict=True), strict=True):
            members = ([_sparse_step(get_target(core), n, member_codes[id(n)]) for n in node.nodes]
                       if hasattr(node, "ops") else None)
            step_info.predicted[core] = predict_step(costs, step_info, members)
            sparse = _sparse_step(get_target(core), node, code)
            if sparse is not None:  # sparse kernels: the target's own model (codegen/ops/sparse.py)
                step_info.predicted[core] = sparse
        predicted[core] = sum(s.predicted[core] for s in steps) + invoke_overhead(costs, len(steps), moved)
        code_bytes[core] = _code_bytes(costs, steps)
    result = Profile(source, name, options.target, options, arena.plan.arena_bytes, lowered.state_bytes,
                     sum(w.data.nbytes for w in weights), sum(macs(n) for n in graph.nodes), steps,
                     arena.plan.planner, predicted, code_bytes, board_spec, moved=moved)
    result.seconds = time.perf_counter() - started
    return result


def _silent(_text: str) -> None:
    return None


def _sparse_step(target: Target, step: Any, code: NodeCode) -> float | None:
    """A single operator on a sparse kernel, alone or a row group's member: the sparse model's prediction (None for
    a row group itself, whose members are predicted one by one, and for the other kernels)."""
    if hasattr(step, "ops") or not any(f in SPARSE_KERNELS for f, _ in code.calls):
        return None
    return sparse_instructions(target, step, packed=code.variant == PACKED_VARIANT, pairs=code.variant == PAIRS_VARIANT,
                               table=code.variant == TABLE_VARIANT)


def same_lowering(target: str) -> list[str]:
    """The cores whose lowering (kernel families, layouts, alignment) is the target's: the cost
    model predicts for all of them from one profile (cortex-m4 and cortex-m7 share theirs)."""
    spec = get_target(target)
    if spec.mcpu is None:
        return []
    return [name for name, t in TARGETS.items() if t.mcpu is not None and _lowering_facts(t) == _lowering_facts(spec)]


def _lowering_facts(t: Target) -> tuple:
    return (t.simd, t.gemm_layout, t.dw_lanes, t.conv_pair_int16, t.alignment)


def _elements(values: list) -> int:
    return sum(v.type.num_elements for v in values if v is not None and not v.is_constant)


def _pixels(values: list) -> int:
    total = 0
    for v in values:
        shape = v.type.shape
        total += v.type.num_elements // shape[-1] if len(shape) >= 2 and shape[-1] else v.type.num_elements
    return total


def node_features(node: Node) -> tuple[int, int, int, int]:
    """(MACs, output elements, input elements, output pixels) of one operator."""
    return macs(node), _elements(node.outputs), _elements(node.inputs), _pixels(node.outputs)


def window_taps(node: Node) -> int:
    """Output pixels * kh * kw of a 2-D convolution (its [O, kh, kw, I] filter) or pooling window, else 0."""
    if node.op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        w = node.input(1)
        shape = w.type.shape if w is not None else ()
        taps = int(shape[1]) * int(shape[2]) if len(shape) == 4 else 0
    elif node.op in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        taps = int(node.attrs.get("filter_height", 1)) * int(node.attrs.get("filter_width", 1))
    else:
        return 0
    return _pixels(node.outputs) * taps


def _feature_dict(node: Node) -> dict[str, float]:
    mac, out, inp, pix = node_features(node)
    return {"macs": mac, "output_elements": out, "input_elements": inp, "output_pixels": pix,
            "window_taps": window_taps(node), "one": 1.0}


def _step_profile(index: int, step: Any, code: NodeCode, member_codes: dict[int, NodeCode]) -> StepProfile:
    kernels = list(dict.fromkeys(function for function, _ in code.calls))
    if hasattr(step, "ops"):  # a row group: its members one by one, its own inputs and output
        nodes = list(step.nodes)
        members = [_member(member_codes[id(n)]) for n in nodes]
        return StepProfile(index, "ROW_GROUP", step.name, [n.index for n in nodes], kernels,
                           sum(int(m["features"]["macs"]) for m in members), _elements(step.outputs),
                           _elements(step.inputs), _pixels(step.outputs), sum(_weights(n) for n in nodes),
                           members=members)
    if code.inner:  # a run-time WHILE: one run of its condition and body, as members
        members = [_member(c) for c in code.inner if c.statements]
        return StepProfile(index, step.op, step.name, [step.index], kernels,
                           sum(int(m["features"]["macs"]) for m in members), _elements(step.outputs),
                           _elements(step.inputs), _pixels(step.outputs), _weights(step), members=members)
    mac, out, inp, pix = node_features(step)
    has_code = bool(code.statements)
    return StepProfile(index, step.op, step.name, [step.index], kernels, mac, out, inp, pix, _weights(step),
                       window_taps=window_taps(step), has_code=has_code, variant=code.variant)


def node_instructions(core: str, codes: list[NodeCode]) -> list[float] | None:
    """Predicted instructions of each of these operators run alone on `core` (the fitted model);
    None where the model has no such core (the host)."""
    costs = cost_model().get(core)
    if costs is None:
        return None
    return [predict_step(costs, _step_profile(i, code.node, code, {})) for i, code in enumerate(codes)]


def layer_instructions(core: str, codes: list[NodeCode]) -> float | None:
    """Predicted instructions of these operators run one by one on `core` (without the invoke overhead)."""
    each = node_instructions(core, codes)
    return None if each is None else sum(each)


def _member(code: NodeCode) -> dict[str, Any]:
    """One operator of a row group or of a run-time WHILE's iteration, as predict_step reads it."""
    return {"op": code.node.op, "kernel": kernel_key([f for f, _ in code.calls], code.variant),
            "features": _feature_dict(code.node)}


def _weights(node: Node) -> int:
    return sum(v.type.num_bytes for v in node.inputs if v is not None and v.is_constant)


@lru_cache(maxsize=1)
def cost_model() -> dict[str, dict[str, Any]]:
    """The fitted cost model shipped with the package: core -> {"kernels": {...}, "ops": {...}, ...}."""
    file = resources.files("nn2c").joinpath("data", COST_MODEL_FILE)
    if not file.is_file():  # bench/costmodel.py fits the first one with profiles made without it
        return {}
    return json.loads(file.read_text())["cores"]


def feature_values(features: dict[str, float]) -> dict[str, float]:
    """The cost model's features of a step, the derived ones (patch_elements) included."""
    out = features["output_elements"]
    patch = features["macs"] * features["output_pixels"] / out if out else 0.0
    return {"window_taps": 0.0, **features, "patch_elements": patch}  # (measurements saved before window_taps)


def _linear(coefficients: dict[str, float], features: dict[str, float]) -> float:
    values = feature_values(features)
    return sum(coefficients.get(k, 0.0) * values[k] for k in FEATURES)


def _predict_kernel(costs: dict[str, Any], key: str, op: str, features: dict[str, float]) -> float:
    """The most specific fit the model has: this operator with this kernel, the kernel (a variant's key,
    then the kernel's without the variant), the operator, the core's overall fit."""
    keys = [key, key.split("/")[0]] if "/" in key else [key]
    for table, name in [*((t, n) for k in keys for t, n in (("op_kernels", f"{op}:{k}"), ("kernels", k))),
                        ("ops", op)]:
        coefficients = costs.get(table, {}).get(name)
        if coefficients is not None:
            return _linear(coefficients, features)
    return _linear(costs["fallback"], features)


def kernel_key(kernels: list[str], variant: str = "") -> str:
    """The cost model's name for a step's kernel calls ("" for a step without code), with the variant of
    its kernel's path where it has one (NodeCode.variant): "nn2c_conv_s8_simd/generic-output"."""
    return "+".join(kernels) + (f"/{variant}" if variant else "")


def predict_step(costs: dict[str, Any], info: StepProfile, members_sparse: list[float | None] | None = None) -> float:
    """Predicted instructions of one step on one core (`costs`: cost_model()[core]); members_sparse: per member of a
    row group, the sparse model's prediction where it runs a sparse kernel (_sparse_step), which the cost model has
    no fit of (its CONV_2D fit, of the dense kernels, took kws_ref_model pruned 75% at speed's group for 573,030
    instructions where QEMU counted 306,383)."""
    overrides = members_sparse or [None] * len(info.members)
    members = sum(max(_predict_kernel(costs, m["kernel"], m["op"], m["features"]), 0.0) if sparse is None else sparse
                  for m, sparse in zip(info.members, overrides, strict=True))
    if info.op == "ROW_GROUP":
        group = costs["row_group"]
        return group["factor"] * members + group["per_operator"] * len(info.members) + group["constant"]
    if info.op == "WHILE":  # one iteration: the number of iterations is run-time data
        return members
    if not info.has_code:
        return 0.0  # an aliased reshape: no code
    return max(_predict_kernel(costs, kernel_key(info.kernels, info.variant), info.op, info.features()), 0.0)


def moved_bytes(moves: list[Move]) -> dict[str, int]:
    """Bytes the relocations move per inference: "words" where source and target are word-aligned
    (nn2c_move copies 16 bytes a step), "bytes" elsewhere (byte by byte)."""
    aligned = sum(m.size for m in moves if m.source % 4 == 0 and m.target % 4 == 0)
    return {"words": aligned, "bytes": sum(m.size for m in moves) - aligned}


def invoke_overhead(costs: dict[str, Any], steps: int, moved: dict[str, int]) -> float:
    """Instructions in invoke outside any step: a constant, each step's call, the relocations' moves."""
    over = costs["overhead"]
    return (over["constant"] + over["per_step"] * steps + over["per_moved_word_byte"] * moved["words"]
            + over["per_moved_byte"] * moved["bytes"])


def kernels_used(steps: list[StepProfile]) -> set[str]:
    """The kernel functions the steps call, row groups' members included."""
    used = {k for s in steps for k in s.kernels}
    return used | {k for s in steps for m in s.members for k in str(m["kernel"]).split("+") if k}


def code_bytes(costs: dict[str, Any], steps: int, kernels: set[str]) -> float:
    """Estimated model code: constant + per step (invoke's calls, parameter structs) + each kernel
    function's fitted size (a kernel the fit has not seen: the 25th percentile of the fitted sizes)."""
    code = costs["code_bytes"]
    sizes = code["kernels"]
    return code["constant"] + code["per_step"] * steps + sum(sizes.get(k, code["unseen_kernel"]) for k in kernels)


def _code_bytes(costs: dict[str, Any], steps: list[StepProfile]) -> int:
    return round(code_bytes(costs, len(steps), kernels_used(steps)))
