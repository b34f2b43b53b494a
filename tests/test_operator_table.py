"""The operator tables of README.md and docs/operators.md are the code's (nn2c.report.operators)."""

from __future__ import annotations

from nn2c.codegen.ops import load_all
from nn2c.ir.ops import OPS
from nn2c.report import operators


def test_docs_list_exactly_the_operators_of_the_code():
    stale = [str(path) for path, text in operators.expected().items() if path.read_text() != text]
    assert not stale, f"{stale} are stale: run python -m nn2c.report.operators --write"


def test_every_listed_operator_has_a_lowering():
    assert set(OPS) == set(load_all())
    table = operators.OPERATORS_DOC.read_text()
    assert all(f"\n| {op} |" in table for op in OPS)
