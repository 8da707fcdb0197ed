// Counts words with std::map<std::string, int> over a std::vector: shares
// those instances with share-totals.cpp and nothing else.
#include <map>
#include <string>
#include <vector>

int distinct_words(const std::vector<std::string>& words) {
  std::map<std::string, int> seen;
  for (const auto& w : words) seen[w]++;
  return static_cast<int>(seen.size());
}
