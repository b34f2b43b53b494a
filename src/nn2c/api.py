"""Python API: compile_model(path, CompileOptions) -> CompileResult, and profile(model, target=, board=)
-> Profile (exact RAM, predicted instructions, no C built). The CLI is a thin layer on them.

The stages themselves are in nn2c/compile.py; this module is the stable import place.
"""

from __future__ import annotations

from nn2c.compile import compile_model, load_model
from nn2c.options import CompileOptions
from nn2c.profiler import Profile, profile
from nn2c.result import CompileResult, write_output

__all__ = ["CompileOptions", "CompileResult", "Profile", "compile_model", "load_model", "profile", "write_output"]
