"""Immutable facts about tensors: element type, static shape and quantization."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import prod

import numpy as np

# dtype name -> (numpy dtype, C type, bytes per element)
DTYPES: dict[str, tuple[type[np.generic], str, int]] = {
    "float32": (np.float32, "float", 4),
    "int8": (np.int8, "int8_t", 1),
    "uint8": (np.uint8, "uint8_t", 1),
    "int16": (np.int16, "int16_t", 2),
    "int32": (np.int32, "int32_t", 4),
    "int64": (np.int64, "int64_t", 8),
    "bool": (np.bool_, "uint8_t", 1),
}


def numpy_dtype(dtype: str) -> np.dtype:
    return np.dtype(DTYPES[dtype][0])


def c_type(dtype: str) -> str:
    return DTYPES[dtype][1]


def dtype_bytes(dtype: str) -> int:
    return DTYPES[dtype][2]


@dataclass(frozen=True)
class QuantParams:
    """Affine quantization real = scale * (q - zero_point), per tensor or per channel along axis."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int = 0

    @property
    def per_channel(self) -> bool:
        return len(self.scale) > 1

    def __deepcopy__(self, memo: dict) -> QuantParams:
        return self  # immutable: a copied graph shares it (deepcopy would walk every per-channel scale)

    def __str__(self) -> str:
        if not self.per_channel:
            return f"q(scale={self.scale[0]:.6g}, zp={self.zero_point[0]})"
        return f"q(per-channel axis={self.axis}, {len(self.scale)} scales)"


@dataclass(frozen=True)
class TensorType:
    dtype: str
    shape: tuple[int, ...]
    quant: QuantParams | None = None

    def __deepcopy__(self, memo: dict) -> TensorType:
        return self  # immutable, replaced whole when a tensor's facts change

    # (computed once: immutable, and the schedule and memory stages ask them of every tensor many times)
    @cached_property
    def num_elements(self) -> int:
        return prod(self.shape)

    @cached_property
    def num_bytes(self) -> int:
        return self.num_elements * dtype_bytes(self.dtype)

    def __str__(self) -> str:
        dims = "x".join(str(d) for d in self.shape) or "scalar"
        text = f"{self.dtype}[{dims}]"
        return f"{text} {self.quant}" if self.quant else text
