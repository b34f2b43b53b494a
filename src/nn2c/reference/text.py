"""Reference semantics of TFIDF_VECTORIZER (ONNX TfIdfVectorizer, as onnx.reference computes it).

Per row of tokens x and skip distance s = 1 .. max_skip + 1, every start position i and size n:
the n-gram (x[i], x[i + s], ..., x[i + (n - 1) s]) counts once for each table gram equal to it
(the tables keep, per distinct gram, the last index the pool gives it). Sizes run from min_gram
to max_gram, except that unigrams count for the first skip distance only. The counts f become
TF: f; IDF: weights[o] (1 without weights) where f > 0, else 0; TFIDF: weights[o] * f (f without).
"""

from __future__ import annotations

import numpy as np

from nn2c.ir import Node
from nn2c.reference.registry import evaluator
from nn2c.reference.values import Arrays

MODES = {"TF": 0, "IDF": 1, "TFIDF": 2}


def count_ngrams(tokens: np.ndarray, grams: np.ndarray, sizes: np.ndarray, indices: np.ndarray, outputs: int,
                 min_gram: int, max_gram: int, max_skip: int) -> np.ndarray:
    rows = tokens.reshape(-1, tokens.shape[-1]) if tokens.ndim else tokens.reshape(1, 1)
    table = {tuple(int(v) for v in grams[g, :sizes[g]]): int(indices[g]) for g in range(len(sizes))}
    counts = np.zeros((rows.shape[0], outputs), dtype=np.int64)
    for r, row in enumerate(rows):
        smallest = min_gram
        for skip in range(1, max_skip + 2):
            for start in range(len(row)):
                for n in range(max(smallest, 1), max_gram + 1):
                    last = start + (n - 1) * skip
                    if last >= len(row):
                        break
                    index = table.get(tuple(int(v) for v in row[start:last + 1:skip]))
                    if index is not None:
                        counts[r, index] += 1
            if smallest == 1:
                smallest = 2
                if smallest > max_gram:
                    break
    return counts


def weigh(counts: np.ndarray, mode: str, weights: np.ndarray | None) -> np.ndarray:
    if mode == "TF":
        return counts.astype(np.float32)
    if mode == "IDF":
        return np.where(counts > 0, 1.0 if weights is None else weights[None, :], 0.0).astype(np.float32)
    return (counts * (1.0 if weights is None else weights[None, :])).astype(np.float32)


@evaluator("TFIDF_VECTORIZER")
def _tfidf(node: Node, arrays: Arrays) -> list[np.ndarray]:
    x, grams, sizes, indices = (np.asarray(arrays[i]) for i in range(4))
    weights = np.asarray(arrays[4], dtype=np.float64) if len(arrays) > 4 and arrays[4] is not None else None
    out = node.outputs[0]
    a = node.attrs
    counts = count_ngrams(x, grams, sizes, indices, out.type.shape[-1], int(a["min_gram"]), int(a["max_gram"]),
                          int(a["max_skip"]))
    return [weigh(counts, str(a["mode"]), weights).reshape(out.type.shape)]
