"""Memory planners and in-place rules.

Planner properties are checked with hypothesis on random buffer sets; the in-place distance of
window operators is checked against a brute-force simulation of the kernel's write order.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nn2c.ir import Node, TensorType, Value
from nn2c.memory.exact import offsets_from_order, plan_exact
from nn2c.memory.greedy import plan_greedy, plan_iterated
from nn2c.memory.inplace import InPlacePair, _padding, overlap_distance
from nn2c.memory.planner import plan_memory
from nn2c.memory.requests import BufferRequest, check_plan, live_bytes_lower_bound


@st.composite
def buffer_sets(draw):
    count = draw(st.integers(1, 14))
    steps = draw(st.integers(1, 10))
    requests = []
    for i in range(count):
        first = draw(st.integers(0, steps - 1))
        last = draw(st.integers(first, steps - 1))
        size = draw(st.integers(1, 4096))
        requests.append(BufferRequest(f"b{i}", size, first, last))
    return requests


@settings(max_examples=60, deadline=None)
@given(buffer_sets())
def test_greedy_never_overlaps_and_respects_the_lower_bound(requests):
    plan = plan_greedy(requests)
    check_plan(requests, plan)
    assert plan.arena_bytes >= live_bytes_lower_bound(requests)
    assert plan.arena_bytes <= sum(-(-r.size // 16) * 16 for r in requests) + 16


@settings(max_examples=25, deadline=None)
@given(buffer_sets())
def test_exact_never_overlaps_and_is_never_worse_than_greedy(requests):
    greedy = plan_greedy(requests)
    plan, pairs = plan_memory(requests, [], "exact", time_limit=5)
    check_plan(requests, plan)
    assert pairs == []
    assert live_bytes_lower_bound(requests) <= plan.arena_bytes <= greedy.arena_bytes


def test_exact_beats_greedy_where_greedy_fragments():
    # largest-first puts the 96 B buffer at 0 and the 64 B one above everything live at step 3
    requests = [
        BufferRequest("b0", 64, 3, 4), BufferRequest("b1", 16, 3, 3), BufferRequest("b2", 48, 2, 3),
        BufferRequest("b3", 48, 3, 3), BufferRequest("b4", 96, 0, 2),
    ]
    exact = plan_exact(requests, [], live_bytes_lower_bound(requests))
    assert exact is not None
    check_plan(requests, exact)
    assert exact.arena_bytes == live_bytes_lower_bound(requests) == 176
    assert plan_greedy(requests).arena_bytes == 192


def test_exact_honours_inplace_pairs():
    requests = [BufferRequest("x", 1000, 0, 1), BufferRequest("y", 1000, 1, 2), BufferRequest("z", 100, 2, 3)]
    pairs = [InPlacePair("x", "y", 32, 1)]
    plan, honoured = plan_memory(requests, pairs, "exact")
    assert honoured == pairs
    assert plan.offsets["x"] - plan.offsets["y"] == 32
    check_plan(requests, plan, pairs)
    assert plan.arena_bytes <= 1100 + 32  # y and z live together at step 2: 1,100 B, plus alignment


@settings(max_examples=60, deadline=None)
@given(buffer_sets(), st.integers(0, 256))
def test_iterated_first_fit_returns_only_plans_within_the_target(requests, slack):
    target = live_bytes_lower_bound(requests, aligned=True) + slack
    plan = plan_iterated(requests, [], target)
    if plan is not None:
        check_plan(requests, plan)
        assert plan.arena_bytes <= target


def test_iterated_first_fit_reaches_the_bound_where_first_fit_does_not():
    """tinyengine/detection layer by layer: first fit in the usual orders leaves a gap; moving the buffers
    above the live-bytes bound to the front reaches it, so the integer program never runs."""
    from nn2c.api import CompileOptions, compile_model
    from nn2c.memory.greedy import plan_greedy_inplace
    from tests.conftest import model_path

    code = compile_model(model_path("tinyengine/detection.tflite"), CompileOptions(schedule="layer")).code
    bound = live_bytes_lower_bound(code.buffers, code.inplace)
    assert code.plan.planner == "greedy in-place, iterated (optimal)"
    assert code.plan.arena_bytes <= -(-bound // 16) * 16 < plan_greedy(code.buffers).arena_bytes
    assert plan_greedy_inplace(code.buffers, code.inplace)[0].arena_bytes >= code.plan.arena_bytes


@pytest.mark.parametrize("model", ["tinyengine/vww.tflite", "mlcommons_tiny/kws_ref_model.tflite",
                                   "tflite_micro/person_detect.tflite"])
def test_short_search_stops_only_at_the_bound(model, monkeypatch):
    """plan_exact's first, short search (no presolve, few nodes) is kept only when it reaches the live-bytes
    bound: on real arenas (layer by layer, in-place pairs) it is the only solve (the solver's calls are
    counted), and its plan is as small as the full search's and honours every pair it uses."""
    from nn2c.api import CompileOptions, compile_model
    from nn2c.memory import exact
    from nn2c.memory.requests import align_up
    from tests.conftest import model_path

    code = compile_model(model_path(model), CompileOptions(schedule="layer", target="cortex-m4")).code
    requests, pairs = code.buffers, code.inplace  # (the pairs its plan honours)
    bound = live_bytes_lower_bound(requests, pairs)
    optimal_at = max(align_up(bound, 16), align_up(live_bytes_lower_bound(requests, pairs, aligned=True), 16))
    full = plan_exact(requests, pairs, bound)
    solves: list[dict] = []

    def counted(*args, **kwargs):
        solves.append(dict(kwargs["options"]))  # (scipy takes keys out of the dict it is given)
        return solve(*args, **kwargs)

    solve = exact.milp
    monkeypatch.setattr(exact, "milp", counted)
    short = plan_exact(requests, pairs, bound, optimal_at=optimal_at)
    assert [options["node_limit"] for options in solves] == [exact.QUICK_NODE_LIMIT]  # the short search alone
    assert full is not None and short is not None
    check_plan(requests, short, pairs)
    assert short.arena_bytes == full.arena_bytes
    assert short.planner == "exact" and short.proven  # a plan at the bound is proven optimal


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 512), min_size=2, max_size=12), st.data())
def test_offsets_from_an_order_honour_every_choice_exactly(sizes, data):
    """The exact planner's offsets come from the solver's below/above choices: for any acyclic set of
    choices (here: a random stacking order), the offsets are aligned, each gap is honoured, and the
    lowest buffer sits at 0; contradicting choices (a cycle) give None."""
    order = data.draw(st.permutations(range(len(sizes))))
    alignments = [data.draw(st.sampled_from([1, 4, 16])) for _ in sizes]
    below = [(order[a], order[b], sizes[order[a]]) for a in range(len(order)) for b in range(a + 1, len(order))]
    offsets = offsets_from_order(alignments, below)
    assert offsets is not None and offsets[order[0]] == 0
    for lower, upper, gap in below:
        assert offsets[upper] >= offsets[lower] + gap and offsets[upper] % alignments[upper] == 0
    assert offsets_from_order(alignments, [*below, (order[-1], order[0], 1)]) is None


