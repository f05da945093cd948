/* lp_signal_fft.h: TFLite Micro's SignalRfft and SignalIrfft, the real FFTs of KISS FFT 1.3.0
   (kiss_fftr/kiss_fftri over kiss_fft's mixed-radix complex FFT of half the length, as TFLite Micro
   builds them), bit-exact for int16 and int32, in the same order of operations for float. No recursion:
   the complex FFT's leaves are copied in KISS FFT's order first, then its stages run from the innermost
   (independent blocks of a stage in any order compute what KISS FFT's depth-first recursion does).

   Complex values are interleaved (re, im). The fixed-point FFTs compute on int32 work arrays and store
   every value KISS FFT stores in its scalar type wrapped to `bits` (16 or 32): Q15 or Q31 products rounded
   half up, each butterfly input divided by its radix first (C_FIXDIV). The caller gives the compile-time
   facts: `factors` (radix, remaining length) pairs as kf_factor computes them, radices 2 to 5 only
   (KISS FFT's generic butterfly allocates, which TFLite Micro's build cannot); `twiddles` (n complex, KISS
   FFT's exp(-+2 pi i k / n) scaled to the scalar type) and `super_twiddles` (n / 2 complex, the real FFT's
   exp(-+i pi ((k + 1) / n + 1/2))) for the direction. Sizes are in elements. Each operator's helper takes the
   kernel's operands in its order: the input, the tables, the output, the work array, then the sizes. Needs
   lp_signal_bits.h. */
#ifndef LP_SIGNAL_FFT_H
#define LP_SIGNAL_FFT_H

#include <stdint.h>
#include <string.h> /* memcpy */

/* --- fixed point (FIXED_POINT 16 or 32) --------------------------------------------------------------- */

/* The fixed-point primitives for `bits` 16 compute in int32, which holds every intermediate value there (a sum
   of two Q15 products is at most 2^31 - 2^16, a sum of three int16 values far less), and for 32 in int64. */

/* x modulo 2^bits as a signed value: what storing it in KISS FFT's int16 or int32 scalar keeps. */
static inline int32_t lp_fft_store(int64_t x, int32_t bits)
{
  return bits == 16 ? (int32_t)lp_signal_wrap16(lp_signal_wrap32(x)) : lp_signal_wrap32(x);
}

/* sround(x): (x + 2^(frac - 1)) >> frac, stored, for frac = bits - 1. */
static inline int32_t lp_fft_round(int64_t x, int32_t bits)
{
  if (bits == 16) {
    return lp_signal_wrap16(lp_signal_asr32(lp_signal_wrap32(x) + (1 << 14), 15));
  }
  return lp_signal_wrap32(lp_signal_asr64(x + ((int64_t)1 << 30), 31));
}

/* HALF_OF(x) of an int sum: x >> 1 of the int (which wraps at 32 bits), stored. */
static inline int32_t lp_fft_half(int64_t x, int32_t bits)
{
  return lp_fft_store(lp_signal_asr32(lp_signal_wrap32(x), 1), bits);
}

/* S_MUL(a, b): a * b rounded. */
static inline int32_t lp_fft_smul(int32_t a, int32_t b, int32_t bits)
{
  return bits == 16 ? lp_fft_round(a * b, 16) : lp_fft_round((int64_t)a * b, 32);
}

/* C_FIXDIV(c, divisor) of the complex at c: each part rounded times SAMP_MAX / divisor. */
static inline void lp_fft_fixdiv(int32_t *c, int32_t divisor, int32_t bits)
{
  const int32_t factor = (bits == 16 ? INT16_MAX : INT32_MAX) / divisor;
  c[0] = lp_fft_smul(c[0], factor, bits);
  c[1] = lp_fft_smul(c[1], factor, bits);
}

/* C_MUL(m, a, b): m = a * b, each part rounded. m may be a or b. */
static inline void lp_fft_mul(int32_t *m, const int32_t *a, const int32_t *b, int32_t bits)
{
  int32_t re, im;
  if (bits == 16) {
    re = lp_fft_round(a[0] * b[0] - a[1] * b[1], 16);
    im = lp_fft_round(a[0] * b[1] + a[1] * b[0], 16);
  } else {
    re = lp_fft_round((int64_t)a[0] * b[0] - (int64_t)a[1] * b[1], 32);
    im = lp_fft_round((int64_t)a[0] * b[1] + (int64_t)a[1] * b[0], 32);
  }
  m[0] = re;
  m[1] = im;
}

