/* Unit test of the DSP cores' int8 batch matmul (backends/cortex_m/helpers/templates/batch_matmul_s8.h.in, with the
 * prefix lp) and of its Helium twin (helium_batch_matmul_s8.h.in, the same contract): lp_batch_matmul_s8 against the plain sums of its contract and the bundle's scalar requantization
 * (lp_requantize_double_small, lp_saturate_int8), over every product of 1..7 rows, 1..9 columns and depths 1..21
 * (odd row and column counts, depths not a multiple of four), a transformer's attention products (64x16 by 16x64,
 * 64x64 by 64x16, 49x24 by 24x49), each operand read along its rows or transposed (adj_x, adj_y: either stride 1
 * or not), inputs at every byte alignment, values over the whole int8 range or all at the minimum, drawn zero
 * points (-128 and 127 included, each in its byte of the quantization word), multipliers and shifts -31..-1;
 * nothing written past the outputs, the scratch written within lp_batch_matmul_scratch_words words.
 * Built by tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for cortex-m4f under
 * QEMU (the assembly loop), the Helium twin on the host and for cortex-m55 under QEMU (its MVE body). Prints "ok <count>" and exits 0, or names the first failures and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "batch_matmul_s8.h"

#define OPERAND 4100       /* operand elements: the largest (64x64) plus an offset */
#define OUTPUTS 4200       /* output elements: 4,096 at most, then the guard */
#define SCRATCH 2400       /* scratch words: the largest call's (64 columns of depth 64: 2,112; Helium's 1,104) and
                              more past */
#define UNTOUCHED 0x5A5A5A5A

typedef struct {
    int32_t rows, cols, depth;
    int adj_x, adj_y;
} shape;

/* What the call stores at row i, column j. */
static int8_t expected_out(const int8_t *a, const int8_t *b, const shape *s, int32_t i, int32_t j, int32_t a_zero_point,
                           int32_t b_zero_point, int32_t multiplier, int32_t shift, int32_t zero_point)
{
    int32_t sum = 0;
    for (int32_t k = 0; k < s->depth; ++k) {
        const int32_t x = s->adj_x ? a[k * s->rows + i] : a[i * s->depth + k];
        const int32_t y = s->adj_y ? b[j * s->depth + k] : b[k * s->cols + j];
        sum += (x - a_zero_point) * (y - b_zero_point);
    }
    const int32_t requantized = lp_requantize_double_small(sum, multiplier, shift);
    return (int8_t)lp_saturate_int8((int32_t)((uint32_t)requantized + (uint32_t)zero_point));
}

/* A zero point: drawn, or an end of the int8 range (variant 1: -128, 2: 127). */
static int32_t zero_point_of(uint32_t *state, int32_t variant)
{
    return variant == 1 ? -128 : (variant == 2 ? 127 : (int32_t)(next_value(state) % 256u) - 128);
}

