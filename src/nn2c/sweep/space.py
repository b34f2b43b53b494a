"""The search space of `nn2c sweep`: a SPACE.yaml read into a SearchSpace, sampled into candidates,
and each candidate built as an int8 .tflite with seeded random weights by nn2c's own writer.

A candidate is MCUNet-style: a 3x3 stride-2 stem convolution, then stages of inverted-residual
blocks (1x1 expand, depthwise kxk, 1x1 project, a residual ADD when the block keeps its shape), then
average pooling to 1x1, a reshape and a fully connected head. Per candidate: the input resolution and
the width multiplier; per stage: the depth; per block: the kernel size and the expand ratio. The same
(space, seed) gives the same candidates, their ids (a hash of their parameters) and their weights,
so a re-run knows which are done. Candidates may also be files (`models:` in the YAML).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nn2c.errors import UsageError
from nn2c.export.tflite_writer import OperatorSpec, TensorSpec, serialize

# MCUNet / MobileNetV2-like stages: base output channels and the stride of the first block
DEFAULT_STAGES = ({"channels": 24, "stride": 2}, {"channels": 40, "stride": 2}, {"channels": 80, "stride": 2},
                  {"channels": 96, "stride": 1}, {"channels": 192, "stride": 2})
KEYS = {"name", "candidates", "seed", "board", "target", "schedule", "resolution", "width", "kernel_sizes",
        "expand_ratios", "depth", "stages", "stem_channels", "classes", "models"}


@dataclass(frozen=True)
class SearchSpace:
    name: str = "sweep"
    candidates: int = 100
    seed: int = 0
    board: str | None = None
    target: str | None = None
    schedule: str = "auto"
    resolution: tuple[int, ...] = (96, 112, 128, 144, 160)
    width: tuple[float, ...] = (0.35, 0.5, 0.75, 1.0)
    kernel_sizes: tuple[int, ...] = (3, 5, 7)
    expand_ratios: tuple[int, ...] = (3, 4, 6)
    depth: tuple[int, ...] = (1, 2, 3)  # choices of the number of blocks, for every stage
    stages: tuple[tuple[int, int], ...] = tuple((s["channels"], s["stride"]) for s in DEFAULT_STAGES)
    stem_channels: int = 16
    classes: int = 10
    models: tuple[str, ...] = ()  # candidate files instead of generated networks


@dataclass(frozen=True)
class Candidate:
    id: str  # a hash of the parameters (generated) or of the path (file)
    index: int
    params: dict[str, Any] = field(hash=False)

    def row_params(self) -> dict[str, Any]:
        """The parameters as CSV cells (lists joined with '/', per stage with '|')."""
        p = self.params
        if "path" in p:
            return {"source": p["path"]}
        return {"source": "generated", "resolution": p["resolution"], "width": p["width"],
                "depths": "/".join(str(len(s)) for s in p["blocks"]),
                "kernel_sizes": "|".join("/".join(str(b[0]) for b in s) for s in p["blocks"]),
                "expand_ratios": "|".join("/".join(str(b[1]) for b in s) for s in p["blocks"]),
                "weight_seed": p["weight_seed"]}


def _bad(key: str, why: str) -> UsageError:
    return UsageError(f"search space: key '{key}': {why}")


def _int_list(raw: dict[str, Any], key: str, low: int, high: int) -> tuple[int, ...] | None:
    if key not in raw:
        return None
    value = raw[key]
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and low <= v <= high for v in values):
        raise _bad(key, f"expected an integer or a non-empty list of integers in {low}..{high}, got {value!r}")
    return tuple(values)


def parse_space(raw: Any, base: Path | None = None) -> SearchSpace:
    """A SearchSpace from the YAML's mapping; a wrong key or value is a UsageError naming the key."""
    if not isinstance(raw, dict):
        raise UsageError(f"search space: expected a mapping of keys (resolution, width, ...), got {type(raw).__name__}")
    unknown = sorted(set(map(str, raw)) - KEYS)
    if unknown:
        raise _bad(unknown[0], f"unknown key; the keys are {', '.join(sorted(KEYS))}")
    kwargs: dict[str, Any] = {}
    for key, low, high in (("resolution", 8, 1024), ("kernel_sizes", 1, 15), ("expand_ratios", 1, 16),
                           ("depth", 0, 16)):
        values = _int_list(raw, key, low, high)
        if values is not None:
            kwargs[key] = values
    if "kernel_sizes" in kwargs and any(k % 2 == 0 for k in kwargs["kernel_sizes"]):
        raise _bad("kernel_sizes", f"kernel sizes must be odd, got {list(kwargs['kernel_sizes'])}")
    for key, low, high in (("candidates", 1, 1_000_000), ("seed", 0, 2**32 - 1), ("stem_channels", 1, 4096),
                           ("classes", 1, 100_000)):
        if key in raw:
            value = raw[key]
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise _bad(key, f"expected an integer in {low}..{high}, got {value!r}")
            kwargs[key] = value
    if "width" in raw:
        value = raw["width"]
        widths = value if isinstance(value, list) else [value]
        if not widths or not all(isinstance(v, int | float) and not isinstance(v, bool) and 0 < v <= 4
                                 for v in widths):
            raise _bad("width", f"expected a number or a non-empty list of numbers in (0, 4], got {value!r}")
        kwargs["width"] = tuple(float(v) for v in widths)
    for key in ("name", "board", "target", "schedule"):
        if key in raw:
            if not isinstance(raw[key], str) or not raw[key]:
                raise _bad(key, f"expected a string, got {raw[key]!r}")
            kwargs[key] = raw[key]
    if "stages" in raw:
        stages = raw["stages"]
        if not isinstance(stages, list) or not stages or not all(
                isinstance(s, dict) and set(s) == {"channels", "stride"} and isinstance(s["channels"], int)
                and s["channels"] > 0 and s["stride"] in (1, 2) for s in stages):
            raise _bad("stages", "expected a non-empty list of {channels: N, stride: 1|2}")
        kwargs["stages"] = tuple((s["channels"], s["stride"]) for s in stages)
    if "models" in raw:
        models = raw["models"]
        if not isinstance(models, list) or not models or not all(isinstance(m, str) for m in models):
            raise _bad("models", f"expected a non-empty list of model paths, got {models!r}")
        # absolute, so that workers (other processes, other nodes on a shared file system) find them
        resolved = [((base / m) if base is not None else Path(m)).resolve() for m in models]
        missing = [str(p) for p in resolved if not p.is_file()]
        if missing:
            raise _bad("models", f"no such model file: {missing[0]}")
        kwargs["models"] = tuple(str(p) for p in resolved)
    return SearchSpace(**kwargs)