static inline void lp_fft_add(int32_t *m, const int32_t *a, const int32_t *b, int32_t bits)
{
  const int64_t re = (int64_t)a[0] + b[0], im = (int64_t)a[1] + b[1];
  m[0] = lp_fft_store(re, bits);
  m[1] = lp_fft_store(im, bits);
}

static inline void lp_fft_sub(int32_t *m, const int32_t *a, const int32_t *b, int32_t bits)
{
  const int64_t re = (int64_t)a[0] - b[0], im = (int64_t)a[1] - b[1];
  m[0] = lp_fft_store(re, bits);
  m[1] = lp_fft_store(im, bits);
}

/* kf_bfly2 on the block at f: m butterflies of stride m. */
static inline void lp_fft_bfly2(int32_t *f, int32_t fstride, const int32_t *tw, int32_t m, int32_t bits)
{
  int32_t k;
  for (k = 0; k < m; ++k) {
    int32_t *a = f + 2 * k, *b = f + 2 * (k + m);
    int32_t t[2];
    lp_fft_fixdiv(a, 2, bits);
    lp_fft_fixdiv(b, 2, bits);
    lp_fft_mul(t, b, tw + 2 * k * fstride, bits);
    lp_fft_sub(b, a, t, bits);
    lp_fft_add(a, a, t, bits);
  }
}

/* kf_bfly3. */
static inline void lp_fft_bfly3(int32_t *f, int32_t fstride, const int32_t *tw, int32_t m, int32_t bits)
{
  const int32_t epi3_im = tw[2 * fstride * m + 1];
  int32_t k;
  for (k = 0; k < m; ++k) {
    int32_t *f0 = f + 2 * k, *f1 = f + 2 * (k + m), *f2 = f + 2 * (k + 2 * m);
    int32_t s0[2], s1[2], s2[2], s3[2];
    lp_fft_fixdiv(f0, 3, bits);
    lp_fft_fixdiv(f1, 3, bits);
    lp_fft_fixdiv(f2, 3, bits);
    lp_fft_mul(s1, f1, tw + 2 * k * fstride, bits);
    lp_fft_mul(s2, f2, tw + 4 * k * fstride, bits);
    lp_fft_add(s3, s1, s2, bits);
    lp_fft_sub(s0, s1, s2, bits);
    f1[0] = lp_fft_store((int64_t)f0[0] - lp_signal_asr32(s3[0], 1), bits);
    f1[1] = lp_fft_store((int64_t)f0[1] - lp_signal_asr32(s3[1], 1), bits);
    s0[0] = lp_fft_round((int64_t)s0[0] * epi3_im, bits);
    s0[1] = lp_fft_round((int64_t)s0[1] * epi3_im, bits);
    lp_fft_add(f0, f0, s3, bits);
    f2[0] = lp_fft_store((int64_t)f1[0] + s0[1], bits);
    f2[1] = lp_fft_store((int64_t)f1[1] - s0[0], bits);
    f1[0] = lp_fft_store((int64_t)f1[0] - s0[1], bits);
    f1[1] = lp_fft_store((int64_t)f1[1] + s0[0], bits);
  }
}

/* kf_bfly4 (`inverse` selects the rotation's sign). */
static inline void lp_fft_bfly4(int32_t *f, int32_t fstride, const int32_t *tw, int32_t m, int32_t inverse,
                                int32_t bits)
{
  int32_t k;
  for (k = 0; k < m; ++k) {
    int32_t *f0 = f + 2 * k, *f1 = f + 2 * (k + m), *f2 = f + 2 * (k + 2 * m), *f3 = f + 2 * (k + 3 * m);
    int32_t s0[2], s1[2], s2[2], s3[2], s4[2], s5[2];
    lp_fft_fixdiv(f0, 4, bits);
    lp_fft_fixdiv(f1, 4, bits);
    lp_fft_fixdiv(f2, 4, bits);
    lp_fft_fixdiv(f3, 4, bits);
    lp_fft_mul(s0, f1, tw + 2 * k * fstride, bits);
    lp_fft_mul(s1, f2, tw + 4 * k * fstride, bits);
    lp_fft_mul(s2, f3, tw + 6 * k * fstride, bits);
    lp_fft_sub(s5, f0, s1, bits);
    lp_fft_add(f0, f0, s1, bits);
    lp_fft_add(s3, s0, s2, bits);
    lp_fft_sub(s4, s0, s2, bits);
    lp_fft_sub(f2, f0, s3, bits);
    lp_fft_add(f0, f0, s3, bits);
    if (inverse != 0) {
      f1[0] = lp_fft_store((int64_t)s5[0] - s4[1], bits);
      f1[1] = lp_fft_store((int64_t)s5[1] + s4[0], bits);
      f3[0] = lp_fft_store((int64_t)s5[0] + s4[1], bits);
      f3[1] = lp_fft_store((int64_t)s5[1] - s4[0], bits);
    } else {
      f1[0] = lp_fft_store((int64_t)s5[0] + s4[1], bits);
      f1[1] = lp_fft_store((int64_t)s5[1] - s4[0], bits);
      f3[0] = lp_fft_store((int64_t)s5[0] - s4[1], bits);
      f3[1] = lp_fft_store((int64_t)s5[1] + s4[0], bits);
    }
  }
}

