"""A lower bound on the instructions of one layer on a Cortex-M core: where each layer stands.

`nn2c bench` divides each layer's measured instructions by this bound (measured / bound >= 1; the
closer to 1, the less is left to gain). The model is deliberately simple, one line per term:

    bound = MACs / mac_lanes                 (the SIMD multiply-accumulate peak)
          + bytes read / load_bytes          (every input, weight and state byte is loaded once)
          + bytes written / store_bytes      (every output byte is stored once)
          + quantised outputs * requant      (requantisation of each int8/int16 output of a MAC layer)

per core family (Target.simd):

| family | cores | mac_lanes (int8/int16 operands, float/int32) | load/store bytes per instruction | requant per output |
|---|---|---|---|---|
| dsp | Cortex-M4, M7 | 2, 2, 1 (SMLAD: two 16x16 MACs; VFMA.F32: one) | 8 (LDRD / STRD) | 2 (a multiply-high and a saturate) |
| mve | Cortex-M55 | 16, 8, 4 (VMLADAVA.S8 / .S16, VFMA.F32 on a Q register) | 16 (VLDRB / VSTRB of a Q register) | 1 (four vector instructions per four int32 lanes) |
| none | portable C | 1, 1, 1 | 4 (LDR / STR) | 2 |

What it leaves out, all of which only add instructions: widening int8 to int16 for SMLAD (SXTB16),
loop control, loading a weight or an input more than once (register blocking limits reuse),
im2col, padding, per-channel multipliers, calls. A layer that runs no code (an aliased reshape)
has no bound. A row group (memory/fusion.py) is bounded by the sum of its members' bounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nn2c.ir.cost import macs
from nn2c.ir.types import dtype_bytes
from nn2c.target import get_target


@dataclass(frozen=True)
class CoreLimits:
    family: str
    mac_lanes: tuple[int, int, int]  # MACs per instruction for 1-, 2- and 4-byte operands
    load_bytes: int  # bytes one load instruction brings into registers
    store_bytes: int  # bytes one store instruction writes
    requant_per_output: float  # instructions per quantised output of a MAC layer

    def lanes(self, operand_bytes: int) -> int:
        return self.mac_lanes[0 if operand_bytes <= 1 else 1 if operand_bytes == 2 else 2]


LIMITS = {
    "dsp": CoreLimits("dsp", (2, 2, 1), 8, 8, 2.0),
    "mve": CoreLimits("mve", (16, 8, 4), 16, 16, 1.0),
    None: CoreLimits("none", (1, 1, 1), 4, 4, 2.0),
}


def limits(target: str) -> CoreLimits:
    """The bound's per-core constants for a --target name (its SIMD family)."""
    return LIMITS[get_target(target).simd]


@dataclass(frozen=True)
class LayerBound:
    instructions: float  # the lower bound, per inference
    mac_part: float
    load_part: float
    store_part: float
    requant_part: float

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


def node_bound(node: Any, core: CoreLimits) -> LayerBound:
    """The bound of one operator (a graph Node) on a core."""
    mac = macs(node)
    inputs = [v for v in node.inputs if v is not None]
    read = sum(v.type.num_bytes for v in inputs)
    written = sum(v.type.num_bytes for v in node.outputs)
    mac_part = requant = 0.0
    if mac:
        width = max((dtype_bytes(v.type.dtype) for v in inputs[:2]), default=1)
        mac_part = mac / core.lanes(width)
        quantised = sum(v.type.num_elements for v in node.outputs if v.type.dtype in ("int8", "int16", "uint8"))
        requant = quantised * core.requant_per_output
    load, store = read / core.load_bytes, written / core.store_bytes
    return LayerBound(mac_part + load + store + requant, mac_part, load, store, requant)


def step_bound(step: Any, target: str) -> LayerBound:
    """The bound of one step of invoke(): an operator, or a row group (the sum of its members)."""
    core = limits(target)
    nodes = list(step.nodes) if hasattr(step, "ops") else [step]
    parts = [node_bound(n, core) for n in nodes]
    return LayerBound(*(sum(getattr(p, f) for p in parts) for f in
                        ("instructions", "mac_part", "load_part", "store_part", "requant_part")))
