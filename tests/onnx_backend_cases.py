"""The ONNX backend node test suite run through nn2c: which cases apply, and running one in isolation.

The onnx package ships its operator conformance suite: each case is a small model (one node, or
the node's function body for the `_expanded` variants) with inputs and the expected outputs, in
the wheel's `backend/test/data/node` folder when it has one, else generated in memory by
`onnx.backend.test.case.node.collect_testcases()` (what writes that folder; onnx 1.23's wheel has
no such folder). No copy of the cases is kept in this repo.

Shared by tests/test_onnx_backend.py (a fixed CI subset) and bench/onnx_backend.py (every
applicable case, written to docs/onnx-backend.md).

Each case runs in its own process (a fork of a forkserver that has nn2c, onnx and numpy imported,
so a case costs its compile and C build, not a Python start-up): a segfault, a runaway allocation
or an endless loop, in the compiler or in the generated program, ends that case as "crash",
"run-failure" or "timeout" and the run goes on.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import re
import resource
import signal
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nn2c.api import CompileOptions, compile_model
from nn2c.errors import BuildError, NN2CError
from nn2c.ir import Graph
from nn2c.result import CompileResult
from nn2c.verify.build import build, run
from nn2c.verify.compare import compare_arrays
from nn2c.verify.onnx_oracle import from_model_layout

# the suite's own tolerance for node tests (TestCase.rtol / atol); integers and bools exactly
RTOL, ATOL = 1e-3, 1e-7
CASE_TIMEOUT = 60.0  # seconds for one case: compile, C build and run
# address space of a case's process and what it starts: a runaway program (say, one that writes
# outputs forever into a captured stdout) must fail its case, not exhaust a shared machine
CASE_MEMORY_LIMIT = 2 << 30

# outcome statuses; the last four are nn2c bugs, the others say what is left to implement
PASS, REFUSED, MISMATCH = "pass", "refused", "mismatch"
BUILD_FAILURE, RUN_FAILURE, CRASH, TIMEOUT = "build-failure", "run-failure", "crash", "timeout"
BUG_STATUSES = (BUILD_FAILURE, RUN_FAILURE, CRASH, TIMEOUT)

RANDOM_OPS = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli",
              "Multinomial"}
SEQUENCE_OPTIONAL_OPS = {"Optional", "OptionalGetElement", "OptionalHasElement", "SequenceAt",
                         "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert",
                         "SequenceLength", "SequenceMap", "SplitToSequence", "ConcatFromSequence"}
DEFAULT_DOMAINS = ("", "ai.onnx")


@dataclass(frozen=True)
class BackendCase:
    name: str  # the suite's name, e.g. test_conv_with_strides_padding
    op_type: str  # the operator under test (for `_expanded` cases, the one whose body it is)
    model: Any  # onnx.ModelProto
    inputs: tuple[Any, ...]  # ndarrays, numpy scalars or TensorProtos, in graph input order
    expected: tuple[Any, ...]  # in graph output order


@dataclass
class Outcome:
    case: str
    op_type: str
    status: str  # PASS, REFUSED, MISMATCH or one of BUG_STATUSES
    reason: str = ""  # short and shared by similar failures (grouped in the report)
    detail: str = ""  # this case's specifics: the full message, the worst difference, where it crashed
    seconds: float = 0.0

    def summary(self) -> str:
        text = f"{self.case} [{self.op_type}]: {self.status}"
        return f"{text}: {self.detail or self.reason}" if self.status != PASS else text

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- the cases ------------------------------------------------------------------------------------
@functools.cache
def all_cases() -> tuple[BackendCase, ...]:
    """Every node case of the installed onnx package, sorted by name: from its data folder when the
    wheel ships one (exactly what onnx publishes), else from the generators that write that folder."""
    folder = installed_node_data()
    entries = cases_from_folder(folder) if folder else cases_from_generators()
    tested_op = {name: model.graph.node[0].op_type for name, model, _, _ in entries if "_expanded" not in name}
    cases = [BackendCase(name, tested_op.get(_base_name(name), model.graph.node[0].op_type), model, inputs,
                         expected) for name, model, inputs, expected in entries]
    return tuple(sorted(cases, key=lambda c: c.name))


Entry = tuple[str, Any, tuple[Any, ...], tuple[Any, ...]]  # name, ModelProto, inputs, expected outputs


def installed_node_data() -> Path | None:
    import onnx

    folder = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
    return folder if any(folder.glob("*/model.onnx")) else None


def cases_from_generators() -> list[Entry]:
    with warnings.catch_warnings():  # the generators warn about deprecated operators and opsets
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases

        raw = collect_testcases()
    entries = []
    for c in raw:
        assert c.data_sets, f"{c.name} has no data set"  # node cases always have one (model cases may not)
        entries.append((c.name, c.model, tuple(c.data_sets[0][0]), tuple(c.data_sets[0][1])))
    return entries


def cases_from_folder(folder: Path) -> list[Entry]:
    """`<case>/model.onnx` and `<case>/test_data_set_0/{input,output}_<i>.pb`, as onnx writes them."""
    import onnx

    entries = []
    for model_file in sorted(folder.glob("*/model.onnx")):
        data = model_file.parent / "test_data_set_0"
        entries.append((model_file.parent.name, onnx.load(model_file), _serialized(data, "input"),
                        _serialized(data, "output")))
    return entries


def _serialized(folder: Path, kind: str) -> tuple[bytes, ...]:
    """The raw protobufs, parsed only when the case runs (sequence and optional ones never are)."""
    files = sorted(folder.glob(f"{kind}_*.pb"), key=lambda f: int(f.stem.rsplit("_", 1)[1]))
    return tuple(f.read_bytes() for f in files)


def _base_name(name: str) -> str:
    """test_softmax_axis_0_expanded_ver18 -> test_softmax_axis_0 (the expanded body's own case)."""
    return re.sub(r"_expanded(_ver\d+)?$", "", name)


def exclusion_reason(case: BackendCase) -> str | None:
    """Why nn2c is not meant to run this case (None: it is applicable).

    nn2c compiles static graphs of float32 / integer tensors for microcontrollers: no strings,
    sequences, optionals, subgraphs, randomness, training or run-time shapes. Checked in
    this order; the first reason that applies is the one counted.
    """
    from onnx import AttributeProto, TensorProto

    model = case.model
    nodes = list(model.graph.node)
    io = [*model.graph.input, *model.graph.output]
    if any(n.domain not in DEFAULT_DOMAINS for n in nodes) or any(
            o.domain not in DEFAULT_DOMAINS for o in model.opset_import):
        return "operator outside the default ONNX domain (ai.onnx.ml, ai.onnx.preview[.training])"
    if any(n.op_type in RANDOM_OPS for n in nodes):
        return "random operator (RandomNormal/Uniform[Like], Bernoulli, Multinomial)"
    if any(_in_training_mode(n) for n in nodes):
        return "training mode (Dropout training_mode input, BatchNormalization training_mode=1)"
    if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for n in nodes for a in n.attribute):
        return "control flow with a subgraph (If, Loop, Scan)"
    if any(n.op_type in SEQUENCE_OPTIONAL_OPS for n in nodes) or any(
            not v.type.HasField("tensor_type") for v in io):
        return "sequence or optional values"
    elem_types = [v.type.tensor_type.elem_type for v in io]
    if TensorProto.STRING in elem_types:
        return "string tensors"
    if _feeds_runtime_shape(model.graph):
        return "int64 graph input feeding a shape, axes, size or count operand (run-time shapes)"
    other = sorted({TensorProto.DataType.Name(t).lower() for t in elem_types} - set(APPLICABLE_DTYPES))
    if other:
        return f"graph input/output of type {other[0]}"
    if not all(_static_shape(v) for v in io):
        return "graph input/output without a static shape"
    return None


