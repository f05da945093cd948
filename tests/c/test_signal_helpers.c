/* Unit tests of the bundle's signal-library helpers (packager/templates/lp_signal_*.h), built with the strict
   warnings and the sanitizers by tests/test_signal_helpers_c.py. Each case states the value TFLite Micro's
   algorithm gives, derived by hand or by an independent integer computation here; bit-exactness against
   TFLite Micro itself is tests/test_signal_ops.py's. Prints "ok <count>" and exits 0, or names the first
   failure and exits 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "lp_signal_bits.h"
#include "lp_signal_spectrum.h"
#include "lp_signal_fft.h"
#include "lp_signal_stream.h"

static int checks = 0;

static int expect(long long got, long long want, const char *what, long long at)
{
  ++checks;
  if (got != want) {
    printf("FAIL %s at %lld: got %lld, expected %lld\n", what, at, got, want);
    return 1;
  }
  return 0;
}

static int test_bits(void)
{
  int failed = 0;
  failed |= expect(lp_signal_msb32(0u), 32, "msb32 of 0 (GCC's TFLite Micro)", 0);
  failed |= expect(lp_signal_msb32(1u), 1, "msb32", 1);
  failed |= expect(lp_signal_msb32(0x80000000u), 32, "msb32", 0x80000000LL);
  failed |= expect(lp_signal_msb64(0u), 64, "msb64 of 0", 0);
  failed |= expect(lp_signal_msb64((uint64_t)1 << 40), 41, "msb64", 40);
  failed |= expect(lp_signal_asr32(-5, 1), -3, "asr32 floors", -5);
  failed |= expect(lp_signal_asr32(INT32_MIN, 31), -1, "asr32", INT32_MIN);
  failed |= expect(lp_signal_asr32(5, 1), 2, "asr32", 5);
  failed |= expect(lp_signal_wrap16(32768), -32768, "wrap16", 32768);
  failed |= expect(lp_signal_wrap16(-32769), 32767, "wrap16", -32769);
  failed |= expect(lp_signal_wrap32((int64_t)1 << 31), INT32_MIN, "wrap32", 1LL << 31);
  return failed;
}

/* TFLite Micro's square root: floor(sqrt(x)) + 1 where x exceeds floor^2 + floor (the remainder is more than
   the root), never past the type's largest root. */
static uint64_t rounded_root(uint64_t x, uint64_t largest)
{
  uint64_t r = (uint64_t)sqrtl((long double)x);
  while (r * r > x) {
    --r;
  }
  while ((r + 1) <= 0xFFFFFFFFu && (r + 1) * (r + 1) <= x) {
    ++r;
  }
  return (x - r * r > r && r != largest) ? r + 1 : r;
}

static int test_square_roots(void)
{
  int failed = 0;
  uint64_t x;
  uint32_t k;
  for (x = 0; x < 70000u && !failed; ++x) {
    failed |= expect(lp_signal_sqrt32((uint32_t)x), (long long)rounded_root(x, 0xFFFFu), "sqrt32", (long long)x);
  }
  failed |= expect(lp_signal_sqrt32(0xFFFFFFFFu), 0xFFFF, "sqrt32 at its largest", 0xFFFFFFFFLL);
  for (k = 0; k < 2000u && !failed; ++k) {
    x = ((uint64_t)k * 0x9E3779B97F4A7C15u) >> (k % 31u);
    if ((x >> 32) != 0u) {
      failed |= expect(lp_signal_sqrt64(x), (long long)rounded_root(x, 0xFFFFFFFFu), "sqrt64", (long long)k);
    }
  }
  failed |= expect(lp_signal_sqrt64(UINT64_MAX), 0xFFFFFFFFLL, "sqrt64 at its largest", -1);
  return failed;
}

static int test_log(const uint16_t *lut)
{
  int failed = 0;
  uint32_t x;
  /* At a power of two the table adds nothing: (64 * (45426 k) + 2^15) >> 16. */
  failed |= expect(lp_signal_log32(65536u, 64u, lut), (64 * 45426 * 16 + 32768) >> 16, "log32 of 2^16", 16);
  for (x = 2u; x < 4000000000u && !failed; x = x * 3u + 1u) {
    const double exact = 64.0 * log((double)x);
    const long long got = lp_signal_log32(x, 64u, lut);
    failed |= expect(llabs(got - llround(exact)) <= 1, 1, "log32 within 1 of 64 ln x", (long long)x);
  }
  return failed;
}

