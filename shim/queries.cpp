// What the C API cannot ask of a module or value (COMDATs, users, block
// addresses, inlined sizes, a fragment's reach), and small edits (make a
// declaration, order functions, trim debug units, strip local names).
//
#include <llvm/ADT/SetVector.h>

#include "shim_internal.h"

using namespace llvm;
using namespace repocc_shim;

// The COMDAT group of a global object, or NULL (the C API has no getter for
// a comdat's name). The name is not NUL-terminated; its length goes to *len.
extern "C" const char *repocc_comdat_name(LLVMValueRef global, size_t *len) {
  auto *GO = dyn_cast<GlobalObject>(unwrap(global));
  if (!GO || !GO->getComdat())
    return nullptr;
  StringRef Name = GO->getComdat()->getName();
  *len = Name.size();
  return Name.data();
}

// The global an alias points at (through casts and constant offsets), or
// NULL when the aliasee is not based on a single global object.
extern "C" LLVMValueRef repocc_alias_base_object(LLVMValueRef alias) {
  auto *GA = dyn_cast<GlobalAlias>(unwrap(alias));
  if (!GA)
    return nullptr;
  const GlobalObject *GO = GA->getAliaseeObject();
  return GO ? wrap(const_cast<GlobalObject *>(GO)) : nullptr;
}

// The function whose block address a global's initializer takes (a table of
// labels for a computed goto), or NULL. Such a table must live in the
// function's own fragment: a block address cannot cross objects.
static const Function *findBlockAddressFunction(const Constant *C, unsigned Depth) {
  if (auto *BA = dyn_cast<BlockAddress>(C))
    return BA->getFunction();
  if (Depth > 16)
    return nullptr;
  for (const Use &Op : C->operands())
    if (auto *OpC = dyn_cast<Constant>(Op.get()))
      if (!isa<GlobalValue>(OpC))
        if (const Function *F = findBlockAddressFunction(OpC, Depth + 1))
          return F;
  return nullptr;
}

extern "C" LLVMValueRef repocc_blockaddress_function(LLVMValueRef global) {
  auto *G = dyn_cast<GlobalVariable>(unwrap(global));
  if (!G || !G->hasInitializer())
    return nullptr;
  const Function *F = findBlockAddressFunction(G->getInitializer(), 0);
  return F ? wrap(const_cast<Function *>(F)) : nullptr;
}

#include <llvm/ADT/SmallPtrSet.h>

// Adds the functions other than `Self` whose instructions use `V`
// (directly or through constant expressions) to `Found`, stopping at two;
// false when something else uses it (a global's initializer, an alias, a
// block address...). With `Initializers`, a global variable whose
// initializer holds `V` (through constant expressions, arrays and
// structures) counts as a user too, by itself, unless it is one of LLVM's
// own (`llvm.used`, `llvm.global_ctors`: they make nothing of what they
// list).
static bool collectUsers(const Value *V, const GlobalValue *Self,
                         SmallPtrSetImpl<const GlobalValue *> &Found, bool Initializers,
                         unsigned Depth) {
  for (const User *U : V->users()) {
    if (auto *I = dyn_cast<Instruction>(U)) {
      const Function *F = I->getFunction();
      if (F != Self)
        Found.insert(F);
    } else if (isa<ConstantExpr>(U) ||
               (Initializers && isa<ConstantAggregate>(U))) {
      if (Depth > 8 || !collectUsers(U, Self, Found, Initializers, Depth + 1))
        return false;
    } else if (auto *G = dyn_cast<GlobalVariable>(U);
               Initializers && G && !G->getName().starts_with("llvm.")) {
      if (G != Self)
        Found.insert(G);
    } else {
      return false;
    }
    if (Found.size() > 1)
      return true;
  }
  return true;
}

// How many functions other than itself use the global `value` (0, 1, or 2
// for "more"), with the one in `*sole`; -1 when something other than a
// function's code uses it. With `initializers`, a global variable whose
// initializer holds it counts as a user (see `collectUsers`).
extern "C" int repocc_user_functions(LLVMValueRef value, LLVMValueRef *sole, int initializers) {
  *sole = nullptr;
  auto *GV = dyn_cast<GlobalValue>(unwrap(value));
  if (!GV)
    return -1;
  SmallPtrSet<const GlobalValue *, 2> Found;
  if (!collectUsers(GV, GV, Found, initializers != 0, 0))
    return -1;
  if (Found.size() == 1)
    *sole = wrap(const_cast<GlobalValue *>(*Found.begin()));
  return static_cast<int>(Found.size());
}

// Instructions in `F` once the `alwaysinline` functions it calls are
// inlined into it (each counted once; cycles and depth bounded).
static size_t inlinedSize(const Function *F, SmallPtrSetImpl<const Function *> &Seen,
                          unsigned Depth) {
  size_t N = 0;
  for (const BasicBlock &BB : *F)
    for (const Instruction &I : BB) {
      ++N;
      auto *CB = dyn_cast<CallBase>(&I);
      const Function *G = CB ? CB->getCalledFunction() : nullptr;
      if (G && !G->isDeclaration() && G->hasFnAttribute(Attribute::AlwaysInline) &&
          Depth < 8 && Seen.insert(G).second)
        N += inlinedSize(G, Seen, Depth + 1);
    }
  return N;
}

