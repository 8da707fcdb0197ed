// Fragment extraction and the unit's shared debug types.
//
// Fragment extraction: a new module (same context) holding the bodies of the
// named definitions, with declarations for everything they reference.
// CloneModule would copy every global of the source as a declaration for
// each fragment (quadratic for thousands of fragments); a ValueMaterializer
// creates only the declarations a fragment actually references.

#include <llvm/ADT/StringSet.h>
#include <llvm/IR/Comdat.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/IntrinsicInst.h>
#include <optional>
#include <set>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/GlobalIFunc.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/BinaryFormat/Dwarf.h>
#include <llvm/IR/DebugProgramInstruction.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Support/SmallVectorMemoryBuffer.h>
#include "shim_internal.h"

using namespace llvm;
using namespace repocc_shim;

namespace {

using namespace llvm;


// Whether `F` leads to the compile unit `CU`: by its subprogram, or by an
// instruction's location (or one it is inlined at) or a variable of a
// debug record or intrinsic. (LLVM's search looks at the instructions
// only; a function the optimizer left without any, `unreachable` alone,
// then named a compile unit the module did not list, which the verifier
// refuses.)
bool reachesUnit(const Function &F, const DICompileUnit *CU) {
  if (const DISubprogram *SP = F.getSubprogram(); SP && SP->getUnit() == CU)
    return true;
  auto byLocation = [&](const DILocation *L) {
    for (int i = 0; i < 256 && L; i++, L = L->getInlinedAt())
      if (unitOfScope(L->getScope()) == CU)
        return true;
    return false;
  };
  for (const BasicBlock &BB : F)
    for (const Instruction &I : BB) {
      if (auto *DVI = dyn_cast<DbgVariableIntrinsic>(&I))
        if (unitOfScope(DVI->getVariable()->getScope()) == CU)
          return true;
      if (byLocation(I.getDebugLoc().get()))
        return true;
      for (const DbgRecord &DR : I.getDbgRecordRange()) {
        if (auto *DVR = dyn_cast<DbgVariableRecord>(&DR))
          if (unitOfScope(DVR->getVariable()->getScope()) == CU)
            return true;
        if (auto *DLR = dyn_cast<DbgLabelRecord>(&DR))
          if (unitOfScope(DLR->getLabel()->getScope()) == CU)
            return true;
        if (byLocation(DR.getDebugLoc().get()))
          return true;
      }
    }
  return false;
}

// Names compile unit `CU` (a node of `M`'s) in `M`'s llvm.dbg.cu, once.
void listUnit(Module &M, Metadata *CU) {
  NamedMDNode *NMD = M.getOrInsertNamedMetadata("llvm.dbg.cu");
  for (const MDNode *Op : NMD->operands())
    if (Op == CU)
      return;
  NMD->addOperand(cast<MDNode>(CU));
}

// Clones `From`'s body into `To` (another module). LLVM's DifferentModule
// cloning runs a DebugInfoFinder over every instruction only to list the
// compile units the new module must name in llvm.dbg.cu, and it walks the
// whole unit's compile unit (every global's and retained type) for each
// function cloned. A unit from clang has one compile unit: cloned as
// "ClonedModule" (the same cloning, without that search), and the unit
// added here when the body leads to it, as the search would find it.
void cloneBody(Function *To, const Function *From, ValueToValueMapTy &VMap,
               ValueMaterializer *Mat) {
  // CloneFunctionInto expects the arguments to be mapped already.
  auto NewArg = To->arg_begin();
  for (const Argument &A : From->args()) {
    NewArg->setName(A.getName());
    VMap[&A] = &*NewArg++;
  }
  SmallVector<ReturnInst *, 8> Returns;
  const Module &Src = *From->getParent();
  auto CUs = Src.debug_compile_units();
  if (!CUs.empty() && std::next(CUs.begin()) != CUs.end()) {
    CloneFunctionInto(To, From, VMap, CloneFunctionChangeType::DifferentModule, Returns, "",
                      nullptr, nullptr, Mat);
    return;
  }
  CloneFunctionInto(To, From, VMap, CloneFunctionChangeType::ClonedModule, Returns, "", nullptr,
                    nullptr, Mat);
  if (CUs.empty() || !reachesUnit(*From, *CUs.begin()))
    return;
  listUnit(*To->getParent(), MapMetadata(*CUs.begin(), VMap, RF_None, nullptr, Mat));
}

// Lists, in `Dst`'s llvm.dbg.cu, the compile units of global variable
// `From`'s debug records, once they are copied into `Dst`, as `cloneBody`
// lists a function's: a compile unit that llvm.dbg.cu does not name lists
// no variables (`repocc_trim_debug_units` fills the list from the named
// ones), and a fragment holding only variables had none.
void listVariableUnits(const GlobalVariable &From, Module &Dst, ValueToValueMapTy &VMap,
                       ValueMaterializer *Mat) {
  SmallVector<DIGlobalVariableExpression *, 1> GVEs;
  From.getDebugInfo(GVEs);
  // A C++ namespace's variable has no unit in its scopes (a namespace at
  // the top has none): it is the source's, when the source has one.
  for (DIGlobalVariableExpression *E : GVEs)
    if (const DICompileUnit *Unit = unitOfRecord(*From.getParent(), E))
      listUnit(Dst, MapMetadata(Unit, VMap, RF_None, nullptr, Mat));
}

// The records of variables gone from the unit that `Dst` lists (see
// repocc_keep_removed_records): a fragment's, those of the statics a
// member carried that the optimizer removed, in its compile unit (where
// repocc_trim_debug_units keeps them, and the relative line rebase
// reaches them); the glue's, those of constants the frontend folded, in
// named metadata for repocc_trim_debug_units (the glue's compile unit
// lists every global until then). clang's object has them all in the
// unit's list; each goes where the same source puts it in every compile,
// whatever is pruned (a carrier's digest covers what it carries).
void listRemovedRecords(const Module &Src, Module &Dst, ArrayRef<GlobalValue *> Kept, bool Glue,
                        ValueToValueMapTy &VMap, ValueMaterializer *Mat) {
  const NamedMDNode *Removed = Src.getNamedMetadata(kRemovedRecords);
  if (!Removed || Removed->getNumOperands() == 0)
    return;
  StringSet<> Carriers;
  for (const GlobalValue *GV : Kept)
    Carriers.insert(GV->getName());
  for (const MDNode *T : Removed->operands()) {
    if (T->getNumOperands() != 2)
      continue;
    auto *E = dyn_cast_or_null<DIGlobalVariableExpression>(T->getOperand(0).get());
    auto *Carrier = dyn_cast_or_null<MDString>(T->getOperand(1).get());
    if (!E || !Carrier || (Glue ? !Carrier->getString().empty()
                                : !Carriers.count(Carrier->getString())))
      continue;
    const DICompileUnit *CU = unitOfRecord(Src, E);
    if (!CU)
      continue;
    // The glue's compile unit is the unit's own where mapGlueCompileUnits
    // left it so: mapping it here would make a copy, a second unit.
    if (Glue && !VMap.MD().count(CU))
      VMap.MD()[CU].reset(const_cast<DICompileUnit *>(CU));
    auto *Own = dyn_cast<DICompileUnit>(MapMetadata(CU, VMap, RF_None, nullptr, Mat));
    if (!Own || (!Glue && Own == CU))
      continue;
    Metadata *Record = MapMetadata(E, VMap, RF_None, nullptr, Mat);
    listUnit(Dst, Own);
    if (Glue) {
      Dst.getOrInsertNamedMetadata(kRemovedRecords)
          ->addOperand(MDTuple::get(Dst.getContext(), {Record, Carrier}));
      continue;
    }
    SmallVector<Metadata *, 4> Listed(Own->getGlobalVariables().begin(),
                                      Own->getGlobalVariables().end());
    Listed.push_back(Record);
    Own->replaceGlobalVariables(MDTuple::get(Dst.getContext(), Listed));
  }
}

void copyComdat(Module &Dst, const GlobalObject &From, GlobalObject &To) {
  if (const Comdat *C = From.getComdat()) {
    Comdat *NC = Dst.getOrInsertComdat(C->getName());
    NC->setSelectionKind(C->getSelectionKind());
    To.setComdat(NC);
  }
}

// Local definitions the optimizer created (switch tables, merged strings,
// specialized clones) are copied into each fragment that uses them, as
// local definitions; everything else referenced becomes a declaration.
struct DeclarationMaterializer final : ValueMaterializer {
  Module &Dst;
  std::vector<std::pair<GlobalValue *, GlobalValue *>> LocalCopies;
  explicit DeclarationMaterializer(Module &D) : Dst(D) {}

