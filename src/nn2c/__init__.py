"""nn2c: an ahead-of-time compiler from TensorFlow Lite models to dependency-free C for microcontrollers."""

__version__ = "0.1.0"

from nn2c.api import CompileOptions, CompileResult, Profile, compile_model, profile

__all__ = ["CompileOptions", "CompileResult", "Profile", "__version__", "compile_model", "profile"]