# --- in-place distances -----------------------------------------------------------------

def _window_node(op, n, h, w, c_in, c_out, k, stride, padding, dilation=1):
    x = Value("x", TensorType("int8", (n, h, w, c_in)))
    eff = (k - 1) * dilation + 1
    if padding == "SAME":
        ho, wo = -(-h // stride), -(-w // stride)
    else:
        ho, wo = (h - eff) // stride + 1, (w - eff) // stride + 1
    y = Value("y", TensorType("int8", (n, ho, wo, c_out)))
    attrs = {"stride_h": stride, "stride_w": stride, "padding": padding}
    if op == "AVERAGE_POOL_2D":
        node = Node(op, [x], [y], {**attrs, "filter_height": k, "filter_width": k})
    else:
        wshape = (c_out, k, k, c_in) if op == "CONV_2D" else (1, k, k, c_out)
        weights = Value("w", TensorType("int8", wshape), data=np.zeros(wshape, np.int8))
        node = Node(op, [x, weights], [y], {**attrs, "dilation_hfactor": dilation, "dilation_wfactor": dilation})
    return node, x, y, (ho, wo)


def _simulate(node, x, y, out_hw, distance) -> bool:
    """Run the kernels' pixel order over tagged memory; True if no read sees an overwritten input.

    Within one output pixel a kernel may interleave writes and reads in any order (the int8
    kernels write channel c before reading the window for c + 1), so the worst case is simulated:
    the pixel's output is written first, then its window is read.
    """
    n, h, w, c_in = x.type.shape
    _, ho, wo, c_out = y.type.shape
    k = node.inputs[1].type.shape[1] if len(node.inputs) > 1 else node.attrs["filter_height"]
    stride, dil = node.attrs["stride_h"], node.attrs.get("dilation_hfactor", 1)
    pad_h = _padding(h, ho, stride, dil, k, node.attrs["padding"])
    pad_w = _padding(w, wo, stride, dil, k, node.attrs["padding"])
    base_in = distance
    memory = np.zeros(distance + max(x.type.num_bytes, y.type.num_bytes + 1) + 64, dtype=np.int8)
    memory[base_in : base_in + x.type.num_bytes] = 1  # 1 = input byte still intact
    for b in range(n):
        for oy in range(ho):
            for ox in range(wo):
                out_start = (((b * ho + oy) * wo) + ox) * c_out
                memory[out_start : out_start + c_out] = 0
                for ky in range(k):
                    for kx in range(k):
                        iy, ix = oy * stride - pad_h + ky * dil, ox * stride - pad_w + kx * dil
                        if 0 <= iy < h and 0 <= ix < w:
                            start = base_in + ((b * h + iy) * w + ix) * c_in
                            if not memory[start : start + c_in].all():
                                return False
    return True


@pytest.mark.parametrize("op", ["CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D"])
@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 9), w=st.integers(1, 9), c_in=st.integers(1, 6), expand=st.integers(1, 3),
       k=st.sampled_from([1, 3, 5]), stride=st.sampled_from([1, 2]), padding=st.sampled_from(["SAME", "VALID"]),
       batch=st.integers(1, 2))
