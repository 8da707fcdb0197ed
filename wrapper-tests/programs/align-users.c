/* Users that make LLVM raise the alignment of the variables they touch:
 * `doubled` is vectorized over `tab` (with AVX, 32-byte aligned loads),
 * the 4-byte copy into `buf` becomes one `i32` store (t-warm-cold.sh). */
#include <stdio.h>
#include <string.h>

float tab[8] = {1, 2, 3, 4, 5, 6, 7, 8};
char buf[10];
float out[8] = {-1}; /* in .data: .bss holds buf alone */

__attribute__((noinline)) void doubled(void) {
  for (int i = 0; i < 8; i++)
    out[i] = tab[i] * 2.0f;
}

__attribute__((noinline)) void name(void) { memcpy(buf, "foo", 4); }

int main(void) {
  doubled();
  name();
  printf("%g %g %s\n", out[0], out[7], buf);
  return 0;
}