// The instructions of the function `value` with the `alwaysinline`
// functions it calls inlined: about the size clang's inliner weighs.
extern "C" size_t repocc_inlined_size(LLVMValueRef value) {
  auto *F = dyn_cast<Function>(unwrap(value));
  if (!F || F->isDeclaration())
    return 0;
  SmallPtrSet<const Function *, 8> Seen;
  Seen.insert(F);
  return inlinedSize(F, Seen, 0);
}

// Whether a call in the module names the function `value` as its callee
// (what the inliner could copy its body into).
extern "C" int repocc_is_called(LLVMValueRef value) {
  auto *F = dyn_cast<Function>(unwrap(value));
  if (!F)
    return 0;
  for (const Use &U : F->uses())
    if (auto *CB = dyn_cast<CallBase>(U.getUser()); CB && CB->isCallee(&U))
      return 1;
  return 0;
}

// Whether the function `value` has exactly one use, a call (as the callee)
// from another function, and nothing forbids inlining it there.
extern "C" int repocc_has_one_call_site(LLVMValueRef value) {
  auto *F = dyn_cast<Function>(unwrap(value));
  if (!F || F->isDeclaration() || !F->hasOneUse() || F->isVarArg())
    return 0;
  if (F->hasFnAttribute(Attribute::NoInline) || F->hasFnAttribute(Attribute::OptimizeNone))
    return 0;
  const Use &U = *F->use_begin();
  auto *CB = dyn_cast<CallBase>(U.getUser());
  if (!CB || !CB->isCallee(&U) || CB->getFunction() == F || CB->isNoInline())
    return 0;
  // `alwaysinline` overrides the inliner's compatibility checks: a
  // `target("bmi2")` variant would be inlined into its generic dispatcher
  // and compiled without BMI2 (zstd's `*_bmi2` functions were). Only where
  // clang's inliner could inline it too: the same target and compatible
  // attributes.
  const Function *Caller = CB->getFunction();
  for (const char *Kind : {"target-cpu", "target-features", "tune-cpu"})
    if (Caller->getFnAttribute(Kind).getValueAsString() !=
        F->getFnAttribute(Kind).getValueAsString())
      return 0;
  if (!AttributeFuncs::areInlineCompatible(*Caller, *F))
    return 0;
  // clang's always-inliner runs before its inliner: a call inside an
  // `alwaysinline` function is copied into each of that function's
  // callers first, and the last-call bonus then sees every copy (zstd's
  // `ZSTD_DUBT_findBestMatch`, called once from the `FORCE_INLINE`
  // `ZSTD_BtFindBestMatch`, stays a function of its own in clang's build,
  // called from nine). One call only if each `alwaysinline` caller up the
  // chain is itself called once.
  for (unsigned Depth = 0; Caller->hasFnAttribute(Attribute::AlwaysInline); ++Depth) {
    if (Depth == 8 || !Caller->hasOneUse())
      return 0;
    auto *Up = dyn_cast<CallBase>(Caller->use_begin()->getUser());
    if (!Up || !Up->isCallee(&*Caller->use_begin()) || Up->getFunction() == Caller)
      return 0;
    Caller = Up->getFunction();
  }
  return 1;
}

// Marks constant the internal global variables nothing in the module
// stores to, by GlobalOpt's own test (`GlobalStatus`: no store, no
// address that escapes). clang's GlobalOpt does this before the statics
// become hidden externals in repocc's pipeline, which then cannot know
// that nothing else writes them: loads from them fold, and they go to
// `.rodata` (yaml-cpp's `s_introTransitions` tables were in `.data`).
// Only less than GlobalOpt finds (it runs after simplification): never a
// written global. Thread-locals, globals with a section of their own and
// externally initialized ones are left alone. Returns how many.
#include <llvm/Transforms/Utils/GlobalStatus.h>
extern "C" unsigned repocc_mark_unwritten_statics_constant(LLVMModuleRef module) {
  unsigned N = 0;
  for (GlobalVariable &GV : unwrap(module)->globals()) {
    if (!GV.hasLocalLinkage() || GV.isConstant() || !GV.hasInitializer() ||
        GV.isExternallyInitialized() || GV.isThreadLocal() || GV.hasSection())
      continue;
    GlobalStatus GS;
    if (GlobalStatus::analyzeGlobal(&GV, GS) || GS.StoredType != GlobalStatus::NotStored)
      continue;
    GV.setConstant(true);
    ++N;
  }
  return N;
}

