"""What a user can ask of a compile: CompileOptions (the CLI's flags, one field each)."""

from __future__ import annotations

from dataclasses import dataclass

SCHEDULES = ("auto", "layer", "min-ram")  # memory/fusion.py
# what a kernel with a choice of weight layouts favours (codegen/ops/fully_connected.py, lstm.py, svdf.py): "speed"
# the fastest (more flash), "size" the least flash (weights no larger than the model's), "balanced" the default
OPTIMIZE = ("speed", "balanced", "size")


@dataclass(frozen=True)
class CompileOptions:
    name: str | None = None  # C prefix and file stem; default: the model's file stem
    ram_budget: int | None = None  # bytes; exceeding it is an error
    flash_budget: int | None = None
    planner: str = "exact"  # "exact" (ILP, falls back to greedy) or "greedy" (TFLite Micro's algorithm)
    inplace: bool = True  # let outputs overlap inputs where the access pattern allows
    plan_time_limit: float = 10.0  # seconds for the exact planner
    opt_level: int = 2  # graph optimisation pipeline: 0 none, 1 safe clean-ups, 2 everything
    reorder: bool = True  # run operators in the topological order with the lowest memory peak
    # row groups (memory/fusion.py): "layer" none, "auto" the least RAM within a small extra cost,
    # "min-ram" the least RAM; with ram_budget: the cheapest grouping that fits
    schedule: str = "auto"
    nhwc_io: bool = False  # ONNX: channels-last model inputs/outputs (drops the edge transposes)
    target: str = "host"  # host (portable C99), cortex-m4, cortex-m7, cortex-m55 (SIMD kernels)
    debug: bool = False  # arena canaries and bounds checks in the generated code
    # post-training quantization of float models (nn2c.quant): None or "int8"
    quantize: str | None = None
    calibration: str | None = None  # .npz / .npy / folder of .npy with representative inputs
    calibration_method: str = "mse"  # range estimator: minmax, percentile or mse
    keep_float: tuple[str, ...] = ()  # operators (by type or output tensor name) left in float
    # "float" keeps float I/O; "int8" exposes the int8 tensors (of --quantize, or of a quantized model whose
    # inputs go straight into QUANTIZE and outputs come straight from DEQUANTIZE: passes/int8_io.py)
    io: str = "float"
    write_tflite: str | None = None  # with quantize: also write the int8 model as a .tflite file here
    write_onnx: str | None = None  # with prune on an ONNX model: the model with the pruned zeros, as .onnx here
    # compile-time weight pruning (nn2c/prune.py): "structured:FRACTION" or "magnitude:SPARSITY"; None: off
    prune: str | None = None
    prune_skip: tuple[int, ...] = ()  # operator indices (nn2c inspect) left dense by --prune
    # sparse int8 kernels for mostly-zero filters (codegen/ops/sparse.py): "auto" where the target's measured
    # cost model predicts them faster, "off", or "always" where a layer allows them
    sparse: str = "auto"
    optimize: str = "balanced"  # OPTIMIZE
    # Arm Ethos-U microNPU (nn2c.npu): "ethos-u55-128", "ethos-u55-256" or "ethos-u65-256"; None: CPU only.
    # Vela's system configuration and memory mode (sections of its Arm/vela.ini); None: Vela's defaults
    npu: str | None = None
    npu_system_config: str | None = None
    npu_memory_mode: str | None = None
