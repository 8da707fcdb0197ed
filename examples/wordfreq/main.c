#include <stdio.h>
#include <stdlib.h>
#include "wordfreq.h"

static void add(const char *word, void *arg) { table_add(arg, word); }

int main(void) {
  size_t cap = 1 << 16, len = 0;
  char *text = malloc(cap);
  size_t got;
  while ((got = fread(text + len, 1, cap - len - 1, stdin)) > 0) {
    len += got;
    if (len + 1 == cap) text = realloc(text, cap *= 2);
  }
  text[len] = 0;
  struct table t;
  table_init(&t, 1024);
  for_each_word(text, add, &t);
  struct entry **v;
  size_t n = table_sorted(&t, &v);
  printf("%zu distinct words\n", n);
  for (size_t i = 0; i < n && i < 5; i++) printf("%6u %s\n", v[i]->count, v[i]->word);
  free(v);
  table_free(&t);
  free(text);
  return 0;
}