// Turns a definition into a declaration (its fragment comes from the
// repository). Declarations cannot be in a COMDAT.
// Whether anything uses the global `value`, constants nothing uses any
// more (what was left of an initializer made a declaration) removed first,
// as the optimizer's passes remove them.
extern "C" int repocc_is_used(LLVMValueRef value) {
  auto *GV = dyn_cast<GlobalValue>(unwrap(value));
  if (!GV)
    return 0;
  GV->removeDeadConstantUsers();
  return !GV->use_empty();
}

extern "C" void repocc_make_declaration(LLVMValueRef value) {
  auto *GV = dyn_cast<GlobalValue>(unwrap(value));
  if (!GV || GV->isDeclaration())
    return;
  if (auto *F = dyn_cast<Function>(GV)) {
    // Calls to it keep their call site entries (see `declareUnitCallees`
    // in extract.cpp), as where it is defined.
    DISubprogram *Declaration = repocc_shim::callSiteDeclaration(*F);
    F->deleteBody();
    F->setComdat(nullptr);
    if (Declaration)
      F->setSubprogram(Declaration);
  } else if (auto *G = dyn_cast<GlobalVariable>(GV)) {
    G->setInitializer(nullptr);
    G->setLinkage(GlobalValue::ExternalLinkage);
    G->setComdat(nullptr);
  }
}


// The global values that use `G`, looking through constant expressions
// and aggregates: the function an instruction belongs to, or the global
// variable or alias whose initializer holds it. One "G\tuser\n" line each.
static void appendUsers(const GlobalValue &G, std::string &Out) {
  SmallPtrSet<const GlobalValue *, 8> Users;
  SmallPtrSet<const User *, 16> Visited;
  SmallVector<const User *, 16> Work(G.user_begin(), G.user_end());
  while (!Work.empty()) {
    const User *U = Work.pop_back_val();
    if (!Visited.insert(U).second)
      continue;
    if (auto *I = dyn_cast<Instruction>(U)) {
      if (const Function *P = I->getFunction())
        Users.insert(P);
    } else if (auto *GV = dyn_cast<GlobalValue>(U)) {
      Users.insert(GV);
    } else {
      for (const User *UU : U->users())
        Work.push_back(UU);
    }
  }
  for (const GlobalValue *GV : Users) {
    if (!GV->hasName())
      continue;
    Out += G.getName();
    Out += '\t';
    Out += GV->getName();
    Out += '\n';
  }
}

// Which global values use each named global value — functions, variables,
// aliases, defined or declared (see appendUsers). The caller frees the
// string with LLVMDisposeMessage.
extern "C" char *repocc_global_users(LLVMModuleRef module) {
  Module *M = unwrap(module);
  std::string Out;
  for (GlobalValue &G : M->global_values())
    if (G.hasName())
      appendUsers(G, Out);
  return LLVMCreateMessage(Out.c_str());
}

