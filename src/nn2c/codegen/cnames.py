"""Turning model-supplied text into safe C: identifiers, comments and literals.

Nothing taken from a model file reaches the generated C except through these functions.
"""

from __future__ import annotations

import math
import re

import numpy as np

_C_KEYWORDS = frozenset({
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
    "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
    "volatile", "while", "_Bool", "_Complex", "_Imaginary",
})


def c_identifier(text: str, fallback: str = "model") -> str:
    """A valid, lower-case C identifier made from arbitrary text."""
    ident = re.sub(r"[^0-9A-Za-z_]+", "_", text).strip("_").lower()
    ident = re.sub(r"_+", "_", ident)
    if not ident:
        ident = fallback
    if ident[0].isdigit():
        ident = "m_" + ident
    if ident in _C_KEYWORDS:
        ident += "_"
    return ident[:48]


def c_comment(text: str, limit: int = 96) -> str:
    """Text that is safe inside /* ... */: printable ASCII only, no comment delimiters or trigraphs."""
    # no '*' means no comment delimiter; no '?' no trigraph; no '\\' no line splice
    safe = "".join(ch if 32 <= ord(ch) < 127 and ch not in "*?\\" else "_" for ch in text)
    return safe if len(safe) <= limit else safe[: limit - 3] + "..."


def c_float(value: float) -> str:
    """A float32 C literal that round-trips exactly."""
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "FLT_MAX" if value > 0 else "-FLT_MAX"
    text = np.format_float_positional(np.float32(value), unique=True, trim="0") if value else "0.0"
    if abs(value) >= 1e9 or (value and abs(value) < 1e-4):
        text = np.format_float_scientific(np.float32(value), unique=True, trim="0")
    if "." not in text and "e" not in text:
        text += ".0"
    return text + "f"


def c_int(value: int) -> str:
    """An integer literal that is valid C for the full int32 range (INT32_MIN needs care)."""
    value = int(value)
    if value == -(2**31):
        return "(-2147483647 - 1)"
    if value == -(2**63):
        return "(-9223372036854775807LL - 1)"
    if value > 2**31 - 1 or value < -(2**31):
        return f"{value}LL"
    return str(value)