APPLICABLE_DTYPES = ("float", "int8", "uint8", "int16", "int32", "int64", "bool")  # TensorProto names, lower case

_REDUCTIONS = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
               "ReduceProd", "ReduceSum", "ReduceSumSquare")
# operand positions that set a shape, the axes, a size or a count: an int64 graph input (how exporters type
# shapes and axes) reaching one of them makes the output shape depend on run-time values, which a statically
# planned program cannot have; any other int64 graph input (data, indices, labels, positions, lengths) is
# applicable. Run-time operands of other types were applicable before int64 was and stay so (nn2c runs
# Range, OneHot, Upsample and MelWeightMatrix with run-time operands against the declared output shape)
SHAPE_OPERANDS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Slice": (1, 2, 3, 4), "Pad": (1, 3), "Resize": (1, 2, 3),
    "Upsample": (1,), "Squeeze": (1,), "Unsqueeze": (1,), "Split": (1,), "TopK": (1,), "Trilu": (1,),
    "CenterCropPad": (1,), "ConstantOfShape": (0,), "Range": (0, 1, 2), "OneHot": (1,),
    "NonMaxSuppression": (2,), "DFT": (1, 2), "STFT": (1, 3), "Col2Im": (1, 2), "AffineGrid": (1,),
    "MaxUnpool": (2,), "BlackmanWindow": (0,), "HannWindow": (0,), "HammingWindow": (0,),
    "MelWeightMatrix": (0, 1, 2), **{op: (1,) for op in _REDUCTIONS},
}