  Value *materialize(Value *V) override {
    auto *GV = dyn_cast<GlobalValue>(V);
    if (!GV || GV->getParent() == &Dst)
      return nullptr;
    if (GV->hasLocalLinkage() && !GV->isDeclaration()) {
      GlobalValue *Copy = nullptr;
      if (auto *F = dyn_cast<Function>(GV)) {
        Function *NF = Function::Create(F->getFunctionType(), F->getLinkage(),
                                        F->getAddressSpace(), F->getName(), &Dst);
        NF->copyAttributesFrom(F);
        Copy = NF;
      } else if (auto *G = dyn_cast<GlobalVariable>(GV)) {
        auto *NG = new GlobalVariable(Dst, G->getValueType(), G->isConstant(),
                                      G->getLinkage(), nullptr, G->getName(), nullptr,
                                      G->getThreadLocalMode(), G->getAddressSpace());
        NG->copyAttributesFrom(G);
        Copy = NG;
      }
      if (Copy) {
        LocalCopies.emplace_back(GV, Copy);
        return Copy;
      }
    }
    if (GlobalValue *Existing = Dst.getNamedValue(GV->getName()))
      return Existing;
    GlobalValue *New = nullptr;
    Type *Ty = GV->getValueType();
    if (auto *FTy = dyn_cast<FunctionType>(Ty)) {
      Function *NF = Function::Create(FTy, GlobalValue::ExternalLinkage,
                                      GV->getAddressSpace(), GV->getName(), &Dst);
      if (auto *F = dyn_cast<Function>(GV)) {
        NF->setAttributes(F->getAttributes());
        NF->setCallingConv(F->getCallingConv());
      }
      New = NF;
    } else {
      bool Constant = false;
      if (auto *G = dyn_cast<GlobalVariable>(GV))
        Constant = G->isConstant();
      auto *NG = new GlobalVariable(Dst, Ty, Constant, GlobalValue::ExternalLinkage,
                                    nullptr, GV->getName(), nullptr,
                                    GV->getThreadLocalMode(), GV->getAddressSpace());
      if (auto *G = dyn_cast<GlobalVariable>(GV))
        NG->setAlignment(G->getAlign());
      New = NG;
    }
    if (GV->hasExternalWeakLinkage() || GV->hasWeakLinkage() || GV->hasLinkOnceLinkage())
      New->setLinkage(GlobalValue::ExternalWeakLinkage);
    if (GV->hasLocalLinkage())
      New->setVisibility(GlobalValue::HiddenVisibility);
    else
      New->setVisibility(GV->getVisibility());
    New->setDLLStorageClass(GV->getDLLStorageClass());
    New->setDSOLocal(GV->isDSOLocal());
    New->setThreadLocalMode(GV->getThreadLocalMode());
    // The frontend's `unnamed_addr`; what the optimizer inferred from the
    // unit's uses is replaced by what the fragment's own decide, once it
    // is complete (see `markEscapingAddresses`).
    New->setUnnamedAddr(GV->getUnnamedAddr());
    return New;
  }
};

} // namespace

namespace {

// How the unit's fragments hold its types (see above): C records when
// every compile unit is C with full debug info, C++ declarations when every
// one is C++ with full debug info, none otherwise (a mix, line tables only).
StubKind stubsUnitTypes(const Module &M) {
  StubKind Kind = StubNone;
  for (const DICompileUnit *CU : M.debug_compile_units()) {
    if (CU->getEmissionKind() != DICompileUnit::FullDebug)
      return StubNone;
    StubKind This;
    switch (CU->getSourceLanguage()) {
    case dwarf::DW_LANG_C:
    case dwarf::DW_LANG_C89:
    case dwarf::DW_LANG_C99:
    case dwarf::DW_LANG_C11:
    case dwarf::DW_LANG_C17:
      This = StubCRecords;
      break;
    case dwarf::DW_LANG_C_plus_plus:
    case dwarf::DW_LANG_C_plus_plus_03:
    case dwarf::DW_LANG_C_plus_plus_11:
    case dwarf::DW_LANG_C_plus_plus_14:
    case dwarf::DW_LANG_C_plus_plus_17:
    case dwarf::DW_LANG_C_plus_plus_20:
      This = StubCxxDecls;
      break;
    default:
      return StubNone;
    }
    if (Kind != StubNone && Kind != This)
      return StubNone;
    Kind = This;
  }
  return Kind;
}

// A dynamic class whose vtable this unit defines (its key function is
// here): clang gives it no identifier (a debugger finds it by its vtable;
// other units declare it), so without this every fragment that reaches it
// would hold a copy of the whole class, each of its member declarations a
// node of its own: `gtest-all.cc`, which defines every gtest class's key
// function, held 156 copies of `testing::TestSuite` in one batch. Held as
// a declaration by name instead, as clang's other units hold it; the glue
// keeps the definition (`repocc_retain_unit_types`). Only a class a name
// can find: not one in an anonymous namespace (checked by `cxxDeclared`)
// or one whose name holds a local or unnamed type, a lambda or a function
// type (a parenthesis).
bool homedDynamicClass(const DICompositeType *T) {
  return !T->getRawIdentifier() && T->getRawVTableHolder() && !T->isForwardDecl() &&
         !T->getName().empty() && !T->getName().contains('(');
}

// A C++ class, struct or union a fragment holds as a declaration (see
// RepoccSharedTypes): it has an ODR identifier (or is a dynamic class this
// unit homes, `homedDynamicClass`) and lies at namespace scope or in
// another such class. (Enums stay whole: they hold no members that follow
// their uses. Classes local to a function stay with it.)
bool cxxDeclared(const Metadata *MD) {
  for (int Depth = 0; Depth < 256; Depth++) {
    auto *T = dyn_cast_or_null<DICompositeType>(MD);
    if (!T)
      return false;
    bool Homed = homedDynamicClass(T);
    if (!T->getRawIdentifier() && !Homed)
      return false;
    switch (T->getTag()) {
    case dwarf::DW_TAG_class_type:
    case dwarf::DW_TAG_structure_type:
    case dwarf::DW_TAG_union_type:
      break;
    default:
      return false;
    }
    const Metadata *Scope = T->getRawScope();
    while (auto *NS = dyn_cast_or_null<DINamespace>(Scope)) {
      if (Homed && NS->getName().empty())
        return false;
      Scope = NS->getRawScope();
    }
    if (!Scope || isa<DIFile>(Scope) || isa<DICompileUnit>(Scope))
      return true;
    MD = Scope;
  }
  return false;
}

// A type a fragment holds as a stub: a file-scope record with its
// identifier (set by `repocc_identify_debug_types`).
bool stubbable(const Metadata *MD) {
  auto *T = dyn_cast<DICompositeType>(MD);
  return T && T->getRawIdentifier() && fileScopeRecord(T);
}

DICompositeType *stubOf(const DICompositeType *T, RepoccSharedTypes &Shared) {
  auto [It, New] = Shared.Stubs.try_emplace(T, nullptr);
  if (!New)
    return It->second;
  // No file, line or scope: the stub's own type unit is always dropped,
  // and a stub with lines would need placing.
  It->second = DICompositeType::get(
      T->getContext(), T->getTag(), T->getRawName(), nullptr, 0, nullptr, nullptr,
      T->getSizeInBits(), T->getAlignInBits(), 0, T->getFlags(), nullptr,
      T->getRuntimeLang(), nullptr, nullptr, T->getRawIdentifier());
  return It->second;
}

// A C++ class's declaration in the fragment being extracted (see
// RepoccSharedTypes), made once per fragment and kept in its mapping: its
// scope is the namespaces as they are (uniqued, no lines), an enclosing
// class as its own declaration, a file as none.
//
// Each fragment gets declarations of its own (distinct nodes), never one
// shared by the unit's fragments: LLVM folds a uniqued member declaration
// (a method named by a definition's `declaration:`) into an existing one
// with the same name and class alone (ODR uniquing), whatever the rest of
// it is. With shared class declarations a fragment took another
// fragment's member declarations, and with them that fragment's copies of
// the nodes below (a lambda's class, the function it lies in, and that
// fragment's compile unit, which this one does not list: the verifier
// dropped the debug info and the unit went to clang), and its bytes
// depended on which fragments were extracted before it.
DICompositeType *cxxDeclarationOf(const DICompositeType *T, ValueToValueMapTy &VMap) {
  if (auto It = VMap.MD().find(T); It != VMap.MD().end())
    if (auto *Mapped = dyn_cast_or_null<DICompositeType>(It->second.get()))
      return Mapped;
  Metadata *Scope = T->getRawScope();
  const Metadata *Outer = Scope;
  while (auto *NS = dyn_cast_or_null<DINamespace>(Outer))
    Outer = NS->getRawScope();
  if (Scope && Scope == Outer) {
    if (auto *Class = dyn_cast<DICompositeType>(Scope))
      Scope = cxxDeclarationOf(Class, VMap);
    else
      Scope = nullptr;
  }
  DICompositeType *Declaration = DICompositeType::getDistinct(
      T->getContext(), T->getTag(), T->getRawName(), nullptr, 0, Scope, nullptr, 0, 0, 0,
      DINode::FlagFwdDecl, nullptr, 0, nullptr, nullptr, T->getRawIdentifier());
  VMap.MD()[T].reset(Declaration);
  return Declaration;
}

// Maps every C++ class the objects' metadata reaches (see `cxxDeclared`)
// to its declaration in this fragment; the walk stops at them and at
// compile units, so it covers about what the fragment itself will hold.
void mapCxxDeclarations(ArrayRef<GlobalValue *> Objects, ValueToValueMapTy &VMap) {
  SmallPtrSet<const Metadata *, 32> Seen;
  SmallVector<const MDNode *, 64> Stack;
  auto visit = [&](const Metadata *MD) {
    if (auto *N = dyn_cast_or_null<MDNode>(MD); N && Seen.insert(N).second)
      Stack.push_back(N);
  };
  for (GlobalValue *GV : Objects)
    if (auto *GO = dyn_cast<GlobalObject>(GV))
      forEachObjectRoot(*GO, visit);
  while (!Stack.empty()) {
    const MDNode *N = Stack.pop_back_val();
    // Mapped already: by an earlier call for the same fragment, with what
    // lies under it.
    if (isa<DICompileUnit>(N) || VMap.MD().count(N))
      continue;
    if (cxxDeclared(N)) {
      cxxDeclarationOf(cast<DICompositeType>(N), VMap);
      continue;
    }
    for (const MDOperand &Op : N->operands())
      visit(Op.get());
  }
}

} // namespace


