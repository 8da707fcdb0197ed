#include <cstdio>

#include "shelf.h"

shelf::Label joined_labels(int n);

int main() {
  shelf::Stack<int> numbers;
  for (int i = 1; i <= 4; i++)
    numbers.push(i * i);
  shelf::Label l = joined_labels(3);
  shelf::Stack<shelf::Label> more;
  more.push(l);
  std::printf("%d %lu %s %d %lu\n", numbers.sum(), numbers.size(), l.name, l.weight,
              more.size());
  return 0;
}
