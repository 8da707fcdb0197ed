// Files and directories removed when a build is interrupted.
//
// Interrupted builds (SIGINT, SIGTERM, SIGHUP): repocc's own temporary files
// and directories are removed, as clang removes its own, and the process
// then dies of the same signal. Files go on LLVM's own list (the one
// clang's outputs use: RemoveFileOnSignal, lock-free, regular files only);
// LLVM cannot remove a directory, so the few directories are kept here, in
// a fixed table of pointers a signal handler can read without locks.

#include <llvm/Support/Signals.h>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include "shim_internal.h"

using namespace llvm;
using namespace repocc_shim;

namespace {
constexpr int kInterruptSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr size_t kDirectorySlots = 16;
std::atomic<char *> interrupt_directories[kDirectorySlots];
struct sigaction previous_actions[3];
std::atomic<bool> interrupt_handler_installed{false};

void remove_interrupt_files() {
  // LLVM's list first (the directories' files are on it), then the
  // now-empty directories.
  llvm::sys::RunInterruptHandlers();
  for (auto &slot : interrupt_directories) {
    if (char *dir = slot.load())
      rmdir(dir);
  }
}

void on_interrupt(int sig) {
  remove_interrupt_files();
  // Whatever handled the signal before (the default: terminate) handles
  // it now; raising it from inside the handler leaves it pending until
  // this handler returns.
  for (size_t i = 0; i < 3; i++)
    if (kInterruptSignals[i] == sig)
      sigaction(sig, &previous_actions[i], nullptr);
  raise(sig);
}

void install_interrupt_handler() {
  if (interrupt_handler_installed.exchange(true))
    return;
  for (size_t i = 0; i < 3; i++) {
    struct sigaction old;
    if (sigaction(kInterruptSignals[i], nullptr, &old) != 0)
      continue;
    previous_actions[i] = old;
    // An ignored signal (nohup, a background job of a shell) stays
    // ignored: handling it would turn it into one that kills.
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN)
      continue;
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = on_interrupt;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_RESTART;
    sigaction(kInterruptSignals[i], &act, nullptr);
  }
}
} // namespace

extern "C" void repocc_remove_file_on_interrupt(const char *path, size_t len) {
  install_interrupt_handler();
  llvm::sys::RemoveFileOnSignal(llvm::StringRef(path, len));
}

// What an interrupt would remove, removed now (a process about to be
// replaced by another).
extern "C" void repocc_remove_interrupt_files() { remove_interrupt_files(); }

extern "C" void repocc_keep_file_on_interrupt(const char *path, size_t len) {
  llvm::sys::DontRemoveFileOnSignal(llvm::StringRef(path, len));
}

// 1 when the directory was registered, 0 when the table is full.
extern "C" int repocc_remove_directory_on_interrupt(const char *path) {
  install_interrupt_handler();
  char *copy = strdup(path);
  if (!copy)
    return 0;
  for (auto &slot : interrupt_directories) {
    char *expected = nullptr;
    if (slot.compare_exchange_strong(expected, copy))
      return 1;
  }
  free(copy);
  return 0;
}

extern "C" void repocc_keep_directory_on_interrupt(const char *path) {
  for (auto &slot : interrupt_directories) {
    char *dir = slot.load();
    if (dir && strcmp(dir, path) == 0 && slot.compare_exchange_strong(dir, nullptr)) {
      // A handler running right now may still read it: leaked, it is a
      // few bytes per directory and invocation.
      return;
    }
  }
}