// With C stubs, every type a fragment can reach is one its unit retains
// (`repocc_retain_unit_types`) or lists as an enum: their stubs are made
// once, here, for every fragment's mapping. C++ declarations are made per
// fragment (`cxxDeclarationOf`).
extern "C" RepoccSharedTypes *repocc_shared_types_new(LLVMModuleRef module) {
  auto *Shared = new RepoccSharedTypes;
  Module &M = *unwrap(module);
  Shared->Stub = stubsUnitTypes(M);
  if (Shared->Stub == StubCRecords)
    for (DICompileUnit *CU : M.debug_compile_units()) {
      for (auto *T : CU->getRetainedTypes())
        if (stubbable(T))
          stubOf(cast<DICompositeType>(T), *Shared);
      for (auto *T : CU->getEnumTypes())
        if (stubbable(T))
          stubOf(T, *Shared);
    }
  // C++ declarations are made per fragment (`mapCxxDeclarations`).
  return Shared;
}

extern "C" int repocc_stubs_unit_types(LLVMModuleRef module) {
  return stubsUnitTypes(*unwrap(module));
}

// Makes the unit's compile units retain every complete type its
// definitions' debug info reaches that fragments hold as stubs (C:
// file-scope structs, unions and enums; C++: classes, see
// RepoccSharedTypes), for the glue to hold them in full. Called before
// pruning, so that the list is the same whatever the repository holds: a
// type only a pruned (reused) fragment uses is still there. Returns how
// many were added.
extern "C" unsigned repocc_retain_unit_types(LLVMModuleRef module) {
  Module &M = *unwrap(module);
  StubKind Kind = stubsUnitTypes(M);
  if (Kind == StubNone)
    return 0;
  SmallVector<Metadata *, 64> Found;
  forEachReachedNode(M, [&](const MDNode *N) {
    auto *T = dyn_cast<DICompositeType>(N);
    if (!T)
      return;
    if (Kind == StubCRecords ? fileScopeRecord(T) : cxxDeclared(T) && !T->isForwardDecl())
      Found.push_back(const_cast<DICompositeType *>(T));
  });
  unsigned Added = 0;
  for (DICompileUnit *CU : M.debug_compile_units()) {
    SmallVector<Metadata *, 64> Retained;
    DenseSet<const Metadata *> Have;
    for (auto *T : CU->getRetainedTypes())
      if (Have.insert(T).second)
        Retained.push_back(T);
    for (Metadata *T : Found)
      if (Have.insert(T).second) {
        Retained.push_back(T);
        Added++;
      }
    CU->replaceRetainedTypes(MDTuple::get(M.getContext(), Retained));
  }
  return Added;
}
extern "C" void repocc_shared_types_free(RepoccSharedTypes *Shared) { delete Shared; }

