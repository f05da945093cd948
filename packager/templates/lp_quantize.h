/* Floats to and from the quantized values of a bundle's inputs and outputs: real = scale * (q - zero_point).
 *
 * Hand-written C99 (packager/templates/lp_quantize.h, unit-tested by tests/c/test_quantize_helpers.c), copied
 * into the header of each bundle with an int8, uint8 or int16 input or output quantized per tensor, whose
 * <model>_quantize_input<k>() and <model>_dequantize_output<k>() call these with the tensor's constants. The guard lets two bundle headers
 * share one copy. Every function is static inline: none adds an external symbol to a program.
 *
 * Quantizing computes value / scale in float, as TFLite Micro's QUANTIZE and onnxruntime's QuantizeLinear do,
 * rounds it to an integer by the model's own rule (TFLite: to nearest, ties away from zero, as TfLiteRound and
 * std::round; ONNX: to nearest, ties to even), adds the zero point and saturates to the type's range. A value
 * beyond the range (infinities too) gives the range's end; NaN gives its lowest value, as both runtimes compute
 * it on x86-64 (C leaves their float-to-integer conversion of NaN undefined; this never converts one).
 * Dequantizing computes scale * (q - zero_point) in float: one rounding of the exact product, which is what
 * TFLite's double-precision product cast to float and ONNX's float product both give.
 */
#ifndef LP_QUANTIZE_H
#define LP_QUANTIZE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define LP_ROUND_HALF_AWAY_FROM_ZERO 0 /* TFLite's QUANTIZE */
#define LP_ROUND_HALF_TO_EVEN 1        /* ONNX's QuantizeLinear */

/* round(value / scale) + zero_point, saturated to [low, high]; `rounding` is LP_ROUND_HALF_AWAY_FROM_ZERO or
 * LP_ROUND_HALF_TO_EVEN. low - zero_point and high - zero_point must lie within +-2^24 (exact as floats). */
static inline int32_t lp_quantize_value(float value, float scale, int32_t zero_point, int32_t low, int32_t high,
                                        int rounding)
{
  const float scaled = value / scale;
  float rounded = roundf(scaled); /* ties away from zero */
  if (rounding == LP_ROUND_HALF_TO_EVEN && fabsf(rounded - scaled) == 0.5f && fmodf(rounded, 2.0f) != 0.0f) {
    rounded -= copysignf(1.0f, scaled); /* a tie rounded to the odd neighbour: take the even one */
  }
  if (!(rounded >= (float)(low - zero_point))) { /* below the range, or NaN */
    return low;
  }
  if (rounded > (float)(high - zero_point)) {
    return high;
  }
  return (int32_t)rounded + zero_point;
}

/* scale * (q - zero_point) as a float. */
static inline float lp_dequantize_value(int32_t q, float scale, int32_t zero_point)
{
  return scale * (float)(q - zero_point);
}

/* `count` floats of `values` quantized into `quantized` (int8_t, uint8_t, int16_t). */
static inline void lp_quantize_s8(const float *values, int8_t *quantized, size_t count, float scale,
                                  int32_t zero_point, int rounding)
{
  for (size_t i = 0; i < count; ++i) {
    quantized[i] = (int8_t)lp_quantize_value(values[i], scale, zero_point, INT8_MIN, INT8_MAX, rounding);
  }
}

static inline void lp_quantize_u8(const float *values, uint8_t *quantized, size_t count, float scale,
                                  int32_t zero_point, int rounding)
{
  for (size_t i = 0; i < count; ++i) {
    quantized[i] = (uint8_t)lp_quantize_value(values[i], scale, zero_point, 0, UINT8_MAX, rounding);
  }
}

static inline void lp_quantize_s16(const float *values, int16_t *quantized, size_t count, float scale,
                                   int32_t zero_point, int rounding)
{
  for (size_t i = 0; i < count; ++i) {
    quantized[i] = (int16_t)lp_quantize_value(values[i], scale, zero_point, INT16_MIN, INT16_MAX, rounding);
  }
}

/* `count` quantized values of `quantized` (int8_t, uint8_t, int16_t) as floats into `values`. */
static inline void lp_dequantize_s8(const int8_t *quantized, float *values, size_t count, float scale,
                                    int32_t zero_point)
{
  for (size_t i = 0; i < count; ++i) {
    values[i] = lp_dequantize_value(quantized[i], scale, zero_point);
  }
}

static inline void lp_dequantize_u8(const uint8_t *quantized, float *values, size_t count, float scale,
                                    int32_t zero_point)
{
  for (size_t i = 0; i < count; ++i) {
    values[i] = lp_dequantize_value(quantized[i], scale, zero_point);
  }
}

static inline void lp_dequantize_s16(const int16_t *quantized, float *values, size_t count, float scale,
                                     int32_t zero_point)
{
  for (size_t i = 0; i < count; ++i) {
    values[i] = lp_dequantize_value(quantized[i], scale, zero_point);
  }
}

#endif /* LP_QUANTIZE_H */
