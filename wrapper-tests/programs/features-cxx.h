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
// Template arguments that are addresses (a variable, a function, members):
// their debug info names the symbols (DW_TAG_template_value_parameter).
extern int tuning_knob;
int scaled(int x);
struct Gauge { int level; int twice() const { return 2 * level; } };
template <int *P, int (*F)(int), int Gauge::*M, int (Gauge::*Mf)() const> struct Probe {
  static int read(const Gauge &g) { return F(*P) + g.*M + (g.*Mf)(); }
};
using KnobProbe = Probe<&tuning_knob, scaled, &Gauge::level, &Gauge::twice>;
int probe_here();