// Makes every member function declaration of a C++ unit that only its
// class's member list names a distinct node, before fragments are
// extracted; returns how many.
//
// Why: LLVM finds a uniqued member declaration by hashing its linkage name
// and its class's identifier string alone ("" without one), not the class
// node. A fragment that reaches a class it copies (one without an
// identifier: a template instance over a type local to a function or in
// an anonymous namespace) copies the class's member declarations, and each
// copy is a new uniqued node with the hash of every other fragment's copy:
// each lookup compared it with all of them (gmock-actions_test.cc at -O2
// -g: 240 fragments copying one class of 100 members; 12.5% of the unit's
// time in `MDNodeKeyImpl<DISubprogram>::isKeyOf`, docs/performance.md).
// A distinct node is copied without a lookup.
//
// What the fragments hold is the same graph either way: one node per
// member, where it was. Only declarations no function can carry as its
// `!dbg` change (the verifier wants a function declaration's to be
// uniqued): none named like a function of the module (a definition's
// declaration is what a caller's fragment declares it with, see
// `callSiteDeclaration`), none any root refers to, and only those whose
// every user is the member list of distinct classes, which are pointed at
// a list of the new nodes. A declaration something else names stays as
// it is, so that no module holds two nodes for one member.
extern "C" unsigned repocc_distinct_member_declarations(LLVMModuleRef module) {
  Module &M = *unwrap(module);
  if (stubsUnitTypes(M) != StubCxxDecls)
    return 0;
  DenseMap<const MDNode *, SmallVector<MDNode *, 2>> Users;
  DenseSet<const MDNode *> Seen, FromRoots;
  SmallVector<MDNode *, 64> Work;
  std::vector<MDNode *> Members;
  forEachRoot(M, [&](Metadata *MD) {
    if (auto *N = dyn_cast_or_null<MDNode>(MD)) {
      FromRoots.insert(N);
      if (Seen.insert(N).second)
        Work.push_back(N);
    }
  });
  while (!Work.empty()) {
    MDNode *N = Work.pop_back_val();
    auto *SP = dyn_cast<DISubprogram>(N);
    if (SP && SP->isUniqued() && !SP->isDefinition() &&
        isa_and_nonnull<DICompositeType>(SP->getRawScope()))
      Members.push_back(N);
    for (const MDOperand &Op : N->operands())
      if (auto *O = dyn_cast_or_null<MDNode>(Op.get())) {
        Users[O].push_back(N);
        if (Seen.insert(O).second)
          Work.push_back(O);
      }
  }
  auto memberListOnly = [&](const MDNode *List) {
    auto It = Users.find(List);
    if (!isa<MDTuple>(List) || FromRoots.count(List) || It == Users.end())
      return false;
    return llvm::all_of(It->second, [&](const MDNode *U) {
      auto *Class = dyn_cast<DICompositeType>(U);
      return Class && Class->isDistinct() && Class->getRawElements() == List;
    });
  };
  DenseMap<const Metadata *, Metadata *> Distinct;
  std::vector<MDNode *> Lists;
  DenseSet<const MDNode *> ListSeen;
  for (MDNode *N : Members) {
    StringRef Linkage = cast<DISubprogram>(N)->getLinkageName();
    auto It = Users.find(N);
    if (FromRoots.count(N) || (!Linkage.empty() && M.getFunction(Linkage)) ||
        It == Users.end() || !llvm::all_of(It->second, memberListOnly))
      continue;
    Distinct[N] = MDNode::replaceWithDistinct(N->clone());
    for (MDNode *List : It->second)
      if (ListSeen.insert(List).second)
        Lists.push_back(List);
  }
  for (MDNode *List : Lists) {
    SmallVector<Metadata *, 16> Ops;
    for (const MDOperand &Op : List->operands()) {
      Metadata *New = Distinct.lookup(Op.get());
      Ops.push_back(New ? New : Op.get());
    }
    MDTuple *NewList = MDTuple::get(M.getContext(), Ops);
    for (MDNode *Class : Users.find(List)->second)
      for (unsigned i = 0; i < Class->getNumOperands(); i++)
        if (Class->getOperand(i).get() == List)
          Class->replaceOperandWith(i, NewList);
  }
  return Distinct.size();
}

