"""ONNX Attention (opsets 23..25) against onnxruntime and the onnx reference: one fused ATTENTION kernel.

One model of many independent Attention nodes per C build: 4-D and 3-D Q / K / V, grouped-query
heads, explicit scale, softcap, is_causal, float / bool masks of ranks 1..4 (shorter than the key
count: padded with -inf), the past / present key-value cache, every qk_matmul_output_mode, and the
opset-25 sliding window; RotaryEmbedding (opset 23: 3-D / 4-D, interleaved, partial rotary_dim,
constant position_ids). Plus: constant folding of ATTENTION by the reference evaluator, the refusal
of nonpad_kv_seqlen, and a sanitizer build on extreme inputs (NaN, +-inf, huge values).
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="SKIPPED LOUDLY: the onnx package is not installed (pip install nn2c[test])")
ort = pytest.importorskip("onnxruntime", reason="SKIPPED LOUDLY: onnxruntime is not installed (pip install nn2c[test])")

from onnx import TensorProto  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from nn2c.api import CompileOptions, compile_model  # noqa: E402
from nn2c.errors import InvalidModelError  # noqa: E402
from nn2c.verify.build import build, run  # noqa: E402
from tests.test_onnx_models import OnnxBuilder, assert_matches_ort  # noqa: E402

BOOL = TensorProto.BOOL
INT64 = TensorProto.INT64
SANITIZE = ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]


def _zoo_4d(b: OnnxBuilder) -> list[str]:
    """4-D Attention variants (onnxruntime runs every one)."""
    q, k, v = b.input([2, 3, 4, 8]), b.input([2, 3, 6, 8]), b.input([2, 3, 6, 5])
    q_gqa = b.input([2, 6, 4, 8])
    outs = [b.node("Attention", [q, k, v]),
            b.node("Attention", [q, k, v], scale=0.3),
            b.node("Attention", [q, k, v], is_causal=1),
            b.node("Attention", [q, k, v], softcap=1.5),
            b.node("Attention", [q_gqa, k, v]),
            b.node("Attention", [q_gqa, k, v], is_causal=1, softcap=2.0)]
    for shape in ([4, 6], [2, 1, 4, 6], [3, 4, 6], [2, 3, 4, 6]):
        outs.append(b.node("Attention", [q, k, v, b.input(shape)]))
    outs.append(b.node("Attention", [q, k, v, b.input([4, 6])], is_causal=1))
    outs.append(b.node("Attention", [q, k, v, b.input([4, 6], BOOL)]))
    outs.append(b.node("Attention", [q, k, v, b.input([2, 3, 4, 6], BOOL)], is_causal=1))
    # past / present cache, with the qk output in each mode
    past_k, past_v = b.input([2, 3, 5, 8]), b.input([2, 3, 5, 5])
    mask = b.input([4, 11])
    for mode in (0, 1, 2, 3):
        y, pk, pv, qk = b.node("Attention", [q, k, v, mask, past_k, past_v], outputs=4,
                               qk_matmul_output_mode=mode, softcap=2.0 if mode == 1 else 0.0)
        outs += [y, qk] + ([pk, pv] if mode == 0 else [])
    y, _, _ = b.node("Attention", [q, k, v, "", past_k, past_v], outputs=3, is_causal=1)
    outs.append(y)
    return outs


def test_attention_4d_matches_onnxruntime(tmp_path):
    b = OnnxBuilder(opset=23)
    path = b.save(tmp_path / "attention_4d.onnx", _zoo_4d(b))
    assert_matches_ort(path, tmp_path, count=2)


def _zoo_3d(b: OnnxBuilder) -> list[str]:
    q, k, v = b.input([2, 4, 24]), b.input([2, 6, 24]), b.input([2, 6, 30])
    q_gqa = b.input([2, 4, 72])
    past_k, past_v = b.input([2, 3, 2, 8]), b.input([2, 3, 2, 10])
    outs = [b.node("Attention", [q, k, v], q_num_heads=3, kv_num_heads=3),
            b.node("Attention", [q, k, v], q_num_heads=3, kv_num_heads=3, is_causal=1, scale=0.05),
            b.node("Attention", [q_gqa, k, v], q_num_heads=9, kv_num_heads=3, softcap=3.0),
            b.node("Attention", [q, k, v, b.input([4, 6])], q_num_heads=3, kv_num_heads=3)]
    y, pk, pv = b.node("Attention", [q, k, v, b.input([4, 8], BOOL), past_k, past_v], outputs=3,
                       q_num_heads=3, kv_num_heads=3)
    return [*outs, y, pk, pv]


def test_attention_3d_matches_onnxruntime(tmp_path):
    b = OnnxBuilder(opset=23)
    path = b.save(tmp_path / "attention_3d.onnx", _zoo_3d(b))
    assert_matches_ort(path, tmp_path, count=2)


def _window_model() -> onnx.ModelProto:
    """Opset-25 sliding windows and the masks onnxruntime refuses, checked with onnx.reference."""
    b = OnnxBuilder(opset=25)
    q, k, v = b.input([1, 2, 5, 4], name="q"), b.input([1, 2, 7, 4], name="k"), b.input([1, 2, 7, 3], name="v")
    outs = [b.node("Attention", [q, k, v], left_window_size=1, right_window_size=2),
            b.node("Attention", [q, k, v], is_causal=1, left_window_size=2),
            b.node("Attention", [q, k, v, b.input([5, 7], BOOL, name="m")], is_causal=1, left_window_size=0),
            # masks onnxruntime does not broadcast: a row broadcast, rank 1, fewer keys than K (-inf padded)
            b.node("Attention", [q, k, v, b.input([1, 7], name="m1")]),
            b.node("Attention", [q, k, v, b.input([7], BOOL, name="m2")], is_causal=1, left_window_size=3),
            b.node("Attention", [q, k, v, b.input([1, 1, 5, 4], name="m3")]),
            b.node("Attention", [q, k, v, b.input([5, 3], BOOL, name="m4")])]
    return b.model(outs)


def test_attention_window_and_mask_broadcast_match_onnx_reference(tmp_path):
    model = _window_model()
    path = tmp_path / "window.onnx"
    onnx.save(model, path)
    rng = np.random.default_rng(3)
    feeds = {i.name: (rng.random([d.dim_value for d in i.type.tensor_type.shape.dim]) > 0.3 if
                      i.type.tensor_type.elem_type == BOOL else
                      rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32))
             for i in model.graph.input}
    expected = ReferenceEvaluator(model).run(None, feeds)
    result = compile_model(path, CompileOptions(name="model"))
    result.write(tmp_path / "model", force=True)
    exe = build(tmp_path / "model", tmp_path / "runner")
    graph = result.graph
    ours = run(exe, [[feeds[v.name] for v in graph.inputs]], graph.inputs, graph.outputs)[0]
    for got, want in zip(ours, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_rotary_embedding_matches_onnxruntime(tmp_path):
    b = OnnxBuilder(opset=23)
    x4, x3 = b.input([2, 4, 3, 8]), b.input([2, 3, 32])
    cos, sin = b.input([2, 3, 4]), b.input([2, 3, 4])
    cos2, sin2 = b.input([2, 3, 2]), b.input([2, 3, 2])
    table = np.linspace(0.0, 3.0, 50 * 4, dtype=np.float32).reshape(50, 4)
    ids = b.const(np.array([[0, 7, 3], [49, 1, 2]], dtype=np.int64))
    outs = [b.node("RotaryEmbedding", [x4, cos, sin]),
            b.node("RotaryEmbedding", [x4, cos, sin], interleaved=1),
            b.node("RotaryEmbedding", [x4, cos2, sin2], rotary_embedding_dim=4),
            b.node("RotaryEmbedding", [x4, cos2, sin2], rotary_embedding_dim=4, interleaved=1),
            b.node("RotaryEmbedding", [x3, cos, sin], num_heads=4),
            b.node("RotaryEmbedding", [x4, b.const(np.cos(table)), b.const(np.sin(table)), ids])]
    path = b.save(tmp_path / "rotary.onnx", outs)
    assert_matches_ort(path, tmp_path, count=2)


def test_constant_attention_is_folded(tmp_path):
    b = OnnxBuilder(opset=23)
    q, k, v = (b.weights(shape) for shape in ([1, 2, 3, 4], [1, 2, 5, 4], [1, 2, 5, 4]))
    x = b.input([1, 2, 3, 4])
    out = b.node("Add", [x, b.node("Attention", [q, k, v], is_causal=1)])
    path = b.save(tmp_path / "folded.onnx", [out])
    result = compile_model(path, CompileOptions())
    assert "ATTENTION" not in [n.op for n in result.graph.nodes]
    assert_matches_ort(path, tmp_path, count=1)


def test_nonpad_kv_seqlen_matches_onnx_reference(tmp_path):
    """An external KV cache: per-batch counts of valid keys given at run time (the counts past K's
    length and 0 included), with causal and window masks aligned to each batch's last valid key."""
    b = OnnxBuilder(opset=24)
    q, k, v = b.input([2, 2, 3, 4], name="q"), b.input([2, 2, 7, 4], name="k"), b.input([2, 2, 7, 3], name="v")
    lengths = b.input([2], INT64, name="n")
    outs = [b.node("Attention", [q, k, v, "", "", "", lengths]),
            b.node("Attention", [q, k, v, "", "", "", lengths], is_causal=1),
            b.node("Attention", [q, k, v, b.input([3, 7], name="m"), "", "", lengths], is_causal=1)]
    model = b.model(outs)
    path = tmp_path / "nonpad.onnx"
    onnx.save(model, path)
    result = compile_model(path, CompileOptions(name="model"))
    result.write(tmp_path / "model", force=True)
    exe = build(tmp_path / "model", tmp_path / "runner")
    rng = np.random.default_rng(4)
    for counts in ([6, 3], [9, 0]):
        feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
                 for i in model.graph.input if i.name != "n"}
        feeds["n"] = np.array(counts, np.int64)
        expected = ReferenceEvaluator(model).run(None, feeds)
        ours = run(exe, [[feeds[v.name] for v in result.graph.inputs]], result.graph.inputs, result.graph.outputs)[0]
        for got, want in zip(ours, expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_nonpad_kv_seqlen_with_a_past_cache_is_refused_in_one_line(tmp_path):
    b = OnnxBuilder(opset=24)
    q, k, v = b.input([1, 2, 3, 4]), b.input([1, 2, 5, 4]), b.input([1, 2, 5, 4])
    past_k, past_v = b.input([1, 2, 2, 4]), b.input([1, 2, 2, 4])
    lengths = b.input([1], INT64)
    path = b.save(tmp_path / "nonpad.onnx", [b.node("Attention", [q, k, v, "", past_k, past_v, lengths])])
    with pytest.raises(InvalidModelError, match="nonpad_kv_seqlen cannot be combined") as info:
        compile_model(path, CompileOptions())
    assert "\n" not in str(info.value)


def _extreme_records(inputs: list) -> list[list[np.ndarray]]:
    """Every float input at one extreme value per record (bool masks alternate all False / all True)."""
    records = []
    for n, fill in enumerate((-3.0, 3.0, 3e38, -3e38, np.inf, -np.inf, np.nan)):
        records.append([np.full(v.type.shape, n % 2 == 1) if v.type.dtype == "bool" else
                        np.full(v.type.shape, fill, dtype=np.float32) for v in inputs])
    return records


def test_attention_kernel_is_sanitizer_clean_on_extreme_inputs(tmp_path):
    b = OnnxBuilder(opset=23)
    q, k, v = b.input([1, 2, 3, 4]), b.input([1, 2, 5, 4]), b.input([1, 2, 5, 3])
    outs = [b.node("Attention", [q, k, v, b.input([3, 5])], is_causal=1, softcap=2.0),
            b.node("Attention", [q, k, v, b.input([3, 4], BOOL)])]
    y, _, _, qk = b.node("Attention", [q, k, v, "", b.input([1, 2, 2, 4]), b.input([1, 2, 2, 3])], outputs=4,
                         qk_matmul_output_mode=3)
    cos = b.input([1, 3, 2])
    outs.append(b.node("RotaryEmbedding", [q, cos, cos], interleaved=1))
    path = b.save(tmp_path / "extreme.onnx", [*outs, y, qk])
    result = compile_model(path, CompileOptions(name="model"))
    result.write(tmp_path / "model", force=True)
    exe = build(tmp_path / "model", tmp_path / "runner", extra_flags=SANITIZE)
    graph = result.graph
    records = _extreme_records(graph.inputs)
    outputs = run(exe, records, graph.inputs, graph.outputs)
    assert len(outputs) == len(records)