// What a fragment of the definitions `names`, extracted alone (see
// repocc_extract_definitions), refers to and marks address-significant,
// found without making its module: the members and, through the local
// definitions it would hold copies of, everything they reach. One line
// per symbol: "R\t<name>" where the fragment would declare it (a reference),
// "S\t<name>" where a use there lets its address escape and the frontend
// did not make it unnamed_addr, nor is it thread-local (see
// addressEscapes: the fragment's module marks exactly these); and
// "W\t<n>", the basic blocks of its functions. The caller frees the
// string with LLVMDisposeMessage.
extern "C" char *repocc_fragment_reach(LLVMModuleRef module, const char *const *names,
                                       size_t count) {
  Module &M = *unwrap(module);
  SmallPtrSet<GlobalValue *, 16> Inside; // defined in the fragment
  SmallVector<GlobalValue *, 16> Work;
  SetVector<GlobalValue *> Used;       // with a use in the fragment
  SmallPtrSet<GlobalValue *, 16> Escaping; // with a use that lets the address escape
  SmallPtrSet<const Constant *, 32> Seen[2]; // walked with Escapes false, true
  for (size_t i = 0; i < count; i++) {
    GlobalValue *GV = M.getNamedValue(names[i]);
    if (GV && !GV->isDeclaration() && Inside.insert(GV).second)
      Work.push_back(GV);
  }
  // A local definition is copied into the fragment (the materializer's
  // rule); any other global is declared there.
  // `Escapes`: whether the use lets the addresses in C escape (see
  // addressEscapes: all but an access's address, and the `llvm.` lists).
  std::function<void(const Constant *, bool)> reach = [&](const Constant *C, bool Escapes) {
    if (auto *G = dyn_cast<GlobalValue>(C)) {
      auto *GV = const_cast<GlobalValue *>(G);
      Used.insert(GV);
      if (Escapes)
        Escaping.insert(GV);
      if (GV->hasLocalLinkage() && !GV->isDeclaration() &&
          (isa<Function>(GV) || isa<GlobalVariable>(GV)) && Inside.insert(GV).second)
        Work.push_back(GV);
      return;
    }
    // A constant is walked once for each way it is used: escaping or not.
    if (!Seen[Escapes].insert(C).second)
      return;
    for (const Use &Op : C->operands())
      if (auto *OC = dyn_cast<Constant>(Op.get()))
        reach(OC, Escapes);
  };
  auto reachOperand = [&](const Use &Op) {
    const Value *V = Op.get();
    if (auto *C = dyn_cast<Constant>(V)) {
      if (!repocc_shim::addressOnlyAccessed(Op)) {
        reach(C, true);
        return;
      }
      // An access's address: its base does not escape when it is a
      // global (through other constants, `inttoptr` of arithmetic on one,
      // it does, as addressEscapes finds); the indices of the arithmetic
      // on it are operands as any other.
      while (repocc_shim::addressArithmetic(C)) {
        for (unsigned i = 1; i < C->getNumOperands(); i++)
          reach(cast<Constant>(C->getOperand(i)), true);
        C = cast<Constant>(C->getOperand(0));
      }
      reach(C, !isa<GlobalValue>(C));
    }
    // A global that only a debug intrinsic's metadata names is no
    // reference: the fragment's module has no declaration of it
    // (`killDebugOnlyDeclarations` in extract.cpp), and stored code that
    // listed one made a unit that takes it hold a constant that nothing in
    // the object names and its cold compile does not have (libstdc++'s
    // `path::stem`, whose inlined `substr` names "basic_string::substr").
  };
  uint64_t Blocks = 0;
  while (!Work.empty()) {
    GlobalValue *GV = Work.pop_back_val();
    if (auto *F = dyn_cast<Function>(GV)) {
      if (F->hasPersonalityFn())
        reach(F->getPersonalityFn(), true);
      if (F->hasPrefixData())
        reach(F->getPrefixData(), true);
      if (F->hasPrologueData())
        reach(F->getPrologueData(), true);
      for (const BasicBlock &BB : *F) {
        Blocks++;
        for (const Instruction &I : BB)
          for (const Use &Op : I.operands())
            reachOperand(Op);
      }
    } else if (auto *G = dyn_cast<GlobalVariable>(GV)) {
      if (G->hasInitializer())
        reach(G->getInitializer(), !G->getName().starts_with("llvm."));
    } else if (auto *A = dyn_cast<GlobalAlias>(GV)) {
      reach(A->getAliasee(), true);
    }
  }
  std::string Out;
  auto line = [&](char Kind, const GlobalValue *G) {
    if (!G->hasName() || G->getName().starts_with("llvm."))
      return;
    Out += Kind;
    Out += '\t';
    Out += G->getName();
    Out += '\n';
  };
  for (GlobalValue *G : Used) {
    if (!Inside.count(G) && (isa<Function>(G) || isa<GlobalVariable>(G) || isa<GlobalAlias>(G)))
      line('R', G);
    if (Escaping.count(G) && !G->hasGlobalUnnamedAddr() && !G->isThreadLocal())
      line('S', G);
  }
  Out += "W\t" + std::to_string(Blocks + 1) + "\n";
  return LLVMCreateMessage(Out.c_str());
}

// The module's text as LLVMPrintModuleToString prints it, except that an
// unnamed block whose address is taken prints as `repocc.addr.N` (N its
// position in its function) instead of by number. The writer numbers a
// function's values only inside the function: a block address in a
// global's initializer (a computed goto's label table) made it number the
// whole function again for every entry, quadratic in an interpreter's
// dispatch loop (lua's lvm.c: two thirds of the print). Named, a block
// prints by its name. The names are taken away again before returning,
// so the module is as it was. The caller frees the string with
// LLVMDisposeMessage.
extern "C" char *repocc_print_module(LLVMModuleRef module) {
  Module *M = unwrap(module);
  std::vector<BasicBlock *> Named;
  for (Function &F : *M) {
    unsigned Position = 0;
    for (BasicBlock &BB : F) {
      if (BB.hasAddressTaken() && !BB.hasName()) {
        BB.setName("repocc.addr." + Twine(Position));
        Named.push_back(&BB);
      }
      ++Position;
    }
  }
  std::string Out;
  raw_string_ostream OS(Out);
  // Buffered: the writer wraps OS in a formatted_raw_ostream, which takes
  // OS's buffering. Unbuffered (raw_string_ostream's default), each of the
  // writer's small writes went through the column tracking and a string
  // append of its own.
  OS.SetBufferSize(1 << 16);
  M->print(OS, nullptr);
  OS.flush();
  for (BasicBlock *BB : Named)
    BB->setName("");
  return LLVMCreateMessage(Out.c_str());
}

#include <llvm/ADT/StringSet.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/Target/TargetLoweringObjectFile.h>

