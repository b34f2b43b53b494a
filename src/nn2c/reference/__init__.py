"""A numpy reference evaluator of IR nodes (float semantics; quantized tensors are dequantized)."""

from nn2c.reference.evaluate import SUPPORTED_OPS, evaluate_node, run_graph

__all__ = ["SUPPORTED_OPS", "evaluate_node", "run_graph"]
