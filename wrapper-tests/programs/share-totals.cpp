// Sums running word counts with std::map<std::string, int> over a
// std::vector (see share-words.cpp), and prints them.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

int distinct_words(const std::vector<std::string>& words);

long running_total(const std::vector<std::string>& words) {
  std::map<std::string, int> counts;
  long total = 0;
  for (const auto& w : words) total += ++counts[w];
  return total;
}

int main(int argc, char** argv) {
  std::vector<std::string> words{"the", "cat", "and", "the", "hat", "the"};
  for (int i = 1; i < argc; i++) words.emplace_back(argv[i]);
  std::printf("%d distinct, running total %ld\n", distinct_words(words), running_total(words));
  return 0;
}
