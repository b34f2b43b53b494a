"""Operator facts: spectral operators of audio front ends (nn2c-internal, from ONNX).

- WINDOW (HannWindow / HammingWindow / BlackmanWindow with a run-time size): input the size (an
  int32 scalar), output float32 [L] with L the model's static length; attributes `window`
  ("hann" / "hamming" / "blackman") and `periodic` (bool). The kernel reads the size at run time.
- MEL_WEIGHT_MATRIX (MelWeightMatrix with run-time operands): inputs num_mel_bins, dft_length,
  sample_rate (int32 scalars), lower_edge_hertz, upper_edge_hertz (float32 scalars); output
  float32 [dft_length // 2 + 1, num_mel_bins] as the model's static shape.
- DFT: input float32 [..., n, ..., 1 or 2] (real, or interleaved real / imaginary in the last
  axis), transformed along attribute `axis` (not the last) with attributes `length` (the DFT
  length N), `inverse`, `onesided`; output float32 [..., m, ..., 1 or 2].
Semantics in reference/spectral.py. Float only (no int8 kernel: the quantizers leave them in
float), never in place (the output is written out of input order), and a transpose does not pass
through them (their axes are fixed).
"""

from __future__ import annotations

from nn2c.ir.ops.info import OpInfo

FACTS: dict[str, OpInfo] = {
    "WINDOW": OpInfo("other", data_inputs=()),
    "MEL_WEIGHT_MATRIX": OpInfo("other", data_inputs=()),
    "DFT": OpInfo("other"),
}
