// Debug fragments in one module (see docs/performance.md, "Debug
// fragments from one code generation"): each fragment's module, as it is
// compiled alone, linked into one batch module without any of its
// definitions binding to another fragment's, and in its own order.
//
// What the probe found decides each step:
// - a fragment's definitions (functions, variables, aliases, their COMDAT
//   groups) take a suffix of its own, so that a call from one fragment to
//   another's function stays a call to a declaration (a call to a
//   definition of another compile unit gets another call site entry);
//   declarations keep their names (the code generator knows library
//   functions by name), except one whose debug info differs from the
//   declaration the batch holds already: see `ownDeclarations`;
// - everything is linked, not only what something refers to, and the
//   fragment's functions and variables then follow the others in the
//   order they had in the fragment (the code generator makes a function's
//   debug entries when it finishes the function);
// - debug types are the fragments' nodes, one per type where the unit has
//   one. A fragment with two types of one identifier (two local structs
//   of one name and content get one `repocc.` identifier, see
//   debug_types.cpp) is left out by the caller: each would be a type unit
//   of one signature, alone as in the batch, which carving declines. Two
//   fragments' types of one identifier that are two nodes (a class named
//   after a type local to a fragment's function, with that fragment's
//   lines) are two type units of one signature in the batch as well; the
//   carver takes for each fragment the one its compile unit made.
// - one linker (`IRMover`) for all of a batch's fragments: making one
//   walks every type and metadata node of the batch, so one per fragment
//   made linking a unit's fragments quadratic (format-test.cc at -O2 -g:
//   over a minute for 4,000 fragments).

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Linker/IRMover.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include "shim_internal.h"
#include "line_rebaser.h"

using namespace llvm;

