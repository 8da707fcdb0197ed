// A C++20 generator: LLVM's coroutine split makes `count.resume`,
// `count.destroy` and `count.cleanup` with copies of `count`'s subprogram,
// and a frame type whose members point back at it.
#include <coroutine>
#include <cstdio>
#include <exception>

struct Generator {
  struct promise_type {
    int current = 0;
    Generator get_return_object() {
      return Generator{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(int v) noexcept {
      current = v;
      return {};
    }
    void return_void() noexcept {}
    void unhandled_exception() { std::terminate(); }
  };
  explicit Generator(std::coroutine_handle<promise_type> h) : handle(h) {}
  Generator(Generator &&o) noexcept : handle(o.handle) { o.handle = nullptr; }
  ~Generator() {
    if (handle)
      handle.destroy();
  }
  bool next() {
    handle.resume();
    return !handle.done();
  }
  int value() const { return handle.promise().current; }
  std::coroutine_handle<promise_type> handle;
};

__attribute__((noinline)) Generator count(int from, int to, int step) {
  for (int i = from; i < to; i += step) {
    int square = i * i;
    co_yield square + step;
  }
}

int main(int argc, char **) {
  long total = 0;
  int n = 0;
  for (Generator g = count(argc, 40, 3); g.next(); n++)
    total += g.value();
  std::printf("%d values, total %ld\n", n, total);
  return 0;
}
