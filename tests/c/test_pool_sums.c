/* Unit test of the word operations of the int8 window sums (backends/cortex_m/helpers/templates/pool_sums.h.in and
 * pool_columns.h.in, with the prefix lp): lp_pool_word at every byte alignment equals the bytes it covers (its word
 * the last of a guarded copy, guarded_buffers.h: nothing read past it); lp_pool_pairs and
 * lp_pool_pairs_ror8 on drawn accumulators and words (every half wrapping on its own, no carry between them) equal
 * the per-half sums of the contract; and the four channels of a run summed over 1..256 taps of drawn values, of
 * -128 and of 127 (the halves' extremes: -32768 and 32512) read back as (int16_t)acc and acc >> 16 equal the plain
 * int32 sums, and lp_pool_store_halves writes them in channel order (to a halfword-aligned address, its neighbours
 * kept). Built by tests/backends/cortex_m/test_cortex_m_helpers_c.py on the host (portable C) and for
 * cortex-m4f under QEMU (SXTAB16). Prints "ok <count>" and exits 0, or names the first failure and exits 1. */
#include <stdint.h>
#include <stdio.h>

#include "guarded_buffers.h"
#include "pool_sums.h"

#define TAPS 256
#define RUN_BYTES (TAPS * 4 + 3)

static int8_t run[RUN_BYTES];
static int16_t stored[6]; /* stored + 1: an int16-aligned address that is not word-aligned */
static int32_t checks = 0, failures = 0;

static void expect(int32_t got, int32_t want, const char *what, int32_t case_number)
{
    ++checks;
    if (got != want && failures++ == 0) {
        printf("FAIL %s case %d: %d, want %d\n", what, (int)case_number, (int)got, (int)want);
    }
}

/* The contract's halves: acc's low and high halves plus bytes `first` and `first` + 2 of word, each mod 2^16. */
static int32_t expected_pairs(int32_t acc, int32_t word, int32_t first)
{
    const uint32_t bits = (uint32_t)acc, bytes = (uint32_t)word;
    const int32_t low_byte = (int8_t)(uint8_t)(bytes >> (8 * first));
    const int32_t high_byte = (int8_t)(uint8_t)(bytes >> (8 * first + 16));
    const uint32_t low = (uint32_t)((int32_t)(bits & 0xffffu) + low_byte) & 0xffffu;
    const uint32_t high = (uint32_t)((int32_t)(bits >> 16) + high_byte) & 0xffffu;
    return (int32_t)(low | (high << 16));
}

/* Four channels at run[offset] over `taps` taps of stride 4 (taps <= 256): halves read back against int32 sums. */
static void check_sums(int32_t offset, int32_t taps, int32_t case_number)
{
    int32_t even = 0, odd = 0, sums[4] = {0, 0, 0, 0}, t, k;
    for (t = 0; t < taps; ++t) {
        const int32_t word = lp_pool_word(run + offset + 4 * t);
        even = lp_pool_pairs(even, word);
        odd = lp_pool_pairs_ror8(odd, word);
        for (k = 0; k < 4; ++k) {
            sums[k] += run[offset + 4 * t + k];
        }
    }
    expect((int16_t)even, sums[0], "channel 0", case_number);
    expect((int16_t)odd, sums[1], "channel 1", case_number);
    expect(even >> 16, sums[2], "channel 2", case_number);
    expect(odd >> 16, sums[3], "channel 3", case_number);
    stored[0] = stored[5] = 0x5a5a; /* the neighbours the store must leave */
    lp_pool_store_halves(stored + 1, even, odd);
    for (k = 0; k < 4; ++k) {
        expect(stored[1 + k], sums[k], "stored half", case_number * 4 + k);
    }
    expect(stored[0], 0x5a5a, "below the stored halves", case_number);
    expect(stored[5], 0x5a5a, "above the stored halves", case_number);
}

int main(void)
{
    uint32_t state = 12345u;
    int32_t i, n, offset;
    for (i = 0; i < RUN_BYTES; ++i) {
        run[i] = (int8_t)(uint8_t)(i * 73 + 29 + (i % 3 == 0 ? 128 : 0));
    }
    for (offset = 0; offset < 4; ++offset) { /* the word at every alignment */
        for (int32_t copy = 0; copy < 2; ++copy) { /* guarded: its last byte before no-access memory, then its first's
                                                      word after (guarded_buffers.h alternates) */
            const int8_t *const bytes = guarded_copy(0, run, offset + 4);
            const int32_t word = lp_pool_word(bytes + offset);
            for (i = 0; i < 4; ++i) {
                expect((int8_t)(uint8_t)((uint32_t)word >> (8 * i)), run[offset + i], "word byte", offset * 4 + i);
            }
        }
    }
    for (n = 0; n < 2000; ++n) { /* drawn accumulators and words, and the halves' edges */
        int32_t acc, word;
        state = state * 1664525u + 1013904223u;
        acc = (int32_t)state;
        state = state * 1664525u + 1013904223u;
        word = (int32_t)state;
        if (n % 5 == 0) {
            acc = (int32_t)0x7fff8000u; /* halves 32767 and -32768 */
        } else if (n % 5 == 1) {
            acc = (int32_t)0x80007fffu;
        }
        expect(lp_pool_pairs(acc, word), expected_pairs(acc, word, 0), "pairs", n);
        expect(lp_pool_pairs_ror8(acc, word), expected_pairs(acc, word, 1), "pairs_ror8", n);
    }
    for (n = 1; n <= TAPS; n += (n < 16 ? 1 : 37)) {
        check_sums(n % 4, n, n);
    }
    check_sums(1, TAPS, 1000);
    for (i = 0; i < RUN_BYTES; ++i) {
        run[i] = -128;
    }
    check_sums(0, TAPS, 2000);
    for (i = 0; i < RUN_BYTES; ++i) {
        run[i] = 127;
    }
    check_sums(3, TAPS, 3000);
    if (failures) {
        printf("%d of %d checks failed\n", (int)failures, (int)checks);
        return 1;
    }
    printf("ok %d\n", (int)checks);
    return 0;
}
