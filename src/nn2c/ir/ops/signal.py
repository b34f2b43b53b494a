"""Operator facts: TFLite Micro's Signal library (the micro_speech audio front end).

The TFLite frontend reads them from custom operators (frontends/tflite_custom.py); the options
become int attributes. uint32 / uint64 tensors of TFLM are int32 / int64 values here with the same
bits; the kernels read them as unsigned. Inputs and outputs:
- SIGNAL_WINDOW: (x int16, window int16 [n]) -> int16, x's size a multiple of n; attribute shift.
- SIGNAL_FFT_AUTO_SCALE: (x int16 [n]) -> (int16 [n], scale_bits int32 []).
- SIGNAL_RFFT: (x [..., len]) -> [..., 2 * (fft_length / 2 + 1)] (re, im pairs), int16, int32 or
  float32 (kissfft FIXED_POINT 16 / 32 / float); attributes T (the TFLite tensor type), fft_length.
- SIGNAL_ENERGY: (spectrum int16 [2m]) -> uint32 [m]; attributes start_index, end_index.
- SIGNAL_FILTER_BANK: (energy uint32, weights, unweights, freq_starts, weight_starts, widths: int16
  constants) -> uint64 [num_channels].
- SIGNAL_FILTER_BANK_SQUARE_ROOT: (uint64 [c], scale_bits int32 []) -> uint32 [c].
- SIGNAL_FILTER_BANK_SPECTRAL_SUBTRACTION: (uint32 [c], noise state) -> (uint32 [c], noise
  estimate uint32 [c]); the state (input 1, a variable) is the estimate kept across invocations.
- SIGNAL_PCAN: (uint32 [c], noise estimate uint32 [c], gain_lut int16 constant) -> uint32 [c].
- SIGNAL_FILTER_BANK_LOG: (uint32 [c]) -> int16 [c]; attributes input_correction_bits, output_scale.
None runs in place (the spectrum and filter-bank kernels read inputs after writing outputs).
"""

from __future__ import annotations

from nn2c.ir.ops.info import OpInfo

FACTS: dict[str, OpInfo] = {
    "SIGNAL_WINDOW": OpInfo("other"),
    "SIGNAL_FFT_AUTO_SCALE": OpInfo("other"),
    "SIGNAL_RFFT": OpInfo("other"),
    "SIGNAL_ENERGY": OpInfo("other"),
    "SIGNAL_FILTER_BANK": OpInfo("other"),
    "SIGNAL_FILTER_BANK_SQUARE_ROOT": OpInfo("other", data_inputs=(0, 1)),
    "SIGNAL_FILTER_BANK_SPECTRAL_SUBTRACTION": OpInfo("other"),
    "SIGNAL_PCAN": OpInfo("other", data_inputs=(0, 1)),
    "SIGNAL_FILTER_BANK_LOG": OpInfo("other"),
}
