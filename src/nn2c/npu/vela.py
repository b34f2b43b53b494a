"""The bridge to Arm's Vela compiler (PyPI `ethos-u-vela`, its C++ core `ethosu.regor`).

Vela is used through its Python API exactly as its `vela` command does (ethosu/vela/vela.py, `main` ->
`process_regor`): an ArchitectureFeatures for the accelerator, system configuration and memory mode read
from Vela's own vela.ini, the compiler options string of `get_compiler_config`, then `regor.compile`
on the .tflite bytes. It returns the optimised .tflite (the NPU part as one `ethos-u` custom operator
whose constant inputs are the command stream and the weights) and a performance report: NPU cycles,
SRAM and off-chip flash peak usage and traffic. Vela prints diagnostics on stdout from Python and
from C++; they are captured here so nn2c's own output stays clean.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from nn2c.errors import NN2CError, UsageError

ACCELERATORS = ("ethos-u55-128", "ethos-u55-256", "ethos-u65-256")
VELA_TENSOR_ALIGNMENT = 16  # bytes; Vela's Tensor.AllocationQuantum, its --cpu-tensor-alignment default


def vela_modules() -> tuple[Any, Any, Any, Any]:
    """(regor, architecture_features, vela, scheduler); a one-line error when Vela is not installed."""
    try:
        regor = importlib.import_module("ethosu.regor")
        vela = importlib.import_module("ethosu.vela.vela")  # first: importing scheduler before it is circular
        architecture_features = importlib.import_module("ethosu.vela.architecture_features")
        scheduler = importlib.import_module("ethosu.vela.scheduler")
    except ImportError as exc:
        raise NN2CError(f"--npu needs Arm's Vela compiler, which is not installed ({exc}); "
                        "install it with: pip install 'nn2c[npu]'") from None
    return regor, architecture_features, vela, scheduler


def vela_version() -> str:
    vela_modules()
    from ethosu.vela._version import __version__

    return str(__version__)


@dataclass(frozen=True)
class NpuConfig:
    accelerator: str  # one of ACCELERATORS
    system_config: str | None = None  # a section of Vela's Arm/vela.ini; None: Vela's default for the accelerator
    memory_mode: str | None = None

    def check(self) -> None:
        if self.accelerator not in ACCELERATORS:
            raise UsageError(f"unknown NPU configuration --npu {self.accelerator!r}; choose one of "
                             f"{', '.join(ACCELERATORS)}")


@contextlib.contextmanager
def _captured_stdout() -> Iterator[io.StringIO]:
    """Vela's prints, Python's and its C++ core's (file descriptor 1), into a buffer."""
    text = io.StringIO()
    with tempfile.TemporaryFile(mode="w+b") as sink:
        try:
            import sys

            sys.stdout.flush()
            saved = os.dup(1)
        except (OSError, ValueError):  # no real stdout (embedded use): capture Python's prints only
            with contextlib.redirect_stdout(text):
                yield text
            return
        try:
            os.dup2(sink.fileno(), 1)
            with contextlib.redirect_stdout(text):
                yield text
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            text.write(sink.read().decode("utf-8", "replace"))


@dataclass(frozen=True)
class Architecture:
    accelerator: str
    system_config: str
    memory_mode: str
    regor_arch: str  # "EthosU55" / "EthosU65": the accelerator family as regor names it
    sysconfig_text: str  # the [architecture]/[vela] sections + vela.ini, as vela.py builds them
    options_text: str  # the compiler options, as vela.py's get_compiler_config builds them
    npu_clock_hz: float


