"""What an operator lowering sees: pointers to tensors, weight arrays, parameter structs, scratch.

A lowering (codegen/ops/*.py) turns one IR node into C statements. Tensor pointers are written as
placeholders (`@v12@`, `@s3@`) because arena offsets are known only after memory planning, which in
turn needs each lowering's scratch requests; the render stage binds them (codegen/render.py).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from nn2c.codegen.cnames import c_float, c_identifier, c_int
from nn2c.codegen.kernel_config import OPTIONAL_PATHS
from nn2c.errors import InvalidModelError, UnsupportedOpError
from nn2c.ir import Node, Value, c_type
from nn2c.target import TARGETS as TARGETS  # re-exported for importers of the old name
from nn2c.target import Target, get_target


@functools.cache
def kernel_includes(family: str) -> tuple[str, ...]:
    """The other kernel families whose headers kernels/nn2c_<family>.{h,c} include: their #include
    lines are the one place that says which files a family needs beside its own."""
    root = resources.files("nn2c") / "kernels"
    found: list[str] = []
    for ext in ("h", "c"):
        entry = root / f"nn2c_{family}.{ext}"
        if entry.is_file():
            found += re.findall(r'^#include "nn2c_(\w+)\.h"', entry.read_text(), re.MULTILINE)
    return tuple(f for f in dict.fromkeys(found) if f not in (family, "common"))


@dataclass
class WeightArray:
    ident: str
    ctype: str
    data: np.ndarray
    comment: str


@dataclass
class ParamsStruct:
    ident: str
    ctype: str
    fields: dict[str, Any]


@dataclass
class NodeCode:
    node: Node
    statements: list[str] = field(default_factory=list)
    scratch: list[int] = field(default_factory=list)  # bytes of each scratch buffer
    aliases: dict[int, Value] = field(default_factory=dict)  # id(output) -> input it shares memory with
    calls: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (function, args) of each call
    inner: list[NodeCode] = field(default_factory=list)  # a run-time WHILE: its condition's and body's code
    # file-scope C the statements call (a row chain's member calls), placeholders bound as the statements'
    definitions: list[str] = field(default_factory=list)
    # a path of its kernel that costs differently from the usual one, for the cost model's key (nn2c.profiler)
    variant: str = ""


class EmitContext:
    def __init__(self, prefix: str, target: str | Target = "host", debug: bool = False, sparse: str = "auto",
                 optimize: str = "balanced", extra_scratch: bool | frozenset[int] = True) -> None:
        self.prefix = prefix
        self.sparse = sparse  # --sparse: auto (by the target's cost model), off or always
        self.optimize = optimize  # --optimize: speed, balanced or size (options.OPTIMIZE)
        # layers may take more scratch for fewer instructions (codegen/ops/sparse.py: four rows summed in row pairs,
        # one-row layers over pair tables; codegen/ops/conv.py: depthwise over channel planes at balanced): allowed
        # for every node, none, or the nodes of this set of id(node); took_extra_scratch: the nodes that took it
        # (compile.plan_stages keeps them only where the arena does not grow, or at --optimize speed)
        self.extra_scratch = extra_scratch
        self.took_extra_scratch: set[int] = set()
        # of those, the 1x1 convolutions over pixel triples (codegen/ops/conv.py; compile.plan_stages drops them at
        # balanced where the pixel pairs' dual code stays in the build beside theirs)
        self.took_triples: set[int] = set()
        # lowerings pick kernel variants by the target's facts (nn2c.target): no SIMD on the host
        # (portable C99); Arm DSP (M4, M7) or Helium MVE (M55) kernels, bit-exact with the portable ones
        self.target: Target = get_target(target)
        self.debug = debug  # debug build: arena canaries and bounds checks in the generated code
        self.weights: list[WeightArray] = []
        self.params: list[ParamsStruct] = []
        self.kernels: set[str] = set()
        self.paths: set[str] = set()  # optional kernel paths some layer takes (codegen/kernel_config.py)
        self.path_nodes: dict[str, set[int]] = {}  # per path, the nodes (id) that took it
        # the convolution geometry (nn2c_conv_geom_t) some layer's parameters hold: None if none does, else
        # whether it needs 32-bit fields (a dimension above GEOMETRY_MAX or a negative field)
        self.wide_geometry: bool | None = None
        self.value_ids: dict[int, int] = {}
        self.values: list[Value] = []
        self.code: list[NodeCode] = []
        self._weight_by_hash: dict[tuple[str, str], str] = {}
        self._weight_of_value: dict[int, str] = {}
        self._current: NodeCode | None = None

    # --- called by the lower stage ----------------------------------------------------------
    def begin(self, node: Node) -> NodeCode:
        self._current = NodeCode(node)
        self.code.append(self._current)
        return self._current

    @contextmanager
    def nested(self) -> Iterator[list[NodeCode]]:
        """Lower a WHILE's condition or body into this context: their flash arrays, parameter structs
        and kernels join the model's; their code is yielded apart, not as steps of the model."""
        current, start = self._current, len(self.code)
        codes: list[NodeCode] = []
        try:
            yield codes
        finally:
            codes.extend(self.code[start:])
            del self.code[start:]
            self._current = current

    def value_id(self, value: Value) -> int:
        key = id(value)
        if key not in self.value_ids:
            self.value_ids[key] = len(self.values)
            self.values.append(value)
        return self.value_ids[key]

    # --- the lowering API ----------------------------------------------------------------
    @property
    def node(self) -> Node:
        assert self._current is not None
        return self._current.node

    def unsupported(self, why: str) -> UnsupportedOpError:
        """An error naming this node; raise it when the node uses a variant nn2c cannot compile."""
        return UnsupportedOpError(f"{self.node.where()}: {why}")

    def use_kernel(self, family: str) -> None:
        """Copy kernels/nn2c_<family>.{c,h} into the output and include its header, with the families
        its files include (nn2c_simd.h includes nn2c_conv.h for the geometry struct)."""
        if family in self.kernels:
            return
        self.kernels.add(family)
        for needed in kernel_includes(family):
            self.use_kernel(needed)

    def take_path(self, path: str) -> None:
        """This layer takes an optional path of its kernel (kernel_config.OPTIONAL_PATHS): keep it in the build."""
        assert path in OPTIONAL_PATHS, f"{path} is not an optional kernel path"
        self.paths.add(path)
        if self._current is not None:
            self.path_nodes.setdefault(path, set()).add(id(self._current.node))

    def release_path(self, path: str, node: Node) -> None:
        """`node` runs without the path it took after all (a row group runs a depthwise member over channel
        planes through its tap loop): the build leaves the path out when no other layer takes it."""
        takers = self.path_nodes.get(path, set())
        takers.discard(id(node))
        if not takers:
            self.paths.discard(path)

    def ptr(self, value: Value | None) -> str:
        """C expression of a pointer to the value's first element (NULL for an absent optional)."""
        if value is None:
            return "NULL"
        if value.is_constant:
            return self.weight(value)
        return f"@v{self.value_id(value)}@"

    def weight(self, value: Value, data: np.ndarray | None = None, ctype: str | None = None) -> str:
        """A constant as a flash array; `data` overrides the value's own (e.g. re-laid-out weights)."""
        if data is None and id(value) in self._weight_of_value:
            return self._weight_of_value[id(value)]
        array = value.data if data is None else data
        assert array is not None, f"{value.name} has no data"
        ident = self.const_array(array, ctype or c_type(value.type.dtype), value.name)
        if data is None:
            self._weight_of_value[id(value)] = ident
        return ident

    def const_array(self, data: np.ndarray, ctype: str, comment: str = "") -> str:
        """A flash array for computed constants (multipliers, tables); identical arrays are shared."""
        array = np.ascontiguousarray(data)
        digest = hashlib.sha256(array.tobytes() + str(array.dtype).encode()).hexdigest()
        key = (ctype, digest)
        if key not in self._weight_by_hash:
            ident = f"{self.prefix}_w{len(self.weights)}"
            self.weights.append(WeightArray(ident, ctype, array.reshape(-1), comment))
            self._weight_by_hash[key] = ident
        return self._weight_by_hash[key]

    def params_struct(self, ctype: str, fields: dict[str, Any]) -> str:
        """A `static const` struct of kernel parameters; returns an expression of its address."""
        self._check_field_ranges(fields)
        ident = f"op{len(self.code) - 1}_params"
        if any(p.ident == ident for p in self.params):
            ident = f"{ident}_{len(self.params)}"
        self.params.append(ParamsStruct(ident, ctype, fields))
        return f"&{ident}"

    def _check_field_ranges(self, fields: dict[str, Any]) -> None:
        """An integer field out of its C type's range is an attribute or shape no kernel can take (a
        2^40 window or kernel size): one error naming the node, not C that fails -Werror=overflow."""
        for name, value in fields.items():
            if name == "g":  # nn2c_conv_geom_t, written as its initializer
                dims = [int(v) for v in _GEOMETRY_VALUE.findall(str(value))]
                self.wide_geometry = bool(self.wide_geometry) or any(not 0 <= v <= GEOMETRY_MAX for v in dims)
                value = dims
            elif name == "m" and isinstance(value, str):  # a matrix product's (nn2c_gemm_s8_t) as its initializer
                dims = [int(v) for v in _GEMM_DIM_VALUE.findall(value)]
                if any(not 0 <= v <= GEOMETRY_MAX for v in dims):
                    self.wide_geometry = True
                elif dims and self.wide_geometry is None:
                    self.wide_geometry = False
            if name in WIDE_FIELDS:
                continue
            for v in _integers(value):
                if not -(2**31) <= v < 2**31:
                    raise InvalidModelError(f"{self.node.where()}: {name} = {v} is out of the range of the "
                                            "kernel's 32-bit parameter (an attribute or a size out of range)")

    def scratch(self, nbytes: int) -> str:
        """A scratch buffer live only while this node runs; returns a `void *` placeholder."""
        assert self._current is not None
        self._current.scratch.append(int(nbytes))
        return f"@s{len(self._current.scratch) - 1}@"

    def alias(self, output: Value, source: Value) -> None:
        """The output shares the source's memory (zero-copy reshape); no statement is needed."""
        assert self._current is not None
        self._current.aliases[id(output)] = source

    def call(self, function: str, *args: str) -> None:
        assert self._current is not None
        self._current.statements.append(f"{function}({', '.join(args)});")
        self._current.calls.append((function, tuple(args)))  # read by fused row streaming (codegen/stream.py)

    def statement(self, text: str) -> None:
        assert self._current is not None
        self._current.statements.append(text)

    def allows_extra_scratch(self) -> bool:
        """Whether the node being lowered may take more scratch for fewer instructions (extra_scratch)."""
        if isinstance(self.extra_scratch, bool):
            return self.extra_scratch
        return self._current is not None and id(self._current.node) in self.extra_scratch

    def take_extra_scratch(self) -> None:
        """The node being lowered takes more scratch than its plain kernel would (took_extra_scratch)."""
        assert self._current is not None
        self.took_extra_scratch.add(id(self._current.node))

    def take_triples(self) -> None:
        """The node being lowered runs over pixel triples with their extra scratch (took_triples)."""
        self.take_extra_scratch()
        assert self._current is not None
        self.took_triples.add(id(self._current.node))

    def variant(self, name: str) -> None:
        """The operator's kernel takes a path `name` that the cost model fits apart (NodeCode.variant)."""
        assert self._current is not None
        self._current.variant = name


