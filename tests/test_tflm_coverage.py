"""Every builtin operator that TFLite Micro registers has an nn2c lowering (or is resolved by the
TFLite frontend at import: VAR_HANDLE, IF), or is listed below.

The list comes from tflite-micro itself, the interpreter the tests use as the oracle: its Python
runtime library registers each kernel through a `tflite::Register_<OP>()` function, whose symbol
names are read from the shared object (no tool needed). Names that are builtin operators of the
TFLite schema are the builtins TFLM runs; the others are its custom operators (the Signal audio
front end, DETECTION_POSTPROCESS, DECODE, the Ethos-U operator) and internal variants.

The test fails when TFLM gains a builtin that nn2c lacks, and when an operator listed as missing
gets a lowering (then the list must shrink): NOT_YET is the honest state of coverage. The Signal
custom operators (`tflite::tflm_signal::Register_<OP>()`, op SIGNAL_<OP> in nn2c) are held to the
same rule with NOT_YET_SIGNAL. DETECTION_POSTPROCESS (custom code TFLite_Detection_PostProcess) is
checked on its own: TFLM registers it and nn2c compiles it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nn2c.codegen.ops import load_all
from nn2c.frontends.tflite_custom import CUSTOM_OPS, DETECTION_CODE, SIGNAL_OPS
from nn2c.frontends.tflite_frontend import RESOLVED_AT_IMPORT

tflite = pytest.importorskip("tflite")
tflite_micro = pytest.importorskip("tflite_micro", reason="SKIPPED LOUDLY: tflite-micro is not installed "
                                   "(pip install 'nn2c[oracle]'); CI installs it")

# builtins TFLM registers that nn2c does not compile yet, with the reason
NOT_YET: dict[str, str] = {}  # WHILE: unrolled at import (frontends/tflite_while.py)


# Signal custom operators TFLM registers that nn2c does not compile yet, with the reason (none: the
# streaming ones and the inverse FFT are tests/test_op_signal_stream.py)
NOT_YET_SIGNAL: dict[str, str] = {}


def _runtime_library() -> bytes:
    return next(Path(tflite_micro.__file__).parent.rglob("_runtime*.so")).read_bytes()


def tflm_registered_signal_ops() -> set[str]:
    """SIGNAL_<OP> for each tflite::tflm_signal::Register_<OP>() (type variants such as RFFT_INT16
    folded into their operator)."""
    names = {m.decode() for m in re.findall(rb"tflm_signal[0-9]*Register_([A-Z][A-Z0-9_]*?)Ev", _runtime_library())}
    return {"SIGNAL_" + re.sub(r"_(FLOAT|INT16|INT32)$", "", n) for n in names}


def test_every_tflm_signal_op_compiles_or_is_listed() -> None:
    registered = tflm_registered_signal_ops()
    assert {"SIGNAL_WINDOW", "SIGNAL_RFFT", "SIGNAL_PCAN"} <= registered, sorted(registered)
    lowered = set(load_all())
    missing = registered - lowered - set(NOT_YET_SIGNAL)
    assert not missing, f"TFLM runs these Signal ops and nn2c has no lowering: {sorted(missing)}"
    landed = set(NOT_YET_SIGNAL) & lowered
    assert not landed, f"these now have a lowering; remove them from NOT_YET_SIGNAL: {sorted(landed)}"
    assert set(NOT_YET_SIGNAL) <= registered, sorted(set(NOT_YET_SIGNAL) - registered)
    # the frontend maps each compiled Signal op's custom code onto its lowering
    assert set(SIGNAL_OPS.values()) == registered & lowered


def test_tflm_detection_postprocess_compiles() -> None:
    registered = {m.decode() for m in re.findall(rb"Register_([A-Z][A-Z0-9_]*?)Ev", _runtime_library())}
    assert "DETECTION_POSTPROCESS" in registered, "TFLM no longer registers DETECTION_POSTPROCESS"
    assert DETECTION_CODE.encode() in _runtime_library()  # the custom code its op resolver registers it under
    assert CUSTOM_OPS[DETECTION_CODE] == "DETECTION_POSTPROCESS"
    assert "DETECTION_POSTPROCESS" in load_all()


def tflm_registered_builtins() -> set[str]:
    registered = {m.decode() for m in re.findall(rb"Register_([A-Z][A-Z0-9_]*?)Ev", _runtime_library())}
    builtins = {name for name in vars(tflite.BuiltinOperator) if not name.startswith("_")}
    return registered & builtins


def test_tflm_registers_a_plausible_op_list() -> None:
    registered = tflm_registered_builtins()
    # the symbol scan must keep finding TFLM's kernels: the staples are all there
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "SOFTMAX", "ADD", "RESHAPE"} <= registered
    assert len(registered) >= 90, sorted(registered)


def test_every_tflm_builtin_compiles_or_is_listed() -> None:
    registered = tflm_registered_builtins()
    lowered = set(load_all()) | RESOLVED_AT_IMPORT
    missing = registered - lowered - set(NOT_YET)
    assert not missing, f"TFLM runs these builtins and nn2c has no lowering: {sorted(missing)}"
    landed = set(NOT_YET) & lowered
    assert not landed, f"these now have a lowering; remove them from NOT_YET: {sorted(landed)}"
    print(f"nn2c lowers {len(registered & lowered)} of the {len(registered)} builtins TFLM registers")
    unknown = set(NOT_YET) - registered
    assert not unknown, f"NOT_YET lists operators TFLM does not register: {sorted(unknown)}"