/* a + b + c, stored (bfly5's sums of S_MUL products, in int). */
static inline int32_t lp_fft_sum3(int64_t a, int64_t b, int64_t c, int32_t bits)
{
  return lp_fft_store(a + b + c, bits);
}

/* kf_bfly5. */
static inline void lp_fft_bfly5(int32_t *f, int32_t fstride, const int32_t *tw, int32_t m, int32_t bits)
{
  const int32_t *ya = tw + 2 * fstride * m, *yb = tw + 4 * fstride * m;
  int32_t u;
  for (u = 0; u < m; ++u) {
    int32_t *f0 = f + 2 * u, *f1 = f + 2 * (u + m), *f2 = f + 2 * (u + 2 * m), *f3 = f + 2 * (u + 3 * m);
    int32_t *f4 = f + 2 * (u + 4 * m);
    int32_t s[13][2];
    lp_fft_fixdiv(f0, 5, bits);
    lp_fft_fixdiv(f1, 5, bits);
    lp_fft_fixdiv(f2, 5, bits);
    lp_fft_fixdiv(f3, 5, bits);
    lp_fft_fixdiv(f4, 5, bits);
    s[0][0] = f0[0];
    s[0][1] = f0[1];
    lp_fft_mul(s[1], f1, tw + 2 * u * fstride, bits);
    lp_fft_mul(s[2], f2, tw + 4 * u * fstride, bits);
    lp_fft_mul(s[3], f3, tw + 6 * u * fstride, bits);
    lp_fft_mul(s[4], f4, tw + 8 * u * fstride, bits);
    lp_fft_add(s[7], s[1], s[4], bits);
    lp_fft_sub(s[10], s[1], s[4], bits);
    lp_fft_add(s[8], s[2], s[3], bits);
    lp_fft_sub(s[9], s[2], s[3], bits);
    f0[0] = lp_fft_store((int64_t)f0[0] + ((int64_t)s[7][0] + s[8][0]), bits);
    f0[1] = lp_fft_store((int64_t)f0[1] + ((int64_t)s[7][1] + s[8][1]), bits);
    s[5][0] = lp_fft_sum3(s[0][0], lp_fft_smul(s[7][0], ya[0], bits), lp_fft_smul(s[8][0], yb[0], bits), bits);
    s[5][1] = lp_fft_sum3(s[0][1], lp_fft_smul(s[7][1], ya[0], bits), lp_fft_smul(s[8][1], yb[0], bits), bits);
    s[6][0] = lp_fft_sum3(0, lp_fft_smul(s[10][1], ya[1], bits), lp_fft_smul(s[9][1], yb[1], bits), bits);
    s[6][1] = lp_fft_sum3(0, -(int64_t)lp_fft_smul(s[10][0], ya[1], bits), -(int64_t)lp_fft_smul(s[9][0], yb[1], bits),
                          bits);
    lp_fft_sub(f1, s[5], s[6], bits);
    lp_fft_add(f4, s[5], s[6], bits);
    s[11][0] = lp_fft_sum3(s[0][0], lp_fft_smul(s[7][0], yb[0], bits), lp_fft_smul(s[8][0], ya[0], bits), bits);
    s[11][1] = lp_fft_sum3(s[0][1], lp_fft_smul(s[7][1], yb[0], bits), lp_fft_smul(s[8][1], ya[0], bits), bits);
    s[12][0] = lp_fft_sum3(0, -(int64_t)lp_fft_smul(s[10][1], yb[1], bits), lp_fft_smul(s[9][1], ya[1], bits), bits);
    s[12][1] = lp_fft_sum3(0, lp_fft_smul(s[10][0], yb[1], bits), -(int64_t)lp_fft_smul(s[9][0], ya[1], bits), bits);
    lp_fft_add(f2, s[11], s[12], bits);
    lp_fft_sub(f3, s[11], s[12], bits);
  }
}

