/* lp_signal_spectrum.h: TFLite Micro's signal-library operators from a frame of samples to filter-bank
   features (SignalWindow, SignalFftAutoScale, SignalEnergy, SignalFilterBank and its SquareRoot,
   SpectralSubtraction and Log stages, SignalPCAN), bit-exact with TFLite Micro (signal/micro/kernels,
   signal/src) built by GCC or Clang. Sizes are in elements; the compiler checks every size and index
   table against the tensors before it calls these (TFLite Micro checks none). Each returns 0. Needs
   lp_signal_bits.h. */
#ifndef LP_SIGNAL_SPECTRUM_H
#define LP_SIGNAL_SPECTRUM_H

#include <stdint.h>

/* SignalWindow: output[i] = input[i] * weights[i mod weight_count] >> shift, saturated to int16, for
   i < count (a multiple of weight_count); 0 <= shift <= 31. */
static inline int32_t lp_signal_window_s16(const int16_t *input, const int16_t *weights, int16_t *output,
                                           int32_t count, int32_t weight_count, int32_t shift)
{
  int32_t i;
  for (i = 0; i < count; ++i) {
    const int32_t raw = lp_signal_asr32((int32_t)input[i] * (int32_t)weights[i % weight_count], shift);
    output[i] = (int16_t)(raw < INT16_MIN ? INT16_MIN : raw > INT16_MAX ? INT16_MAX : raw);
  }
  return 0;
}

/* SignalFftAutoScale: scale = 15 - bit length of the largest |input| (0 when that is negative), output =
   input * 2^scale wrapped to int16. The largest |input| is TFLite Micro's MaxAbs16 exactly, an int16
   running maximum in which |-32768| wraps to -32768 (which a later larger value then replaces). */
static inline int32_t lp_signal_fft_auto_scale_s16(const int16_t *input, int16_t *output, int32_t *scale_bits,
                                                   int32_t count)
{
  int16_t largest = 0;
  int32_t scale;
  int32_t i;
  for (i = 0; i < count; ++i) {
    const int16_t value = input[i];
    if (value > largest) {
      largest = value;
    } else if (-(int32_t)value > largest) {
      largest = lp_signal_wrap16(-(int32_t)value);
    }
  }
  scale = 16 - lp_signal_msb32((uint32_t)(int32_t)largest) - 1;
  if (scale < 0) {
    scale = 0;
  }
  for (i = 0; i < count; ++i) {
    output[i] = lp_signal_wrap16((int32_t)input[i] * (1 << scale));
  }
  *scale_bits = scale;
  return 0;
}

/* SignalEnergy: output[i] = re^2 + im^2 (uint32) of the complex int16 spectrum[2i], spectrum[2i + 1] for
   start <= i < end; the other outputs, which TFLite Micro leaves unwritten, are 0. */
static inline int32_t lp_signal_energy_s16(const int16_t *spectrum, uint32_t *output, int32_t count,
                                           int32_t start, int32_t end)
{
  int32_t i;
  for (i = 0; i < count; ++i) {
    if (i >= start && i < end) {
      const int32_t re = spectrum[2 * i], im = spectrum[2 * i + 1];
      output[i] = (uint32_t)(re * re) + (uint32_t)(im * im);
    } else {
      output[i] = 0u;
    }
  }
  return 0;
}

/* SignalFilterBank: channel c's output is the sum over its band of weights times energy, plus the sum of
   the previous band's unweights times energy (uint64, wrapping; a negative weight counts modulo 2^64 as in
   TFLite Micro), for the num_channels + 1 bands of the index tables, the first band feeding only channel 0. */
static inline int32_t lp_signal_filter_bank(const uint32_t *input, const int16_t *weights,
                                            const int16_t *unweights, const int16_t *frequency_starts,
                                            const int16_t *weight_starts, const int16_t *widths,
                                            uint64_t *output, int32_t num_channels)
{
  uint64_t weight_accumulator = 0u;
  uint64_t unweight_accumulator = 0u;
  int32_t channel;
  for (channel = 0; channel <= num_channels; ++channel) {
    const int32_t frequency_start = frequency_starts[channel];
    const int32_t weight_start = weight_starts[channel];
    int32_t j;
    for (j = 0; j < widths[channel]; ++j) {
      const uint64_t energy = input[frequency_start + j];
      weight_accumulator += (uint64_t)(int64_t)weights[weight_start + j] * energy;
      unweight_accumulator += (uint64_t)(int64_t)unweights[weight_start + j] * energy;
    }
    if (channel > 0) {
      output[channel - 1] = weight_accumulator;
    }
    weight_accumulator = unweight_accumulator;
    unweight_accumulator = 0u;
  }
  return 0;
}

/* SignalFilterBankSquareRoot: output[i] = Sqrt64(input[i]) >> *scale_bits. TFLite Micro shifts by the
   tensor's value as it is (undefined outside 0..31): here by its value modulo 32, as its x86 build does. */
static inline int32_t lp_signal_filter_bank_sqrt(const uint64_t *input, const int32_t *scale_bits,
                                                 uint32_t *output, int32_t count)
{
  const uint32_t shift = (uint32_t)*scale_bits & 31u;
  int32_t i;
  for (i = 0; i < count; ++i) {
    output[i] = lp_signal_sqrt64(input[i]) >> shift;
  }
  return 0;
}

