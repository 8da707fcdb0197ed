/* Linked into a -finstrument-functions build of the fuzzed program: records
 * the address of every function that ran and writes them (hex, one a line)
 * to $REPOCC_FUZZ_COVERAGE at exit, so the edit fuzzer edits functions the
 * program's checks execute. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SLOTS (1u << 16)
static void *seen[SLOTS];

__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site) {
  (void)site;
  uintptr_t h = ((uintptr_t)fn >> 4) * 2654435761u;
  for (unsigned i = 0; i < SLOTS; i++) {
    unsigned k = (unsigned)(h + i) & (SLOTS - 1);
    if (seen[k] == fn)
      return;
    if (!seen[k]) {
      seen[k] = fn;
      return;
    }
  }
}

__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site) {
  (void)fn;
  (void)site;
}

__attribute__((destructor, no_instrument_function)) static void dump(void) {
  const char *path = getenv("REPOCC_FUZZ_COVERAGE");
  FILE *f = path ? fopen(path, "w") : NULL;
  if (!f)
    return;
  for (unsigned k = 0; k < SLOTS; k++)
    if (seen[k])
      fprintf(f, "%lx\n", (unsigned long)(uintptr_t)seen[k]);
  fclose(f);
}