/* kf_work's leaves: the n complex values of `in` copied to `out` (separate arrays) in its order: output value
   j, whose mixed-radix digits over the remaining lengths are k_s (j = sum k_s * m_s), is input value
   sum k_s * p_0 ... p_(s-1). The digits are counted up with j (the last stage's is the lowest). Both scalar
   types here, int32 and float, are 4 bytes: a complex value is 8. */
static inline void lp_fft_leaves(const void *in, void *out, int32_t n, const int32_t *factors, int32_t stages)
{
  int32_t digit[32] = {0}, stride[32];
  int32_t j, s, source = 0;
  stride[0] = 1;
  for (s = 1; s < stages; ++s) {
    stride[s] = stride[s - 1] * factors[2 * (s - 1)];
  }
  for (j = 0; j < n; ++j) {
    memcpy((uint8_t *)out + 8 * j, (const uint8_t *)in + 8 * source, 8);
    for (s = stages - 1; s >= 0; --s) {
      if (++digit[s] < factors[2 * s]) {
        source += stride[s];
        break;
      }
      digit[s] = 0;
      source -= (factors[2 * s] - 1) * stride[s];
    }
  }
}

/* Stage s's blocks (innermost: s = stages - 1), each p_s * m_s values: as many as p_0 ... p_(s-1), which is
   also the stage's twiddle stride (fstride). */
static inline int32_t lp_fft_blocks(const int32_t *factors, int32_t s)
{
  int32_t blocks = 1, t;
  for (t = 0; t < s; ++t) {
    blocks *= factors[2 * t];
  }
  return blocks;
}

/* kiss_fft of n complex values from `in` into `out` (separate arrays). */
static inline void lp_fft_complex(const int32_t *in, int32_t *out, int32_t n, const int32_t *factors,
                                  int32_t stages, const int32_t *tw, int32_t inverse, int32_t bits)
{
  int32_t s;
  lp_fft_leaves(in, out, n, factors, stages);
  for (s = stages - 1; s >= 0; --s) {
    const int32_t p = factors[2 * s], m = factors[2 * s + 1], fstride = lp_fft_blocks(factors, s);
    int32_t block;
    for (block = 0; block < fstride; ++block) {
      int32_t *f = out + 2 * block * p * m;
      if (p == 2) {
        lp_fft_bfly2(f, fstride, tw, m, bits);
      } else if (p == 3) {
        lp_fft_bfly3(f, fstride, tw, m, bits);
      } else if (p == 4) {
        lp_fft_bfly4(f, fstride, tw, m, inverse, bits);
      } else {
        lp_fft_bfly5(f, fstride, tw, m, bits);
      }
    }
  }
}

/* The real FFT's split of bin k of an n-point spectrum x (kiss_fftr's f1k and tw, kiss_fftri's fek and fok):
   a = x[k] and b = conj(x[n - k]), each divided by 2, give sum = a + b and product = (a - b) super_tw[k - 1]. */
static inline void lp_fft_split(const int32_t *x, int32_t n, int32_t k, const int32_t *super_tw, int32_t *sum,
                                int32_t *product, int32_t bits)
{
  int32_t a[2], b[2], difference[2];
  a[0] = x[2 * k];
  a[1] = x[2 * k + 1];
  b[0] = x[2 * (n - k)];
  b[1] = lp_fft_store(-(int64_t)x[2 * (n - k) + 1], bits);
  lp_fft_fixdiv(a, 2, bits);
  lp_fft_fixdiv(b, 2, bits);
  lp_fft_add(sum, a, b, bits);
  lp_fft_sub(difference, a, b, bits);
  lp_fft_mul(product, difference, super_tw + 2 * (k - 1), bits);
}

/* kiss_fftr: the real FFT of `time` (n = fft_length / 2 complex values) into `freq` (n + 1 complex), with
   `tmp` (n complex) for the complex FFT. */
