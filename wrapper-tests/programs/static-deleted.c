/* The static `p` (and `v`) is the same definition in both builds of this
   file. Without READ_IT, its one use is folded away and the optimizer
   deletes it; with READ_IT, main loads it, which is no digest edge (the
   value of a variable the program may write cannot be folded), yet `p`
   must be in the object. */
#include <stdio.h>

static int v = 7;
static int *p = &v;

#ifdef READ_IT
int main(int argc, char **argv) {
  (void)argv;
  printf("%d\n", *p + argc);
  return 0;
}
#else
static int read_it(int c) { return c ? *p : 0; }
int main(void) {
  printf("%d\n", read_it(0));
  return 0;
}
#endif
