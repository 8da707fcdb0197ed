// Dynamic initialization in C++ headers: inline variables and template
// static data members with dynamic initializers (their .init_array entries
// are in the variables' COMDAT groups), function-local statics, inline
// thread_local variables, virtual inheritance, exceptions, RTTI. Three
// units (inits-a/b/c.cpp) share them; see t-cxx-sharing.
#pragma once
#include <string>
#include <vector>
#include <map>
#include <memory>
#include <functional>
#include <cstdio>
#include <stdexcept>
#include <atomic>
inline int counter() { static int n = 0; return ++n; }
inline std::string &registry_name() { static std::string s = "reg"; return s; }
inline thread_local int tls_inline = 7;
inline int &tls_ref() { thread_local int x = counter(); return x; }
template <class T> struct Box { static T value; static int count; T get() const { return value; } };
template <class T> T Box<T>::value = T();
template <class T> int Box<T>::count = counter();
inline std::vector<int> gvec = {1, 2, 3};
struct Base { virtual ~Base() = default; virtual int f() const { return 1; } };
struct Derived : Base { int f() const override { return 2 + counter() * 0; } };
template <class T> struct TD : Base { T t{}; int f() const override { return (int)sizeof(T) + t; } };
inline auto make_adder(int k) { return [k](int x) { return x + k; }; }
inline int use_lambda(int v) { static auto l = [](int x) { return x * 3; }; return l(v); }
inline int throws(int v) { if (v > 2) throw std::runtime_error("big " + std::to_string(v)); return v; }
struct VB { int a = 1; virtual ~VB() = default; };
struct V1 : virtual VB { int b = 2; };
struct V2 : virtual VB { int c = 3; };
struct VD : V1, V2 { int d = 4; };
inline int vsum(const VD &v) { return v.a + v.b + v.c + v.d; }
template <int N> constexpr int fib() { if constexpr (N < 2) return N; else return fib<N - 1>() + fib<N - 2>(); }
inline std::atomic<int> atom{5};
inline const char *lit() { return "shared literal"; }
int unit_a(); int unit_b(); int unit_c();
std::string describe(const Base &b);