static inline void lp_fft_real(const int32_t *time, int32_t *freq, int32_t *tmp, int32_t n, const int32_t *factors,
                               int32_t stages, const int32_t *tw, const int32_t *super_tw, int32_t bits)
{
  int32_t tdc[2], k;
  lp_fft_complex(time, tmp, n, factors, stages, tw, 0, bits);
  tdc[0] = tmp[0];
  tdc[1] = tmp[1];
  lp_fft_fixdiv(tdc, 2, bits);
  freq[0] = lp_fft_store((int64_t)tdc[0] + tdc[1], bits);
  freq[2 * n] = lp_fft_store((int64_t)tdc[0] - tdc[1], bits);
  freq[1] = 0;
  freq[2 * n + 1] = 0;
  for (k = 1; k <= n / 2; ++k) {
    int32_t f1k[2], t[2];
    lp_fft_split(tmp, n, k, super_tw, f1k, t, bits);
    freq[2 * k] = lp_fft_half((int64_t)f1k[0] + t[0], bits);
    freq[2 * k + 1] = lp_fft_half((int64_t)f1k[1] + t[1], bits);
    freq[2 * (n - k)] = lp_fft_half((int64_t)f1k[0] - t[0], bits);
    freq[2 * (n - k) + 1] = lp_fft_half((int64_t)t[1] - f1k[1], bits);
  }
}

/* kiss_fftri: the inverse real FFT of `freq` (n + 1 complex) into `time` (n complex), `tmp` (n complex). */
static inline void lp_fft_real_inverse(const int32_t *freq, int32_t *time, int32_t *tmp, int32_t n,
                                       const int32_t *factors, int32_t stages, const int32_t *tw,
                                       const int32_t *super_tw, int32_t bits)
{
  int32_t k;
  tmp[0] = lp_fft_store((int64_t)freq[0] + freq[2 * n], bits);
  tmp[1] = lp_fft_store((int64_t)freq[0] - freq[2 * n], bits);
  lp_fft_fixdiv(tmp, 2, bits);
  for (k = 1; k <= n / 2; ++k) {
    int32_t fek[2], fok[2];
    lp_fft_split(freq, n, k, super_tw, fek, fok, bits);
    lp_fft_add(tmp + 2 * k, fek, fok, bits);
    lp_fft_sub(tmp + 2 * (n - k), fek, fok, bits);
    tmp[2 * (n - k) + 1] = lp_fft_store(-(int64_t)tmp[2 * (n - k) + 1], bits);
  }
  lp_fft_complex(tmp, time, n, factors, stages, tw, 1, bits);
}

/* SignalRfft (int16 or int32 by `bits`, its values in `input`/`output` through the int32 `work`: 3 *
   fft_length + 2 elements): each of `rows` rows of input_length samples, zero-padded to fft_length, to
   fft_length / 2 + 1 complex values. The two entry points differ only in the element type. */
static inline void lp_fft_rows(const void *input, const int32_t *tw, const int32_t *super_tw, const int32_t *factors,
                               void *output, int32_t *work, int32_t rows, int32_t input_length,
                               int32_t fft_length, int32_t stages, int32_t bits)
{
  const int32_t n = fft_length / 2;
  int32_t *time = work, *tmp = work + fft_length, *freq = work + 2 * fft_length;
  int32_t row, i;
  for (row = 0; row < rows; ++row) {
    for (i = 0; i < fft_length; ++i) {
      time[i] = i >= input_length ? 0
              : bits == 16 ? ((const int16_t *)input)[row * input_length + i]
                           : ((const int32_t *)input)[row * input_length + i];
    }
    lp_fft_real(time, freq, tmp, n, factors, stages, tw, super_tw, bits);
    for (i = 0; i < fft_length + 2; ++i) {
      if (bits == 16) {
        ((int16_t *)output)[row * (fft_length + 2) + i] = lp_signal_wrap16(freq[i]);
      } else {
        ((int32_t *)output)[row * (fft_length + 2) + i] = freq[i];
      }
    }
  }
}

static inline int32_t lp_signal_rfft_s16(const int16_t *input, const int32_t *tw, const int32_t *super_tw,
                                         const int32_t *factors, int16_t *output, int32_t *work, int32_t rows,
                                         int32_t input_length, int32_t fft_length, int32_t stages)
{
  lp_fft_rows(input, tw, super_tw, factors, output, work, rows, input_length, fft_length, stages, 16);
  return 0;
}

