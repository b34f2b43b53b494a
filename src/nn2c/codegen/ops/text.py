"""TFIDF_VECTORIZER (nn2c-internal, from ONNX TfIdfVectorizer): one kernel (kernels/nn2c_text.c)
that compares every window of the int32 tokens with the constant gram table, counting into the
float output, then applies the weighting."""

from __future__ import annotations

from nn2c.codegen.context import EmitContext
from nn2c.codegen.ops import lowering
from nn2c.ir import Node
from nn2c.reference.text import MODES


@lowering("TFIDF_VECTORIZER")
def tfidf_vectorizer(node: Node, ctx: EmitContext) -> None:
    x, grams, sizes, indices = (node.input(i) for i in range(4))
    weights = node.input(4)
    out = node.outputs[0]
    if x is None or grams is None or sizes is None or indices is None:
        raise ctx.unsupported("TFIDF_VECTORIZER needs tokens and its gram tables")
    if not all(v.is_constant for v in (grams, sizes, indices)) or (weights is not None and not weights.is_constant):
        raise ctx.unsupported("TFIDF_VECTORIZER needs constant gram tables")
    if x.type.dtype != "int32" or out.type.dtype != "float32" or len(x.type.shape) not in (1, 2):
        raise ctx.unsupported(f"TFIDF_VECTORIZER of {x.type} into {out.type} (int32 [C] or [B, C] into float32)")
    a = node.attrs
    mode = str(a.get("mode", ""))
    outputs = out.type.shape[-1]
    count, width = grams.type.shape
    if mode not in MODES or list(out.type.shape) != [*x.type.shape[:-1], outputs] or sizes.type.shape != (count,):
        raise ctx.unsupported(f"TFIDF_VECTORIZER mode {mode!r} into {list(out.type.shape)}")
    if out.type.num_elements == 0:
        return
    ctx.use_kernel("text")
    rows = x.type.shape[0] if len(x.type.shape) == 2 else 1
    params = ctx.params_struct("nn2c_tfidf_params_t", {
        "rows": rows, "length": x.type.shape[-1], "outputs": outputs, "count": count, "gram_width": width,
        "min_gram": int(a["min_gram"]), "max_gram": int(a["max_gram"]), "max_skip": int(a["max_skip"]),
        "mode": MODES[mode]})
    ctx.call("nn2c_tfidf_vectorizer_s32", params, ctx.ptr(x), ctx.ptr(grams), ctx.ptr(sizes), ctx.ptr(indices),
             ctx.ptr(weights), ctx.ptr(out))
