"""The C of `--npu`: each NPU subgraph's Vela output embedded, and the call of the Ethos-U core driver.

One generated program, two builds:
- simulation (the default): every NPU subgraph runs through nn2c's own kernels, in the partition's order
  and with the same arena, so the boundaries and the data flow are tested bit-exact against TFLite Micro;
- driver (`-DNN2C_ETHOSU`, CMake option `<NAME>_ETHOSU`): the first step of each subgraph calls
  `<name>_npu<k>_invoke` (NAME_npu.c) instead of the subgraph's kernels. That function copies the
  subgraph's inputs to the places in the NPU scratch where Vela's plan (its OfflineMemoryAllocation)
  expects them, calls `ethosu_invoke_v3` with the base-address table TFLite Micro's ethos-u kernel
  builds (weights, scratch, fast scratch, then every input and output), and copies the outputs back.

The NPU scratch is a scratch buffer of the subgraph's first step, so nn2c's planner places it in the same
arena as every CPU tensor, 16-byte aligned (Vela's alignment, memory/requests.py's default). It is live
while the driver runs; the subgraph's outputs are written at that step too, and are only read after the
subgraph: the planner keeps every tensor that is live across the subgraph out of the outputs' memory.
"""

from __future__ import annotations

import re
from dataclasses import replace

from nn2c.codegen.context import EmitContext, NodeCode
from nn2c.codegen.cwriter import CWriter
from nn2c.ir import Graph
from nn2c.ir.graph import Value
from nn2c.npu.partition import NpuPlan, NpuSubgraph
from nn2c.npu.vela import EthosUOp, vela_version

DRIVER_HEADER = "nn2c_ethosu_driver.h"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _io(graph: Graph, sg: NpuSubgraph) -> tuple[list[Value], list[Value]]:
    """The subgraph's inputs and outputs as Vela names them (its .tflite's, by tensor name)."""
    nodes = [graph.nodes[i] for i in sg.nodes]
    by_name = {v.name: v for n in nodes for v in (*n.inputs, *n.outputs) if v is not None}
    op = sg.vela.ethos_u_ops[0]
    return [by_name[x] for x in op.inputs], [by_name[x] for x in op.outputs]


def _driver_refusal(op: EthosUOp, plan: NpuPlan) -> str | None:
    """Why the driver build cannot run this subgraph (None: it can)."""
    if not op.fast_is_scratch:
        return (f"memory mode {plan.arch.memory_mode} gives the NPU a separate fast scratch, which nn2c does not "
                "place; use --npu-memory-mode Shared_Sram or Sram_Only")
    if None in op.input_offsets or None in op.output_offsets:
        return "Vela's output does not plan where the subgraph's inputs and outputs lie in the scratch"
    if len(op.outputs) > 1:
        return "a subgraph with several outputs (their copies out of the scratch could overlap)"
    return None


def driver_steps(plan: NpuPlan, graph: Graph, steps: list[NodeCode], ctx: EmitContext, name: str) -> list[NodeCode]:
    """Each step's code; the first step of a subgraph also asks for the NPU scratch and, in the driver
    build, calls the driver instead of the subgraph's kernels."""
    index = {id(n): i for i, n in enumerate(graph.nodes)}
    first = {sg.first: sg for sg in plan.subgraphs}
    last = {sg.last: sg for sg in plan.subgraphs}
    # the kernels' parameter structs the driver build does not use (static const: named to keep -Werror quiet)
    params = {p.ident for p in ctx.params}
    unused: dict[int, list[str]] = {}
    for code in steps:
        i = index[id(code.node)]
        for sg in plan.subgraphs:
            if sg.first <= i <= sg.last:
                named = {m for line in code.statements for m in _IDENT.findall(line)} & params
                unused.setdefault(sg.number, []).extend(sorted(named - set(unused.get(sg.number, []))))
    out = []
    for code in steps:
        i = index[id(code.node)]
        statements = list(code.statements)
        scratch = list(code.scratch)
        if i in first:
            sg = first[i]
            op = sg.vela.ethos_u_ops[0]
            inputs, outputs = _io(graph, sg)
            scratch.append(op.scratch_bytes)
            args = [f"@s{len(scratch) - 1}@"]
            args += [ctx.ptr(v) for v in inputs] + [ctx.ptr(v) for v in outputs]
            statements = [
                f"/* NPU subgraph {sg.number} (ops {sg.first}-{sg.last}, {plan.config.accelerator}): the driver "
                "build runs it on the NPU, the simulation build with nn2c's kernels */",
                "#if defined(NN2C_ETHOSU)",
                f"if ({name}_npu{sg.number}_invoke({', '.join(args)}) != 0) {{",
                f"    return {name.upper()}_ERROR_NPU;",
                "}",
                *[f"(void)&{ident};" for ident in unused.get(sg.number, [])],
                "#else",
                *statements,
            ]
        if i in last:
            statements += ["#endif", f"/* end of NPU subgraph {last[i].number} */"]
        out.append(replace(code, statements=statements, scratch=scratch))
    return out