STATIC_SHAPE_OPS = ("Shape", "Size")  # their outputs depend on the (static) shape only, not the values


def _feeds_runtime_shape(graph: Any) -> bool:
    """Whether a value computed from an int64 graph input (without an initializer) reaches a shape operand."""
    from onnx import TensorProto

    runtime = ({v.name for v in graph.input if v.type.tensor_type.elem_type == TensorProto.INT64}
               - {t.name for t in graph.initializer})
    for node in graph.node:  # nodes are in topological order
        inputs = list(node.input)
        if any(inputs[i] in runtime for i in SHAPE_OPERANDS.get(node.op_type, ()) if i < len(inputs)):
            return True
        if node.op_type not in STATIC_SHAPE_OPS and any(name in runtime for name in inputs):
            runtime.update(node.output)
    return False


def _in_training_mode(node: Any) -> bool:
    if node.op_type == "Dropout":
        return len(node.input) > 2 and node.input[2] != ""
    if node.op_type == "BatchNormalization":
        return any(a.name == "training_mode" and a.i for a in node.attribute)
    return False


def _static_shape(value_info: Any) -> bool:
    tensor = value_info.type.tensor_type
    return tensor.HasField("shape") and all(d.HasField("dim_value") for d in tensor.shape.dim)


@functools.cache
def applicable_cases() -> tuple[BackendCase, ...]:
    return tuple(c for c in all_cases() if exclusion_reason(c) is None)