/* The number of wrong outputs (and overwritten guard bytes or scratch words) of one call. */
static int32_t one_case(const shape *s, uint32_t *state, int32_t variant)
{
    static int8_t a_store[OPERAND], b_store[OPERAND], out[OUTPUTS];
    static int32_t q[SCRATCH];
    const int32_t offset = variant % 4;
    const int8_t *a = a_store + offset, *b = b_store + (offset * 3) % 4;
    fill_s8(a_store, OPERAND, state, variant == 5);
    fill_s8(b_store, OPERAND, state, variant == 5);
    const int32_t a_zero_point = zero_point_of(state, variant % 3), b_zero_point = zero_point_of(state, variant / 3 % 3);
    const int32_t zero_point = (int32_t)(next_value(state) % 256u) - 128;
    const int32_t multiplier = (int32_t)(1073741824u + next_value(state) % 1073741823u);
    const int32_t shift = -1 - (int32_t)(next_value(state) % 31u);
    const uint32_t quantization = ((uint32_t)a_zero_point & 0xFFu) | ((uint32_t)b_zero_point & 0xFFu) << 8
        | ((uint32_t)zero_point & 0xFFu) << 16 | (uint32_t)(-1 - shift) << 24;
    memset(out, 0x5A, sizeof out);
    for (int32_t k = 0; k < SCRATCH; ++k) {
        q[k] = UNTOUCHED;
    }
    const int32_t a_row = s->adj_x ? 1 : s->depth, a_k = s->adj_x ? s->rows : 1;
    const int32_t b_k = s->adj_y ? 1 : s->cols, b_col = s->adj_y ? s->depth : 1;
    /* every buffer exactly what the call reads and writes, against no-access memory */
    const int32_t a_bytes = (s->rows - 1) * a_row + (s->depth - 1) * a_k + 1;
    const int32_t b_bytes = (s->depth - 1) * b_k + (s->cols - 1) * b_col + 1;
    const int32_t q_bytes = 4 * lp_batch_matmul_scratch_words(s->cols, s->depth);
    int8_t *const guarded_out = guarded_copy(0, out, s->rows * s->cols);
    int32_t *const guarded_q = guarded_copy(1, q, q_bytes);
    int32_t wrong = lp_batch_matmul_s8(guarded_out, guarded_copy(2, a, a_bytes), guarded_copy(3, b, b_bytes), guarded_q,
                                       s->rows, s->cols, s->depth, a_row, a_k, b_k, b_col, quantization,
                                       multiplier) != 0;
    guarded_back(0, out, s->rows * s->cols);
    guarded_back(1, q, q_bytes);
    for (int32_t i = 0; i < s->rows; ++i) {
        for (int32_t j = 0; j < s->cols; ++j) {
            wrong += out[i * s->cols + j] != expected_out(a, b, s, i, j, a_zero_point, b_zero_point, multiplier, shift,
                                                          zero_point);
        }
    }
    for (int32_t k = s->rows * s->cols; k < OUTPUTS; ++k) {
        wrong += out[k] != (int8_t)0x5A;
    }
    for (int32_t k = lp_batch_matmul_scratch_words(s->cols, s->depth); k < SCRATCH; ++k) {
        wrong += q[k] != UNTOUCHED;
    }
    return wrong;
}

int main(void)
{
    uint32_t state = 29;
    int32_t cases = 0, failures = 0;
    for (int32_t rows = 1; rows <= 7; ++rows) {
        for (int32_t cols = 1; cols <= 9; ++cols) {
            for (int32_t depth = 1; depth <= 21; ++depth) {
                const int32_t variant = (rows * 7 + cols * 3 + depth) % 12;
                const shape s = {rows, cols, depth, variant % 2 == 1, variant / 2 % 2 == 1};
                const int32_t wrong = one_case(&s, &state, variant);
                failures += wrong != 0;
                ++cases;
                if (wrong != 0 && failures <= 5) {
                    printf("%ldx%ld by depth %ld (adj %d %d) variant %ld: %ld wrong\n", (long)rows, (long)cols,
                           (long)depth, s.adj_x, s.adj_y, (long)variant, (long)wrong);
                }
            }
        }
    }
    /* a transformer's attention: scores (Q by K^T, K as given or transposed), attention by V, a 49-token sequence */
    const shape attention[] = {{64, 64, 16, 0, 0}, {64, 64, 16, 0, 1}, {64, 16, 64, 0, 0}, {49, 49, 24, 0, 1},
                               {49, 24, 49, 1, 0}};
    for (int32_t k = 0; k < (int32_t)(sizeof attention / sizeof attention[0]); ++k) {
        for (int32_t variant = 0; variant < 6; variant += 5) {
            const int32_t wrong = one_case(&attention[k], &state, variant + k);
            failures += wrong != 0;
            ++cases;
            if (wrong != 0 && failures <= 5) {
                printf("attention %ld variant %ld: %ld wrong\n", (long)k, (long)variant, (long)wrong);
            }
        }
    }
    return cases_verdict(cases, failures);
}