static inline int32_t lp_signal_rfft_s32(const int32_t *input, const int32_t *tw, const int32_t *super_tw,
                                         const int32_t *factors, int32_t *output, int32_t *work, int32_t rows,
                                         int32_t input_length, int32_t fft_length, int32_t stages)
{
  lp_fft_rows(input, tw, super_tw, factors, output, work, rows, input_length, fft_length, stages, 32);
  return 0;
}

/* SignalIrfft (int16 or int32 by `bits`; `work`: 3 * fft_length + 2 elements): each of `rows` rows of
   fft_length / 2 + 1 complex values to fft_length samples. */
static inline void lp_fft_inverse_rows(const void *input, const int32_t *tw, const int32_t *super_tw,
                                       const int32_t *factors, void *output, int32_t *work, int32_t rows,
                                       int32_t fft_length, int32_t stages, int32_t bits)
{
  const int32_t n = fft_length / 2;
  int32_t *freq = work, *tmp = work + fft_length + 2, *time = work + 2 * fft_length + 2;
  int32_t row, i;
  for (row = 0; row < rows; ++row) {
    for (i = 0; i < fft_length + 2; ++i) {
      freq[i] = bits == 16 ? ((const int16_t *)input)[row * (fft_length + 2) + i]
                           : ((const int32_t *)input)[row * (fft_length + 2) + i];
    }
    lp_fft_real_inverse(freq, time, tmp, n, factors, stages, tw, super_tw, bits);
    for (i = 0; i < fft_length; ++i) {
      if (bits == 16) {
        ((int16_t *)output)[row * fft_length + i] = lp_signal_wrap16(time[i]);
      } else {
        ((int32_t *)output)[row * fft_length + i] = time[i];
      }
    }
  }
}

static inline int32_t lp_signal_irfft_s16(const int16_t *input, const int32_t *tw, const int32_t *super_tw,
                                          const int32_t *factors, int16_t *output, int32_t *work, int32_t rows,
                                          int32_t fft_length, int32_t stages)
{
  lp_fft_inverse_rows(input, tw, super_tw, factors, output, work, rows, fft_length, stages, 16);
  return 0;
}

static inline int32_t lp_signal_irfft_s32(const int32_t *input, const int32_t *tw, const int32_t *super_tw,
                                          const int32_t *factors, int32_t *output, int32_t *work, int32_t rows,
                                          int32_t fft_length, int32_t stages)
{
  lp_fft_inverse_rows(input, tw, super_tw, factors, output, work, rows, fft_length, stages, 32);
  return 0;
}

/* --- float (KISS FFT's float scalar: no division of the butterfly inputs, HALF_OF(x) = x * 0.5f) ------- */

static inline void lp_fftf_mul(float *m, const float *a, const float *b)
{
  const float re = a[0] * b[0] - a[1] * b[1];
  const float im = a[0] * b[1] + a[1] * b[0];
  m[0] = re;
  m[1] = im;
}

static inline void lp_fftf_bfly2(float *f, int32_t fstride, const float *tw, int32_t m)
{
  int32_t k;
  for (k = 0; k < m; ++k) {
    float *a = f + 2 * k, *b = f + 2 * (k + m);
    float t[2];
    lp_fftf_mul(t, b, tw + 2 * k * fstride);
    b[0] = a[0] - t[0];
    b[1] = a[1] - t[1];
    a[0] += t[0];
    a[1] += t[1];
  }
}

static inline void lp_fftf_bfly3(float *f, int32_t fstride, const float *tw, int32_t m)
{
  const float epi3_im = tw[2 * fstride * m + 1];
  int32_t k;
  for (k = 0; k < m; ++k) {
    float *f0 = f + 2 * k, *f1 = f + 2 * (k + m), *f2 = f + 2 * (k + 2 * m);
    float s0[2], s1[2], s2[2], s3[2];
    lp_fftf_mul(s1, f1, tw + 2 * k * fstride);
    lp_fftf_mul(s2, f2, tw + 4 * k * fstride);
    s3[0] = s1[0] + s2[0];
    s3[1] = s1[1] + s2[1];
    s0[0] = s1[0] - s2[0];
    s0[1] = s1[1] - s2[1];
    f1[0] = f0[0] - s3[0] * 0.5f;
    f1[1] = f0[1] - s3[1] * 0.5f;
    s0[0] *= epi3_im;
    s0[1] *= epi3_im;
    f0[0] += s3[0];
    f0[1] += s3[1];
    f2[0] = f1[0] + s0[1];
    f2[1] = f1[1] - s0[0];
    f1[0] -= s0[1];
    f1[1] += s0[0];
  }
}