static int test_spectrum(void)
{
  int failed = 0;
  const int16_t samples[4] = {-1, 32767, -32768, 7};
  const int16_t weights[2] = {1, 32767};
  int16_t out[4];
  int32_t scale = -1;
  int16_t quirk_in[2] = {-32768, 3};
  uint32_t energy[3];
  const int16_t spectrum[6] = {-32768, -32768, 3, 4, 1, 1};
  lp_signal_window_s16(samples, weights, out, 4, 2, 1);
  failed |= expect(out[0], -1, "window floors a negative product", 0);
  failed |= expect(out[1], 32767, "window saturates", 1);
  failed |= expect(out[2], -16384, "window", 2);
  failed |= expect(out[3], 32767, "window saturates", 3);
  /* MaxAbs16's int16 running maximum: |-32768| wraps to -32768, which 3 then replaces: 3 sets the scale. */
  lp_signal_fft_auto_scale_s16(quirk_in, out, &scale, 2);
  failed |= expect(scale, 13, "auto scale after -32768", 0);
  failed |= expect(out[0], 0, "auto scale wraps -32768 * 2^13", 0);
  failed |= expect(out[1], 3 << 13, "auto scale", 1);
  lp_signal_fft_auto_scale_s16(quirk_in, out, &scale, 1);
  failed |= expect(scale, 0, "auto scale of -32768 alone", 0);
  lp_signal_energy_s16(spectrum, energy, 3, 0, 2);
  failed |= expect(energy[0], 2147483648LL, "energy of (-32768, -32768)", 0);
  failed |= expect(energy[1], 25, "energy", 1);
  failed |= expect(energy[2], 0, "energy outside its bins", 2);
  return failed;
}

static int test_filter_bank_stages(void)
{
  int failed = 0;
  /* Band 0 (bins 0..1): its weights make the scratch channel TFLite Micro drops, its unweights start channel 0;
     band 1 (bins 1..2): its weights end channel 0, its unweights make channel 1. */
  const uint32_t energies[3] = {10u, 20u, 4000000000u};
  const int16_t weights[4] = {1, 2, 3, -1}, unweights[4] = {5, 6, 7, 8};
  const int16_t starts[3] = {0, 1, 0}, weight_starts[3] = {0, 2, 0}, widths[3] = {2, 2, 0};
  uint64_t channels[2];
  uint32_t input[2] = {100u, 100u}, noise[2] = {0u, 0u}, output[2], noise_out[2];
  const int16_t gains[125] = {100, 200, 300};
  uint32_t pcan_in[2] = {4096u, 4096u}, pcan_noise[2] = {1u, 0u}, pcan_out[2];
  lp_signal_filter_bank(energies, weights, unweights, starts, weight_starts, widths, channels, 2);
  failed |= expect((long long)channels[0], 5 * 10 + 6 * 20 + 3 * 20 - 4000000000LL,
                   "a negative weight wraps the uint64 sum", 0);
  failed |= expect((long long)channels[1], 7 * 20 + 8 * 4000000000LL, "the last band's unweights", 1);
  /* Half the signal into the estimate (8192 / 2^14) each frame: 50, then 75; at least 1/8 of the signal. */
  lp_signal_spectral_subtraction(input, noise, output, noise_out, 2, 8192, 8192, 8192, 8192, 2048, 0, 14, 1);
  failed |= expect(noise[0], 50, "noise estimate", 0);
  failed |= expect(output[0], 50, "spectral subtraction", 0);
  lp_signal_spectral_subtraction(input, noise, output, noise_out, 2, 8192, 8192, 8192, 8192, 2048, 0, 14, 1);
  failed |= expect(noise_out[1], 75, "noise estimate copied out", 1);
  input[0] = 10u;
  lp_signal_spectral_subtraction(input, noise, output, noise_out, 2, 8192, 8192, 8192, 8192, 2048, 0, 14, 1);
  failed |= expect(noise[0], 10, "clamping pulls the estimate down to the signal", 0);
  failed |= expect(output[0], 1, "at least min_signal_remaining of the signal", 0);
  /* Gain lut[1] = 200: snr = 4096 * 200 >> 6 = 12800 >= 2 << 12, so (12800 >> 6) - 64; gain lut[0] = 100:
     6400 < 8192, so 6400^2 >> 20. */
  lp_signal_pcan(pcan_in, pcan_noise, gains, pcan_out, 2, 6);
  failed |= expect(pcan_out[0], 136, "pcan above 2", 0);
  failed |= expect(pcan_out[1], (6400LL * 6400) >> 20, "pcan below 2", 1);
  return failed;
}

