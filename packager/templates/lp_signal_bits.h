/* lp_signal_bits.h: the integer arithmetic of TFLite Micro's signal library (signal/src: msb, square root,
   logarithm), bit-exact with TFLite Micro built by GCC or Clang, for the signal kernels of a tvm_ext bundle.
   C99 without undefined or implementation-defined behaviour: a negative value is shifted right through its
   complement (a floor division by a power of two, what GCC's arithmetic shift computes), and every
   wrap-around TFLite Micro's C++ gets from a narrowing assignment or an overflowing int goes through an
   unsigned type here. */
#ifndef LP_SIGNAL_BITS_H
#define LP_SIGNAL_BITS_H

#include <stdint.h>

/* The bit length of x (the index of its highest set bit plus one), and 32 for 0: TFLite Micro's
   MostSignificantBit32 as GCC and Clang build it (32 - __builtin_clz(x), 32 for 0). */
static inline int32_t lp_signal_msb32(uint32_t x)
{
  int32_t bits = 0;
  if (x == 0u) {
    return 32;
  }
  while (x != 0u) {
    x >>= 1;
    ++bits;
  }
  return bits;
}

/* The bit length of x, and 64 for 0 (TFLite Micro's MostSignificantBit64 as GCC and Clang build it). */
static inline int32_t lp_signal_msb64(uint64_t x)
{
  if ((x >> 32) != 0u) {
    return 32 + lp_signal_msb32((uint32_t)(x >> 32));
  }
  return x == 0u ? 64 : lp_signal_msb32((uint32_t)x);
}

/* floor(x / 2^shift) for 0 <= shift <= 31: C++'s x >> shift on the compilers TFLite Micro is built with. */
static inline int32_t lp_signal_asr32(int32_t x, int32_t shift)
{
  return x >= 0 ? x >> shift : ~(~x >> shift);
}

/* floor(x / 2^shift) for 0 <= shift <= 63. */
static inline int64_t lp_signal_asr64(int64_t x, int32_t shift)
{
  return x >= 0 ? x >> shift : ~(~x >> shift);
}

/* x modulo 2^16 as an int16_t: what assigning an int to an int16_t keeps. */
static inline int16_t lp_signal_wrap16(int32_t x)
{
  const int32_t low = (int32_t)((uint32_t)x & 0xFFFFu);
  return (int16_t)(low >= 0x8000 ? low - 0x10000 : low);
}

/* x modulo 2^32 as an int32_t: what an overflowing int addition or product gives on two's-complement
   machines. */
static inline int32_t lp_signal_wrap32(int64_t x)
{
  const uint32_t low = (uint32_t)((uint64_t)x & 0xFFFFFFFFu);
  return low >= 0x80000000u ? (int32_t)(low - 0x80000000u) - INT32_MAX - 1 : (int32_t)low;
}

/* TFLite Micro's square root of a nonzero `width`-bit num (its Sqrt32 and Sqrt64 are these steps on 32 and 64
   bits; their values agree in 64-bit arithmetic): bit by bit from the highest even bit, then rounded up when
   the remainder exceeds the root, unless the root is the largest of width / 2 bits. */
static inline uint64_t lp_signal_sqrt_bits(uint64_t num, int32_t width)
{
  const uint64_t largest = width == 32 ? 0xFFFFu : 0xFFFFFFFFu;
  const int32_t max_bit_number = (width - lp_signal_msb64(num)) | 1;
  uint64_t res = 0u;
  uint64_t bit = (uint64_t)1u << (width - 1 - max_bit_number);
  int32_t iterations = (width - 1 - max_bit_number) / 2 + 1;
  while (iterations-- > 0) {
    if (num >= res + bit) {
      num -= res + bit;
      res = (res >> 1) + bit;
    } else {
      res >>= 1;
    }
    bit >>= 2;
  }
  if (num > res && res != largest) {
    ++res;
  }
  return res;
}

/* TFLite Micro's Sqrt32: the square root of num, rounded as lp_signal_sqrt_bits says. */
static inline uint16_t lp_signal_sqrt32(uint32_t num)
{
  return num == 0u ? 0u : (uint16_t)lp_signal_sqrt_bits(num, 32);
}

/* TFLite Micro's Sqrt64: Sqrt32 where the upper word is clear (TFLite Micro's shortcut, off by one near
   2^32), else the same steps on 64 bits. */
static inline uint32_t lp_signal_sqrt64(uint64_t num)
{
  return (num >> 32) == 0u ? lp_signal_sqrt32((uint32_t)num) : (uint32_t)lp_signal_sqrt_bits(num, 64);
}

/* TFLite Micro's Log32: out_scale * ln(x) for x >= 2, in uint32 arithmetic (which wraps), from log2(x)'s
   integer part and its fraction in 16 bits, the fraction corrected by linear interpolation in `lut`
   (130 entries: round(2^16 (log2(1 + i/128) - i/128)) for i <= 128, then 0), times round(2^16 ln 2). */
static inline uint32_t lp_signal_log32(uint32_t x, uint32_t out_scale, const uint16_t *lut)
{
  const int32_t integer = lp_signal_msb32(x) - 1;
  int32_t frac = (int32_t)(x - (1u << integer));
  uint32_t base_seg;
  int32_t c0, c1, rel_pos;
  uint32_t fraction, log2, loge;
  if (integer < 16) {
    frac = (int32_t)((uint32_t)frac << (16 - integer));
  } else {
    frac >>= integer - 16;
  }
  base_seg = (uint32_t)frac >> 9;
  c0 = (int32_t)lut[base_seg];
  c1 = (int32_t)lut[base_seg + 1u];
  rel_pos = lp_signal_asr32((c1 - c0) * (frac - (int32_t)(512u * base_seg)), 16);
  fraction = (uint32_t)(frac + c0 + rel_pos);
  log2 = ((uint32_t)integer << 16) + fraction;
  loge = (uint32_t)(((uint64_t)45426u * log2 + 32768u) >> 16);
  return (out_scale * loge + 32768u) >> 16;
}

#endif /* LP_SIGNAL_BITS_H */
