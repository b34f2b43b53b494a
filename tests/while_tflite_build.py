"""Build TFLite models whose tf.while_loop runs a number of times known only at run time (run by
tensorflow's python).

    python tests/while_tflite_build.py OUT_DIR

- steps_{float,int8}.tflite: h <- tanh(h W + b) for min(n, 12) steps, n a model input (the loop
  bound of an RNN decoder run for a requested length);
- converge_{float,int8}.tflite: x <- 0.5 x + c while max |x| > 0.25 (at most 40 times), returning x
  and the iteration count (an iterative refinement that stops when it has converged).
int8: full-integer conversion with a representative dataset; the counters stay int32.
tests/assets/while_runtime/ keeps one build of these four (and two loops of tests/test_op_while.py)
as seeds of the fuzz campaign (bench/fuzz.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np


def build(out: Path) -> None:
    import tensorflow as tf

    rng = np.random.default_rng(3)
    weight = tf.constant(rng.standard_normal((8, 8)).astype(np.float32) * 0.4)
    bias = tf.constant(rng.standard_normal((1, 8)).astype(np.float32) * 0.1)
    offset = tf.constant(rng.uniform(-0.1, 0.1, (1, 8)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec((1, 8), tf.float32), tf.TensorSpec((1,), tf.int32)])
    def steps(x: Any, n: Any) -> Any:
        def cond(i: Any, h: Any) -> Any:
            return tf.logical_and(i < n[0], i < 12)

        def body(i: Any, h: Any) -> Any:
            return i + 1, tf.tanh(tf.matmul(h, weight) + bias)

        return tf.while_loop(cond, body, [tf.constant(0), x])[1]

    @tf.function(input_signature=[tf.TensorSpec((1, 8), tf.float32)])
    def converge(x: Any) -> Any:
        def cond(i: Any, y: Any) -> Any:
            return tf.logical_and(tf.reduce_max(tf.abs(y)) > 0.25, i < 40)

        def body(i: Any, y: Any) -> Any:
            return i + 1, y * 0.5 + offset

        i, y = tf.while_loop(cond, body, [tf.constant(0), x])
        return y, tf.reshape(i, (1,))

    samples = [rng.standard_normal((1, 8)).astype(np.float32) * 2 for _ in range(32)]
    lengths = [np.array([k % 14], np.int32) for k in range(32)]
    for name, function, data in (("steps", steps, [[s, n] for s, n in zip(samples, lengths, strict=True)]),
                                 ("converge", converge, [[s] for s in samples])):
        for kind in ("float", "int8"):
            converter = tf.lite.TFLiteConverter.from_concrete_functions([function.get_concrete_function()])
            if kind == "int8":
                converter.optimizations = [tf.lite.Optimize.DEFAULT]
                converter.representative_dataset = lambda data=data: iter(data)
                converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
                converter.inference_input_type = tf.int8
                converter.inference_output_type = tf.int8
            (out / f"{name}_{kind}.tflite").write_bytes(converter.convert())


if __name__ == "__main__":
    build(Path(sys.argv[1]))
