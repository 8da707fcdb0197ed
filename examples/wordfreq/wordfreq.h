#ifndef WORDFREQ_H
#define WORDFREQ_H
#include <stddef.h>

struct entry {
  char *word;
  unsigned count;
  struct entry *next;
};

struct table {
  struct entry **buckets;
  size_t nbuckets;
  size_t nwords;
};

void table_init(struct table *t, size_t nbuckets);
void table_add(struct table *t, const char *word);
size_t table_sorted(const struct table *t, struct entry ***out);
void table_free(struct table *t);

/* Splits text into lower-case words; calls fn for each. */
void for_each_word(const char *text, void (*fn)(const char *word, void *arg), void *arg);

static inline unsigned hash_word(const char *s) {
  unsigned h = 2166136261u;
  while (*s) h = (h ^ (unsigned char)*s++) * 16777619u;
  return h;
}
#endif