def test_window_inplace_distance_is_safe_and_minimal(op, h, w, c_in, expand, k, stride, padding, batch):
    if padding == "VALID" and (h < k or w < k):
        return
    c_out = c_in if op != "CONV_2D" else c_in * expand
    node, x, y, out_hw = _window_node(op, batch, h, w, c_in, c_out, k, stride, padding)
    distance = overlap_distance(node, x, y)
    assert distance is not None
    assert _simulate(node, x, y, out_hw, distance), "derived distance lets the kernel clobber its input"
    if distance > 0:
        assert not _simulate(node, x, y, out_hw, distance - 1), "a smaller distance would also be safe"


def test_pointwise_expansion_needs_only_the_output_size():
    """1x1 conv from 8 to 16 channels: in place costs max(in, out) bytes, not in + out."""
    node, x, y, _ = _window_node("CONV_2D", 1, 48, 48, 8, 16, 1, 1, "VALID")
    distance = overlap_distance(node, x, y)
    assert distance + x.type.num_bytes <= y.type.num_bytes + 16


def test_elementwise_widening_and_narrowing():
    x8 = Value("x", TensorType("int8", (1, 100)))
    f32 = Value("y", TensorType("float32", (1, 100)))
    assert overlap_distance(Node("DEQUANTIZE", [x8], [f32]), x8, f32) == 300  # output ends where input ends
    assert overlap_distance(Node("QUANTIZE", [f32], [x8]), f32, x8) == 0


# --- operator ordering ---------------------------------------------------------------------

def _two_branch_graph():
    """x -> A (expands to 4 KB) -> B (shrinks); x -> C (4 KB) -> D; E(B, D). Stored as A C B D E."""
    from nn2c.ir import Graph

    def v(name, size):
        return Value(name, TensorType("int8", (size,)))

    g = Graph("branches")
    x, a, b, c, d, e = v("x", 16), v("a", 4096), v("b", 16), v("c", 4096), v("d", 16), v("e", 16)
    g.inputs, g.outputs = [x], [e]
    for op, ins, outs in (("A", [x], [a]), ("C", [x], [c]), ("B", [a], [b]), ("D", [c], [d]), ("E", [b, d], [e])):
        g.add_node(Node(op, ins, outs))
    return g


def test_memory_aware_order_finishes_one_branch_before_starting_the_other():
    from nn2c.memory.schedule import memory_aware_order, order_peak

    g = _two_branch_graph()
    assert order_peak(g, g.nodes) == 16 + 4096 + 4096  # x, a and c live at once while C runs
    order = memory_aware_order(g)
    assert [n.op for n in order] in (["A", "B", "C", "D", "E"], ["C", "D", "A", "B", "E"])
    assert order_peak(g, order) == 16 + 4096 + 16  # x, one expansion, one result
    # every node after its producers
    seen = set()
    for node in order:
        assert all(v.producer is None or id(v.producer) in seen for v in node.inputs)
        seen.add(id(node))


def test_greedy_fallback_is_a_valid_order():
    from nn2c.memory.schedule import memory_aware_order, order_peak

    g = _two_branch_graph()
    order = memory_aware_order(g, max_states=1)
    assert sorted(n.op for n in order) == ["A", "B", "C", "D", "E"]
    assert order_peak(g, order) <= order_peak(g, g.nodes)


@settings(max_examples=40, deadline=None)
@given(buffer_sets(), st.data())
def test_greedy_inplace_honours_random_chains(requests, data):
    """Random in-place pairs between buffers that meet at a step: honoured, and no other overlap."""
    from nn2c.memory.greedy import plan_greedy_inplace

    pairs, used_in, used_out = [], set(), set()
    for a in requests:
        for b in requests:
            if a is b or a.last != b.first or a.name in used_in or b.name in used_out:
                continue
            if data.draw(st.booleans()):
                distance = 16 * data.draw(st.integers(0, 8))
                pairs.append(InPlacePair(a.name, b.name, distance, a.last))
                used_in.add(a.name)
                used_out.add(b.name)
    # a chain must not loop back on itself
    names = {p.output: p.input for p in pairs}
    for start in names:
        seen, cur = set(), start
        while cur in names:
            if cur in seen:
                return
            seen.add(cur)
            cur = names[cur]
    plan, kept = plan_greedy_inplace(requests, pairs)
    check_plan(requests, plan, kept)
    assert plan.arena_bytes >= live_bytes_lower_bound(requests, kept)
