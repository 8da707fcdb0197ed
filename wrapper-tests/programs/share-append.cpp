// Appended to share-words.cpp by t-cxx-sharing: one function that needs
// template instances the file did not have (std::set<int>).
#include <set>

int distinct_lengths(const std::vector<std::string>& words) {
  std::set<int> lengths;
  for (const auto& w : words) lengths.insert(static_cast<int>(w.size()));
  return static_cast<int>(lengths.size());
}
