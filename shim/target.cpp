// The target machine's settings the C API lacks (clang's codegen options,
// the assembler's longest NOP) and the object emitter: one code generation
// pipeline run on many modules.
//
// Every function here only reads or writes plain fields of LLVM objects whose
// layout comes from the llvm-19-dev headers this file is compiled against
// (the same LLVM that inkwell links statically); the Rust side (src/llvm/)
// documents the invariants of each call.

#include <functional>
#include <llvm/ADT/SetVector.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm-c/TargetMachine.h>
#include <llvm/CodeGen/TargetSubtargetInfo.h>
#include <llvm/MC/MCAsmBackend.h>
#include <llvm/MC/MCRegisterInfo.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/MCTargetOptions.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Metadata.h>
#include <llvm-c/Core.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SmallVectorMemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include "shim_internal.h"

#include <llvm/CodeGen/TargetLoweringObjectFileImpl.h>

using namespace llvm;
using namespace repocc_shim;

namespace {

// The ELF object-file lowering's set of the module's `llvm.used` globals
// (sections of those get SHF_GNU_RETAIN) is filled by each module's
// AsmPrinter initialization and never emptied: with one target machine
// for many modules, it kept pointers to the globals of modules since
// freed, and a global of a later module allocated at the same address got
// SHF_GNU_RETAIN — which sections of an object did depended on the
// allocator, not on the code. The set is private; an explicit template
// instantiation may name a private member (C++ [temp.spec]/6), which is
// how it is reached here, for emptying only.
using UsedSet = SmallPtrSet<GlobalObject *, 2>;
UsedSet TargetLoweringObjectFileELF::*usedGlobalsMember();
template <UsedSet TargetLoweringObjectFileELF::*Member> struct UsedGlobalsAccess {
  friend UsedSet TargetLoweringObjectFileELF::*usedGlobalsMember() { return Member; }
};
template struct UsedGlobalsAccess<&TargetLoweringObjectFileELF::Used>;

// Forgets the globals earlier modules marked `llvm.used`; called before
// each module's code generation with `TM`.
void forgetUsedGlobals(TargetMachine &TM) {
  if (!TM.getTargetTriple().isOSBinFormatELF())
    return;
  if (auto *ELF = static_cast<TargetLoweringObjectFileELF *>(TM.getObjFileLowering()))
    (ELF->*usedGlobalsMember()).clear();
}

// The machine's large data threshold, which TargetMachine keeps protected
// without a getter (LLVM 19): read through a member pointer taken where
// access to it is granted, in a class derived from it.
struct LargeDataThresholdReader : llvm::TargetMachine {
  static uint64_t of(const llvm::TargetMachine &TM) {
    return TM.*(&LargeDataThresholdReader::LargeDataThreshold);
  }
};

uint64_t largeDataThreshold(const llvm::TargetMachine &TM) {
  return LargeDataThresholdReader::of(TM);
}

} // namespace

