"""Build small .tflite models in tests (single operators, short chains) with the `tflite` schema API.

    b = ModelBuilder()
    x = b.tensor("int8", (1, 8, 8, 3), scale=0.05, zero_point=-3)
    w = b.tensor("int8", (4, 3, 3, 3), scale=[0.01] * 4, zero_point=[0] * 4, axis=0, data=weights)
    y = b.tensor("int8", (1, 8, 8, 4), scale=0.1, zero_point=2)
    b.op("CONV_2D", [x, w, -1], [y], {"padding": "SAME", "stride_w": 1, "stride_h": 1})
    model_bytes = b.build(inputs=[x], outputs=[y])

Option names are the schema's in snake_case as the nn2c frontend reads them (e.g. dilation_hfactor),
enums by name ("SAME", "RELU6") or value. The serialisation is nn2c's own .tflite writer
(nn2c.export.tflite_writer); this module only collects tensors and operators.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nn2c.export.tflite_writer import OperatorSpec, TensorSpec, options_table_name, serialize
from nn2c.export.tflite_writer import snake as _snake

__all__ = ["ModelBuilder", "_snake", "options_table_name"]

_Tensor = TensorSpec
_Op = OperatorSpec


@dataclass
class ModelBuilder:
    tensors: list[TensorSpec] = field(default_factory=list)
    ops: list[OperatorSpec] = field(default_factory=list)
    description: str = "nn2c test model"

    def tensor(self, dtype: str, shape: tuple[int, ...] | list[int], scale: float | list[float] | None = None,
               zero_point: int | list[int] | None = None, axis: int = 0, data: np.ndarray | None = None,
               variable: bool = False, name: str | None = None) -> int:
        """Add a tensor; `data` makes it a constant. Returns its index."""
        scales = None if scale is None else [float(s) for s in np.atleast_1d(scale)]
        zps = None
        if scales is not None:
            zps = [int(z) for z in np.atleast_1d(0 if zero_point is None else zero_point)]
        if data is not None:
            data = np.asarray(data).astype(np.dtype(dtype)).reshape(tuple(shape))
        index = len(self.tensors)
        self.tensors.append(TensorSpec(dtype, tuple(int(d) for d in shape), name or f"t{index}", scales, zps,
                                       axis, data, variable))
        return index

    def op(self, op: str, inputs: list[int], outputs: list[int], options: dict[str, Any] | None = None,
           version: int = 1) -> None:
        self.ops.append(OperatorSpec(op, list(inputs), list(outputs), dict(options or {}), version))

    def build(self, inputs: list[int], outputs: list[int]) -> bytes:
        return serialize(self.tensors, self.ops, inputs, outputs, self.description)
