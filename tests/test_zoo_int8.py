"""nn2c's post-training int8 quantization is within 1 dB of onnxruntime's quantize_static, or better
(issue 15), on three of the cheapest zoo models (tests/zoo_int8.py holds the method and settings;
bench/zoo.py measures every zoo model for docs/zoo.md).

- tcn_conv1d: dilated 1-D convolutions, residual ADD + ReLU, MEAN over time;
- lcnet_050: hard-swish, squeeze-excitation, a global average pool over 2 x 2 pixels (TFLite
  Micro's int8 MEAN rounds twice there; nn2c quantizes it as a depthwise convolution);
- resnet18_w16: a MaxPool with pads (imported as PADV2 with -FLT_MAX before MAX_POOL_2D; before
  nn2c kept that fill out of the int8 range the model was at 2 dB), residual blocks.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.zoo import ZOO, _vision_libraries, export

pytest.importorskip("torch", reason="SKIPPED LOUDLY: PyTorch is not installed (pip install torch==2.13.0)")
pytest.importorskip("onnxruntime.quantization", reason="SKIPPED LOUDLY: onnxruntime is not installed")
try:  # torchvision (which timm imports) needs its operator schemas defined first beside CPU torch
    _vision_libraries()
except ImportError:
    pytest.skip("SKIPPED LOUDLY: timm / torchvision are not installed (pip install 'nn2c[test]')",
                allow_module_level=True)

from tests.zoo_int8 import TOLERANCE_DB, compare_int8

CHEAPEST = ("tcn_conv1d", "lcnet_050", "resnet18_w16")
CASES = [entry for entry in ZOO if entry.name in CHEAPEST]


@pytest.mark.parametrize("entry", CASES, ids=[e.name for e in CASES])
def test_int8_within_1db_of_onnxruntime_quantize_static(entry, tmp_path: Path) -> None:
    path = export(entry, "torchscript", tmp_path)
    result = compare_int8(path, tmp_path / "int8")
    assert result.ort_quantize_nodes > 0, "onnxruntime quantized nothing: no figure to compare with"
    assert math.isfinite(result.nn2c_sqnr_db) and result.nn2c_sqnr_db > 20.0, "nn2c's int8 output is not int8-like"
    assert result.within_rule, (f"nn2c int8 {result.nn2c_sqnr_db:.2f} dB, onnxruntime quantize_static "
                                f"{result.ort_sqnr_db:.2f} dB: {result.difference_db:+.2f} dB, below -{TOLERANCE_DB} dB")
