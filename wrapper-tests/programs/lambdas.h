// Types local to an inline function (a lambda, a struct), passed to class
// templates: each function that inlines `run` holds them.
template <class T> struct Box {
  T value;
  __attribute__((noinline)) int get(int x) const { return value(x); }
};
template <class T> Box<T> box(T t) { return Box<T>{t}; }
inline int run(int k, int x) {
  struct Step { int by; } step{k + 1};
  auto f = [k, step](int y) { return y * k + step.by; };
  return box(f).get(x) + Box<decltype(f)>{f}.value(x);
}