static inline void lp_fftf_bfly4(float *f, int32_t fstride, const float *tw, int32_t m, int32_t inverse)
{
  int32_t k;
  for (k = 0; k < m; ++k) {
    float *f0 = f + 2 * k, *f1 = f + 2 * (k + m), *f2 = f + 2 * (k + 2 * m), *f3 = f + 2 * (k + 3 * m);
    float s0[2], s1[2], s2[2], s3[2], s4[2], s5[2];
    lp_fftf_mul(s0, f1, tw + 2 * k * fstride);
    lp_fftf_mul(s1, f2, tw + 4 * k * fstride);
    lp_fftf_mul(s2, f3, tw + 6 * k * fstride);
    s5[0] = f0[0] - s1[0];
    s5[1] = f0[1] - s1[1];
    f0[0] += s1[0];
    f0[1] += s1[1];
    s3[0] = s0[0] + s2[0];
    s3[1] = s0[1] + s2[1];
    s4[0] = s0[0] - s2[0];
    s4[1] = s0[1] - s2[1];
    f2[0] = f0[0] - s3[0];
    f2[1] = f0[1] - s3[1];
    f0[0] += s3[0];
    f0[1] += s3[1];
    if (inverse != 0) {
      f1[0] = s5[0] - s4[1];
      f1[1] = s5[1] + s4[0];
      f3[0] = s5[0] + s4[1];
      f3[1] = s5[1] - s4[0];
    } else {
      f1[0] = s5[0] + s4[1];
      f1[1] = s5[1] - s4[0];
      f3[0] = s5[0] - s4[1];
      f3[1] = s5[1] + s4[0];
    }
  }
}

static inline void lp_fftf_bfly5(float *f, int32_t fstride, const float *tw, int32_t m)
{
  const float *ya = tw + 2 * fstride * m, *yb = tw + 4 * fstride * m;
  int32_t u;
  for (u = 0; u < m; ++u) {
    float *f0 = f + 2 * u, *f1 = f + 2 * (u + m), *f2 = f + 2 * (u + 2 * m), *f3 = f + 2 * (u + 3 * m);
    float *f4 = f + 2 * (u + 4 * m);
    float s[13][2];
    s[0][0] = f0[0];
    s[0][1] = f0[1];
    lp_fftf_mul(s[1], f1, tw + 2 * u * fstride);
    lp_fftf_mul(s[2], f2, tw + 4 * u * fstride);
    lp_fftf_mul(s[3], f3, tw + 6 * u * fstride);
    lp_fftf_mul(s[4], f4, tw + 8 * u * fstride);
    s[7][0] = s[1][0] + s[4][0];
    s[7][1] = s[1][1] + s[4][1];
    s[10][0] = s[1][0] - s[4][0];
    s[10][1] = s[1][1] - s[4][1];
    s[8][0] = s[2][0] + s[3][0];
    s[8][1] = s[2][1] + s[3][1];
    s[9][0] = s[2][0] - s[3][0];
    s[9][1] = s[2][1] - s[3][1];
    f0[0] += s[7][0] + s[8][0];
    f0[1] += s[7][1] + s[8][1];
    s[5][0] = s[0][0] + s[7][0] * ya[0] + s[8][0] * yb[0];
    s[5][1] = s[0][1] + s[7][1] * ya[0] + s[8][1] * yb[0];
    s[6][0] = s[10][1] * ya[1] + s[9][1] * yb[1];
    s[6][1] = -(s[10][0] * ya[1]) - s[9][0] * yb[1];
    f1[0] = s[5][0] - s[6][0];
    f1[1] = s[5][1] - s[6][1];
    f4[0] = s[5][0] + s[6][0];
    f4[1] = s[5][1] + s[6][1];
    s[11][0] = s[0][0] + s[7][0] * yb[0] + s[8][0] * ya[0];
    s[11][1] = s[0][1] + s[7][1] * yb[0] + s[8][1] * ya[0];
    s[12][0] = -(s[10][1] * yb[1]) + s[9][1] * ya[1];
    s[12][1] = s[10][0] * yb[1] - s[9][0] * ya[1];
    f2[0] = s[11][0] + s[12][0];
    f2[1] = s[11][1] + s[12][1];
    f3[0] = s[11][0] - s[12][0];
    f3[1] = s[11][1] - s[12][1];
  }
}

