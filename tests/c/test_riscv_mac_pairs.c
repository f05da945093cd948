/* Unit test of the RISC-V MAC helper of paired weights (backends/riscv/helpers/templates/mac_s8x8_pairs.h.in, with
 * the prefix lp): lp_mac_s8x8_pairs against the plain loop of its contract for its eight channels, with the
 * weights packed as tvm_ext.kernels.dense.pair_weights packs them (the word a + 65536 * b of channels 2p and
 * 2p + 1): every row length up to 70 (whole groups of two inputs and the odd last one), values over the whole
 * int8 range from a fixed generator, then every pair of inputs and every channel's pair of weights drawn from the
 * extremes {-128, -127, -1, 0, 1, 127} (each group's sum at the ends of its field: 32768 = 2 * -128 * -128,
 * -32512 = 2 * -128 * 127), on rows of such pairs repeated (the sums of many groups); each accumulator gains its
 * sum and keeps what it held. Built by tests/backends/riscv/test_riscv_helpers_c.py on the host and, for rv32imc
 * and rv32imafc, under QEMU virt. */
#include <stdint.h>
#include <stdio.h>

#include "guarded_buffers.h"
#include "riscv_mac.h"

#define CHANNELS 8
#define MAX_LEN 70
#define HELD 1000003 /* what each accumulator holds before a call */

#define PIXEL_STRIDE (MAX_LEN + 3) /* the second pixel's inputs, in the two-pixel helper's calls */
#define ROW_GAP 5 /* inputs between one row's end and the next's start, in the rows helpers' calls */
#define ROWS_PIXEL_STRIDE (MAX_LEN + 3 * ROW_GAP + 1) /* their second pixel's window */

static int8_t xs[PIXEL_STRIDE + MAX_LEN];
static int8_t *const x = xs; /* the first pixel's inputs; the second's: x + PIXEL_STRIDE */
static int8_t w[CHANNELS][MAX_LEN];
static int32_t words[MAX_LEN * CHANNELS / 2];

/* The weights w packed for row_len inputs: words[4k + p] = w[2p][k] + 65536 * w[2p + 1][k] (mod 2^32). */
static void pack(int32_t row_len)
{
    for (int32_t k = 0; k < row_len; ++k) {
        for (int32_t p = 0; p < CHANNELS / 2; ++p) {
            const uint32_t a = (uint32_t)(int32_t)w[2 * p][k], b = (uint32_t)(int32_t)w[2 * p + 1][k];
            words[4 * k + p] = (int32_t)(a + (b << 16));
        }
    }
}

/* Whether got[c] equals held + c plus the plain loop's sum of channel c over the row_len inputs at px; prints the
   first that differs. */
static int agree(const int32_t *got, const int8_t *px, int32_t row_len, const char *what, long i)
{
    for (int32_t c = 0; c < CHANNELS; ++c) {
        int32_t expected = HELD + c;
        for (int32_t k = 0; k < row_len; ++k) {
            expected += (int32_t)px[k] * (int32_t)w[c][k];
        }
        if (got[c] != expected) {
            printf("wrong %s: case %ld channel %ld: %ld, expected %ld\n", what, i, (long)c, (long)got[c],
                   (long)expected);
            return 0;
        }
    }
    return 1;
}

/* Whether the one-pixel helper's sums over row_len inputs (at x) and the two-pixel helper's (at x and
   x + PIXEL_STRIDE) equal the plain loop's; prints the first that differs. */
