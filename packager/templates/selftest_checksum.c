/* FNV-1a hash of `bytes` bytes: lets builds for different machines show they computed the same bits. */
static unsigned long checksum(const void* data, size_t bytes)
{
  const unsigned char* p = (const unsigned char*)data;
  unsigned long hash = 2166136261ul;
  size_t i;
  for (i = 0; i < bytes; ++i) {
    hash = ((hash ^ p[i]) * 16777619ul) & 0xfffffffful;
  }
  return hash;
}

/* Prints the checksum of output `index` of case `case_index` beside the reference's. Returns 1 when they
   differ and the output must be bit-identical (`exact`), else 0. */
static int check_checksum(unsigned case_index, unsigned index, const void* data, size_t bytes,
                          unsigned long reference, int exact)
{
  unsigned long ours = checksum(data, bytes);
  printf("selftest: case %u output %u checksum %08lx, reference %08lx (%s)\n", case_index, index, ours, reference,
         ours == reference ? "bit-identical" : "not bit-identical");
  if (exact && ours != reference) {
    printf("selftest: case %u output %u mismatch in the checksum: got %08lx, expected %08lx "
           "(must be bit-identical)\n", case_index, index, ours, reference);
    return 1;
  }
  return 0;
}