// Debug info of a fragment module, after it was parsed into a code
// generation worker's context (its compile units are its own there, so
// they can be changed in place). A fragment's compile unit lists the
// global variables the fragment defines (extraction gave it an empty
// list); the glue's, which is the unit's own, keeps the enums, retained
// types and imported entities, emitted once per object, and no variables.
// Orders the module's functions by name (a stable sort). The always-inliner
// visits callees in module order, so whether an always_inline callee's own
// always_inline callees are already inlined into it when it is inlined
// into a caller — and so where the caller's stack slots lie — follows the
// order clang emitted the unit's functions in; by name, it is the same in
// every unit.
extern "C" void repocc_sort_functions_by_name(LLVMModuleRef module) {
  Module *M = unwrap(module);
  std::vector<Function *> Functions;
  for (Function &F : *M)
    Functions.push_back(&F);
  std::stable_sort(Functions.begin(), Functions.end(),
                   [](Function *A, Function *B) { return A->getName() < B->getName(); });
  for (Function *F : Functions) {
    F->removeFromParent();
    M->getFunctionList().push_back(F);
  }
}

// The functions `names` (those the module has) first, in that order, then
// the others in the order they were in. The optimizer's call graph visits
// functions in module order (see `ir::call_order`).
extern "C" void repocc_order_functions(LLVMModuleRef module, const char *const *names,
                                       size_t count) {
  Module *M = unwrap(module);
  std::vector<Function *> Ordered;
  SmallPtrSet<Function *, 32> Placed;
  for (size_t i = 0; i < count; i++)
    if (Function *F = M->getFunction(names[i]); F && Placed.insert(F).second)
      Ordered.push_back(F);
  for (Function &F : *M)
    if (!Placed.contains(&F))
      Ordered.push_back(&F);
  for (Function *F : Ordered) {
    F->removeFromParent();
    M->getFunctionList().push_back(F);
  }
}

// The local definitions a fragment's module holds besides its members `names`
// (the helpers repocc_extract_definitions copies in, in the order its mapper
// met them) put in an order the carver finds again in an object compiled
// with a section per definition (see carve.rs's `canonical_order`): after
// the members, functions by name, and variables by name but for those the
// code generator pools in mergeable sections (constants and strings, which
// the carver takes piece by piece in the order the code refers to them),
// which keep their order. Laid out so, a fragment compiled as a module
// of its own (with debug info) holds its code and data where the carved
// fragment (without) holds them, and `-g` moves nothing.
extern "C" void repocc_order_local_definitions(LLVMModuleRef module, LLVMTargetMachineRef tm,
                                               const char *const *names, size_t count) {
  Module *M = unwrap(module);
  const TargetMachine &TM = *reinterpret_cast<TargetMachine *>(tm);
  StringSet<> Members;
  for (size_t i = 0; i < count; i++)
    Members.insert(names[i]);
  auto helper = [&](const GlobalObject &G) {
    return G.hasLocalLinkage() && !G.isDeclaration() && !Members.contains(G.getName());
  };
  auto byName = [](const GlobalValue *A, const GlobalValue *B) {
    return A->getName() < B->getName();
  };
  std::vector<Function *> Functions;
  for (Function &F : *M)
    if (helper(F))
      Functions.push_back(&F);
  std::stable_sort(Functions.begin(), Functions.end(), byName);
  for (Function *F : Functions) {
    F->removeFromParent();
    M->getFunctionList().push_back(F);
  }
  std::vector<GlobalVariable *> Pooled, Own;
  for (GlobalVariable &G : M->globals())
    if (helper(G)) {
      SectionKind Kind = TargetLoweringObjectFile::getKindForGlobal(&G, TM);
      (Kind.isMergeableCString() || Kind.isMergeableConst() ? Pooled : Own).push_back(&G);
    }
  std::stable_sort(Own.begin(), Own.end(), byName);
  for (auto *List : {&Pooled, &Own})
    for (GlobalVariable *G : *List) {
      M->removeGlobalVariable(G);
      M->insertGlobalVariable(G);
    }
}

// The variables whose debug records the module's globals carry (only the
// defined globals' with `DefinedOnly`).
static DenseSet<const DIGlobalVariable *> variablesHeld(const Module &M, bool DefinedOnly) {
  DenseSet<const DIGlobalVariable *> Held;
  for (const GlobalVariable &G : M.globals()) {
    if (DefinedOnly && G.isDeclaration())
      continue;
    SmallVector<DIGlobalVariableExpression *, 1> GVEs;
    G.getDebugInfo(GVEs);
    for (DIGlobalVariableExpression *E : GVEs)
      Held.insert(E->getVariable());
  }
  return Held;
}