static inline void lp_fftf_complex(const float *in, float *out, int32_t n, const int32_t *factors, int32_t stages,
                                   const float *tw, int32_t inverse)
{
  int32_t s;
  lp_fft_leaves(in, out, n, factors, stages);
  for (s = stages - 1; s >= 0; --s) {
    const int32_t p = factors[2 * s], m = factors[2 * s + 1], fstride = lp_fft_blocks(factors, s);
    int32_t block;
    for (block = 0; block < fstride; ++block) {
      float *f = out + 2 * block * p * m;
      if (p == 2) {
        lp_fftf_bfly2(f, fstride, tw, m);
      } else if (p == 3) {
        lp_fftf_bfly3(f, fstride, tw, m);
      } else if (p == 4) {
        lp_fftf_bfly4(f, fstride, tw, m, inverse);
      } else {
        lp_fftf_bfly5(f, fstride, tw, m);
      }
    }
  }
}

/* lp_fft_split in float (no division by 2: C_FIXDIV does nothing there). */
static inline void lp_fftf_split(const float *x, int32_t n, int32_t k, const float *super_tw, float *sum,
                                 float *product)
{
  const float a[2] = {x[2 * k], x[2 * k + 1]};
  const float b[2] = {x[2 * (n - k)], -x[2 * (n - k) + 1]};
  const float difference[2] = {a[0] - b[0], a[1] - b[1]};
  sum[0] = a[0] + b[0];
  sum[1] = a[1] + b[1];
  lp_fftf_mul(product, difference, super_tw + 2 * (k - 1));
}

/* SignalRfft (float; `work`: 2 * fft_length elements). */
static inline int32_t lp_signal_rfft_f32(const float *input, const float *tw, const float *super_tw,
                                         const int32_t *factors, float *output, float *work, int32_t rows,
                                         int32_t input_length, int32_t fft_length, int32_t stages)
{
  const int32_t n = fft_length / 2;
  float *time = work, *tmp = work + fft_length;
  int32_t row, i, k;
  for (row = 0; row < rows; ++row) {
    float *freq = output + row * (fft_length + 2);
    for (i = 0; i < fft_length; ++i) {
      time[i] = i < input_length ? input[row * input_length + i] : 0.0f;
    }
    lp_fftf_complex(time, tmp, n, factors, stages, tw, 0);
    freq[0] = tmp[0] + tmp[1];
    freq[2 * n] = tmp[0] - tmp[1];
    freq[1] = 0.0f;
    freq[2 * n + 1] = 0.0f;
    for (k = 1; k <= n / 2; ++k) {
      float f1k[2], t[2];
      lp_fftf_split(tmp, n, k, super_tw, f1k, t);
      freq[2 * k] = (f1k[0] + t[0]) * 0.5f;
      freq[2 * k + 1] = (f1k[1] + t[1]) * 0.5f;
      freq[2 * (n - k)] = (f1k[0] - t[0]) * 0.5f;
      freq[2 * (n - k) + 1] = (t[1] - f1k[1]) * 0.5f;
    }
  }
  return 0;
}

/* SignalIrfft (float; `work`: fft_length elements): kiss_fftri, then every sample divided by fft_length as
   TFLite Micro does (the fixed-point FFTs divide as they go). */
static inline int32_t lp_signal_irfft_f32(const float *input, const float *tw, const float *super_tw,
                                          const int32_t *factors, float *output, float *work, int32_t rows,
                                          int32_t fft_length, int32_t stages)
{
  const int32_t n = fft_length / 2;
  int32_t row, k;
  for (row = 0; row < rows; ++row) {
    const float *freq = input + row * (fft_length + 2);
    work[0] = freq[0] + freq[2 * n];
    work[1] = freq[0] - freq[2 * n];
    for (k = 1; k <= n / 2; ++k) {
      float fek[2], fok[2];
      lp_fftf_split(freq, n, k, super_tw, fek, fok);
      work[2 * k] = fek[0] + fok[0];
      work[2 * k + 1] = fek[1] + fok[1];
      work[2 * (n - k)] = fek[0] - fok[0];
      work[2 * (n - k) + 1] = (fek[1] - fok[1]) * -1.0f;
    }
    lp_fftf_complex(work, output + row * fft_length, n, factors, stages, tw, 1);
    for (k = 0; k < fft_length; ++k) {
      output[row * fft_length + k] /= (float)fft_length;
    }
  }
  return 0;
}

#endif /* LP_SIGNAL_FFT_H */
