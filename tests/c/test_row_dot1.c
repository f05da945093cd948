/* Unit test of the Cortex-M backend's one-row dot products (backends/cortex_m/helpers/templates/row_dot1.h.in, with
 * the prefix lp): for every row length up to 40 (past the int16 LDRD rows' shortest, lp_ROW_DOT1_LDRD_MIN), both
 * rows word-aligned or either not, int8 rows over their whole range (-128 and 127 included) and int16 rows with
 * their extremes (-32768 and 32767; products of -32768 by -32768 and by 32767 in turn in some cases), the
 * accumulator gains the row's dot product and keeps what it held; so for the int8 inputs against int16 weights in
 * SXTB16's lane order (lp_row_dot_s8_pairs, rows of whole groups of four). Built by tests/test_cortex_m_helpers_c.py on the
 * host (portable C) and for cortex-m4f under QEMU (SXTB16, LDRD, LDR, SMLAD). */
#include <stdint.h>
#include <stdio.h>

#include "cortex_m_test_values.h"
#include "row_dot1.h"

#define ROW_MAX 40

/* The next int8 of the shared fixed sequence (the test is the same run to run). */
static int8_t value8(uint32_t *state)
{
    return (int8_t)(int32_t)(next_value(state) % 256u - 128u);
}

/* The next int16 of the sequence in -2048..2047: small enough that 40 products beside the extremes' stay in int32. */
static int16_t value16(uint32_t *state)
{
    return (int16_t)((int32_t)(next_value(state) % 4096u) - 2048);
}

/* lp_row_dot_s8_pairs for every row length of whole groups up to ROW_MAX, both rows word-aligned or either not (the
   input row 3 bytes, the weight row 2 bytes past a word), and the extremes (inputs -128, weights -32768 and 32767 in
   turn): the accumulator gains the dot product of the inputs with the weights in their natural order, which the test
   lays out in the helper's (per group the weights of inputs 0, 2, 1, 3). The failures. */
static int32_t pairs_cases(uint32_t *state, int32_t *cases)
{
    static int32_t x_words[ROW_MAX / 4 + 2], w_words[ROW_MAX / 2 + 2];
    int32_t failures = 0, row_len, shift, k;
    for (row_len = 0; row_len <= ROW_MAX; row_len += 4) {
        for (shift = 0; shift < 4; ++shift) { /* 0: both aligned; 1, 2: one of them not; 3: the extremes */
            const int32_t x_pad = shift == 1 ? 3 : 0, w_pad = shift == 2 ? 1 : 0;  /* bytes, int16 elements */
            int8_t *const x = (int8_t *)(void *)x_words;
            int16_t *const w = (int16_t *)(void *)w_words;
            int32_t acc = start_value(shift), expected = acc;
            for (k = 0; k < row_len; ++k) {
                const int16_t natural = shift == 3 ? (int16_t)(k % 2 == 0 ? -32768 : 32767)
                                        : k % 11 == 0 ? (int16_t)32767 : value16(state);
                x[x_pad + k] = shift == 3 || k % 7 == 0 ? (int8_t)-128 : value8(state);
                w[w_pad + k - k % 4 + 2 * (k % 2) + (k % 4) / 2] = natural;  /* input k = 4g + a + 2b at 4g + 2a + b */
                expected += x[x_pad + k] * natural;
            }
            *cases += 1;
            int8_t *const x_copy = (int8_t *)guarded_copy(1, x, x_pad + row_len);
            int16_t *const w_copy = (int16_t *)guarded_copy(2, w, 2 * (w_pad + row_len));
            int32_t returned = lp_row_dot_s8_pairs(guarded_copy(0, &acc, 4), x_copy + x_pad, w_copy + w_pad, row_len);
            guarded_back(0, &acc, 4);
            if (returned != 0 || acc != expected) {
                failures += 1;
                printf("wrong int8 x int16 pairs: row_len %ld, shift %ld\n", (long)row_len, (long)shift);
            }
        }
    }
    return failures;
}

int main(void)
{
    static int32_t x_words[ROW_MAX / 2 + 2], w_words[ROW_MAX / 2 + 2];  /* word-aligned storage of the rows */
    uint32_t state = 1;
    int32_t cases = 0, failures = 0, row_len, shift, k;
    for (row_len = 0; row_len <= ROW_MAX; ++row_len) {
        for (shift = 0; shift < 4; ++shift) { /* 0: both aligned; 1, 2: one of them not; 3: the extremes */
            int8_t *const x8 = (int8_t *)(void *)x_words + (shift == 1 ? 3 : 0);
            int8_t *const w8 = (int8_t *)(void *)w_words + (shift == 2 ? 1 : 0);
            int16_t *const x16 = (int16_t *)(void *)x_words + (shift == 1);
            int16_t *const w16 = (int16_t *)(void *)w_words + (shift == 2);
            int32_t acc8 = start_value(shift), expected8 = acc8, acc16, expected16;
            for (k = 0; k < row_len; ++k) {
                x8[k] = shift == 3 || k % 7 == 0 ? (int8_t)-128 : value8(&state);
                w8[k] = shift == 3 ? (int8_t)-128 : k % 11 == 0 ? (int8_t)127 : value8(&state);
                expected8 += x8[k] * w8[k];
            }
            cases += 1;
            int32_t returned = lp_row_dot_s8(guarded_copy(0, &acc8, 4), guarded_copy(1, x8, row_len),
                                             guarded_copy(2, w8, row_len), row_len);
            guarded_back(0, &acc8, 4);
            if (returned != 0 || acc8 != expected8) {
                failures += 1;
                printf("wrong int8: row_len %ld, shift %ld\n", (long)row_len, (long)shift);
            }
            acc16 = expected16 = shift == 3 ? 0 : start_value(shift);
            for (k = 0; k < row_len; ++k) {
                x16[k] = shift == 3 || k % 7 == 0 ? (int16_t)-32768 : value16(&state);
                w16[k] = shift == 3 ? (int16_t)(k % 2 == 0 ? -32768 : 32767) /* alternate signs: in int32 */
                         : k % 11 == 0 ? (int16_t)32767 : value16(&state);
                expected16 += x16[k] * w16[k];
            }
            cases += 1;
            returned = lp_row_dot_s16(guarded_copy(0, &acc16, 4), guarded_copy(1, x16, 2 * row_len),
                                      guarded_copy(2, w16, 2 * row_len), row_len);
            guarded_back(0, &acc16, 4);
            if (returned != 0 || acc16 != expected16) {
                failures += 1;
                printf("wrong int16: row_len %ld, shift %ld\n", (long)row_len, (long)shift);
            }
        }
    }
    failures += pairs_cases(&state, &cases);
    if (failures != 0) {
        return 1;
    }
    printf("ok %ld cases\n", (long)cases);
    return 0;
}
