/* Unit tests of the bundle's quantize helpers (packager/templates/lp_quantize.h), built with the strict warnings
   and the sanitizers by tests/test_quantize_helpers_c.py. Each case states the value by hand: ties, the
   saturation at each type's ends, infinities and NaN, the zero point's sign. Bit-exactness against TFLite
   Micro's QUANTIZE/DEQUANTIZE and onnxruntime's QuantizeLinear/DequantizeLinear on random values is that
   file's. Prints "ok <count>" and exits 0, or names the first failure and exits 1. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lp_quantize.h"

static int checks = 0;

static int expect(long got, long want, const char *what, double at)
{
  ++checks;
  if (got != want) {
    printf("FAIL %s at %.9g: got %ld, expected %ld\n", what, at, got, want);
    return 1;
  }
  return 0;
}

static int expect_float(float got, float want, const char *what, long at)
{
  ++checks;
  if (memcmp(&got, &want, sizeof got) != 0) {
    printf("FAIL %s at %ld: got %a, expected %a\n", what, at, (double)got, (double)want);
    return 1;
  }
  return 0;
}

#define AWAY LP_ROUND_HALF_AWAY_FROM_ZERO
#define EVEN LP_ROUND_HALF_TO_EVEN

static int test_ties(void)
{
  /* Scale 0.5: value / scale is exact, so these are ties of the rounding itself. */
  static const float values[] = {0.25f, 0.75f, 1.25f, -0.25f, -0.75f, -1.25f, 0.2f, -0.3f};
  static const long away[] = {1, 2, 3, -1, -2, -3, 0, -1};
  static const long even[] = {0, 2, 2, 0, -2, -2, 0, -1};
  int failed = 0;
  for (size_t i = 0; i < sizeof values / sizeof values[0]; ++i) {
    failed |= expect(lp_quantize_value(values[i], 0.5f, 0, -128, 127, AWAY), away[i], "ties away", values[i]);
    failed |= expect(lp_quantize_value(values[i], 0.5f, 0, -128, 127, EVEN), even[i], "ties to even", values[i]);
  }
  /* The zero point is added after rounding: a tie rounds by value / scale's parity, not q's. */
  failed |= expect(lp_quantize_value(0.25f, 0.5f, 3, -128, 127, EVEN), 3, "tie then zero point", 0.25);
  failed |= expect(lp_quantize_value(0.25f, 0.5f, 3, -128, 127, AWAY), 4, "tie then zero point", 0.25);
  /* The largest float below 0.5 is no tie. */
  failed |= expect(lp_quantize_value(nextafterf(0.5f, 0.0f), 1.0f, 0, -128, 127, AWAY), 0, "below a tie", 0.5);
  return failed;
}

static int test_saturation(void)
{
  int failed = 0;
  failed |= expect(lp_quantize_value(1000.0f, 1.0f, 0, -128, 127, AWAY), 127, "int8 high", 1000.0);
  failed |= expect(lp_quantize_value(-1000.0f, 1.0f, 0, -128, 127, AWAY), -128, "int8 low", -1000.0);
  failed |= expect(lp_quantize_value(127.5f, 1.0f, -1, -128, 127, AWAY), 127, "int8 high with zero point", 127.5);
  failed |= expect(lp_quantize_value(-127.5f, 1.0f, -1, -128, 127, EVEN), -128, "int8 low tie", -127.5);
  failed |= expect(lp_quantize_value(3e38f, 1e-3f, 0, -32768, 32767, AWAY), 32767, "int16 beyond int32", 3e38);
  failed |= expect(lp_quantize_value(-3e38f, 1e-3f, 0, -32768, 32767, AWAY), -32768, "int16 below int32", -3e38);
  failed |= expect(lp_quantize_value(HUGE_VALF, 1.0f, 0, -128, 127, AWAY), 127, "+inf", 0.0);
  failed |= expect(lp_quantize_value(-HUGE_VALF, 1.0f, 0, 0, 255, EVEN), 0, "-inf uint8", 0.0);
  failed |= expect(lp_quantize_value(NAN, 1.0f, 5, -128, 127, AWAY), -128, "NaN", 0.0);
  failed |= expect(lp_quantize_value(-2.0f, 1.0f, 128, 0, 255, EVEN), 126, "uint8", -2.0);
  failed |= expect(lp_quantize_value(200.0f, 1.0f, 128, 0, 255, EVEN), 255, "uint8 high", 200.0);
  return failed;
}

static int test_arrays(void)
{
  static const float values[] = {-1.0f, -0.015625f, 0.0f, 0.0078125f, 1.0f};
  int8_t s8[5];
  uint8_t u8[5];
  int16_t s16[5];
  float back[5];
  int failed = 0;
  lp_quantize_s8(values, s8, 5, 0.015625f, -1, AWAY);
  lp_quantize_u8(values, u8, 5, 0.015625f, 128, EVEN);
  lp_quantize_s16(values, s16, 5, 0.0078125f, 0, AWAY);
  static const long want_s8[] = {-65, -2, -1, 0, 63};   /* 0.5 rounds away to 1, then -1 */
  static const long want_u8[] = {64, 127, 128, 128, 192}; /* 0.5 rounds to 0, even */
  static const long want_s16[] = {-128, -2, 0, 1, 128};
  for (long i = 0; i < 5; ++i) {
    failed |= expect(s8[i], want_s8[i], "lp_quantize_s8", values[i]);
    failed |= expect(u8[i], want_u8[i], "lp_quantize_u8", values[i]);
    failed |= expect(s16[i], want_s16[i], "lp_quantize_s16", values[i]);
  }
  lp_dequantize_s8(s8, back, 5, 0.015625f, -1);
  for (long i = 0; i < 5; ++i) {
    failed |= expect_float(back[i], 0.015625f * (float)(want_s8[i] + 1), "lp_dequantize_s8", i);
  }
  lp_dequantize_u8(u8, back, 5, 0.015625f, 128);
  failed |= expect_float(back[0], -1.0f, "lp_dequantize_u8", 0);
  lp_dequantize_s16(s16, back, 5, 0.0078125f, 0);
  failed |= expect_float(back[4], 1.0f, "lp_dequantize_s16", 4);
  /* The extremes: (q - zero_point) spans 255 and 65535 steps. */
  failed |= expect_float(lp_dequantize_value(-128, 0.1f, 127), 0.1f * -255.0f, "int8 span", -128);
  failed |= expect_float(lp_dequantize_value(32767, 3.0517578125e-05f, 0), 32767.0f * 3.0517578125e-05f, "int16", 32767);
  return failed;
}

int main(void)
{
  int failed = test_ties() | test_saturation() | test_arrays();
  if (failed) {
    return 1;
  }
  printf("ok %d\n", checks);
  return 0;
}