/* KISS FFT's twiddles for n complex points, scaled to int16 as kf_cexp does (floor(0.5 + 32767 cos)). */
static void twiddles16(int32_t *tw, int32_t *super_tw, int32_t n)
{
  const double pi = 3.14159265358979323846;
  int32_t i;
  for (i = 0; i < n; ++i) {
    tw[2 * i] = (int32_t)floor(0.5 + 32767.0 * cos(-2.0 * pi * i / n));
    tw[2 * i + 1] = (int32_t)floor(0.5 + 32767.0 * sin(-2.0 * pi * i / n));
  }
  for (i = 0; i < n / 2; ++i) {
    super_tw[2 * i] = (int32_t)floor(0.5 + 32767.0 * cos(-pi * ((double)(i + 1) / n + 0.5)));
    super_tw[2 * i + 1] = (int32_t)floor(0.5 + 32767.0 * sin(-pi * ((double)(i + 1) / n + 0.5)));
  }
}

static int test_fft(void)
{
  /* A cosine at bin 5 of a 120-point real FFT (radices 4, 3, 5): its energy at bin 5 only, to a few LSB (the
     fixed-point FFT divides by each radix as it goes, so the peak is the amplitude / 2). */
  int failed = 0;
  const int32_t factors[6] = {4, 15, 3, 5, 5, 1};
  static int32_t tw[2 * 60], super_tw[2 * 30], work[3 * 120 + 2];
  static int16_t signal[120], spectrum[122];
  int32_t i;
  twiddles16(tw, super_tw, 60);
  for (i = 0; i < 120; ++i) {
    signal[i] = (int16_t)lround(16000.0 * cos(2.0 * 3.14159265358979323846 * 5.0 * i / 120.0));
  }
  lp_signal_rfft_s16(signal, tw, super_tw, factors, spectrum, work, 1, 120, 120, 3);
  for (i = 0; i <= 60 && !failed; ++i) {
    const long long magnitude = llabs((long long)spectrum[2 * i]) + llabs((long long)spectrum[2 * i + 1]);
    failed |= expect(i == 5 ? llabs(magnitude - 8000) <= 4 : magnitude <= 4, 1, "rfft of a cosine", i);
  }
  return failed;
}

static int test_streams(void)
{
  int failed = 0;
  const int16_t first[3] = {1, 2, 3}, second[3] = {4, 5, 6};
  int16_t history[5] = {0, 0, 0, 0, 0}, out[4];
  int16_t buffer[4] = {0, 0, 0, 0};
  const int16_t loud[4] = {30000, 30000, 1, 1}, louder[4] = {32767, 5, 0, 0};
  int16_t fifo[16] = {0};
  int32_t counts[2] = {0, 0};
  bool valid = true;
  const int16_t a[2] = {1, 2}, b[2] = {3, 4}, c[1] = {7}, d[1] = {8};
  lp_signal_delay_s16(first, history, out, 1, 3, 2);
  failed |= expect(out[2], 1, "delay by 2", 2);
  lp_signal_delay_s16(second, history, out, 1, 3, 2);
  failed |= expect(out[0] * 100 + out[1] * 10 + out[2], 234, "delay by 2", 0);
  lp_signal_overlap_add_s16(loud, buffer, out, 1, 1, 4, 2);
  lp_signal_overlap_add_s16(louder, buffer, out, 1, 1, 4, 2);
  failed |= expect(out[0], 32767, "overlap-add saturates", 0);
  failed |= expect(out[1], 6, "overlap-add", 1);
  lp_signal_framer_s16(a, fifo, counts, out, &valid, 1, 1, 4, 2, 4);
  failed |= expect(valid, 0, "framer waits for a whole frame", 0);
  lp_signal_framer_s16(b, fifo, counts, out, &valid, 1, 1, 4, 2, 4);
  failed |= expect(valid * 10000 + out[0] * 1000 + out[1] * 100 + out[2] * 10 + out[3], 11234, "framer", 0);
  counts[0] = 0;
  lp_signal_stacker_s16(c, fifo, counts, out, &valid, 1, 1, 3, 1);
  failed |= expect(valid, 0, "stacker waits for the right context", 0);
  lp_signal_stacker_s16(d, fifo, counts, out, &valid, 1, 1, 3, 1);
  failed |= expect(valid * 1000 + out[0] * 100 + out[1] * 10 + out[2], 1778, "stacker repeats the first frame", 0);
  return failed;
}

int main(void)
{
  static uint16_t lut[130];
  int32_t i;
  for (i = 0; i < 129; ++i) {
    lut[i] = (uint16_t)lround(65536.0 * (log2(1.0 + i / 128.0) - i / 128.0));
  }
  if (test_bits() || test_square_roots() || test_log(lut) || test_spectrum() || test_filter_bank_stages()
      || test_fft() || test_streams()) {
    return 1;
  }
  printf("ok %d\n", checks);
  return 0;
}