extern "C" {

void repocc_forget_used_globals(LLVMTargetMachineRef tm) {
  forgetUsedGlobals(*reinterpret_cast<TargetMachine *>(tm));
}


void repocc_set_target_options(LLVMTargetMachineRef tm,
                               const RepoccTargetOptions *opts) {
  llvm::TargetMachine *machine = reinterpret_cast<llvm::TargetMachine *>(tm);
  llvm::TargetOptions &o = machine->Options;
  o.FunctionSections = opts->function_sections != 0;
  o.DataSections = opts->data_sections != 0;
  o.UniqueSectionNames = opts->unique_section_names != 0;
  o.EmitAddrsig = opts->emit_addrsig != 0;
  o.UseInitArray = opts->use_init_array != 0;
  o.EmitCallSiteInfo = opts->emit_call_site_info != 0;
  if (opts->debugger_tuning_gdb)
    o.DebuggerTuning = llvm::DebuggerKind::GDB;
  machine->setLargeDataThreshold(opts->large_data_threshold);
}

// The longest NOP LLVM's assembler writes for the machine's subtarget when
// it pads code (between the functions of a section): what the composer pads
// with, so that the gaps it fills are the bytes a single object would hold.
// 0 if the target has no assembler backend.
// The subtarget is that of the module's first function with a body, as
// code generation builds it from its attributes ("tune-cpu" = "generic" has
// longer NOPs than the machine's own CPU): the same for every function
// clang emits in a unit.
unsigned repocc_max_nop_bytes(LLVMTargetMachineRef tm, LLVMModuleRef module) {
  llvm::TargetMachine *machine = reinterpret_cast<llvm::TargetMachine *>(tm);
  const llvm::MCSubtargetInfo *STI = machine->getMCSubtargetInfo();
  for (const llvm::Function &F : *llvm::unwrap(module))
    if (!F.isDeclaration()) {
      STI = machine->getSubtargetImpl(F);
      break;
    }
  const llvm::MCRegisterInfo *MRI = machine->getMCRegisterInfo();
  if (!STI || !MRI)
    return 0;
  llvm::MCTargetOptions Options;
  std::unique_ptr<llvm::MCAsmBackend> Backend(
      machine->getTarget().createMCAsmBackend(*STI, *MRI, Options));
  return Backend ? Backend->getMaximumNopSize(*STI) : 0;
}

// Reads the options back, so a unit test can prove the writes landed.
void repocc_get_target_options(LLVMTargetMachineRef tm,
                               RepoccTargetOptions *out) {
  llvm::TargetMachine *machine = reinterpret_cast<llvm::TargetMachine *>(tm);
  const llvm::TargetOptions &o = machine->Options;
  out->function_sections = o.FunctionSections;
  out->data_sections = o.DataSections;
  out->unique_section_names = o.UniqueSectionNames;
  out->emit_addrsig = o.EmitAddrsig;
  out->use_init_array = o.UseInitArray;
  out->emit_call_site_info = o.EmitCallSiteInfo;
  out->debugger_tuning_gdb = o.DebuggerTuning == llvm::DebuggerKind::GDB;
  out->large_data_threshold = largeDataThreshold(*machine);
}

} // extern "C"


#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Support/CodeGen.h>

// One code generation pipeline for many modules: what
// LLVMTargetMachineEmitToMemoryBuffer builds for every call (a legacy pass
// manager with the target's whole code generation pipeline, about a fifth
// of a small fragment's code generation at -O0) built once and run on one
// module after another, as llc's -run-twice does to prove that the passes
// keep no state from one module to the next (each run starts with its
// doInitialization and ends with its doFinalization, which resets the
// machine code context). The object of each run goes to the same buffer,
// emptied first.
struct RepoccObjectEmitter {
  llvm::SmallVector<char, 0> Buffer;
  llvm::raw_svector_ostream OS{Buffer};
  llvm::legacy::PassManager PM;
  llvm::TargetMachine *TM = nullptr;
};

extern "C" RepoccObjectEmitter *repocc_object_emitter_new(LLVMTargetMachineRef tm) {
  auto *E = new RepoccObjectEmitter;
  E->TM = reinterpret_cast<llvm::TargetMachine *>(tm);
  if (E->TM->addPassesToEmitFile(E->PM, E->OS, nullptr,
                                 llvm::CodeGenFileType::ObjectFile)) {
    delete E;
    return nullptr;
  }
  return E;
}

// The object for `module`, valid until the next run or the emitter's end.
extern "C" const char *repocc_object_emitter_run(RepoccObjectEmitter *E,
                                                 LLVMModuleRef module,
                                                 size_t *len) {
  llvm::Module *M = llvm::unwrap(module);
  E->Buffer.clear();
  M->setDataLayout(E->TM->createDataLayout());
  forgetUsedGlobals(*E->TM);
  E->PM.run(*M);
  *len = E->Buffer.size();
  return E->Buffer.data();
}

extern "C" void repocc_object_emitter_free(RepoccObjectEmitter *E) { delete E; }

