"""Named pipelines of passes, run to a fixed point, with per-pass statistics.

-O0 runs nothing; -O1 the safe clean-ups (dead code, constant folding, algebraic simplification);
-O2 everything: also the layout pass (transpose sinking), batch-norm folding, activation and
reshape fusion, QDQ rewriting into integer operators, PAD folded into convolutions, int8 channels
that are constant (all-zero filters) or unread removed, their constants folded into the next biases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nn2c.ir import Graph, verify
from nn2c.passes.base import Pass, PassResult
from nn2c.passes.constant_folding import constant_folding
from nn2c.passes.dead_code import eliminate_dead_code
from nn2c.passes.fold_affine import fold_affine
from nn2c.passes.fuse_activation import fuse_activations
from nn2c.passes.fuse_pad import fuse_pad_into_conv
from nn2c.passes.fuse_reduce_reshape import fuse_reduce_reshape
from nn2c.passes.horizontal import fuse_parallel
from nn2c.passes.layout import sink_transposes
from nn2c.passes.prune_channels import prune_constant_channels
from nn2c.passes.qdq import fold_float_weights, rewrite_qdq
from nn2c.passes.simplify import simplify

PIPELINES: dict[int, list[tuple[str, Pass]]] = {
    0: [],
    1: [
        ("dead-code", eliminate_dead_code),
        ("constant-folding", constant_folding(keep_quantized_weights=False)),
        ("simplify", simplify),
    ],
    2: [
        ("dead-code", eliminate_dead_code),
        ("constant-folding", constant_folding(keep_quantized_weights=True)),
        ("simplify", simplify),
        ("layout", sink_transposes),
        ("fold-batchnorm", fold_affine),
        ("fuse-activation", fuse_activations),
        ("fuse-reduce-reshape", fuse_reduce_reshape),
        ("qdq", rewrite_qdq),
        ("qdq-float-weights", fold_float_weights),
        ("fuse-pad", fuse_pad_into_conv),
        ("prune-channels", prune_constant_channels),
        ("fuse-parallel", fuse_parallel),
    ],
}


@dataclass
class PipelineReport:
    level: int
    iterations: int = 0
    per_pass: dict[str, PassResult] = field(default_factory=dict)
    ops_before: int = 0
    ops_after: int = 0


def optimize(graph: Graph, level: int = 2, check: bool = False, max_iterations: int = 20) -> PipelineReport:
    """Run the -O`level` pipeline until no pass changes the graph; `check` verifies after every pass."""
    passes = PIPELINES[level]
    report = PipelineReport(level, ops_before=len(graph.nodes))
    for name, _ in passes:
        report.per_pass[name] = PassResult(False)
    for iteration in range(max_iterations):
        changed = False
        for name, run in passes:
            result = run(graph)
            if check:
                try:
                    verify(graph)
                except AssertionError as exc:
                    raise AssertionError(f"pass {name!r} broke the graph: {exc}") from None
            if result.modified:
                changed = True
                report.per_pass[name] += result
        report.iterations = iteration + 1
        if not changed:
            break
    for node in graph.nodes:  # a run-time WHILE's condition and body: graphs of their own, optimised alike
        for sub in (node.attrs[key] for key in ("cond", "body") if isinstance(node.attrs.get(key), Graph)):
            inner = optimize(sub, level, check, max_iterations)
            for name, result in inner.per_pass.items():
                report.per_pass[name] += result
    report.ops_after = len(graph.nodes)
    return report


def report_dict(report: PipelineReport) -> dict:
    """The report as plain data (for --json)."""
    return {
        "level": report.level, "iterations": report.iterations, "ops_before": report.ops_before,
        "ops_after": report.ops_after,
        "passes": {name: {"modified": r.modified, "removed_ops": r.removed_ops, "removed_tensors": r.removed_tensors,
                          "bytes_saved": r.bytes_saved, "changes": r.notes} for name, r in report.per_pass.items()},
    }


def format_report(report: PipelineReport, max_notes: int = 8) -> str:
    """What each pass changed, one block per pass (the CLI's --passes-report)."""
    lines = [f"passes -O{report.level}: {report.ops_before} -> {report.ops_after} operators "
             f"in {report.iterations} iteration(s)"]
    for name, r in report.per_pass.items():
        if not r.modified:
            lines.append(f"  {name:20s} no change")
            continue
        lines.append(f"  {name:20s} {r.removed_ops} operator(s) removed or fused, {r.removed_tensors} tensor(s) "
                     f"eliminated, {r.bytes_saved:,} activation bytes saved, {len(r.notes)} change(s)")
        lines += [f"      {note}" for note in r.notes[:max_notes]]
        if len(r.notes) > max_notes:
            lines.append(f"      ... and {len(r.notes) - max_notes} more")
    return "\n".join(lines) + "\n"
