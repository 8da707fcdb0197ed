#include "features-cxx.h"
static int registered = (Registry::instance().names.push_back("helper"), 1);
void throw_if_negative(int v) {
  if (v < 0) throw std::invalid_argument("negative: " + std::to_string(v));
}
int compute_initial() { return 40 + registered + 1; }
int other_unit_value() { return shared_twice(50) + Counter<int>::bump(); }
int tuning_knob = 5;
int scaled(int x) { return 3 * x; }
int probe_here() { return KnobProbe::read(Gauge{1}); }