extern "C" {

void repocc_share_debug_types_by_identifier(LLVMContextRef context) {
  unwrap(context)->enableDebugTypeODRUniquing();
}

int repocc_debug_types_unshareable(LLVMModuleRef module) {
  Module *M = unwrap(module);
  // Every node reachable, not only what DebugInfoFinder visits (it skips
  // the template parameters of member declarations, where two local
  // structs of one name were found).
  DenseSet<const Metadata *> Seen;
  SmallVector<const MDNode *, 64> Work;
  auto visit = [&](Metadata *MD) {
    if (auto *N = dyn_cast_or_null<MDNode>(MD); N && Seen.insert(N).second)
      Work.push_back(N);
  };
  repocc_shim::forEachRoot(*M, visit);
  DenseMap<MDString *, const DICompositeType *> ByIdentifier;
  while (!Work.empty()) {
    const MDNode *N = Work.pop_back_val();
    if (auto *C = dyn_cast<DICompositeType>(N))
      if (MDString *Id = C->getRawIdentifier()) {
        auto [It, New] = ByIdentifier.try_emplace(Id, C);
        if (!New && It->second != C)
          return 1;
      }
    for (const MDOperand &Op : N->operands())
      visit(Op.get());
  }
  return 0;
}

// The directory of `module`'s (first) compile unit, or NULL without one.
// A batch holds fragments of one directory only: a type unit is made by
// the first compile unit that needs it and names its files in that unit's
// line table, whose files are split against the unit's directory (a file
// in it is named relative to it, `include/fmt/core.h` as `core.h` in
// `include/fmt`); a fragment from another directory names them so too,
// alone, whereas in the batch its types took the other unit's naming.
const char *repocc_debug_compile_directory(LLVMModuleRef module, size_t *len) {
  for (DICompileUnit *CU : unwrap(module)->debug_compile_units()) {
    StringRef Directory = CU->getDirectory();
    *len = Directory.size();
    return Directory.data();
  }
  return nullptr;
}

// The batch module and its one linker.
struct RepoccBatchLinker {
  Module *Batch;
  IRMover Mover;
  // Library functions by name only (the triple is not set before the
  // first fragment, and a name is enough: see
  // `repocc_batch_declaration_conflicts`).
  TargetLibraryInfoImpl Library;
  explicit RepoccBatchLinker(Module &M) : Batch(&M), Mover(M) {}
};

namespace {

// The declarations of `Src` that must stay the fragment's own in the
// batch: a declaration is one per module, and the batch keeps the first
// fragment's. Its debug info (the callee's DISubprogram, which a call
// site entry names: DW_AT_call_origin) is made of that fragment's nodes;
// a C++ fragment declares classes with nodes of its own
// (`cxxDeclarationOf` in extract.cpp), so another fragment calling the
// same function got a second declaration of each class in its compile
// unit (`_Rb_tree_node_base` in `_Rb_tree::_M_get_insert_unique_pos`),
// which its compile alone does not have. A declaration without debug
// info where the batch's has some (or the other way) differs as well.
std::vector<Function *> ownDeclarations(const RepoccBatchLinker &Linker, Module &Src) {
  std::vector<Function *> Own;
  for (Function &F : Src)
    if (F.isDeclaration() && !F.isIntrinsic())
      if (Function *Held = Linker.Batch->getFunction(F.getName());
          Held && Held->getSubprogram() != F.getSubprogram())
        Own.push_back(&F);
  return Own;
}

} // namespace

// Whether `source` has a declaration that must be its own in the batch
// (`ownDeclarations`) but cannot be renamed: a library function's, which
// the code generator knows by name (`memcmp` of a few bytes becomes
// loads, `sqrt` an instruction). Such a fragment is compiled alone.
int repocc_batch_declaration_conflicts(RepoccBatchLinker *linker, LLVMModuleRef source) {
  LibFunc Library;
  for (Function *F : ownDeclarations(*linker, *unwrap(source)))
    if (linker->Library.getLibFunc(F->getName(), Library))
      return 1;
  return 0;
}

RepoccBatchLinker *repocc_batch_linker_new(LLVMModuleRef batch) {
  return new RepoccBatchLinker(*unwrap(batch));
}

void repocc_batch_linker_free(RepoccBatchLinker *linker) { delete linker; }

// Renames `source`'s definitions (and the declarations that must be its
// own, see `ownDeclarations`) with `suffix`, moves all of them into
// `batch` and puts them, in their order in `source`, after what `batch`
// held. `source` is consumed. 1: linked; 0: the linker refused (`*error`
// holds why, a message the caller disposes of).
int repocc_link_fragment(RepoccBatchLinker *linker, LLVMModuleRef source, const char *suffix,
                         char **error) {
  *error = nullptr;
  Module *Dst = linker->Batch;
  std::unique_ptr<Module> Src(unwrap(source));
  std::string Suffix = suffix;
  for (Function *F : ownDeclarations(*linker, *Src))
    F->setName((F->getName() + Suffix).str());
  for (Comdat *C : [&] {
         std::vector<Comdat *> Own;
         for (auto &Entry : Src->getComdatSymbolTable())
           Own.push_back(&Entry.getValue());
         return Own;
       }()) {
    Comdat *Renamed = Src->getOrInsertComdat((C->getName() + Suffix).str());
    Renamed->setSelectionKind(C->getSelectionKind());
    for (GlobalObject &GO : Src->global_objects())
      if (GO.getComdat() == C)
        GO.setComdat(Renamed);
  }
  std::vector<GlobalValue *> Defined;
  std::vector<std::string> FunctionOrder, VariableOrder;
  for (GlobalValue &GV : Src->global_values()) {
    if (GV.isDeclaration() || GV.getName().starts_with("llvm."))
      continue;
    GV.setName((GV.getName() + Suffix).str());
    Defined.push_back(&GV);
  }
  for (Function &F : *Src)
    if (!F.isDeclaration())
      FunctionOrder.push_back(F.getName().str());
  for (GlobalVariable &G : Src->globals())
    if (!G.isDeclaration() && !G.getName().starts_with("llvm."))
      VariableOrder.push_back(G.getName().str());
  // The structor lists and `llvm.used` are appended.
  for (GlobalVariable &G : Src->globals())
    if (G.hasAppendingLinkage())
      Defined.push_back(&G);
  Error E = linker->Mover.move(std::move(Src), Defined, [](GlobalValue &, IRMover::ValueAdder) {},
                       /*IsPerformingImport=*/false);
  if (E) {
    std::string Message;
    raw_string_ostream OS(Message);
    OS << E;
    OS.flush();
    *error = LLVMCreateMessage(Message.c_str());
    return 0;
  }
  for (const std::string &Name : FunctionOrder)
    if (Function *F = Dst->getFunction(Name)) {
      F->removeFromParent();
      Dst->getFunctionList().push_back(F);
    }
  for (const std::string &Name : VariableOrder)
    if (GlobalVariable *G = Dst->getGlobalVariable(Name, /*AllowInternal=*/true)) {
      Dst->removeGlobalVariable(G);
      Dst->insertGlobalVariable(G);
    }
  return 1;
}

} // extern "C"
