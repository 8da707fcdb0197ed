/* Linked into every program the edit fuzzer builds (wrapper-tests/fuzz/
 * edit_fuzz.py): the functions its edits call. Each edit has a small id;
 * what the edits did is reported on stderr at exit, so a warm build that
 * runs an edited function a different number of times than the cold build
 * shows up in the comparison. */
#include <stdio.h>
#include <stdlib.h>

#define EDIT_IDS 4096
static unsigned long hits[EDIT_IDS];

static void report(void) {
  for (int i = 0; i < EDIT_IDS; i++)
    if (hits[i])
      fprintf(stderr, "fuzz: edit %d ran %lu times\n", i, hits[i]);
}

__attribute__((constructor)) static void register_report(void) { atexit(report); }

/* An added side effect. */
void repocc_fuzz_hit(int id) { hits[id & (EDIT_IDS - 1)]++; }

/* A function that never returns. */
_Noreturn void repocc_fuzz_exit(int id) {
  fflush(stdout);
  fprintf(stderr, "fuzz: edit %d exits\n", id);
  exit(3);
}

/* A side effect that ends the program on the n-th call. */
void repocc_fuzz_exit_after(int id, int n) {
  if (++hits[id & (EDIT_IDS - 1)] == (unsigned long)n)
    repocc_fuzz_exit(id);
}
