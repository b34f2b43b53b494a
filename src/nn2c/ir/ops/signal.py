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
- SIGNAL_IRFFT: (x [..., 2 * m] (re, im) pairs, m >= fft_length / 2 + 1) -> [..., fft_length], int16, int32
  or float32 (kissfft's kiss_fftri; the float one divided by fft_length); attributes T, fft_length.
Streaming operators, each with state kept across invocations (state values, `Value.is_variable`,
zeroed by `<name>_reset()`; the zero state is TFLM's state after Prepare / Reset):
- SIGNAL_DELAY: (x int16 [..., n], delay line int16 [rows, delay_length]) -> int16 [..., n], each row
  the stream delayed by delay_length samples; attribute delay_length (0: no state input, a copy).
- SIGNAL_FRAMER: (x int16 [..., k * frame_step], pending samples int16 [rows, capacity], fill
  int32 [1]) -> (int16 [..., k, frame_size], valid bool []); attributes frame_size, frame_step, prefill.
- SIGNAL_STACKER: (x int16 [channels], frames int16 [(left + right + 1) * channels], counters
  int32 [2]) -> (int16 [(left + right + 1) * channels], valid bool []); attributes num_channels,
  stacker_left_context, stacker_right_context, stacker_step.
- SIGNAL_OVERLAP_ADD: (x [..., k, frame_size], sums [rows, frame_size]) -> [..., k * frame_step],
  int16 (saturating) or float32; attributes T, frame_step.
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
    "SIGNAL_IRFFT": OpInfo("other"),
    "SIGNAL_DELAY": OpInfo("other"),
    "SIGNAL_FRAMER": OpInfo("other"),
    "SIGNAL_STACKER": OpInfo("other"),
    "SIGNAL_OVERLAP_ADD": OpInfo("other"),
}
