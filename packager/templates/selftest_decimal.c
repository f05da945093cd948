/* `magnitude` (negated when `negative`) in decimal, written into the end of `text`; returns its start.
   newlib-nano's printf has no %lld, so 64-bit integers are printed as text. */
static const char* decimal_text(uint64_t magnitude, int negative, char text[24])
{
  char* p = text + 23;
  *p = '\0';
  do {
    --p;
    *p = (char)('0' + (int)(magnitude % 10u));
    magnitude /= 10u;
  } while (magnitude != 0u);
  if (negative) {
    --p;
    *p = '-';
  }
  return p;
}

/* |a - b|, exact for any two int64_t values (computed modulo 2^64, where it fits). */
static uint64_t distance(int64_t a, int64_t b)
{
  return a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

/* `value` in decimal, written into `text`. */
static const char* signed_text(int64_t value, char text[24])
{
  return decimal_text(distance(value, 0), value < 0, text);
}
