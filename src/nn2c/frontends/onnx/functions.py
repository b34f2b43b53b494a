"""ONNX functions inlined before conversion: the model's own (local) functions, and the operators
that ONNX itself defines as a function of other operators.

- A model may call functions it defines (`model.functions`: PyTorch's export_modules_as_functions,
  onnxscript); they are inlined with onnx.inliner, so their nodes convert as any other.
- An operator of the default domain that has no converter here but whose ONNX schema gives a
  function body (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, ...) is replaced by that body,
  taken at the model's opset: the operator's definition in ONNX's own words, converted node by node.
  A context-dependent body (one that ONNX builds from the node's attributes and input types) needs
  the inferred input types, so expansion runs after shape inference, then inference runs again; a
  body may call another such operator (SoftmaxCrossEntropyLoss calls NegativeLogLikelihoodLoss),
  hence a few rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import Any

EXPANDED_DOMAIN = "nn2c.expanded"
_MAX_ROUNDS = 4


def inline_local_functions(model: Any) -> Any:
    if not len(model.functions):
        return model
    import onnx.inliner

    return onnx.inliner.inline_local_functions(model, convert_version=True)


def _opset(model: Any) -> int:
    return next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def _known_types(model: Any) -> dict[str, Any]:
    import onnx

    graph = model.graph
    types = {info.name: info.type for info in [*graph.input, *graph.value_info, *graph.output]}
    for tensor in graph.initializer:
        types.setdefault(tensor.name, onnx.helper.make_tensor_type_proto(tensor.data_type, list(tensor.dims)))
    return types


def _function_body(onnx: Any, node: Any, opset: int, types: dict[str, Any]) -> Any | None:
    """The FunctionProto that defines this node's operator at `opset`, or None (no schema function,
    or one ONNX cannot build for these input types)."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, domain="")
    except Exception:  # SchemaError: not an ONNX operator at this opset
        return None
    given = {a.name for a in node.attribute}
    # defaults for the body's attribute references; the node keeps them only once a body is built
    defaults = [attr.default_value for name, attr in schema.attributes.items()
                if attr.default_value.name and name not in given]
    call = onnx.NodeProto()
    call.CopyFrom(node)
    call.attribute.extend(defaults)
    try:
        plain = [v for v in schema.function_opset_versions if v <= opset]
        dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
        if dependent:
            inputs = [(types.get(n) or onnx.TypeProto()).SerializeToString() if n else onnx.TypeProto().SerializeToString()
                      for n in node.input]
            data = schema.get_context_dependent_function_with_opset_version(max(dependent), call.SerializeToString(),
                                                                            inputs)
        elif plain:
            data = schema.get_function_with_opset_version(max(plain))
        else:
            return None
    except Exception:  # the body's builder rejects the node (an unknown input type, ...)
        return None
    body = onnx.FunctionProto()
    body.ParseFromString(data)
    if not len(body.node):
        return None
    node.attribute.extend(defaults)
    return body


def expand_schema_functions(model: Any, converters: Container[str], infer: Callable[[Any], Any]) -> Any:
    """Replace each default-domain node whose operator has no converter but an ONNX function body by
    that body (inlined), re-running shape inference after each round."""
    import onnx
    import onnx.inliner

    opset = _opset(model)
    for _ in range(_MAX_ROUNDS):
        types = _known_types(model)
        before = model.SerializeToString()
        bodies: list[Any] = []
        for node in model.graph.node:
            if node.domain not in ("", "ai.onnx") or node.op_type in converters:
                continue
            body = _function_body(onnx, node, opset, types)
            if body is None:
                continue
            body.name, body.domain = f"{node.op_type}_{len(bodies)}", EXPANDED_DOMAIN
            node.op_type, node.domain = body.name, EXPANDED_DOMAIN
            bodies.append(body)
        if not bodies:
            return model
        model.functions.extend(bodies)
        model.opset_import.append(onnx.helper.make_opsetid(EXPANDED_DOMAIN, 1))
        # the version converter (a body written for an older opset) looks every call input's type up
        initializers = {t.name for t in model.graph.initializer}
        model.graph.value_info.extend(onnx.helper.make_value_info(name, types[name]) for name in initializers
                                      if name in types)
        try:
            inlined = onnx.inliner.inline_local_functions(model, convert_version=True)
        except Exception:  # a body the version converter cannot bring to the model's opset
            model = onnx.ModelProto()
            model.ParseFromString(before)
            return model  # the operator is then refused as having no converter
        _drop(inlined.graph.value_info, initializers)
        _drop(inlined.opset_import, {EXPANDED_DOMAIN}, key="domain")
        model = infer(inlined)
    return model


def _drop(entries: Any, names: set[str], key: str = "name") -> None:
    kept = [e for e in entries if getattr(e, key) not in names]
    del entries[:]
    entries.extend(kept)
