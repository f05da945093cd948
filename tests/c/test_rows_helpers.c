/* Unit test of the row-wise input's band helpers (packager/templates/lp_rows.h): bands of an image of ROWS rows
 * of ROW_BYTES bytes, filled as a bundle fills them (the first band asked for whole, each next one from the
 * halo kept of the band before and the rows after it), hold exactly the image's rows; the rows are asked for
 * once each, in increasing order; a read_row that fails ends the fetch with its status and no further row is
 * asked for. Built by tests/packager/test_rows_helpers_c.py on the host and for cortex-m0plus under QEMU. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lp_rows.h"

#define ROWS 13u
#define ROW_BYTES 7u

typedef struct {
  uint8_t image[ROWS * ROW_BYTES];
  uint32_t asked[ROWS + 1u]; /* the rows asked for, in order */
  uint32_t count;
  uint32_t fail_at; /* the row whose read fails (ROWS: none) */
} source_t;

static int read_row(void* context, uint32_t row, void* destination)
{
  source_t* source = (source_t*)context;
  if (source->count <= ROWS) {
    source->asked[source->count] = row;
  }
  source->count += 1u;
  if (row == source->fail_at) {
    return 7;
  }
  memcpy(destination, source->image + row * ROW_BYTES, ROW_BYTES);
  return 0;
}

/* Bands [first_k, stop_k) of the image, filled as a bundle does; 0 when every band holds the image's rows and
 * the rows were asked for once each, in order. */
static int check_bands(const uint32_t* first, const uint32_t* stop, uint32_t bands)
{
  static source_t source;
  uint8_t band[ROWS * ROW_BYTES], halo[ROWS * ROW_BYTES];
  uint32_t k, i, pulled_from = 0u, expected = 0u;
  size_t halo_bytes = 0u;
  for (i = 0u; i < ROWS * ROW_BYTES; ++i) {
    source.image[i] = (uint8_t)(i * 29u + 3u);
  }
  source.count = 0u;
  source.fail_at = ROWS;
  for (k = 0u; k < bands; ++k) {
    memset(band, 0xA5, sizeof band);
    if (lp_rows_fetch(read_row, &source, halo_bytes > 0u ? halo : NULL, halo_bytes, pulled_from, stop[k], ROW_BYTES,
                      band) != 0) {
      return 1;
    }
    if (memcmp(band, source.image + first[k] * ROW_BYTES, (stop[k] - first[k]) * ROW_BYTES) != 0) {
      return 2;
    }
    halo_bytes = 0u;
    pulled_from = stop[k];
    if (k + 1u < bands) {
      if (first[k + 1u] < stop[k]) { /* the next band's first rows are this band's last */
        halo_bytes = (stop[k] - first[k + 1u]) * ROW_BYTES;
        lp_rows_keep(band + (first[k + 1u] - first[k]) * ROW_BYTES, halo_bytes, halo);
        memset(band, 0x5A, sizeof band); /* the band's bytes are the next band's: the halo alone keeps them */
      } else {
        pulled_from = first[k + 1u];
      }
    }
  }
  for (i = 0u; i < source.count; ++i) {
    if (i > 0u && source.asked[i] <= source.asked[i - 1u]) {
      return 3;
    }
  }
  for (k = 0u; k < bands; ++k) {
    expected += stop[k] - (k == 0u ? first[0] : (first[k] > stop[k - 1u] ? first[k] : stop[k - 1u]));
  }
  return source.count == expected ? 0 : 4;
}

/* A read that fails at row 4 ends the fetch with its status; rows after it are not asked for. */
static int check_failure(void)
{
  static source_t source;
  uint8_t band[ROWS * ROW_BYTES];
  source.count = 0u;
  source.fail_at = 4u;
  if (lp_rows_fetch(read_row, &source, NULL, 0u, 2u, 9u, ROW_BYTES, band) != 7) {
    return 1;
  }
  return source.count == 3u && source.asked[0] == 2u && source.asked[2] == 4u ? 0 : 2;
}

int main(void)
{
  static const uint32_t one_first[] = {0u}, one_stop[] = {ROWS};
  static const uint32_t two_first[] = {0u, 5u}, two_stop[] = {8u, ROWS};
  static const uint32_t three_first[] = {0u, 3u, 9u}, three_stop[] = {5u, 10u, ROWS};
  static const uint32_t apart_first[] = {0u, 6u}, apart_stop[] = {4u, ROWS}; /* rows 4 and 5 never read */
  int failures = 0;
  failures += check_bands(one_first, one_stop, 1u) != 0;
  failures += check_bands(two_first, two_stop, 2u) != 0;
  failures += check_bands(three_first, three_stop, 3u) != 0;
  failures += check_bands(apart_first, apart_stop, 2u) != 0;
  failures += check_failure() != 0;
  if (failures != 0) {
    printf("FAIL %d of 5\n", failures);
    return 1;
  }
  printf("ok 5 checks\n");
  return 0;
}
