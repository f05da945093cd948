/* lp_rows.h: the row-wise input's band helpers (tvm_ext/plan/row_input.py), hand-written C99.
 *
 * A band is input rows [first, stop) of the image, each row_bytes bytes, in the arena. Its first rows, those it
 * shares with the band before, are copied from that band's halo (lp_rows_keep kept them); the others are asked
 * of the application's lp_read_row_t, one row at a time in increasing order, straight into the band (a camera's
 * DMA can write a line there). Needs <stddef.h>, <stdint.h> and <string.h>. */

/* Writes input row `row` (row_bytes bytes) to `destination`; 0 when it did, nonzero to end the run. */
typedef int (*lp_read_row_t)(void* context, uint32_t row, void* destination);

/* Fills `band`: `halo_bytes` bytes from `halo` (NULL when halo_bytes is 0), then rows [pulled_from, stop) from
 * read_row, each row_bytes bytes. Returns 0, or read_row's nonzero status (the band then holds garbage). */
static inline int lp_rows_fetch(lp_read_row_t read_row, void* context, const uint8_t* halo, size_t halo_bytes,
                                uint32_t pulled_from, uint32_t stop, size_t row_bytes, uint8_t* band)
{
  uint32_t row;
  if (halo_bytes > 0u) {
    memcpy(band, halo, halo_bytes);
  }
  for (row = pulled_from; row < stop; ++row) {
    const int status = read_row(context, row, band + halo_bytes + (size_t)(row - pulled_from) * row_bytes);
    if (status != 0) {
      return status;
    }
  }
  return 0;
}

/* Copies `bytes` bytes from `band_rows` (a band's last rows) into `halo`, for the next band. */
static inline void lp_rows_keep(const uint8_t* band_rows, size_t bytes, uint8_t* halo)
{
  memcpy(halo, band_rows, bytes);
}