extern "C" void repocc_trim_debug_units(LLVMModuleRef module, int glue) {
  Module *M = unwrap(module);
  SmallVector<Metadata *, 4> Defined;
  for (GlobalVariable &G : M->globals()) {
    if (G.isDeclaration())
      continue;
    SmallVector<DIGlobalVariableExpression *, 1> GVEs;
    G.getDebugInfo(GVEs);
    Defined.append(GVEs.begin(), GVEs.end());
  }
  DenseSet<const DIGlobalVariable *> Placed = variablesHeld(*M, /*DefinedOnly=*/false);
  for (DICompileUnit *CU : M->debug_compile_units()) {
    // A fragment's unit lists, besides, the records extraction gave it of
    // variables the optimizer removed (no global of the module has them).
    SmallVector<Metadata *, 4> Listed(Defined.begin(), Defined.end());
    if (!glue)
      for (DIGlobalVariableExpression *E : CU->getGlobalVariables())
        if (E && !Placed.count(E->getVariable()))
          Listed.push_back(E);
    // The glue's, those extraction named for it (see listRemovedRecords).
    if (NamedMDNode *Removed = glue ? M->getNamedMetadata(kRemovedRecords) : nullptr)
      for (const MDNode *T : Removed->operands())
        if (auto *E = dyn_cast_or_null<DIGlobalVariableExpression>(T->getOperand(0).get()))
          if (unitOfRecord(*M, E) == CU)
            Listed.push_back(E);
    CU->replaceGlobalVariables(MDTuple::get(M->getContext(), Listed));
    if (!glue) {
      CU->replaceEnumTypes(nullptr);
      CU->replaceRetainedTypes(nullptr);
      CU->replaceImportedEntities(nullptr);
      CU->replaceMacros(nullptr);
    }
  }
  if (NamedMDNode *Removed = M->getNamedMetadata(kRemovedRecords))
    M->eraseNamedMetadata(Removed);
}

// Gives each function that indexes a local table of pointers to local
// constants a table of its own, where the optimizer's ConstantMerge made
// one of identical tables of several functions (a switch over string
// literals, inlined into its callers); returns how many tables it made.
// LLVM's relative lookup table converter takes only a table with one use,
// so whether a function's table became a table of offsets depended on
// whether another function with the same table was compiled too: a warm
// compile that pruned the other made it one, the cold compile did not.
// Alone, each function's table is converted as its own code decides. Only
// in position-independent code (the converter does nothing elsewhere),
// and only tables whose every use is an instruction's. (Each copy's name
// is settled by repocc_number_lookup_tables.)
extern "C" unsigned repocc_split_shared_lookup_tables(LLVMModuleRef module) {
  Module *M = unwrap(module);
  if (M->getPICLevel() == PICLevel::NotPIC)
    return 0;
  auto localConstant = [](const Constant *C) {
    auto *G = dyn_cast<GlobalVariable>(C->stripInBoundsConstantOffsets());
    return G && G->isConstant() && G->hasLocalLinkage();
  };
  SmallVector<GlobalVariable *, 8> Shared;
  for (GlobalVariable &G : M->globals()) {
    if (!G.hasLocalLinkage() || !G.isConstant() || !G.hasInitializer() || G.hasOneUse() ||
        G.use_empty())
      continue;
    auto *Array = dyn_cast<ConstantArray>(G.getInitializer());
    if (!Array || !Array->getType()->getElementType()->isPointerTy() ||
        !llvm::all_of(Array->operands(),
                      [&](const Use &Op) { return localConstant(cast<Constant>(Op.get())); }))
      continue;
    SmallPtrSet<const Function *, 4> Users;
    bool Instructions = true;
    for (const Use &U : G.uses()) {
      auto *I = dyn_cast<Instruction>(U.getUser());
      if (!I) {
        Instructions = false;
        break;
      }
      Users.insert(I->getFunction());
    }
    if (Instructions && Users.size() > 1)
      Shared.push_back(&G);
  }
  unsigned Made = 0;
  for (GlobalVariable *G : Shared) {
    // The uses of each function but the first (in module order) move to
    // a copy of the table for that function.
    SmallVector<Use *, 8> Uses;
    for (Use &U : G->uses())
      Uses.push_back(&U);
    DenseMap<const Function *, GlobalVariable *> Own;
    SmallPtrSet<const Function *, 4> Using;
    for (Use *U : Uses)
      Using.insert(cast<Instruction>(U->getUser())->getFunction());
    const Function *First = nullptr;
    for (const Function &F : *M)
      if (Using.count(&F)) {
        First = &F;
        break;
      }
    for (Use *U : Uses) {
      const Function *F = cast<Instruction>(U->getUser())->getFunction();
      if (F == First)
        continue;
      GlobalVariable *&Copy = Own[F];
      if (!Copy) {
        Copy = new GlobalVariable(*M, G->getValueType(), /*isConstant=*/true, G->getLinkage(),
                                  G->getInitializer(), G->getName(), G,
                                  G->getThreadLocalMode(), G->getAddressSpace());
        Copy->copyAttributesFrom(G);
        ++Made;
      }
      U->set(Copy);
    }
  }
  return Made;
}

#include <llvm/IR/InstIterator.h>

#include <optional>

