"""The report's NPU section (--npu): where each operator runs and why, Vela's figures per NPU subgraph,
and the end-to-end estimate against Vela's own placement. From NpuPlan.as_dict (npu/partition.py);
html.py renders it as HTML and Markdown."""

from __future__ import annotations

from typing import Any

SUBGRAPH_HEADERS = ["subgraph", "operators", "Vela cycles", "NPU cycles", "SRAM peak B", "flash B", "scratch B"]
SUBGRAPH_NUMERIC = {0, 2, 3, 4, 5, 6}
PLACEMENT_HEADERS = ["#", "operator", "runs on", "CPU cycles (nn2c)", "NPU cycles (Vela, alone)", "why"]
PLACEMENT_NUMERIC = {0, 3, 4}


def summary(npu: dict[str, Any]) -> str:
    on_npu = sum(p["unit"] == "npu" for p in npu["placements"])
    saved = npu["baseline_cycles"] - npu["estimate_cycles"]
    return (f"--npu {npu['accelerator']} ({npu['system_config']}, {npu['memory_mode']}): {on_npu} of "
            f"{len(npu['placements'])} operators on the NPU in {len(npu['subgraphs'])} subgraph(s), the rest on "
            f"the {npu['cpu_target']} CPU. Estimated {npu['estimate_cycles']:,} cycles end to end (NPU "
            f"{npu['npu_cycles']:,} + CPU {npu['cpu_cycles']:,} + {npu['switches']} switch(es) x "
            f"{npu['switch_cycles']:,}) against {npu['baseline_cycles']:,} for Vela's own placement (every "
            f"operator Vela supports on the NPU, the rest on the CPU): "
            + (f"{saved:,} cycles fewer." if saved > 0 else "the same." if saved == 0 else f"{-saved:,} cycles more.")
            + " Estimates, not measurements: Vela's performance model for the NPU, nn2c's fitted instruction "
            "model for the CPU (one instruction taken as one cycle), and an assumed cost per switch. The default "
            "build runs the NPU subgraphs with nn2c's kernels (simulation); -DNN2C_ETHOSU calls the Ethos-U "
            "driver.")


def subgraph_rows(npu: dict[str, Any]) -> list[list[Any]]:
    return [[k, f"{sg['ops'][0]}-{sg['ops'][-1]}", sg["vela_total_cycles"], sg["vela_npu_cycles"],
             sg["sram_peak_bytes"], sg["flash_bytes"], sg["scratch_bytes"]] for k, sg in enumerate(npu["subgraphs"])]


def placement_rows(npu: dict[str, Any]) -> list[list[Any]]:
    return [[p["op"], p["type"], p["unit"].upper(), p["cpu_cycles"], p["npu_cycles"], p["reason"]]
            for p in npu["placements"]]
