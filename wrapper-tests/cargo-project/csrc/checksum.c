#include <stddef.h>
#include <stdint.h>

/* Adler-32, as zlib computes it. */
uint32_t c_adler32(const unsigned char *data, size_t len) {
  uint32_t a = 1, b = 0;
  for (size_t i = 0; i < len; i++) {
    a = (a + data[i]) % 65521;
    b = (b + a) % 65521;
  }
  return (b << 16) | a;
}