def _bytes_rows(data: bytes, per_row: int = 16) -> list[str]:
    return [", ".join(f"0x{b:02x}" for b in data[k:k + per_row]) + "," for k in range(0, len(data), per_row)]


def npu_header(plan: NpuPlan, name: str) -> str:
    up = name.upper()
    w = CWriter()
    w.line(f"/* {name}_npu.h: the Ethos-U subgraphs of {name} (nn2c --npu {plan.config.accelerator}). */")
    w.line(f"#ifndef {up}_NPU_H")
    w.line(f"#define {up}_NPU_H")
    w.line("#include <stdint.h>")
    w.line()
    w.line(f"/* {name}_invoke() returns this when the Ethos-U driver reports an error (driver build) */")
    w.line(f"#define {up}_ERROR_NPU 2")
    w.line()
    for sg in plan.subgraphs:
        op = sg.vela.ethos_u_ops[0]
        params = ["void *scratch"] + [f"const void *in{k}" for k in range(len(op.inputs))]
        params += [f"void *out{k}" for k in range(len(op.outputs))]
        w.line(f"/* NPU subgraph {sg.number}: ops {sg.first}-{sg.last}; scratch: {op.scratch_bytes} bytes, "
               "16-byte aligned. 0 on success. */")
        w.line(f"int {name}_npu{sg.number}_invoke({', '.join(params)});")
    w.line()
    w.line(f"#endif /* {up}_NPU_H */")
    return w.text()


def npu_source(plan: NpuPlan, graph: Graph, name: str) -> str:
    w = CWriter()
    w.line(f"/* {name}_npu.c: the Ethos-U subgraphs of {name}, compiled by Vela {vela_version()} for "
           f"{plan.config.accelerator}")
    w.line(f" * ({plan.arch.system_config}, {plan.arch.memory_mode}). Generated by nn2c; do not edit.")
    w.line(" * Built only with -DNN2C_ETHOSU (the Ethos-U core driver linked); the simulation build runs")
    w.line(" * these subgraphs with nn2c's kernels in the model's .c file. */")
    w.line("#if defined(NN2C_ETHOSU)")
    w.line("#include <stddef.h>")
    w.line("#include <string.h>")
    w.line(f'#include "{DRIVER_HEADER}"')
    w.line(f'#include "{name}_npu.h"')
    w.line(f'#include "{name}_weights.h" /* NN2C_ALIGNED */')
    for sg in plan.subgraphs:
        op = sg.vela.ethos_u_ops[0]
        v = sg.vela
        refusal = _driver_refusal(op, plan)
        w.line()
        w.line(f"/* NPU subgraph {sg.number}: ops {sg.first}-{sg.last}. Vela's estimate: {v.total_cycles} cycles "
               f"(NPU {v.npu_cycles}), SRAM peak {v.sram_peak_bytes} B. */")
        if refusal is not None:
            w.line(f'#error "nn2c: the driver build cannot run NPU subgraph {sg.number}: {refusal}"')
            continue
        prefix = f"{name}_npu{sg.number}"
        w.line(f"static const uint8_t {prefix}_command_stream[{len(op.command_stream)}] NN2C_ALIGNED(16) = {{")
        w.lines(["    " + r for r in _bytes_rows(op.command_stream)])
        w.line("};")
        w.line("/* encoded weights and scales (base address 0) */")
        w.line(f"static const uint8_t {prefix}_flash[{max(len(op.flash), 1)}] NN2C_ALIGNED(16) = {{")
        w.lines(["    " + r for r in _bytes_rows(op.flash or b"\0")])
        w.line("};")
        n_in, n_out = len(op.inputs), len(op.outputs)
        params = ["void *scratch"] + [f"const void *in{k}" for k in range(n_in)] + [f"void *out{k}" for k in range(n_out)]
        count = 3 + n_in + n_out
        with w.block(f"int {prefix}_invoke({', '.join(params)})"):
            w.line("uint8_t *const s = (uint8_t *)scratch;")
            w.line(f"uint64_t base[{count}];")
            w.line(f"size_t size[{count}];")
            w.line("struct ethosu_driver *drv;")
            w.line("int rc;")
            for k in range(n_in):
                w.line(f"memcpy(s + {op.input_offsets[k]}, in{k}, {op.input_bytes[k]}); /* where Vela reads it */")
            w.line(f"base[0] = (uint64_t)(uintptr_t){prefix}_flash;")
            w.line(f"size[0] = {len(op.flash)};")
            w.line("base[1] = (uint64_t)(uintptr_t)s;")
            w.line(f"size[1] = {op.scratch_bytes};")
            w.line("base[2] = (uint64_t)(uintptr_t)s; /* the fast scratch is the scratch in this memory mode */")
            w.line(f"size[2] = {op.scratch_fast_bytes};")
            for k in range(n_in):
                w.line(f"base[{3 + k}] = (uint64_t)(uintptr_t)(s + {op.input_offsets[k]});")
                w.line(f"size[{3 + k}] = {op.input_bytes[k]};")
            for k in range(n_out):
                w.line(f"base[{3 + n_in + k}] = (uint64_t)(uintptr_t)(s + {op.output_offsets[k]});")
                w.line(f"size[{3 + n_in + k}] = {op.output_bytes[k]};")
            w.line("drv = ethosu_reserve_driver();")
            with w.block("if (drv == NULL)"):
                w.line("return -1;")
            w.line(f"rc = ethosu_invoke_v3(drv, {prefix}_command_stream, (int)sizeof({prefix}_command_stream), "
                   f"base, size, {count}, NULL);")
            w.line("ethosu_release_driver(drv);")
            with w.block("if (rc != 0)"):
                w.line("return rc;")
            for k in range(n_out):
                # the output's place in the arena may overlap the scratch: memmove
                w.line(f"memmove(out{k}, s + {op.output_offsets[k]}, {op.output_bytes[k]});")
            w.line("return 0;")
    w.line()
    w.line("#else")
    w.line(f"typedef int {name}_npu_simulation_build; /* ISO C wants one declaration per file */")
    w.line("#endif")
    return w.text()


