#include "shelf.h"

static const char *const names[] = {"ash", "birch", "cedar", "dogwood"};

shelf::Label joined_labels(int n) {
  shelf::Stack<shelf::Label> labels;
  for (int i = 0; i < n; i++)
    labels.push(shelf::Label{names[i % 4], i});
  return labels.sum();
}
