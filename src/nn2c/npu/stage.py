"""The hook of `--npu` into compile_model (compile.py): the partition stage after the lower stage,
whose kernel calls it costs on the CPU (the C of the NPU subgraphs is emit.py's).

The partition fixes the execution order (the NPU subgraphs are consecutive operators), so with --npu
the operators run in the graph's order and without row groups (a row group would straddle a CPU/NPU
boundary): `schedule_options` says so.
"""

from __future__ import annotations

from dataclasses import replace

from nn2c.codegen.context import NodeCode
from nn2c.ir import Graph
from nn2c.npu.partition import NpuPlan, partition
from nn2c.npu.vela import NpuConfig
from nn2c.options import CompileOptions


def npu_config(options: CompileOptions) -> NpuConfig:
    assert options.npu is not None
    config = NpuConfig(options.npu, options.npu_system_config, options.npu_memory_mode)
    config.check()
    return config


def partition_stage(graph: Graph, options: CompileOptions, codes: list[NodeCode]) -> NpuPlan:
    plan = partition(graph, npu_config(options), options.target, codes)
    graph.metadata["npu"] = plan
    return plan


def schedule_options(options: CompileOptions) -> CompileOptions:
    return replace(options, reorder=False, schedule="layer")
