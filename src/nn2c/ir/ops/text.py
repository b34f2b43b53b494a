"""Operator facts: n-gram counting of token ids (nn2c-internal, from ONNX TfIdfVectorizer).

- TFIDF_VECTORIZER: inputs (tokens int32 [C] or [B, C], grams int32 [G, L] (each row an n-gram
  padded with zeros), gram sizes int32 [G], output indices int32 [G], optional weights float32
  [O]), output float32 [O] or [B, O]; attributes mode ("TF" / "IDF" / "TFIDF"), min_gram,
  max_gram, max_skip. The tables are constants made at import. Semantics in reference/text.py.
"""

from __future__ import annotations

from nn2c.ir.ops.info import OpInfo

FACTS: dict[str, OpInfo] = {
    "TFIDF_VECTORIZER": OpInfo("other"),
}
