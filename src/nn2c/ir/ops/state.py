"""Operator facts: TFLite resource variables (READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE) and IF.

The TFLite frontend resolves VAR_HANDLE statically: every (container, shared_name) pair is one
state value (`Value.is_variable`, kept across inferences like SVDF's state), so VAR_HANDLE leaves
no node. Inputs, as the frontend builds them:
- READ_VARIABLE: (state, *order) -> a copy of the state's bytes (TFLM's MicroResourceVariables::Read).
- ASSIGN_VARIABLE: (state, value, *order) -> a one-byte ordering token; copies the value's bytes
  into the state (MicroResourceVariables::Assign).
- CALL_ONCE: (state_1..state_k, init_1..init_k, *order) -> a token; attribute `variables` = k. The
  init subgraph was evaluated at import (it assigns constants); on the first invoke of the
  program only, each state_i receives init_i. As in TFLM, it does not run again after a reset.
`*order` are ordering inputs (tokens of earlier assignments, results of earlier reads of the same
variable): they make the source order of reads and writes a data dependency, so the scheduler
cannot move a read across a write; the lowerings ignore them.

IF is inlined by the frontend: both branch subgraphs become ordinary nodes, and each IF output is
- IF_MERGE: (cond, then_value, else_value) -> the bytes of then_value if cond's first element is
  true, else of else_value (TFLM's if.cc copies the chosen subgraph's outputs the same way).

WHILE is unrolled by the frontend when its number of iterations is known at compile time; otherwise
- WHILE: (loop values) -> (loop values after the last iteration); attributes `cond` and `body` are
  Graphs whose inputs take the loop values. As TFLM's while.cc: the loop values start as the
  inputs; while the first element of `cond`'s bool output is true, `body` runs on them and its
  outputs' bytes become the next loop values.
"""

from __future__ import annotations

from nn2c.ir.ops.info import ALL, OpInfo

FACTS: dict[str, OpInfo] = {
    "READ_VARIABLE": OpInfo("other", data_inputs=()),
    "ASSIGN_VARIABLE": OpInfo("other", data_inputs=(1,)),
    "CALL_ONCE": OpInfo("other", data_inputs=()),
    "IF_MERGE": OpInfo("other", data_inputs=(1, 2)),
    "WHILE": OpInfo("other", data_inputs=ALL),
}
