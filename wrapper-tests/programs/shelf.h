// Templates in a header, for the gdb session of t-cxx-sharing.
#pragma once
#include <vector>

namespace shelf {

template <class T> class Stack {
public:
  void push(const T &value) {
    items_.push_back(value);
    ++pushes_;
  }
  T pop() {
    T top = items_.back();
    items_.pop_back();
    return top;
  }
  T sum() const {
    T total{};
    for (const T &item : items_)
      total = total + item;
    return total;
  }
  unsigned long size() const { return items_.size(); }

private:
  std::vector<T> items_;
  int pushes_ = 0;
};

struct Label {
  const char *name;
  int weight;
};

inline Label operator+(const Label &a, const Label &b) {
  return Label{a.name ? a.name : b.name, a.weight + b.weight};
}

} // namespace shelf
