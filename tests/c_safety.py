"""Shared assertion of the injection tests: what a model names never reaches the C compiler."""

from __future__ import annotations

import re


def assert_no_injected_code(files: dict[str, str], payloads: tuple[str, ...]) -> None:
    """Every .c/.h file is ASCII without trigraphs or line splices, comments are closed where they
    open, and none of `payloads` appears outside a comment."""
    for name, text in files.items():
        if not name.endswith((".c", ".h")):
            continue
        assert all(ord(ch) < 128 for ch in text), name
        assert "??" not in text and "\\\n" not in text, name  # no trigraphs, no line splices
        code = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)  # what the compiler sees outside comments
        assert "/*" not in code and "*/" not in code, name
        for payload in payloads:
            assert payload not in code, (name, payload)