namespace {

// Debug types a fragment can share with its unit. Cloning into another
// module copies every distinct node it reaches (DifferentModule), so each
// fragment got its own copy of every struct it uses, and of everything
// those reach. A type that reaches nothing the clone maps elsewhere (the
// compile unit, a subprogram or scope, a global, another copied distinct
// node) is the same node either way: mapping it to itself gives the same
// module, without the copies.

// Whether the clone maps `MD` to a value of its own module: a value other
// than a plain number (a global becomes the module's declaration).
bool namesValue(const Metadata *MD) {
  if (auto *C = dyn_cast<ConstantAsMetadata>(MD))
    return !isa<ConstantInt, ConstantFP>(C->getValue());
  return isa<ValueAsMetadata>(MD) || isa<DIArgList>(MD);
}

// Of `Reached` (with each node's `Users` among them), the nodes the clone
// maps elsewhere, and every node that reaches one of those. Maps
// elsewhere: a value other than a plain number (a global becomes the
// fragment's declaration), and, unless `DistinctStay`, a distinct node
// that is not a type (a compile unit, subprogram or scope is copied).
SmallPtrSet<const Metadata *, 32>
reachingMapped(ArrayRef<const Metadata *> Reached,
               const DenseMap<const Metadata *, SmallVector<const Metadata *, 2>> &Users,
               bool DistinctStay) {
  SmallPtrSet<const Metadata *, 32> Mapped;
  SmallVector<const Metadata *, 64> Work;
  for (const Metadata *MD : Reached) {
    bool Elsewhere = namesValue(MD);
    if (auto *N = dyn_cast<MDNode>(MD))
      Elsewhere = !DistinctStay && N->isDistinct() && !isa<DIType>(N);
    if (Elsewhere && Mapped.insert(MD).second)
      Work.push_back(MD);
  }
  while (!Work.empty()) {
    const Metadata *MD = Work.pop_back_val();
    auto It = Users.find(MD);
    if (It != Users.end())
      for (const Metadata *U : It->second)
        if (Mapped.insert(U).second)
          Work.push_back(U);
  }
  return Mapped;
}

// Maps `MD` to itself in `VMap` unless something mapped it already.
void mapToSelf(ValueToValueMapTy &VMap, const Metadata *MD) {
  auto [It, New] = VMap.MD().try_emplace(MD);
  if (New)
    It->second.reset(const_cast<Metadata *>(MD));
}

void shareContextFreeTypes(ArrayRef<GlobalValue *> Kept, ValueToValueMapTy &VMap,
                           RepoccSharedTypes *Shared) {
  if (Shared && Shared->Stub == StubCxxDecls) {
    mapCxxDeclarations(Kept, VMap);
    return;
  }
  if (Shared && Shared->Stub) {
    // Stubs cut every type graph at its structs: what is left to copy is
    // small, and not worth a walk. Each of the unit's types maps to its
    // stub (a type outside the list is copied whole, and composing then
    // finds its type unit missing from the glue and declines).
    for (auto [T, Stub] : Shared->Stubs)
      VMap.MD().try_emplace(T).first->second.reset(Stub);
    return;
  }
  SmallPtrSet<const Metadata *, 32> Seen;
  SmallVector<const Metadata *, 64> Reached;
  SmallVector<const Metadata *, 32> Stack;
  // Nodes an earlier fragment of the unit found to reach nothing mapped
  // elsewhere: not walked again.
  SmallVector<const Metadata *, 32> KnownClean;
  auto visit = [&](const Metadata *MD) {
    if (!MD || !Seen.insert(MD).second)
      return;
    if (Shared && Shared->Clean.count(MD))
      KnownClean.push_back(MD);
    else
      Stack.push_back(MD);
  };
  for (GlobalValue *GV : Kept)
    if (auto *GO = dyn_cast<GlobalObject>(GV))
      forEachObjectRoot(*GO, visit);
  // Everything reachable, with its users.
  DenseMap<const Metadata *, SmallVector<const Metadata *, 2>> Users;
  while (!Stack.empty()) {
    const Metadata *MD = Stack.pop_back_val();
    Reached.push_back(MD);
    if (auto *N = dyn_cast<MDNode>(MD))
      for (const MDOperand &Op : N->operands())
        if (const Metadata *O = Op.get()) {
          Users[O].push_back(MD);
          visit(O);
        }
  }
  SmallPtrSet<const Metadata *, 32> Mapped = reachingMapped(Reached, Users, false);
  // What is mapped already (by an earlier call for the same fragment)
  // stays as it is.
  for (const Metadata *MD : Reached)
    if (auto *T = dyn_cast<DIType>(MD); T && T->isDistinct() && !Mapped.count(T))
      mapToSelf(VMap, T);
  // A known clean node, distinct or uniqued, maps to itself (what cloning
  // would make of it, as nothing under it changes), so that the mapper
  // does not walk it either.
  for (const Metadata *MD : KnownClean)
    if (isa<MDNode>(MD))
      mapToSelf(VMap, MD);
  if (Shared)
    for (const Metadata *MD : Reached)
      if (isa<MDNode>(MD) && !Mapped.count(MD))
        Shared->Clean.insert(MD);
}

// Every node `Reached` (the roots on entry) reaches, added to it, and of
// them those that reach a value (see `reachingMapped`).
SmallPtrSet<const Metadata *, 32> valueReaching(SmallVectorImpl<const Metadata *> &Reached) {
  SmallPtrSet<const Metadata *, 32> Seen(Reached.begin(), Reached.end());
  bool AnyValue = false;
  auto visit = [&](const Metadata *MD) {
    if (MD && isa<MDNode>(MD) && Seen.insert(MD).second)
      Reached.push_back(MD);
  };
  // A value a node names (not a debug record's location: that is no
  // node's operand, and the clone maps it on its own).
  for (size_t i = 0; i < Reached.size(); i++)
    for (const MDOperand &Op : cast<MDNode>(Reached[i])->operands()) {
      const Metadata *O = Op.get();
      AnyValue |= O && namesValue(O);
      visit(O);
    }
  // Which nodes reach a value: walked again with users only when some
  // node names one (rare in C: `!callees`).
  SmallPtrSet<const Metadata *, 32> Mapped;
  if (AnyValue) {
    DenseMap<const Metadata *, SmallVector<const Metadata *, 2>> Users;
    SmallVector<const Metadata *, 64> All(Reached.begin(), Reached.end());
    for (const Metadata *MD : Reached)
      for (const MDOperand &Op : cast<MDNode>(MD)->operands())
        if (const Metadata *O = Op.get()) {
          if (Users[O].empty() && !isa<MDNode>(O))
            All.push_back(O);
          Users[O].push_back(MD);
        }
    Mapped = reachingMapped(All, Users, true);
  }
  return Mapped;
}

// For a module the unit's metadata may be shared with (a bodies snapshot,
// written as bitcode at once, while the unit's optimizer waits): maps to
// itself every node `Kept` reach that reaches no global value, distinct
// ones included, so that cloning makes no copy of the unit's debug info
// (the copies stayed in the context for the rest of the compile: about
// 30 MB of sqlite3.c's peak memory at -O2 -g). Returns whether the
// compile unit `CU` maps to itself.
bool shareUnitMetadata(ArrayRef<GlobalValue *> Kept, ValueToValueMapTy &VMap,
                       const DICompileUnit *CU) {
  SmallVector<const Metadata *, 64> Reached;
  SmallPtrSet<const Metadata *, 32> Roots;
  auto root = [&](const Metadata *MD) {
    if (MD && isa<MDNode>(MD) && Roots.insert(MD).second)
      Reached.push_back(MD);
  };
  for (GlobalValue *GV : Kept)
    if (auto *GO = dyn_cast<GlobalObject>(GV))
      forEachObjectRoot(*GO, root);
  SmallPtrSet<const Metadata *, 32> Mapped = valueReaching(Reached);
  if (CU && Mapped.count(CU))
    return false;
  // Uniqued nodes under them map to themselves as the mapper finds them.
  for (const Metadata *MD : Reached)
    if (cast<MDNode>(MD)->isDistinct() && !Mapped.count(MD))
      mapToSelf(VMap, MD);
  return true;
}

// The glue's compile units: the unit's own, unless one reaches a global
// value (a C++ template argument `&N` of a retained type or variable
// template: `DITemplateValueParameter`), which must be this module's. Such
// a compile unit is cloned, with the nodes that reach a value; the rest
// map to themselves. (The unit's node named the unit's global, and the
// bitcode writer followed it out of this module.)
void mapGlueCompileUnits(Module &Dst, ValueToValueMapTy &VMap, DeclarationMaterializer &Mat) {
  NamedMDNode *CUs = Dst.getNamedMetadata("llvm.dbg.cu");
  if (!CUs)
    return;
  SmallVector<const Metadata *, 64> Reached;
  for (MDNode *CU : CUs->operands())
    Reached.push_back(CU);
  SmallPtrSet<const Metadata *, 32> Mapped = valueReaching(Reached);
  if (Mapped.empty())
    return;
  for (const Metadata *MD : Reached)
    if (cast<MDNode>(MD)->isDistinct() && !Mapped.count(MD))
      mapToSelf(VMap, MD);
  for (unsigned i = 0; i < CUs->getNumOperands(); i++)
    if (Mapped.count(CUs->getOperand(i)))
      CUs->setOperand(i, MapMetadata(CUs->getOperand(i), VMap, RF_None, nullptr, &Mat));
}

// The structor lists: a constructor or destructor entry with a key (a
// C++ inline variable's or a template's static data member's dynamic
// initializer, keyed by the variable) is emitted in the key's COMDAT group
// (`.init_array` in the group), and only where the key is defined. The
// entry therefore goes with the key's fragment, and the glue keeps the
// entries without one. (In the glue, where the key is a declaration, the
// code generator would drop the entry: the initializer never ran.)
constexpr const char *StructorLists[] = {"llvm.global_ctors", "llvm.global_dtors"};

// The key of a structor entry (`{ i32 priority, ptr function, ptr key }`).
const GlobalValue *structorKey(const Constant *Entry) {
  if (!Entry || Entry->getNumOperands() < 3)
    return nullptr;
  return dyn_cast<GlobalValue>(Entry->getOperand(2)->stripPointerCasts());
}

// `List` (an appending list: structors, `llvm.used`) in `Dst` with the
// entries of `Src`'s list that `keep` keeps, mapped; none when no entry is
// kept.
template <class Keep>
GlobalVariable *copyListEntries(Module &Dst, const GlobalVariable &List, ValueToValueMapTy &VMap,
                              ValueMaterializer &Mat, Keep keep) {
  auto *Init = dyn_cast_or_null<ConstantArray>(
      List.hasInitializer() ? List.getInitializer() : nullptr);
  if (!Init)
    return nullptr;
  std::vector<Constant *> Entries;
  for (const Use &U : Init->operands())
    if (keep(cast<Constant>(U.get())))
      Entries.push_back(MapValue(cast<Constant>(U.get()), VMap, RF_None, nullptr, &Mat));
  if (Entries.empty())
    return nullptr;
  auto *Ty = ArrayType::get(Init->getType()->getElementType(), Entries.size());
  auto *NG = new GlobalVariable(Dst, Ty, List.isConstant(), List.getLinkage(),
                                ConstantArray::get(Ty, Entries), List.getName());
  NG->copyAttributesFrom(&List);
  return NG;
}

// Address significance in a fragment's module as its own uses decide it
// (repocc_shim::addressEscapes, as repocc_fragment_reach reports it for
// carving): `local_unnamed_addr` where no use lets the address escape,
// none where one does. The unit's attribute came from all of the unit's
// uses (the optimizer's inference), so a fragment that only calls a
// function would mark it address-significant (.llvm_addrsig) in a unit
// where another definition takes its address and not elsewhere, and the
// same fragment would be other bytes. Where it does not escape, a
// linker's safe identical code folding may fold it, as clang's objects
// let it for what they only call.
void markEscapingAddresses(Module &M) {
  for (GlobalValue &G : M.global_values())
    if (!G.use_empty() && !G.hasGlobalUnnamedAddr() && !G.getName().starts_with("llvm."))
      G.setUnnamedAddr(repocc_shim::addressEscapes(&G) ? GlobalValue::UnnamedAddr::None
                                                      : GlobalValue::UnnamedAddr::Local);
}

// Whether constant `C` (a global, or a constant expression on one) has a
// use other than through metadata: an instruction's operand, a global's
// initializer, an alias's target.
bool usedBeyondMetadata(const Constant *C, int Depth = 0) {
  if (Depth > 32)
    return true;
  for (const User *U : C->users()) {
    auto *UC = dyn_cast<Constant>(U);
    if (!UC || isa<GlobalValue>(UC) || usedBeyondMetadata(UC, Depth + 1))
      return true;
  }
  return false;
}

// The declarations that `V` names (directly or through constant
// expressions) and that nothing in the module uses but metadata, added to
// `Out`; whether there is one.
bool namesDebugOnlyDeclaration(const Value *V, SmallPtrSetImpl<GlobalValue *> &Out) {
  auto *C = dyn_cast_or_null<Constant>(V);
  if (!C)
    return false;
  bool Any = false;
  SmallVector<const Constant *, 8> Work{C};
  SmallPtrSet<const Constant *, 8> Seen;
  while (!Work.empty()) {
    const Constant *K = Work.pop_back_val();
    if (!Seen.insert(K).second)
      continue;
    if (auto *G = dyn_cast<GlobalValue>(K)) {
      if (G->isDeclaration() && !usedBeyondMetadata(G)) {
        Out.insert(const_cast<GlobalValue *>(G));
        Any = true;
      }
      continue;
    }
    for (const Use &Op : K->operands())
      if (auto *OC = dyn_cast<Constant>(Op.get()))
        Work.push_back(OC);
  }
  return Any;
}

// A debug record whose value is a global the fragment's code does not use
// (`#dbg_value(ptr getelementptr (@_ZTV…, 16))`, the vtable pointer of an
// object the optimizer took apart) is there only because the unit kept the
// global for other definitions: where nothing else used it, the optimizer
// deleted it and the record has no location. So that a fragment is the
// same object, with the same references, whichever unit compiled it, such
// a record has no location in any fragment, and the declaration goes (a
// stored fragment named a vtable that a unit compiling it cold did not
// have, and the object took the vtable and its destructor). It goes even
// though the context still holds metadata for it (the mapping's, or the
// killed record's): a declaration the fragment's module keeps is one of
// its references, and a unit taking the fragment put the global in its
// object (libstdc++'s `path::stem`, whose inlined `substr` named the
// string "basic_string::substr").
void killDebugOnlyDeclarations(Module &M) {
  SmallPtrSet<GlobalValue *, 8> Named;
  for (Function &F : M)
    killDebugLocations(F, [&](Value *V) { return namesDebugOnlyDeclaration(V, Named); });
  for (GlobalValue *G : Named) {
    G->removeDeadConstantUsers();
    if (G->use_empty())
      G->eraseFromParent();
  }
}

// Calls from a fragment to a function another fragment of the unit
// defines: the callee is a declaration in the fragment's module, and the
// code generator writes a call site entry (DW_TAG_call_site, with the
// values of the arguments that gdb shows as `x@entry`) only for a callee
// with a subprogram. So each such declaration gets one
// (`callSiteDeclaration`; a callee pruned from the unit has it already,
// see `repocc_make_declaration`). Its content is the callee's
// definition's: it enters the caller's digest through the call edge, with
// how the callee lies relative to the caller, as when the callee is
// inlined (its subprogram then lands in the caller's fragment too).
template <class ShareTypes>
void declareUnitCallees(Module &Src, Module &Dst, ValueToValueMapTy &VMap,
                        DeclarationMaterializer &Mat, ShareTypes &shareTypes) {
  std::vector<std::pair<Function *, DISubprogram *>> Callees;
  for (Function &NF : Dst)
    if (NF.isDeclaration() && !NF.isIntrinsic() && !NF.getSubprogram())
      if (Function *F = Src.getFunction(NF.getName()); F && !F->isDeclaration())
        if (DISubprogram *Declaration = callSiteDeclaration(*F))
          Callees.emplace_back(&NF, Declaration);
  for (auto [NF, Declaration] : Callees) {
    // The types it names, held as the fragment holds the others.
    NF->setSubprogram(Declaration);
    shareTypes({NF});
    NF->setSubprogram(
        cast<DISubprogram>(MapMetadata(Declaration, VMap, RF_None, nullptr, &Mat)));
  }
}

} // namespace