static int check(int32_t row_len, const char *what, long i)
{
    int32_t got[CHANNELS], got_a[CHANNELS], got_b[CHANNELS];
    pack(row_len);
    for (int32_t c = 0; c < CHANNELS; ++c) {
        got[c] = got_a[c] = got_b[c] = HELD + c;
    }
    /* every buffer exactly what each call reads and writes, against no-access memory */
    int32_t returned = lp_mac_s8x8_pairs(guarded_copy(0, got, 4 * CHANNELS), guarded_copy(1, x, row_len),
                                         guarded_copy(2, words, 16 * row_len), row_len);
    guarded_back(0, got, 4 * CHANNELS);
    returned |= lp_mac_s8x2x8_pairs(guarded_copy(0, got_a, 4 * CHANNELS), guarded_copy(3, got_b, 4 * CHANNELS),
                                    guarded_copy(1, x, row_len == 0 ? 0 : PIXEL_STRIDE + row_len),
                                    guarded_copy(2, words, 16 * row_len), row_len, PIXEL_STRIDE);
    guarded_back(0, got_a, 4 * CHANNELS);
    guarded_back(3, got_b, 4 * CHANNELS);
    if (returned != 0) {
        printf("wrong %s: case %ld returned non-zero\n", what, i);
        return 0;
    }
    if (!agree(got, x, row_len, what, i) || !agree(got_a, x, row_len, what, i)
        || !agree(got_b, x + PIXEL_STRIDE, row_len, what, i)) {
        return 0;
    }
    /* The same inputs as three rows (a whole multiple of three), each row ROW_GAP after the last's end. */
    if (row_len % 3 == 0) {
        static int8_t rows_x[2 * ROWS_PIXEL_STRIDE];
        const int32_t run = row_len / 3, stride = run + ROW_GAP;
        for (int32_t r = 0; r < 3; ++r) {
            for (int32_t j = 0; j < run; ++j) {
                rows_x[r * stride + j] = x[r * run + j];
                rows_x[ROWS_PIXEL_STRIDE + r * stride + j] = x[PIXEL_STRIDE + r * run + j];
            }
        }
        for (int32_t c = 0; c < CHANNELS; ++c) {
            got[c] = got_a[c] = got_b[c] = HELD + c;
        }
        const int32_t window = guarded_span(3, run, stride, 1);
        returned = lp_mac_s8x8_pairs_rows(guarded_copy(0, got, 4 * CHANNELS), guarded_copy(1, rows_x, window),
                                          guarded_copy(2, words, 16 * row_len), stride, 3, run);
        guarded_back(0, got, 4 * CHANNELS);
        returned |= lp_mac_s8x2x8_pairs_rows(guarded_copy(0, got_a, 4 * CHANNELS),
                                             guarded_copy(3, got_b, 4 * CHANNELS),
                                             guarded_copy(1, rows_x, window == 0 ? 0 : ROWS_PIXEL_STRIDE + window),
                                             guarded_copy(2, words, 16 * row_len), stride, 3, run,
                                             ROWS_PIXEL_STRIDE);
        guarded_back(0, got_a, 4 * CHANNELS);
        guarded_back(3, got_b, 4 * CHANNELS);
        if (returned != 0) {
            printf("wrong %s rows: case %ld returned non-zero\n", what, i);
            return 0;
        }
        return agree(got, x, row_len, what, i) && agree(got_a, x, row_len, what, i)
               && agree(got_b, x + PIXEL_STRIDE, row_len, what, i);
    }
    return 1;
}

int main(void)
{
    static const int8_t extremes[] = {-128, -127, -1, 0, 1, 127};
    const int32_t n = (int32_t)(sizeof extremes / sizeof extremes[0]);
    uint32_t seed = 2463534242u;
    long cases = 0;
    for (int32_t row_len = 0; row_len <= MAX_LEN; ++row_len) {
        for (int32_t k = 0; k < MAX_LEN; ++k) {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            x[k] = (int8_t)(seed & 0xFFu);
            x[PIXEL_STRIDE + k] = (int8_t)((seed >> 8) & 0xFFu);
            for (int32_t c = 0; c < CHANNELS; ++c) {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                w[c][k] = (int8_t)(seed >> 24);
            }
        }
        if (!check(row_len, "random", cases++)) {
            return 1;
        }
    }
    /* Inputs (x0, x1) and, per channel, weights (w0, w1) from the extremes, repeated along a row of 69 inputs
       (34 groups of two and the last alone): channel c takes the pair of index (j + c) so all channels differ. */
    for (int32_t i0 = 0; i0 < n; ++i0) {
        for (int32_t i1 = 0; i1 < n; ++i1) {
            for (int32_t j = 0; j < n * n; ++j) {
                for (int32_t k = 0; k < 69; ++k) {
                    x[k] = extremes[k % 2 == 0 ? i0 : i1];
                    x[PIXEL_STRIDE + k] = extremes[k % 2 == 0 ? i1 : i0];
                    for (int32_t c = 0; c < CHANNELS; ++c) {
                        const int32_t pair = (j + 5 * c) % (n * n);
                        w[c][k] = extremes[k % 2 == 0 ? pair / n : pair % n];
                    }
                }
                if (!check(69, "extremes", cases++) || !check(2, "extremes", cases++)
                    || !check(66, "extremes", cases++)) {
                    return 1;
                }
            }
        }
    }
    printf("ok %ld cases\n", cases);
    return 0;
}
