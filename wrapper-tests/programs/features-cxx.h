#pragma once
#include <stdexcept>
#include <string>
#include <vector>
void throw_if_negative(int v);
int compute_initial();
int other_unit_value();
struct Registry {
  static Registry& instance() { static Registry r; return r; }
  std::vector<std::string> names;
  size_t size() const { return names.size(); }
};
inline int shared_twice(int x) { return 2 * x; }
template <typename T> struct Counter { static inline T value{}; static T bump() { return ++value; } };
