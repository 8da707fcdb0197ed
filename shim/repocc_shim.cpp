// repocc's C++ shim: the few LLVM 19 settings the C API does not expose.
//
// Kept deliberately tiny: every function here only reads or writes plain
// fields of LLVM objects whose layout comes from the llvm-19-dev headers this
// file is compiled against (the same LLVM that inkwell links statically).
// The Rust side (src/llvm_shim.rs) documents the invariants for each call.

#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm-c/TargetMachine.h>

extern "C" {

// Codegen options clang sets on its TargetMachine (clang/lib/CodeGen/
// BackendUtil.cpp, initTargetOptions) that LLVMCreateTargetMachine leaves at
// TargetOptions' defaults.
struct RepoccTargetOptions {
  int function_sections;
  int data_sections;
  int unique_section_names;
  int emit_addrsig;
  int use_init_array;
  int emit_call_site_info;
  int debugger_tuning_gdb;
};

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
}

} // extern "C"