// The functions whose instructions use `C`, directly or through constant
// expressions; false where something else does (a global's initializer).
static bool instructionUsers(const Constant *C, SmallSetVector<const Function *, 2> &Functions,
                             unsigned Depth = 0) {
  if (Depth > 8)
    return false;
  for (const User *U : C->users()) {
    if (auto *I = dyn_cast<Instruction>(U))
      Functions.insert(I->getFunction());
    else if (auto *E = dyn_cast<ConstantExpr>(U); !E || !instructionUsers(E, Functions, Depth + 1))
      return false;
  }
  return true;
}

// Calls `Visit` on each global `C` is or holds (a constant expression's
// operands), in operand order.
template <typename F> static void globalsIn(const Value *V, F &&Visit, unsigned Depth = 0) {
  if (auto *G = dyn_cast<GlobalValue>(V))
    Visit(G);
  else if (auto *E = dyn_cast<ConstantExpr>(V); E && Depth < 8)
    for (const Use &Op : E->operands())
      globalsIn(Op.get(), Visit, Depth + 1);
}

// Names the lookup tables the optimizer made for one function by that
// function alone. LLVM names a table after the function it is made for
// (`switch.table.f`, `reltable.f`) and, where that name is taken (the
// function's second table), adds a number the whole module counts:
// `switch.table.f.7` after six other collisions elsewhere. A warm compile
// that prunes those others numbered differently from the cold compile of
// the same source, and a stored fragment keeps the number of the build
// that made it. The name is in the object with -fdata-sections (the
// table's section). Here each function's tables are numbered in the order
// its code first uses them. A table several functions use keeps its name.
// Returns how many names changed.
extern "C" unsigned repocc_number_lookup_tables(LLVMModuleRef module) {
  Module *M = unwrap(module);
  // Each renamed table and its new name; renamed in two steps, so that no
  // new name is taken by an old one.
  SmallVector<std::pair<GlobalValue *, std::string>, 8> Renamed;

  // Lookup tables each used by one function's code.
  static constexpr StringLiteral TableKinds[] = {"switch.table.", "reltable."};
  DenseMap<const GlobalVariable *, StringRef> TableKind;
  SmallSetVector<const Function *, 8> Owners;
  for (GlobalVariable &G : M->globals()) {
    if (!G.hasPrivateLinkage())
      continue;
    for (StringRef Kind : TableKinds) {
      SmallSetVector<const Function *, 2> Users;
      if (G.getName().starts_with(Kind) && instructionUsers(&G, Users) && Users.size() == 1) {
        TableKind[&G] = Kind;
        Owners.insert(Users.front());
        break;
      }
    }
  }
  for (const Function *F : Owners) {
    StringMap<unsigned> Count;
    SmallPtrSet<const GlobalValue *, 4> Seen;
    for (const Instruction &I : instructions(F))
      for (const Use &Op : I.operands())
        globalsIn(Op.get(), [&](const GlobalValue *G) {
          auto Kind = TableKind.find(dyn_cast<GlobalVariable>(G));
          if (Kind == TableKind.end() || !Seen.insert(G).second)
            return;
          unsigned N = Count[Kind->second]++;
          std::string Name = (Kind->second + F->getName()).str();
          if (N > 0)
            Name += "." + std::to_string(N);
          if (Name != G->getName())
            Renamed.push_back({const_cast<GlobalValue *>(G), Name});
        });
  }

  for (auto &[G, Name] : Renamed)
    G->setName("");
  for (auto &[G, Name] : Renamed)
    G->setName(Name); // Taken by something else: LLVM numbers it, as before.
  return Renamed.size();
}

// Takes the location from the debug records that name a local definition
// their own function's code does not use (`#dbg_value(ptr
// @_Z7squaresi.resume)`: a coroutine's resume function, the value of a
// frame field in a caller the coroutine's ramp was inlined into). Called
// where the module optimization half starts, right before the context is
// dropped: from there on, whether the unit still has such a local depends
// on whether its own user is compiled. A warm compile that pruned
// `squares` dropped `squares.resume` there, and the caller's records went
// without a location (and the passes after merged them otherwise), while
// the cold compile kept the records, and the caller's fragment a copy of
// the resume function's code. Returns how many records changed.
extern "C" unsigned repocc_kill_debug_only_local_references(LLVMModuleRef module) {
  Module *M = unwrap(module);
  if (M->debug_compile_units().empty())
    return 0;
  unsigned Killed = 0;
  for (Function &F : *M) {
    if (F.isDeclaration())
      continue;
    std::optional<SmallPtrSet<const GlobalValue *, 16>> Used; // what F's code uses, once asked
    auto usedByCode = [&](const GlobalValue *G) {
      if (!Used) {
        Used.emplace();
        for (const Instruction &I : instructions(F))
          for (const Use &Op : I.operands())
            globalsIn(Op.get(), [&](const GlobalValue *X) { Used->insert(X); });
      }
      return Used->count(G) != 0;
    };
    auto namesUnusedLocal = [&](Value *V) {
      bool Any = false;
      if (V)
        globalsIn(V, [&](const GlobalValue *G) {
          Any |= G->hasLocalLinkage() && !usedByCode(G);
        });
      return Any;
    };
    Killed += killDebugLocations(F, namesUnusedLocal);
  }
  return Killed;
}

