// What repocc's start costs: which parts of LLVM are linked in, and when
// their static initializers run. Each static archive member the linker
// takes brings its static initializers (command-line options registered
// into LLVM's global parser, pass registrations); run before `main`, they
// cost a unit cache hit, whose own work is a millisecond or two, more than
// that work.
//
// Kept out of the link:
// - llvm-sys's `target.c` defines the `LLVM_Initialize{All,Native}*`
//   wrappers; inkwell refers to them, so the linker took that object and,
//   through it, every target LLVM 19 was built with (AMDGPU, ARM, Mips,
//   PowerPC, RISC-V, ... : about 200 of 642 static initializers). Defined
//   here, in the shim's archive, which comes before llvm-sys's in the link,
//   for the two targets repocc generates code for (`ir::canonical`).
// - Polly (Debian links it into LLVM's tools as an "extension"): the LTO
//   backend and clang's backend call `getPollyPluginInfo()` to offer its
//   passes to every pass builder, which brought all of Polly and its
//   options, and `AllAnalysesOn<Loop>::SetKey`, a template's static member
//   every user instantiates, was taken from the first archive defining it,
//   Polly's. Polly runs only when asked for with `-mllvm -polly`, and a
//   unit with `-mllvm` is clang's own compile (`driver::args`), so the
//   plugin here offers nothing, and the member is instantiated here.
//
// Run late: build.rs links the executable with a linker script that puts
// the `.init_array` entries of LLVM's, clang's and this shim's archives in
// a section of their own, `repocc_llvm_init`, which the C library does not
// run. `repocc_run_deferred_initializers` runs them, in link order, once
// (`llvm::startup` calls it before anything uses LLVM or clang): a unit
// cache hit never does, and starts without them (lua's `lvm.c` hit: 5.3
// -> 4.0 ms of CPU). Nothing they initialize is used before: LLVM's
// signal handling (the interrupt lists a hit's temporaries go on) needs
// no static constructor, and the executable's other initializers (the C
// library's, Rust's, jemalloc's, libstdc++'s) stay where they were. The
// unit-test harness is linked with the script too: its tests make their
// contexts after `llvm::initialize` (`llvm::test_context`). Where the
// section does not exist (a link without the script), the initializers
// ran before `main` and there is nothing to run.

#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassPlugin.h>
#include <llvm-c/Target.h>
#include "repocc_shim.h"

template class llvm::AllAnalysesOn<llvm::Loop>;

// Polly's entry point (declared by no header: `llvm/Support/Extension.def`
// names it).
llvm::PassPluginLibraryInfo getPollyPluginInfo();

llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "Polly (not linked into repocc)", "",
          [](llvm::PassBuilder &) {}};
}

extern "C" {
// Declared here: llvm-sys's names, with C linkage (not in any header).
void LLVM_InitializeAllTargetInfos(void);
void LLVM_InitializeAllTargets(void);
void LLVM_InitializeAllTargetMCs(void);
void LLVM_InitializeAllAsmPrinters(void);
void LLVM_InitializeAllAsmParsers(void);
void LLVM_InitializeAllDisassemblers(void);
LLVMBool LLVM_InitializeNativeTarget(void);
LLVMBool LLVM_InitializeNativeAsmParser(void);
LLVMBool LLVM_InitializeNativeAsmPrinter(void);
LLVMBool LLVM_InitializeNativeDisassembler(void);

void LLVMInitializeX86TargetInfo(void);
void LLVMInitializeX86Target(void);
void LLVMInitializeX86TargetMC(void);
void LLVMInitializeX86AsmPrinter(void);
void LLVMInitializeX86AsmParser(void);
void LLVMInitializeX86Disassembler(void);
void LLVMInitializeAArch64TargetInfo(void);
void LLVMInitializeAArch64Target(void);
void LLVMInitializeAArch64TargetMC(void);
void LLVMInitializeAArch64AsmPrinter(void);
void LLVMInitializeAArch64AsmParser(void);
void LLVMInitializeAArch64Disassembler(void);

void LLVM_InitializeAllTargetInfos(void) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeAArch64TargetInfo();
}

void LLVM_InitializeAllTargets(void) {
  LLVMInitializeX86Target();
  LLVMInitializeAArch64Target();
}

void LLVM_InitializeAllTargetMCs(void) {
  LLVMInitializeX86TargetMC();
  LLVMInitializeAArch64TargetMC();
}

void LLVM_InitializeAllAsmPrinters(void) {
  LLVMInitializeX86AsmPrinter();
  LLVMInitializeAArch64AsmPrinter();
}

void LLVM_InitializeAllAsmParsers(void) {
  LLVMInitializeX86AsmParser();
  LLVMInitializeAArch64AsmParser();
}

void LLVM_InitializeAllDisassemblers(void) {
  LLVMInitializeX86Disassembler();
  LLVMInitializeAArch64Disassembler();
}

// The host's target; 1 (failure) on a host repocc does not generate code
// for, as llvm-sys's own wrappers answer for a host without a target.
LLVMBool LLVM_InitializeNativeTarget(void) {
#if defined(__x86_64__) || defined(__i386__)
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  return 0;
#elif defined(__aarch64__)
  LLVMInitializeAArch64TargetInfo();
  LLVMInitializeAArch64Target();
  LLVMInitializeAArch64TargetMC();
  return 0;
#else
  return 1;
#endif
}

LLVMBool LLVM_InitializeNativeAsmParser(void) {
#if defined(__x86_64__) || defined(__i386__)
  LLVMInitializeX86AsmParser();
  return 0;
#elif defined(__aarch64__)
  LLVMInitializeAArch64AsmParser();
  return 0;
#else
  return 1;
#endif
}

LLVMBool LLVM_InitializeNativeAsmPrinter(void) {
#if defined(__x86_64__) || defined(__i386__)
  LLVMInitializeX86AsmPrinter();
  return 0;
#elif defined(__aarch64__)
  LLVMInitializeAArch64AsmPrinter();
  return 0;
#else
  return 1;
#endif
}

LLVMBool LLVM_InitializeNativeDisassembler(void) {
#if defined(__x86_64__) || defined(__i386__)
  LLVMInitializeX86Disassembler();
  return 0;
#elif defined(__aarch64__)
  LLVMInitializeAArch64Disassembler();
  return 0;
#else
  return 1;
#endif
}
}

extern "C" {
// The section's bounds (the linker defines them for a section named like a
// C identifier); weak: null where the section does not exist.
typedef void (*Initializer)(void);
extern const Initializer __start_repocc_llvm_init[] __attribute__((weak));
extern const Initializer __stop_repocc_llvm_init[] __attribute__((weak));

void repocc_run_deferred_initializers(void) {
  if (__start_repocc_llvm_init == nullptr || __stop_repocc_llvm_init == nullptr)
    return;
  for (const Initializer *f = __start_repocc_llvm_init; f != __stop_repocc_llvm_init; ++f) {
    if (*f != nullptr)
      (*f)();
  }
}
}