extern "C" LLVMModuleRef repocc_extract_definitions(LLVMModuleRef src_ref,
                                                    const char *const *names,
                                                    size_t count,
                                                    int copy_module_asm,
                                                    RepoccSharedTypes *shared,
                                                    int share_metadata) {
  Module &Src = *unwrap(src_ref);
  auto *Dst = new Module(Src.getModuleIdentifier(), Src.getContext());
  // Only the glue names the source file (the STT_FILE symbol): a fragment
  // may be reused by another unit, and its bytes must not say which unit
  // stored it.
  Dst->setSourceFileName(copy_module_asm ? Src.getSourceFileName() : "");
  Dst->setDataLayout(Src.getDataLayout());
  Dst->setTargetTriple(Src.getTargetTriple());
  if (copy_module_asm) {
    // The glue fragment: module assembly, the compiler ident (.comment) and
    // linker directives.
    Dst->setModuleInlineAsm(Src.getModuleInlineAsm());
    // llvm.dbg.cu: the glue carries what belongs to the compile unit as a
    // whole (enums, retained types, imported entities; see
    // repocc_trim_debug_units).
    for (const char *Name : {"llvm.ident", "llvm.linker.options", "llvm.dependent-libraries",
                             "llvm.dbg.cu"}) {
      if (NamedMDNode *N = Src.getNamedMetadata(Name)) {
        NamedMDNode *D = Dst->getOrInsertNamedMetadata(Name);
        for (MDNode *Op : N->operands())
          D->addOperand(Op);
      }
    }
  }
  // Module flags carry codegen settings (PIC level, unwind tables, frame
  // pointers, code model, DWARF version); metadata lives in the shared
  // context, so the nodes can be reused as they are.
  if (NamedMDNode *Flags = Src.getModuleFlagsMetadata()) {
    NamedMDNode *NF = Dst->getOrInsertModuleFlagsMetadata();
    for (MDNode *Op : Flags->operands())
      NF->addOperand(Op);
  }

  ValueToValueMapTy VMap;
  DeclarationMaterializer Mat(*Dst);
  // Debug info: a fragment's compile unit is a copy of the unit's without
  // the unit-wide lists (enums, retained types, imported entities, every
  // global variable): mapping the original would copy all of them, and
  // the debug info of every global, into each of thousands of fragments.
  // The glue keeps the original (see repocc_trim_debug_units).
  // Pass 1 (below) fills `Kept` before the compile unit's mapping is
  // chosen when the module shares the unit's metadata.
  std::vector<GlobalValue *> Kept;
  // The copy names the unit's source file only when a member is defined
  // in it (by path; the digest says so, see `defined_in_unit_file`), and
  // otherwise a placeholder (the verifier wants a name) without a
  // directory. A fragment of a header's inline function or a template
  // instance is then the same bytes in every unit that includes the
  // header, and may be reused by any (its digest leaves the compile unit's
  // file out). The composer names a merged compile unit after its first
  // member, the glue (see `debug_units`).
  // A file's path as the digest compares them (`digest::file_path`): the
  // name under its directory unless absolute or without one.
  auto pathOf = [](const DIFile *F) {
    std::string Name = F->getFilename().str(), Dir = F->getDirectory().str();
    return (!Name.empty() && Name[0] == '/') || Dir.empty() ? Name : Dir + "/" + Name;
  };
  auto definedIn = [&](const DIFile *File) {
    std::string Path = pathOf(File);
    auto same = [&](const DIFile *F) { return F && pathOf(F) == Path; };
    for (GlobalValue *GV : Kept) {
      if (auto *F = dyn_cast<Function>(GV)) {
        if (DISubprogram *SP = F->getSubprogram(); SP && same(SP->getFile()))
          return true;
      } else if (auto *G = dyn_cast<GlobalVariable>(GV)) {
        SmallVector<DIGlobalVariableExpression *, 1> GVEs;
        G->getDebugInfo(GVEs);
        for (auto *E : GVEs)
          if (same(E->getVariable()->getFile()))
            return true;
      }
    }
    return false;
  };
  auto firstRelativeDirectory = [&]() -> StringRef {
    const DIFile *F = nullptr;
    if (!Kept.empty()) {
      if (auto *Fn = dyn_cast<Function>(Kept.front())) {
        if (DISubprogram *SP = Fn->getSubprogram())
          F = SP->getFile();
      } else if (auto *G = dyn_cast<GlobalVariable>(Kept.front())) {
        SmallVector<DIGlobalVariableExpression *, 1> GVEs;
        G->getDebugInfo(GVEs);
        if (!GVEs.empty())
          F = GVEs.front()->getVariable()->getFile();
      }
    }
    if (!F || F->getFilename().starts_with("/"))
      return "";
    return F->getDirectory();
  };
  auto mapCompileUnits = [&] {
    if (copy_module_asm)
      return;
    for (DICompileUnit *CU : Src.debug_compile_units()) {
      DIFile *File = CU->getFile();
      // Nor the unit's directory: units compiled in other directories (a
      // CMake project's subdirectories) share it too. The directory is
      // that of the first member's file when its path is relative (a
      // header next to the source, found by `#include "..."`), so that
      // the line table names it relative to the directory as clang's
      // does; none otherwise. Either way it is in the members' digests.
      // The composed compile unit takes the glue's (see `debug_units`).
      if (!definedIn(File))
        File = DIFile::get(Src.getContext(), "<repocc fragment>", firstRelativeDirectory());
      DICompileUnit *Own = DICompileUnit::getDistinct(
          Src.getContext(), CU->getSourceLanguage(), File, CU->getProducer(),
          CU->isOptimized(), CU->getFlags(), CU->getRuntimeVersion(),
          CU->getSplitDebugFilename(), CU->getEmissionKind(), DICompositeTypeArray(),
          DIScopeArray(), DIGlobalVariableExpressionArray(), DIImportedEntityArray(),
          DIMacroNodeArray(), CU->getDWOId(), CU->getSplitDebugInlining(),
          CU->getDebugInfoForProfiling(), CU->getNameTableKind(), CU->getRangesBaseAddress(),
          CU->getSysRoot(), CU->getSDK());
      VMap.MD()[CU].reset(Own);
    }
  };
  // Pass 1: the kept definitions exist before any body refers to them.
  auto isStructorList = [](const GlobalValue *GV) {
    return llvm::is_contained(StructorLists, GV->getName());
  };
  std::vector<const GlobalVariable *> GlueStructors;
  for (size_t i = 0; i < count; i++) {
    GlobalValue *GV = Src.getNamedValue(names[i]);
    if (!GV || GV->isDeclaration() || Dst->getNamedValue(names[i]))
      continue;
    if (isStructorList(GV)) {
      GlueStructors.push_back(cast<GlobalVariable>(GV));
      continue;
    }
    if (auto *F = dyn_cast<Function>(GV)) {
      Function *NF = Function::Create(F->getFunctionType(), F->getLinkage(),
                                      F->getAddressSpace(), F->getName(), Dst);
      NF->copyAttributesFrom(F);
      VMap[F] = NF;
      Kept.push_back(F);
    } else if (auto *G = dyn_cast<GlobalVariable>(GV)) {
      auto *NG = new GlobalVariable(*Dst, G->getValueType(), G->isConstant(),
                                    G->getLinkage(), nullptr, G->getName(), nullptr,
                                    G->getThreadLocalMode(), G->getAddressSpace(),
                                    G->isExternallyInitialized());
      NG->copyAttributesFrom(G);
      VMap[G] = NG;
      Kept.push_back(G);
    } else if (auto *A = dyn_cast<GlobalAlias>(GV)) {
      auto *NA = GlobalAlias::create(A->getValueType(), A->getAddressSpace(),
                                     A->getLinkage(), A->getName(), Dst);
      NA->copyAttributesFrom(A);
      VMap[A] = NA;
      Kept.push_back(A);
    }
  }
  // Shared with the unit: the unit's own nodes (one compile unit at most).
  auto CUs = Src.debug_compile_units();
  const DICompileUnit *OnlyCU = CUs.empty() ? nullptr : *CUs.begin();
  bool Sharing = share_metadata && !copy_module_asm &&
                 (CUs.empty() || std::next(CUs.begin()) == CUs.end()) &&
                 shareUnitMetadata(Kept, VMap, OnlyCU);
  // The types a copied node reaches, shared where they can be.
  auto shareTypes = [&](ArrayRef<GlobalValue *> Objects) {
    if (Sharing)
      shareUnitMetadata(Objects, VMap, OnlyCU);
    else if (!copy_module_asm)
      shareContextFreeTypes(Objects, VMap, shared);
  };
  if (!Sharing) {
    mapCompileUnits();
    shareTypes(Kept);
  }
  if (copy_module_asm)
    mapGlueCompileUnits(*Dst, VMap, Mat);
  // Pass 2: bodies, initializers, aliasees.
  for (GlobalValue *GV : Kept) {
    if (auto *F = dyn_cast<Function>(GV)) {
      auto *NF = cast<Function>(VMap[F]);
      cloneBody(NF, F, VMap, &Mat);
      copyComdat(*Dst, *F, *NF);
    } else if (auto *G = dyn_cast<GlobalVariable>(GV)) {
      auto *NG = cast<GlobalVariable>(VMap[G]);
      if (G->hasInitializer())
        NG->setInitializer(MapValue(G->getInitializer(), VMap, RF_None, nullptr, &Mat));
      SmallVector<std::pair<unsigned, MDNode *>, 1> MDs;
      G->getAllMetadata(MDs);
      for (auto &MD : MDs)
        NG->addMetadata(MD.first, *MapMetadata(MD.second, VMap, RF_None, nullptr, &Mat));
      listVariableUnits(*G, *Dst, VMap, &Mat);
      copyComdat(*Dst, *G, *NG);
    } else if (auto *A = dyn_cast<GlobalAlias>(GV)) {
      auto *NA = cast<GlobalAlias>(VMap[A]);
      NA->setAliasee(MapValue(A->getAliasee(), VMap, RF_None, nullptr, &Mat));
    }
  }
  // The structor entries: the glue's without a key, a fragment's those
  // keyed by its members. A keyed entry's function (a local initializer in
  // the key's COMDAT, as clang emits it) is copied in that group.
  for (const GlobalVariable *List : GlueStructors)
    copyListEntries(*Dst, *List, VMap, Mat, [](const Constant *E) { return !structorKey(E); });
  if (!copy_module_asm)
    for (const char *Name : StructorLists)
      if (const GlobalVariable *List = Src.getNamedGlobal(Name)) {
        std::vector<const Function *> Initializers;
        copyListEntries(*Dst, *List, VMap, Mat, [&](const Constant *E) {
          const GlobalValue *Key = structorKey(E);
          if (!Key || !VMap.count(Key))
            return false;
          if (auto *F = dyn_cast<Function>(E->getOperand(1)->stripPointerCasts()))
            Initializers.push_back(F);
          return true;
        });
        for (const Function *F : Initializers)
          if (auto *NF = dyn_cast_or_null<Function>(VMap.lookup(F)); NF && F->hasLocalLinkage())
            copyComdat(*Dst, *F, *NF);
      }
  // In the glue, a member of `llvm.used` that it only declares is an
  // undefined symbol only where something else refers to it: declared
  // weak (a discardable definition of the unit) it would be one, declared
  // after pruning (see `make_declaration`) not, and where the composed
  // object lists it would depend on which fragments the repository held.
  if (copy_module_asm)
    for (const char *Name : {"llvm.used", "llvm.compiler.used"})
      if (const GlobalVariable *List = Src.getNamedGlobal(Name))
        if (auto *Init = dyn_cast_or_null<ConstantArray>(
                List->hasInitializer() ? List->getInitializer() : nullptr))
          for (const Use &U : Init->operands()) {
            auto *GV = dyn_cast<GlobalValue>(U.get()->stripPointerCasts());
            if (!GV || GV->hasExternalWeakLinkage())
              continue;
            auto *D = dyn_cast_or_null<GlobalObject>(Dst->getNamedValue(GV->getName()));
            if (!D || !D->isDeclaration() || !D->hasExternalWeakLinkage())
              continue;
            bool OnlyListed = llvm::all_of(D->users(), [](const User *U) {
              return isa<Constant>(U) && !isa<GlobalValue>(U) &&
                     llvm::all_of(U->users(), [](const User *V) {
                       auto *G = dyn_cast<GlobalVariable>(V);
                       return G && G->getName().starts_with("llvm.");
                     });
            });
            if (OnlyListed)
              D->setLinkage(GlobalValue::ExternalLinkage);
          }
  // `llvm.used` members keep the SHF_GNU_RETAIN their sections have in
  // clang's object (the glue's list still names them all, for the
  // composer's references).
  if (!copy_module_asm)
    if (const GlobalVariable *Used = Src.getNamedGlobal("llvm.used"))
      copyListEntries(*Dst, *Used, VMap, Mat, [&](const Constant *E) {
        auto *GV = dyn_cast<GlobalValue>(E->stripPointerCasts());
        return GV && !GV->hasLocalLinkage() && VMap.count(GV);
      });
  // Pass 3: bodies of the local copies (which may pull in more), their
  // types shared as the kept definitions' are: a type under a node known
  // clean was not walked above, and must not be cloned when a local copy
  // reaches it by another way.
  for (size_t i = 0; i < Mat.LocalCopies.size(); i++) {
    auto [From, To] = Mat.LocalCopies[i];
    if (auto *F = dyn_cast<Function>(From)) {
      shareTypes({From});
      cloneBody(cast<Function>(To), F, VMap, &Mat);
    } else if (auto *G = dyn_cast<GlobalVariable>(From)) {
      auto *NG = cast<GlobalVariable>(To);
      if (G->hasInitializer())
        NG->setInitializer(MapValue(G->getInitializer(), VMap, RF_None, nullptr, &Mat));
      // Its debug record too (a static variable one function alone
      // uses), as the variable has it in clang's object; not a literal's
      // (no name: a debugger cannot ask for it): a literal is copied into
      // each fragment whose code refers to it, and its record says where
      // its one user is, which another's digest does not cover.
      SmallVector<DIGlobalVariableExpression *, 1> GVEs;
      G->getDebugInfo(GVEs);
      llvm::erase_if(GVEs, [](const DIGlobalVariableExpression *E) {
        return E->getVariable()->getName().empty();
      });
      if (!GVEs.empty()) {
        shareTypes({From});
        for (DIGlobalVariableExpression *E : GVEs)
          NG->addDebugInfo(
              cast<DIGlobalVariableExpression>(MapMetadata(E, VMap, RF_None, nullptr, &Mat)));
        listVariableUnits(*G, *Dst, VMap, &Mat);
      }
    }
  }
  if (!Sharing)
    listRemovedRecords(Src, *Dst, Kept, copy_module_asm, VMap, &Mat);
  // A function declared elsewhere keeps the subprogram clang attached to
  // its declaration (at -O1 and above, for call-site information), so that
  // calls to it get their DW_TAG_call_site entries as in clang's object;
  // the callers' digests cover it (see `digest`'s declared callees).
  // Only where the fragment has a compile unit, i.e. a function with debug
  // info that can make a call site entry: a vtable alone refers to its
  // class's methods without calling them, and a method of a class local
  // to a function has that function's subprogram as its scope, whose
  // compile unit the fragment would then name without listing it (the
  // verifier refused every C++ unit at -O1 -g and above with a local class
  // with virtual methods).
  NamedMDNode *ListedUnits = Dst->getNamedMetadata("llvm.dbg.cu");
  if (!copy_module_asm && ListedUnits && ListedUnits->getNumOperands() > 0) {
    std::vector<std::pair<Function *, Function *>> Declared;
    for (Function &NF : *Dst)
      if (NF.isDeclaration() && !NF.getSubprogram())
        if (Function *F = Src.getFunction(NF.getName()); F && F->isDeclaration())
          if (DISubprogram *SP = F->getSubprogram(); SP && !SP->isDefinition())
            Declared.emplace_back(F, &NF);
    for (auto [F, NF] : Declared) {
      shareTypes({F});
      NF->setSubprogram(
          cast<DISubprogram>(MapMetadata(F->getSubprogram(), VMap, RF_None, nullptr, &Mat)));
    }
    if (!share_metadata)
      declareUnitCallees(Src, *Dst, VMap, Mat, shareTypes);
  }
  // Cloning into another module registers compile units in llvm.dbg.cu even
  // when there are none; an empty list without a "Debug Info Version" flag
  // makes the bitcode reader warn and strip.
  if (NamedMDNode *CUs = Dst->getNamedMetadata("llvm.dbg.cu"))
    if (CUs->getNumOperands() == 0)
      Dst->eraseNamedMetadata(CUs);
  // A fragment's module is compiled; one sharing the unit's metadata is a
  // stored body, kept as the unit had it.
  if (!share_metadata) {
    killDebugOnlyDeclarations(*Dst);
    markEscapingAddresses(*Dst);
  }
  return wrap(Dst);
}

