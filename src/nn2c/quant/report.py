"""What post-training quantization did: parameters per tensor and how much signal survived.

SQNR (signal-to-quantization-noise ratio) of a tensor is 10 log10(sum x^2 / sum (x - x_q)^2) over
all evaluated samples, x the float graph's value and x_q the int8 graph's value dequantized; it
measures the error accumulated up to that tensor, not only its own rounding. Each 6 dB is about one
bit; int8 tensors of a well-calibrated network are typically 20-40 dB.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


def sqnr_db(signal: float, noise: float) -> float:
    if noise <= 0.0:
        return math.inf
    if signal <= 0.0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def _db(value: float) -> str:
    if math.isinf(value):
        return "exact" if value > 0 else "-inf"
    return f"{value:.1f}"


def _json_db(value: float) -> float | str:
    return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")


@dataclass
class TensorReport:
    name: str  # the float model's tensor name
    op: str  # the operator producing it ("input" for a model input)
    scale: float
    zero_point: int
    range_min: float  # the real range the int8 codes cover
    range_max: float
    observed_min: float  # what the calibration set produced in float
    observed_max: float
    sqnr_db: float


@dataclass
class OutputReport:
    name: str
    sqnr_db: float
    argmax_agreement: float | None  # fraction of samples whose argmax (last axis) matches float


@dataclass
class QuantReport:
    method: str
    samples: int  # calibration samples
    evaluated: int  # samples the SQNR figures are measured on
    io: str
    tensors: list[TensorReport] = field(default_factory=list)
    outputs: list[OutputReport] = field(default_factory=list)
    int8_ops: int = 0
    float_ops: list[tuple[str, str, str]] = field(default_factory=list)  # (op, tensor name, reason)
    io_params: list[tuple[str, str, float, int]] = field(default_factory=list)  # (name, dtype, scale, zp)
    choice: str = ""  # method "mse": which ranges were kept and why

    @property
    def output_sqnr_db(self) -> float:
        """The worst output's SQNR (the figure to watch)."""
        return min((o.sqnr_db for o in self.outputs), default=math.inf)

    def format_text(self, max_tensors: int | None = 40) -> str:
        lines = [f"quantization: int8, {self.method} ranges from {self.samples} calibration samples, "
                 f"SQNR on {self.evaluated} of them; {self.int8_ops} int8 operator(s), "
                 f"{len(self.float_ops)} float"]
        if self.choice:
            lines.append(f"  ranges: {self.choice}")
        for o in self.outputs:
            agree = "" if o.argmax_agreement is None else f", argmax agrees with float on {o.argmax_agreement:.1%}"
            lines.append(f"  output {o.name!r}: SQNR {_db(o.sqnr_db)} dB{agree}")
        for name, _dtype, scale, zp in self.io_params:
            lines.append(f"  int8 I/O {name!r}: real = {scale:.6g} * (q - {zp})")
        for op, name, reason in self.float_ops:
            lines.append(f"  float: {op} {name!r}: {reason}")
        rows = self.tensors
        shown = rows if max_tensors is None else rows[:max_tensors]
        if shown:
            width = min(max(len(t.name) for t in shown), 48)
            lines.append(f"  {'tensor':{width}s} {'op':18s} {'scale':>10s} {'zp':>5s} {'int8 range':>21s} "
                         f"{'float range':>21s} {'SQNR dB':>8s}")
            for t in shown:
                name = t.name if len(t.name) <= width else "..." + t.name[-(width - 3):]
                lines.append(f"  {name:{width}s} {t.op:18s} {t.scale:10.4g} {t.zero_point:5d} "
                             f"{f'[{t.range_min:.3g}, {t.range_max:.3g}]':>21s} "
                             f"{f'[{t.observed_min:.3g}, {t.observed_max:.3g}]':>21s} {_db(t.sqnr_db):>8s}")
            if len(shown) < len(rows):
                lines.append(f"  ... {len(rows) - len(shown)} more tensor(s) (--json lists all)")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method, "samples": self.samples, "evaluated": self.evaluated, "io": self.io,
            "int8_ops": self.int8_ops, "choice": self.choice,
            "output_sqnr_db": _json_db(self.output_sqnr_db),
            "outputs": [{**asdict(o), "sqnr_db": _json_db(o.sqnr_db)} for o in self.outputs],
            "float_ops": [{"op": op, "tensor": name, "reason": reason} for op, name, reason in self.float_ops],
            "io_params": [{"name": n, "dtype": d, "scale": s, "zero_point": z} for n, d, s, z in self.io_params],
            "tensors": [{**asdict(t), "sqnr_db": _json_db(t.sqnr_db)} for t in self.tensors],
        }

    def __str__(self) -> str:
        return self.format_text()
