"""Shared fixtures: the repo's copies of the third-party models (see models/README.md)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from nn2c.verify.build import OBJECT_CACHE_ENV, prune_object_cache

# the kernels' objects compiled once per content and flags, shared by the workers and by the CLI runs of the
# tests (nn2c.verify.build): most of the suite's time went into compiling the same kernels again
os.environ.setdefault(OBJECT_CACHE_ENV, str(Path(tempfile.gettempdir()) / f"nn2c_test_objects_{os.getuid()}"))
OBJECT_CACHE_DAYS = 7  # a run with changed kernels adds some 50 MB of objects: older ones are deleted


def pytest_sessionstart(session):
    """Before any worker builds (the controller, or a run without workers): the cache's files written more than
    OBJECT_CACHE_DAYS ago are deleted."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        prune_object_cache(Path(os.environ[OBJECT_CACHE_ENV]), time.time() - OBJECT_CACHE_DAYS * 86400)


MODELS = Path(__file__).resolve().parent.parent / "models"

# Every model in models/ that TFLite Micro runs (the Signal custom-op front ends and the hybrid
# kws_ref_model_float32, which TFLM refuses, are tested separately). The last two are large.
TFLM_MODELS = [
    "mlcommons_tiny/kws_ref_model.tflite",
    "mlcommons_tiny/vww_96_int8.tflite",
    "mlcommons_tiny/vww_96_float.tflite",
    "mlcommons_tiny/pretrainedResnet_quant.tflite",
    "mlcommons_tiny/pretrainedResnet.tflite",
    "mlcommons_tiny/ad01_int8.tflite",
    "mlcommons_tiny/ad01_fp32.tflite",
    "mlcommons_tiny/str_ww_ref_model.tflite",
    "tflite_micro/hello_world_int8.tflite",
    "tflite_micro/hello_world_float.tflite",
    "tflite_micro/micro_speech_quantized.tflite",
    "tflite_micro/person_detect.tflite",
    "tflite_micro/keyword_scrambled.tflite",
    "tflite_micro/keyword_scrambled_8bit.tflite",
    "tflite_micro/trained_lstm.tflite",
    "tflite_micro/trained_lstm_int8.tflite",
    "tflite_micro/dtln_noise_suppression.tflite",
    "tflite_micro/simple_add_model.tflite",
    "tflite_micro/micro_speech_lstm.tflite",
    "tinyengine/vww.tflite",
    "tinyengine/detection.tflite",
    "tinyengine/ptq_mnist_lenet-300-100.tflite",
]
LARGE_MODELS = [
    "tflite_micro/mobilenet_v2_quantized_1x3x224x224.tflite",
    "tinyengine/mcunetv2_large.tflite",
]


def model_path(relative: str) -> Path:
    return MODELS / relative


def require_cc() -> None:
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("SKIPPED LOUDLY: no host C compiler (cc/gcc) on this machine; CI installs gcc")


@pytest.fixture(autouse=True)
def _host_compiler():
    require_cc()