def load_space(path: str | Path) -> SearchSpace:
    """Read SPACE.yaml; a YAML syntax error or a bad key is a one-line UsageError (exit 7)."""
    try:
        import yaml
    except ImportError:
        raise UsageError("reading a search space needs PyYAML: pip install 'nn2c[sweep]'") from None

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such search space file")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise UsageError(f"{path}: not valid YAML{where}: {problem}") from None
    try:
        return parse_space(raw, base=path.parent)
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None


def _digest(payload: Any) -> str:
    return hashlib.sha1(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def candidates(space: SearchSpace) -> list[Candidate]:
    """The space's candidates: its files, or `space.candidates` networks sampled with `space.seed`."""
    if space.models:
        return [Candidate(_digest({"path": p}), i, {"path": p}) for i, p in enumerate(space.models)]
    rng = np.random.default_rng(space.seed)
    result = []
    for i in range(space.candidates):
        blocks = []
        for _stage in space.stages:
            depth = int(rng.choice(space.depth))
            blocks.append([[int(rng.choice(space.kernel_sizes)), int(rng.choice(space.expand_ratios))]
                           for _ in range(depth)])
        params = {"resolution": int(rng.choice(space.resolution)), "width": float(rng.choice(space.width)),
                  "blocks": blocks, "stages": [list(s) for s in space.stages], "stem": space.stem_channels,
                  "classes": space.classes, "weight_seed": int(rng.integers(1 << 31))}
        result.append(Candidate(_digest(params), i, params))
    return result


def _channels(base: int, width: float) -> int:
    return max(8, round(base * width / 8) * 8)


def _out_size(n: int, stride: int) -> int:
    return (n + stride - 1) // stride  # SAME padding


class _Net:
    """Collects int8 tensors and operators for nn2c's .tflite writer; each layer returns (tensor, shape, scale)."""

    def __init__(self, seed: int) -> None:
        self.tensors: list[TensorSpec] = []
        self.ops: list[OperatorSpec] = []
        self.rng = np.random.default_rng(seed)

    def tensor(self, dtype: str, shape: tuple[int, ...], scale: list[float] | None = None,
               zero_point: list[int] | None = None, axis: int = 0, data: np.ndarray | None = None) -> int:
        if data is not None:
            data = np.asarray(data).astype(np.dtype(dtype)).reshape(shape)
        self.tensors.append(TensorSpec(dtype, shape, f"t{len(self.tensors)}", scale, zero_point, axis, data, False))
        return len(self.tensors) - 1

    def activation(self, shape: tuple[int, ...], scale: float) -> int:
        return self.tensor("int8", shape, [scale], [int(self.rng.integers(-20, 20))])

    def conv(self, x: tuple[int, tuple, float], out_c: int, k: int, stride: int, depthwise: bool = False,
             activation: str = "RELU6") -> tuple[int, tuple, float]:
        tensor, (_, h, w, c), in_scale = x
        out_c = c if depthwise else out_c
        wshape = (1, k, k, c) if depthwise else (out_c, k, k, c)
        w_scales = self.rng.uniform(0.002, 0.02, out_c)
        weights = self.tensor("int8", wshape, [float(s) for s in w_scales], [0] * out_c, 3 if depthwise else 0,
                              self.rng.integers(-127, 128, wshape))
        bias = self.tensor("int32", (out_c,), [float(np.float32(in_scale) * np.float32(s)) for s in w_scales],
                           [0] * out_c, 0, self.rng.integers(-2000, 2000, out_c))
        # activations keep scales of the same order through any depth (the values do not matter to a profile)
        out_scale = float(self.rng.uniform(0.02, 0.08))
        shape = (1, _out_size(h, stride), _out_size(w, stride), out_c)
        y = self.activation(shape, out_scale)
        options: dict[str, Any] = {"padding": "SAME", "stride_h": stride, "stride_w": stride, "dilation_hfactor": 1,
                                   "dilation_wfactor": 1, "fused_activation_function": activation}
        if depthwise:
            options["depth_multiplier"] = 1
        self.ops.append(OperatorSpec("DEPTHWISE_CONV_2D" if depthwise else "CONV_2D", [tensor, weights, bias], [y],
                                     options, 2))
        return y, shape, out_scale

    def inverted_residual(self, x: tuple[int, tuple, float], expand: int, out_c: int, k: int,
                          stride: int) -> tuple[int, tuple, float]:
        c = x[1][3]
        h = self.conv(x, c * expand, 1, 1) if expand != 1 else x
        h = self.conv(h, 0, k, stride, depthwise=True)
        h = self.conv(h, out_c, 1, 1, activation="NONE")
        if h[1] == x[1]:
            scale = max(h[2], x[2]) * 1.25
            y = self.activation(h[1], scale)
            self.ops.append(OperatorSpec("ADD", [h[0], x[0]], [y], {"fused_activation_function": "NONE"}, 2))
            h = (y, h[1], scale)
        return h

    def head(self, x: tuple[int, tuple, float], classes: int) -> int:
        tensor, (_, h, w, c), scale = x
        pooled = self.tensor("int8", (1, 1, 1, c), [scale], self.tensors[tensor].zero_point)  # as TFLM requires
        self.ops.append(OperatorSpec("AVERAGE_POOL_2D", [tensor], [pooled],
                                     {"padding": "VALID", "stride_h": 1, "stride_w": 1, "filter_height": h,
                                      "filter_width": w, "fused_activation_function": "NONE"}, 1))
        shape = self.tensor("int32", (2,), data=np.array([1, c]))
        flat = self.tensor("int8", (1, c), [scale], self.tensors[pooled].zero_point)
        self.ops.append(OperatorSpec("RESHAPE", [pooled, shape], [flat], {"new_shape": [1, c]}, 1))
        w_scale = float(self.rng.uniform(0.002, 0.02))
        weights = self.tensor("int8", (classes, c), [w_scale], [0], 0, self.rng.integers(-127, 128, (classes, c)))
        bias = self.tensor("int32", (classes,), [float(np.float32(scale) * np.float32(w_scale))], [0], 0,
                           self.rng.integers(-2000, 2000, classes))
        logits = self.activation((1, classes), float(self.rng.uniform(0.05, 0.2)))
        self.ops.append(OperatorSpec("FULLY_CONNECTED", [flat, weights, bias], [logits],
                                     {"fused_activation_function": "NONE"}, 1))
        return logits


def build_candidate(params: dict[str, Any]) -> bytes:
    """The .tflite bytes of a generated candidate (int8, seeded random weights)."""
    net = _Net(params["weight_seed"])
    size = params["resolution"]
    x = net.tensor("int8", (1, size, size, 3), [0.05], [-3])
    width = params["width"]
    h = net.conv((x, (1, size, size, 3), 0.05), _channels(params["stem"], width), 3, 2)
    for (base, stride), blocks in zip(params["stages"], params["blocks"], strict=True):
        for b, (kernel, expand) in enumerate(blocks):
            h = net.inverted_residual(h, expand, _channels(base, width), kernel, stride if b == 0 else 1)
    logits = net.head(h, params["classes"])
    return serialize(net.tensors, net.ops, [x], [logits], "nn2c sweep candidate")
