#include <stdlib.h>
#include <string.h>
#include "wordfreq.h"

void table_init(struct table *t, size_t nbuckets) {
  t->buckets = calloc(nbuckets, sizeof *t->buckets);
  t->nbuckets = nbuckets;
  t->nwords = 0;
}

void table_add(struct table *t, const char *word) {
  struct entry **b = &t->buckets[hash_word(word) % t->nbuckets];
  for (struct entry *e = *b; e; e = e->next)
    if (strcmp(e->word, word) == 0) { e->count++; return; }
  struct entry *e = malloc(sizeof *e);
  e->word = strdup(word);
  e->count = 1;
  e->next = *b;
  *b = e;
  t->nwords++;
}

static int by_count_then_word(const void *a, const void *b) {
  const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
  if (x->count != y->count) return x->count < y->count ? 1 : -1;
  return strcmp(x->word, y->word);
}

size_t table_sorted(const struct table *t, struct entry ***out) {
  struct entry **v = malloc(t->nwords * sizeof *v);
  size_t n = 0;
  for (size_t i = 0; i < t->nbuckets; i++)
    for (struct entry *e = t->buckets[i]; e; e = e->next) v[n++] = e;
  qsort(v, n, sizeof *v, by_count_then_word);
  *out = v;
  return n;
}

void table_free(struct table *t) {
  for (size_t i = 0; i < t->nbuckets; i++)
    for (struct entry *e = t->buckets[i], *next; e; e = next) {
      next = e->next;
      free(e->word);
      free(e);
    }
  free(t->buckets);
}