/* SignalFilterBankSpectralSubtraction on its state `noise_estimate` (updated in place, and copied to
   noise_output as TFLite Micro copies it to its second output): per channel, the noise estimate follows
   the signal scaled up by smoothing_bits through a low-pass filter (smoothing / one_minus_smoothing on even
   channels, the alternate pair on odd ones, in units of 2^-spectral_subtraction_bits); the output is the
   signal less the estimate (never below zero, clamped to the signal: with `clamping` the estimate too),
   scaled back down, and at least min_signal_remaining of the signal. The option values are TFLite Micro's
   int32 options read as uint32; 0 <= smoothing_bits <= 31, 0 <= spectral_subtraction_bits <= 63. */
static inline int32_t lp_signal_spectral_subtraction(const uint32_t *input, uint32_t *noise_estimate,
                                                     uint32_t *output, uint32_t *noise_output, int32_t count,
                                                     int32_t smoothing, int32_t one_minus_smoothing,
                                                     int32_t alternate_smoothing,
                                                     int32_t alternate_one_minus_smoothing,
                                                     int32_t min_signal_remaining, int32_t smoothing_bits,
                                                     int32_t spectral_subtraction_bits, int32_t clamping)
{
  int32_t i;
  for (i = 0; i < count; ++i) {
    const uint32_t weight = (uint32_t)((i & 1) == 0 ? smoothing : alternate_smoothing);
    const uint32_t one_minus_weight = (uint32_t)((i & 1) == 0 ? one_minus_smoothing
                                                              : alternate_one_minus_smoothing);
    const uint32_t signal_scaled_up = input[i] << smoothing_bits;
    uint32_t estimate_scaled_up;
    uint32_t floor_value, subtracted;
    noise_estimate[i] = (uint32_t)(((uint64_t)signal_scaled_up * weight
                                    + (uint64_t)noise_estimate[i] * one_minus_weight)
                                   >> spectral_subtraction_bits);
    estimate_scaled_up = noise_estimate[i];
    if (estimate_scaled_up > signal_scaled_up) {
      estimate_scaled_up = signal_scaled_up;
      if (clamping != 0) {
        noise_estimate[i] = estimate_scaled_up;
      }
    }
    floor_value = (uint32_t)(((uint64_t)input[i] * (uint32_t)min_signal_remaining) >> spectral_subtraction_bits);
    subtracted = (signal_scaled_up - estimate_scaled_up) >> smoothing_bits;
    output[i] = subtracted > floor_value ? subtracted : floor_value;
    noise_output[i] = noise_estimate[i];
  }
  return 0;
}

/* TFLite Micro's WideDynamicFunction: the PCAN gain of noise estimate x from its 125-entry lookup table, a
   quadratic in each octave of x (the table's three coefficients for it) evaluated in fixed point. */
static inline int16_t lp_signal_pcan_gain(uint32_t x, const int16_t *lut)
{
  int32_t interval, frac, result;
  const int16_t *octave;
  if (x <= 2u) {
    return lut[x];
  }
  interval = lp_signal_msb32(x);
  octave = lut + (4 * interval - 6);
  frac = (int32_t)((interval < 11 ? x << (11 - interval) : x >> (interval - 11)) & 0x3FFu);
  result = lp_signal_asr32((int32_t)octave[2] * frac, 5);
  result = lp_signal_wrap32((int64_t)result + lp_signal_wrap32((int64_t)((uint32_t)(int32_t)octave[1] << 5)));
  result = lp_signal_wrap32((int64_t)result * frac);
  result = lp_signal_asr32(lp_signal_wrap32((int64_t)result + (1 << 14)), 15);
  return lp_signal_wrap16(result + octave[0]);
}

/* SignalPCAN: per channel, snr = input * gain(noise_estimate) >> snr_shift (uint32, with 12 fractional
   bits), then TFLite Micro's PcanShrink: snr^2 / 4 below 2, snr - 1 above, in 6 fractional bits;
   0 <= snr_shift <= 63. */
static inline int32_t lp_signal_pcan(const uint32_t *input, const uint32_t *noise_estimate, const int16_t *gain_lut,
                                     uint32_t *output, int32_t count, int32_t snr_shift)
{
  int32_t i;
  for (i = 0; i < count; ++i) {
    const uint32_t gain = (uint32_t)(int32_t)lp_signal_pcan_gain(noise_estimate[i], gain_lut);
    const uint32_t snr = (uint32_t)(((uint64_t)input[i] * gain) >> snr_shift);
    output[i] = snr < (2u << 12) ? (snr * snr) >> 20 : (snr >> 6) - (1u << 6);
  }
  return 0;
}

/* SignalFilterBankLog: output[i] = min(output_scale * ln(input[i] << correction_bits), INT16_MAX) (Log32),
   0 where the shifted input is 0 or 1; 0 <= correction_bits <= 31, `log_lut` as for lp_signal_log32. */
static inline int32_t lp_signal_filter_bank_log(const uint32_t *input, const uint16_t *log_lut, int16_t *output,
                                                int32_t count, int32_t output_scale, int32_t correction_bits)
{
  int32_t i;
  for (i = 0; i < count; ++i) {
    const uint32_t scaled = input[i] << correction_bits;
    if (scaled > 1u) {
      const uint32_t log_value = lp_signal_log32(scaled, (uint32_t)output_scale, log_lut);
      output[i] = (int16_t)(log_value < (uint32_t)INT16_MAX ? log_value : (uint32_t)INT16_MAX);
    } else {
      output[i] = 0;
    }
  }
  return 0;
}

#endif /* LP_SIGNAL_SPECTRUM_H */
