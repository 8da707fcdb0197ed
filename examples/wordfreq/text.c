#include <ctype.h>
#include "wordfreq.h"

void for_each_word(const char *text, void (*fn)(const char *word, void *arg), void *arg) {
  char word[64];
  size_t n = 0;
  for (const char *p = text;; p++) {
    if (*p && (isalpha((unsigned char)*p) || *p == '\'')) {
      if (n < sizeof word - 1) word[n++] = (char)tolower((unsigned char)*p);
    } else {
      if (n) { word[n] = 0; fn(word, arg); n = 0; }
      if (!*p) break;
    }
  }
}