def architecture(config: NpuConfig, optimise: str = "Performance") -> Architecture:
    """Vela's ArchitectureFeatures for `config`; unknown names are one-line usage errors. `optimise`:
    Vela's --optimise strategy (Performance, as `vela` defaults; Size for its least SRAM)."""
    config.check()
    _, af, vela, scheduler = vela_modules()
    from ethosu.vela.errors import VelaError

    ini = os.path.join(af.CONFIG_FILES_PATH, "Arm", "vela.ini")
    default = af.ArchitectureFeatures.DEFAULT_CONFIG
    try:
        with _captured_stdout():
            arch = af.ArchitectureFeatures(
                vela_config_files=[ini] if config.system_config or config.memory_mode else None,
                system_config=config.system_config or default,
                memory_mode=config.memory_mode or default, accelerator_config=config.accelerator,
                max_blockdep=af.ArchitectureFeatures.MAX_BLOCKDEP, verbose_config=False, arena_cache_size=None)
    except VelaError as exc:
        sections = _ini_sections(ini)
        raise UsageError(f"--npu {config.accelerator}: Vela refuses the configuration ({exc.error_msg}); "
                         f"system configurations in Vela's Arm/vela.ini: {', '.join(sections['System_Config'])}; "
                         f"memory modes: {', '.join(sections['Memory_Mode'])}") from None
    text = (f"[architecture]\nmacs={arch.num_macs_per_cycle}\ncores={arch.ncores}\n"
            f"[vela]\nsystem_config_name={arch.system_config}\nmemory_mode_name={arch.memory_mode}\n")
    for path in arch.vela_config_files:
        with open(path, "rb") as f:
            text += f.read().decode("utf-8")
    options = vela.get_compiler_config(
        True, False, False, False, getattr(scheduler.OptimizationStrategy, optimise), arch.arena_cache_size,
        False, False, False, False, False, False, False, "tflite", False, False, False, False, False,
        "COP1", False, VELA_TENSOR_ALIGNMENT, "HillClimb", 10.0, "")
    family = "".join(part.capitalize() for part in config.accelerator.split("-")[:-1])
    return Architecture(config.accelerator, arch.system_config, arch.memory_mode, family, text, options,
                        float(arch.core_clock))


def _ini_sections(path: str) -> dict[str, list[str]]:
    from configparser import ConfigParser

    parser = ConfigParser()
    parser.read(path)
    found: dict[str, list[str]] = {"System_Config": [], "Memory_Mode": []}
    for section in parser.sections():
        kind, _, name = section.partition(".")
        if kind in found:
            found[kind].append(name)
    return found


@dataclass(frozen=True)
class EthosUOp:
    """One `ethos-u` custom operator of Vela's output: what the driver is given."""

    command_stream: bytes  # the custom operator's input 0
    flash: bytes  # input 1: encoded weights and scales (base address 0)
    scratch_bytes: int  # input 2: NPU scratch (base address 1)
    scratch_fast_bytes: int  # input 3: fast scratch (base address 2)
    inputs: tuple[str, ...]  # names of the feature-map inputs, in the operator's order
    outputs: tuple[str, ...]
    input_bytes: tuple[int, ...]
    output_bytes: tuple[int, ...]
    # where Vela's arena plan (the OfflineMemoryAllocation metadata) puts each input and output, in bytes
    # from the start of the scratch tensor; None where it plans none
    input_offsets: tuple[int | None, ...]
    output_offsets: tuple[int | None, ...]
    fast_is_scratch: bool  # the fast scratch is the scratch tensor itself (Shared_Sram, Sram_Only)


@dataclass(frozen=True)
class VelaResult:
    model: bytes  # Vela's optimised .tflite
    npu_ops: int
    cpu_ops: int
    npu_cycles: int
    total_cycles: int
    sram_peak_bytes: int
    offchip_flash_peak_bytes: int
    sram_access_cycles: int
    offchip_access_cycles: int
    macs: int
    original_weight_bytes: int
    encoded_weight_bytes: int
    ethos_u_ops: tuple[EthosUOp, ...]

    @property
    def flash_bytes(self) -> int:
        return sum(len(op.command_stream) + len(op.flash) for op in self.ethos_u_ops)


