/* The class of `x`: 0 finite, 1 NaN, 2 +Inf, 3 -Inf. Read from its bits, so that no compiler flag that
   assumes finite math can change the answer. */
static int value_class(double x)
{
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  if ((bits & UINT64_C(0x7ff0000000000000)) != UINT64_C(0x7ff0000000000000)) {
    return 0;
  }
  if ((bits & UINT64_C(0x000fffffffffffff)) != 0u) {
    return 1;
  }
  return (bits >> 63) != 0u ? 3 : 2;
}