def driver_header() -> str:
    return """/* nn2c_ethosu_driver.h: the part of the Arm Ethos-U core driver (ethos-u-core-driver,
 * ethosu_driver.h) that nn2c's generated code calls. Generated by nn2c; do not edit.
 * Link the real driver (CMake option <NAME>_ETHOSU, or -DNN2C_ETHOSU and the driver's library). */
#ifndef NN2C_ETHOSU_DRIVER_H
#define NN2C_ETHOSU_DRIVER_H
#include <stddef.h>
#include <stdint.h>

struct ethosu_driver;

struct ethosu_driver *ethosu_reserve_driver(void);
void ethosu_release_driver(struct ethosu_driver *drv);
/* Run a Vela command stream: base_addr[k] is the address of region k (0 weights, 1 scratch, 2 fast
 * scratch, then the operator's inputs and outputs), base_addr_size[k] its size in bytes. 0 on success. */
int ethosu_invoke_v3(struct ethosu_driver *drv, const void *custom_data_ptr, const int custom_data_size,
                     uint64_t *const base_addr, const size_t *base_addr_size, const int num_base_addr,
                     void *user_arg);

#endif /* NN2C_ETHOSU_DRIVER_H */
"""


def add_npu_files(files: dict[str, str], plan: NpuPlan, graph: Graph, name: str) -> None:
    """The NPU files of the folder, and the model's .c told where its driver calls are declared."""
    source = f"{name}.c"
    include = f'#include "{name}_weights.h"\n'
    assert files[source].count(include) == 1
    files[source] = files[source].replace(include, include + f'#include "{name}_npu.h"\n')
    files[f"{name}_npu.h"] = npu_header(plan, name)
    files[f"{name}_npu.c"] = npu_source(plan, graph, name)
    files[DRIVER_HEADER] = driver_header()


def add_build_option(files: dict[str, str], name: str) -> None:
    """The CMake option that builds the driver version and links Arm's driver target."""
    up = name.upper()
    files["CMakeLists.txt"] += f"""
# --npu: ON runs the NPU subgraphs on the Ethos-U through Arm's core driver (ethos-u-core-driver; its
# CMake target, ethosu_core_driver by default, must exist); OFF is the simulation build (nn2c's kernels).
option({up}_ETHOSU "Run the NPU subgraphs through the Ethos-U core driver" OFF)
set({up}_ETHOSU_DRIVER_TARGET "ethosu_core_driver" CACHE STRING "CMake target of the Ethos-U core driver")
if({up}_ETHOSU)
  target_compile_definitions({name} PUBLIC NN2C_ETHOSU)
  target_link_libraries({name} PUBLIC ${{{up}_ETHOSU_DRIVER_TARGET}})
endif()
"""
    files["nn2c.mk"] += f"""
# --npu: add -DNN2C_ETHOSU to CFLAGS and link the Ethos-U core driver to run the NPU subgraphs on the NPU
# (without it, the simulation build runs them with nn2c's kernels).
NN2C_{up}_NPU := 1
"""