def compile_tflite(model: bytes, arch: Architecture) -> VelaResult:
    """Vela's compilation of a .tflite: its output model, performance report and ethos-u operators."""
    regor, _, _, _ = vela_modules()
    try:
        with _captured_stdout() as log:
            compiled = regor.compile(arch.regor_arch, model, "TFLITE", arch.sysconfig_text,
                                     options=arch.options_text, verbose=False)
    except Exception as exc:  # regor raises plain RuntimeError for models it cannot take
        raise NN2CError(f"Vela could not compile an NPU subgraph: {str(exc).strip() or type(exc).__name__}; "
                        f"{log.getvalue().strip()[-200:]}") from None
    report = compiled.perf_report
    peaks: dict[str, tuple[int, int]] = {}
    for mem_name, memory in report.memories.items():
        peaks[str(mem_name).lower()] = (int(memory.peakUsage), int(memory.totalAccessCycles))
    return VelaResult(
        model=bytes(compiled.model), npu_ops=int(report.npuOps), cpu_ops=int(report.cpuOps),
        npu_cycles=int(report.npuCycles), total_cycles=int(report.totalCycles),
        sram_peak_bytes=peaks.get("sram", (0, 0))[0], offchip_flash_peak_bytes=peaks.get("offchipflash", (0, 0))[0],
        sram_access_cycles=peaks.get("sram", (0, 0))[1], offchip_access_cycles=peaks.get("offchipflash", (0, 0))[1],
        macs=int(report.macCount), original_weight_bytes=int(report.originalWeights),
        encoded_weight_bytes=int(report.encodedWeights), ethos_u_ops=ethos_u_ops(bytes(compiled.model)))


# TensorType values of the TFLite schema -> bytes per element (float32, int32, uint8, int64, int16, int8)
_TFLITE_TYPE_BYTES = {0: 4, 2: 4, 3: 1, 4: 8, 7: 2, 9: 1}


def ethos_u_ops(model: bytes) -> tuple[EthosUOp, ...]:
    """The `ethos-u` custom operators of a Vela output model, read with Vela's own schema classes."""
    from ethosu.vela.tflite.Model import Model

    m = Model.GetRootAsModel(model, 0)
    planned: list[int] = []
    for i in range(m.MetadataLength()):
        meta = m.Metadata(i)
        if meta.Name() == b"OfflineMemoryAllocation":
            # int32 words: version, subgraph count, tensor count, then one arena offset per tensor (-1: none)
            words = m.Buffers(meta.Buffer()).DataAsNumpy().tobytes()
            values = [int.from_bytes(words[k:k + 4], "little", signed=True) for k in range(0, len(words), 4)]
            planned = values[3:3 + values[2]]
    codes = [m.OperatorCodes(i) for i in range(m.OperatorCodesLength())]
    found: list[EthosUOp] = []
    for s in range(m.SubgraphsLength()):
        sg = m.Subgraphs(s)

        def data(tensor_index: int, sg: Any = sg) -> bytes:
            buf = m.Buffers(sg.Tensors(tensor_index).Buffer())
            return buf.DataAsNumpy().tobytes() if buf is not None and buf.DataLength() else b""

        def size(tensor_index: int, sg: Any = sg) -> int:
            """Bytes of the tensor."""
            t = sg.Tensors(tensor_index)
            n = _TFLITE_TYPE_BYTES.get(int(t.Type()), 1)
            for k in range(t.ShapeLength()):
                n *= int(t.Shape(k))
            return n

        def name(tensor_index: int, sg: Any = sg) -> str:
            return str(sg.Tensors(tensor_index).Name().decode("utf-8"))

        for o in range(sg.OperatorsLength()):
            op = sg.Operators(o)
            code = codes[op.OpcodeIndex()]
            custom = code.CustomCode()
            if custom is None or custom.decode("utf-8") != "ethos-u":
                continue
            ins = [int(op.Inputs(k)) for k in range(op.InputsLength())]
            outs = [int(op.Outputs(k)) for k in range(op.OutputsLength())]
            def offset(tensor_index: int, scratch: int = ins[2]) -> int | None:
                if tensor_index >= len(planned) or planned[tensor_index] < 0 or planned[scratch] < 0:
                    return None
                return planned[tensor_index] - planned[scratch]

            found.append(EthosUOp(data(ins[0]), data(ins[1]), size(ins[2]), size(ins[3]),
                                  tuple(name(i) for i in ins[4:]), tuple(name(i) for i in outs),
                                  tuple(size(i) for i in ins[4:]), tuple(size(i) for i in outs),
                                  tuple(offset(i) for i in ins[4:]), tuple(offset(i) for i in outs),
                                  ins[3] == ins[2]))
    return tuple(found)