// Notes, before pruning and the optimizer, the debug records of variables
// whose record clang's object keeps where the variable itself may be gone,
// each with the definition whose fragment is to list it, in named metadata
// `kCarriedRecords` (see shim_internal.h): the variables `names`, each
// carried by `carriers[i]` (a static only that definition uses, see
// canonical.rs's attached locals) or, where that is empty, by the glue (a
// local nothing uses: its uses folded by the frontend); and the records of
// the unit's compile units that no variable has (a constant the frontend
// folded everywhere, whose record clang gives its value), by the glue.
// The glue takes only those outside functions.
// What the notes hold depends on the source only, not on what is pruned.
// Records without a name (a literal's) are left out: no debugger can ask
// for them.
extern "C" void repocc_note_carried_records(LLVMModuleRef module, const char *const *names,
                                            const char *const *carriers, size_t count) {
  Module *M = unwrap(module);
  LLVMContext &C = M->getContext();
  auto note = [&](DIGlobalVariable *V, StringRef Carrier) {
    if (V && !V->getName().empty())
      M->getOrInsertNamedMetadata(kCarriedRecords)
          ->addOperand(MDTuple::get(C, {V, MDString::get(C, Carrier)}));
  };
  // A function's static goes to the glue only if it belongs to none: in
  // the glue it would be under a subprogram without a name, where no
  // debugger looks for it, and no digest of the function covers it.
  auto inFunction = [](const DIGlobalVariable *V) {
    for (const DIScope *S = V->getScope(); S; S = S->getScope())
      if (isa<DISubprogram>(S))
        return true;
    return false;
  };
  for (size_t i = 0; i < count; i++) {
    GlobalVariable *G = M->getGlobalVariable(names[i], /*AllowInternal=*/true);
    if (!G || G->isDeclaration())
      continue;
    SmallVector<DIGlobalVariableExpression *, 1> GVEs;
    G->getDebugInfo(GVEs);
    for (DIGlobalVariableExpression *E : GVEs)
      if (*carriers[i] || !inFunction(E->getVariable()))
        note(E->getVariable(), carriers[i]);
  }
  DenseSet<const DIGlobalVariable *> Held = variablesHeld(*M, /*DefinedOnly=*/false);
  for (DICompileUnit *CU : M->debug_compile_units())
    for (DIGlobalVariableExpression *E : CU->getGlobalVariables())
      if (E && !Held.count(E->getVariable()) && !inFunction(E->getVariable()))
        note(E->getVariable(), "");
}

// After the optimizer: of the variables `repocc_note_carried_records`
// noted, those no global of the module defines any more (folded into
// their user, turned into a relative table, never emitted) keep in
// clang's object the record the compile unit lists (with their constant,
// or without an address); those records, each with its carrier, go in
// `kRemovedRecords`, for the carrier's fragment or the glue (see
// extraction), and the note goes. Declarations do not count: what pruning
// made one is gone in a cold compile too.
extern "C" void repocc_keep_removed_records(LLVMModuleRef module) {
  Module *M = unwrap(module);
  NamedMDNode *Carried = M->getNamedMetadata(kCarriedRecords);
  if (!Carried)
    return;
  LLVMContext &C = M->getContext();
  DenseMap<const DIGlobalVariable *, MDString *> CarrierOf;
  for (const MDNode *T : Carried->operands())
    if (T->getNumOperands() == 2)
      if (auto *V = dyn_cast_or_null<DIGlobalVariable>(T->getOperand(0).get()))
        if (auto *S = dyn_cast_or_null<MDString>(T->getOperand(1).get()))
          CarrierOf.try_emplace(V, S);
  M->eraseNamedMetadata(Carried);
  DenseSet<const DIGlobalVariable *> Defined = variablesHeld(*M, /*DefinedOnly=*/true);
  for (DICompileUnit *CU : M->debug_compile_units())
    for (DIGlobalVariableExpression *E : CU->getGlobalVariables()) {
      auto It = E ? CarrierOf.find(E->getVariable()) : CarrierOf.end();
      if (It != CarrierOf.end() && !Defined.count(It->first))
        M->getOrInsertNamedMetadata(kRemovedRecords)->addOperand(MDTuple::get(C, {E, It->second}));
    }
}


// Takes the name off every argument, block and instruction of `module`'s
// functions (see canonical.rs: the digests' text then numbers them, the
// same whatever names the frontend or mem2reg gave).
extern "C" void repocc_strip_local_names(LLVMModuleRef module_ref) {
  for (llvm::Function &f : *llvm::unwrap(module_ref)) {
    for (llvm::Argument &a : f.args())
      if (a.hasName())
        a.setName("");
    for (llvm::BasicBlock &b : f) {
      if (b.hasName())
        b.setName("");
      for (llvm::Instruction &i : b)
        if (i.hasName())
          i.setName("");
    }
  }
}