def excluded_counts() -> dict[str, int]:
    """Excluded cases per reason, most frequent first."""
    counts: dict[str, int] = {}
    for case in all_cases():
        reason = exclusion_reason(case)
        if reason is not None:
            counts[reason] = counts.get(reason, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def ci_subset(cases: Iterable[BackendCase], claimed_ops: Iterable[str]) -> list[BackendCase]:
    """The first case (by name) of every operator type, and every case of the claimed operators."""
    claimed = set(claimed_ops)
    chosen: dict[str, BackendCase] = {}
    seen_ops: set[str] = set()
    for case in sorted(cases, key=lambda c: c.name):
        if case.op_type in claimed or case.op_type not in seen_ops:
            chosen[case.name] = case
        seen_ops.add(case.op_type)
    return list(chosen.values())


def select(cases: Iterable[BackendCase], substring: str | None) -> list[BackendCase]:
    """The cases whose name or operator type contains substring (all of them for None)."""
    if not substring:
        return list(cases)
    needle = substring.lower()
    return [c for c in cases if needle in c.name.lower() or needle in c.op_type.lower()]


# --- running one case in this process -------------------------------------------------------------
def compile_case(case: BackendCase, workdir: Path) -> CompileResult | Outcome:
    """The case compiled and written to workdir/model, or its refusal as an outcome."""
    path = workdir / "model.onnx"
    path.write_bytes(case.model.SerializeToString())
    try:
        result = compile_model(path, CompileOptions(name="model"))
        result.write(workdir / "model", force=True)
    except NN2CError as exc:
        message = _first_line(exc).replace(f"{path}: ", "")  # the temporary path says nothing
        return _outcome(case, REFUSED, refusal_reason(exc), f"{type(exc).__name__}: {message}")
    return result


def build_failure(case: BackendCase, exc: BuildError) -> Outcome:
    error = _compiler_error(exc)
    return _outcome(case, BUILD_FAILURE, "C compiler: " + re.sub(r"^.*?error: ", "", error), error)


def compile_and_build(case: BackendCase, workdir: Path,
                      builder: Callable[[Path, Path], Path]) -> tuple[Graph, Path] | Outcome:
    """The case compiled and built by `builder(source dir, exe path)` (plain or sanitized): the graph
    and the program, or the outcome that stopped it (a refusal, a C build failure)."""
    result = compile_case(case, workdir)
    if isinstance(result, Outcome):
        return result
    try:
        return result.graph, builder(workdir / "model", workdir / "runner")
    except BuildError as exc:
        return build_failure(case, exc)


def run_case(case: BackendCase, workdir: Path) -> Outcome:
    """Compile, build and run one case in workdir and judge the outputs; a non-nn2c exception escapes."""
    built = compile_and_build(case, workdir, build)
    if isinstance(built, Outcome):
        return built
    graph, exe = built
    try:
        records = [to_graph_layout(graph, [_array(a) for a in case.inputs])]
        ours = run(exe, records, graph.inputs, graph.outputs, timeout=CASE_TIMEOUT)[0]
    except BuildError as exc:
        return _outcome(case, RUN_FAILURE, _run_failure_reason(exc), _first_line(exc))
    except MemoryError:  # CASE_MEMORY_LIMIT reached while capturing the program's stdout
        return _outcome(case, RUN_FAILURE, "generated program wrote output without end",
                        f"its stdout passed the {CASE_MEMORY_LIMIT >> 30} GiB limit of the case")
    expected = from_model_layout(graph, [_array(a) for a in case.expected])
    return judge_outputs(case, ours, expected)


def to_graph_layout(graph: Graph, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """The case's inputs (in the model's layout) in the layout of our graph inputs (the inverse of
    onnx_oracle.to_model_layout; the identity with the default NCHW I/O)."""
    perms = graph.metadata.get("input_perms") or [None] * len(arrays)
    if len(arrays) != len(graph.inputs):
        raise AssertionError(f"nn2c's graph has {len(graph.inputs)} inputs, the case has {len(arrays)}")
    return [a if p is None else np.ascontiguousarray(np.transpose(a, p)) for a, p in
            zip(arrays, perms, strict=True)]


def judge_outputs(case: BackendCase, ours: Sequence[np.ndarray], expected: Sequence[np.ndarray]) -> Outcome:
    """Integers and bools exactly, floats within RTOL/ATOL with NaN where the reference has NaN."""
    if len(ours) != len(expected):
        return _outcome(case, MISMATCH, "number of outputs differs", f"{len(ours)} outputs, expected {len(expected)}")
    problems = []
    for k, (got, want) in enumerate(zip(ours, expected, strict=True)):
        if got.dtype != want.dtype:
            problems.append((f"output dtype {got.dtype}, expected {want.dtype}",
                             f"output {k}: dtype {got.dtype}, expected {want.dtype}"))
        elif got.shape != want.shape:
            problems.append(("output shape differs", f"output {k}: shape {got.shape}, expected {want.shape}"))
        else:
            abs_diff, rel_diff, bad = compare_arrays(got, want, RTOL, ATOL)
            if bad:
                problems.append(("outputs differ", f"output {k}: {bad}/{got.size} differ, max abs "
                                 f"{abs_diff:.3g}, max rel {rel_diff:.3g}"))
    if not problems:
        return _outcome(case, PASS)
    return _outcome(case, MISMATCH, problems[0][0], "; ".join(detail for _, detail in problems))


def _array(value: Any) -> np.ndarray:
    """A data set entry as an array: the generators give ndarrays, numpy scalars and TensorProtos,
    the data folder serialized TensorProtos."""
    from onnx import TensorProto, numpy_helper

    if isinstance(value, bytes):
        value = TensorProto.FromString(value)
    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


def _outcome(case: BackendCase, status: str, reason: str = "", detail: str = "") -> Outcome:
    return Outcome(case.name, case.op_type, status, reason, detail)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


# --- grouping messages into reasons ---------------------------------------------------------------
_NODE_PREFIX = re.compile(r"^.*?ONNX node #\d+ '[^']*' \((\w+)\): ")


def refusal_reason(exc: NN2CError) -> str:
    """The error message without what differs from case to case (file, node and operator indices,
    tensor names, shapes), so that the same missing feature groups into one reason."""
    text = _NODE_PREFIX.sub("", _first_line(exc))
    text = re.sub(r"^\S*model\.onnx: ", "", text)
    # the two "not implemented at all" messages, in the words the operator work is planned in
    text = re.sub(r"^operator (\w+) is not supported by nn2c's ONNX frontend$", r"no ONNX converter for \1", text)
    text = re.sub(r"^unsupported (operators?) ([\w, ]+) \(first at op #\d+ \w+\); nn2c cannot compile this model yet$",
                  r"no kernel for the imported \1 \2", text)
    text = re.sub(r"^op #\d+ ", "", text)  # the operator's index in the imported graph
    text = re.sub(r"'[^']*'", "'…'", text)  # tensor names
    text = re.sub(r"\(\s*-?\d+(\s*,\s*-?\d+)*\s*,?\s*\)|\[\s*-?\d+(\s*,\s*-?\d+)*\s*\]", "[…]", text)  # shapes
    return f"{type(exc).__name__}: {_shorten(text)}"


def _shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compiler_error(exc: BuildError) -> str:
    """The first `error:` line of the C compiler's output."""
    lines = str(exc).splitlines()
    errors = [line for line in lines if "error:" in line]
    return _shorten((errors or lines or ["(no message)"])[0].split("/model/")[-1], 300)


def _run_failure_reason(exc: BuildError) -> str:
    match = re.search(r"exited with status (-?\d+)", str(exc))
    if match and int(match.group(1)) < 0:
        return f"generated program killed by signal {signal.Signals(-int(match.group(1))).name}"
    if match:
        return f"generated program exited with status {match.group(1)}"
    return "generated program wrote the wrong number of bytes"


def crash_reason(exc: BaseException) -> tuple[str, str]:
    """(reason, detail): the exception, and where in nn2c it was raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/nn2c/" in f.filename] or frames
    where = "?"
    if ours:
        file = re.sub(r"^.*/(tests/)", r"\1", re.sub(r"^.*/src/", "", ours[-1].filename))  # repo-relative
        where = f"{file}:{ours[-1].lineno} in {ours[-1].name}"
    message = _first_line(exc)
    return _shorten(f"{type(exc).__name__}: {message}"), f"{type(exc).__name__}: {message} (at {where})"


# --- running one case in its own process ----------------------------------------------------------
@functools.cache
def _context() -> Any:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])  # nn2c, onnx and numpy imported once, in the server
    return context


Runner = Callable[[BackendCase, Path], Outcome]


def run_isolated(case: BackendCase, timeout: float = CASE_TIMEOUT, runner: Runner | None = None) -> Outcome:
    """runner (default run_case; a module-level function) in a child process: its crash or hang is
    this case's outcome, not the caller's."""
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child_main, args=(case, sender, runner or run_case),
                            name=f"onnx-backend {case.name}")
    started = time.monotonic()
    child.start()
    sender.close()  # so that the child's death reads as end-of-file here
    try:
        outcome = _receive(case, receiver, child, timeout)
    finally:
        receiver.close()
        _stop(child)
    outcome.seconds = round(time.monotonic() - started, 2)
    return outcome


def _receive(case: BackendCase, receiver: Any, child: Any, timeout: float) -> Outcome:
    if not receiver.poll(timeout):
        return _outcome(case, TIMEOUT, f"no result within {timeout:g} s", f"killed after {timeout:g} s")
    try:
        return receiver.recv()
    except EOFError:  # the child died without an answer: a signal or os._exit inside nn2c
        child.join(5)
        code = child.exitcode
        how = f"signal {signal.Signals(-code).name}" if code and code < 0 else f"exit status {code}"
        return _outcome(case, CRASH, f"compiler process died ({how})", f"the Python process died with {how}")


def _stop(child: Any) -> None:
    """Kill the child and whatever it started (the C compiler, the generated program)."""
    if child.is_alive():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # the child leads its own process group
        child.kill()  # in case it was stopped before it made that group
    child.join(10)


def _child_main(case: BackendCase, sender: Any, runner: Runner) -> None:
    os.setpgid(0, 0)  # its own process group, so that a timeout kills the grandchildren too
    # inherited by what it starts; the hard limit is left as it was so that a sanitized program
    # (tests/onnx_backend_sanitize.py) can lift it for ASan's shadow memory
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = CASE_MEMORY_LIMIT if hard == resource.RLIM_INFINITY else min(CASE_MEMORY_LIMIT, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nn2c_onnx_backend_") as tmp:
        try:
            outcome = runner(case, Path(tmp))
        except Exception as exc:  # not an NN2CError: a compiler bug
            reason, detail = crash_reason(exc)
            outcome = _outcome(case, CRASH, reason, detail)
    outcome.seconds = round(time.monotonic() - started, 2)
    sender.send(outcome)
    sender.close()