// The bitcode of `module_ref`, a module made by repocc_extract_definitions
// with `share_metadata`: its compile unit is the unit's own, whose
// unit-wide lists (enums, retained types, imported entities, every global
// variable, macros) are left out of the bitcode as a fragment's compile
// unit leaves them out. They are emptied for the write and put back; the
// caller makes sure nothing else uses the unit meanwhile.
extern "C" LLVMMemoryBufferRef repocc_write_shared_bitcode(LLVMModuleRef module_ref) {
  Module &M = *unwrap(module_ref);
  struct Lists {
    DICompileUnit *CU;
    Metadata *Enums, *Retained, *Globals, *Imported, *Macros;
  };
  std::vector<Lists> Saved;
  for (DICompileUnit *CU : M.debug_compile_units()) {
    Saved.push_back({CU, CU->getRawEnumTypes(), CU->getRawRetainedTypes(),
                     CU->getRawGlobalVariables(), CU->getRawImportedEntities(),
                     CU->getRawMacros()});
    CU->replaceEnumTypes(DICompositeTypeArray());
    CU->replaceRetainedTypes(DITypeArray());
    CU->replaceGlobalVariables(DIGlobalVariableExpressionArray());
    CU->replaceImportedEntities(DIImportedEntityArray());
    CU->replaceMacros(DIMacroNodeArray());
  }
  SmallVector<char, 0> Buffer;
  raw_svector_ostream OS(Buffer);
  WriteBitcodeToFile(M, OS);
  for (Lists &L : Saved) {
    L.CU->replaceEnumTypes(DICompositeTypeArray(cast_or_null<MDTuple>(L.Enums)));
    L.CU->replaceRetainedTypes(DITypeArray(cast_or_null<MDTuple>(L.Retained)));
    L.CU->replaceGlobalVariables(
        DIGlobalVariableExpressionArray(cast_or_null<MDTuple>(L.Globals)));
    L.CU->replaceImportedEntities(DIImportedEntityArray(cast_or_null<MDTuple>(L.Imported)));
    L.CU->replaceMacros(DIMacroNodeArray(cast_or_null<MDTuple>(L.Macros)));
  }
  return wrap(std::make_unique<SmallVectorMemoryBuffer>(std::move(Buffer), "repocc-bodies",
                                                        /*RequiresNullTerminator=*/false)
                  .release());
}

// The COMDAT group of a global object, or NULL (the C API has no getter for