# params-struct fields declared wider than int32_t in kernels/*.h: the int64_t rounding constants
# of the SIMD requantization and the uint32_t Q-format factors of the Signal spectral subtraction;
# every other integer field is int32_t or narrower (tests/test_onnx_sanitize.py checks the headers)
# nn2c_conv_geom_t's 16-bit fields (kernels/nn2c_conv.h), and nn2c_gemm_s8_t's dimensions, hold 0..GEOMETRY_MAX;
# a model with a dimension beyond is built with 32-bit ones (NN2C_WIDE_GEOMETRY)
GEOMETRY_MAX = 65_535
_GEOMETRY_VALUE = re.compile(r"\.\w+ = (-?\d+)")
_GEMM_DIM_VALUE = re.compile(r"\.(?:out_c|depth|depth_padded) = (-?\d+)")

WIDE_FIELDS = frozenset({"rounding", "smoothing", "one_minus_smoothing", "alternate_smoothing",
                         "alternate_one_minus_smoothing", "min_signal_remaining"})


def _integers(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | np.integer):
        return [int(value)]
    if isinstance(value, list | tuple):
        return [v for item in value for v in _integers(item)]
    return []


def format_field(value: Any) -> str:
    """A C initializer for a params-struct field value."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | np.integer):
        return c_int(int(value))
    if isinstance(value, float | np.floating):
        return c_float(float(value))
    if isinstance(value, str):
        return value  # an identifier or expression produced by the lowering itself
    if isinstance(value, list | tuple):
        return "{" + ", ".join(format_field(v) for v in value) + "}"
    raise TypeError(f"cannot format {value!r} as a C initializer")


def node_ident(node: Node) -> str:
    return c_identifier(node.op.lower())
