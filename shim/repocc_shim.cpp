// repocc's C++ shim: the few LLVM 19 settings the C API does not expose.
//
// Kept deliberately tiny: every function here only reads or writes plain
// fields of LLVM objects whose layout comes from the llvm-19-dev headers this
// file is compiled against (the same LLVM that inkwell links statically).
// The Rust side (src/llvm_shim.rs) documents the invariants for each call.

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
}

} // extern "C"

// ---------------------------------------------------------------------------
// Fragment extraction: a new module (same context) holding the bodies of the
// named definitions, with declarations for everything they reference.
// CloneModule would copy every global of the source as a declaration for
// each fragment (quadratic for thousands of fragments); a ValueMaterializer
// creates only the declarations a fragment actually references.

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

namespace {

using namespace llvm;

// CloneFunctionInto expects the arguments to be mapped already.
// The compile unit a debug scope belongs to (its subprogram's), or null.
const DICompileUnit *unitOfScope(const DIScope *S) {
  for (int i = 0; i < 256 && S; i++) {
    if (auto *SP = dyn_cast<DISubprogram>(S))
      return SP->getUnit();
    if (auto *CU = dyn_cast<DICompileUnit>(S))
      return CU;
    S = S->getScope();
  }
  return nullptr;
}

// Whether `F`'s instructions lead to the compile unit `CU`: by a location
// (or one it is inlined at) or a variable of a debug record or intrinsic.
bool reachesUnit(const Function &F, const DICompileUnit *CU) {
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

// Clones `From`'s body into `To` (another module). LLVM's DifferentModule
// cloning runs a DebugInfoFinder over every instruction only to list the
// compile units the new module must name in llvm.dbg.cu, and it walks the
// whole unit's compile unit (every global's and retained type) for each
// function cloned. A unit from clang has one compile unit: cloned as
// "ClonedModule" (the same cloning, without that search), and the unit
// added here when the body leads to it, as the search would find it.
void cloneBody(Function *To, const Function *From, ValueToValueMapTy &VMap,
               ValueMaterializer *Mat) {
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
  auto *Mapped = MapMetadata(*CUs.begin(), VMap, RF_None, nullptr, Mat);
  NamedMDNode *NMD = To->getParent()->getOrInsertNamedMetadata("llvm.dbg.cu");
  for (const MDNode *Op : NMD->operands())
    if (Op == Mapped)
      return;
  NMD->addOperand(Mapped);
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
    // What the optimizer inferred from every use in the unit (the address
    // of `local_unnamed_addr` is never compared or escapes there) holds
    // for the fragment's uses too: without it, a fragment's object would
    // mark every symbol it calls address-significant (.llvm_addrsig),
    // where clang's marks those whose address is taken, and a linker's
    // safe identical code folding would fold less.
    New->setUnnamedAddr(GV->getUnnamedAddr());
    return New;
  }
};

// The metadata a global object holds: its attachments and, for a
// function, each instruction's attachments, metadata operands and debug
// records; handed to `visit(Metadata *)`, nulls included.
template <class Visit> void forEachObjectRoot(const GlobalObject &GO, Visit &&visit) {
  SmallVector<std::pair<unsigned, MDNode *>, 4> MDs;
  GO.getAllMetadata(MDs);
  for (auto &KM : MDs)
    visit(KM.second);
  auto *F = dyn_cast<Function>(&GO);
  if (!F)
    return;
  for (const BasicBlock &BB : *F)
    for (const Instruction &I : BB) {
      MDs.clear();
      I.getAllMetadata(MDs);
      for (auto &KM : MDs)
        visit(KM.second);
      for (const Value *Op : I.operand_values())
        if (auto *MAV = dyn_cast<MetadataAsValue>(Op))
          visit(MAV->getMetadata());
      for (const DbgRecord &DR : I.getDbgRecordRange()) {
        visit(DR.getDebugLoc().getAsMDNode());
        if (auto *DVR = dyn_cast<DbgVariableRecord>(&DR)) {
          visit(DVR->getRawLocation());
          visit(DVR->getRawVariable());
          visit(DVR->getRawExpression());
          if (DVR->isDbgAssign()) {
            visit(DVR->getRawAddress());
            visit(DVR->getRawAddressExpression());
            visit(DVR->getRawAssignID());
          }
        } else if (auto *DLR = dyn_cast<DbgLabelRecord>(&DR)) {
          visit(DLR->getRawLabel());
        }
      }
    }
}

} // namespace

// What the fragments of one unit learn about its metadata, for the next
// fragment: the nodes that reach nothing a fragment maps elsewhere (no
// compile unit, subprogram or other distinct node but types, no value).
// Such a node is the same in every fragment, whatever it is extracted
// with, and no fragment's rebase changes it (what it rebases belongs to a
// function, and so reaches a distinct scope). The nodes live as long as
// the unit's context: uniqued and distinct nodes are never freed before
// it, so a pointer here never names another node.
//
// With `Stub` (a C unit with full debug info), a fragment holds its
// file-scope structs, unions and enums as stubs: the same tag, name, size
// and identifier (so the same type unit signature), nothing else. The
// unit's glue holds every such type in full (`repocc_retain_unit_types`)
// and comes first in the object, so the composer keeps its type units and
// drops the stubs; a fragment's code generation no longer builds the
// whole graph of types its functions reach (most of a `-O0 -g`
// fragment's cost), and the repository no longer stores it with each.
//
// With `CxxDecls` (a C++ unit with full debug info), a fragment holds every
// class, struct and union with an ODR identifier (its mangled name) that
// is declared at namespace scope or inside another such class as a
// declaration: tag, name, identifier and the scope chain (namespaces, the
// enclosing class's declaration), nothing else -- what clang itself emits
// for a class whose definition another unit holds (`-fno-standalone-debug`).
// A class's members and its completeness follow what each unit uses, so
// a fragment that held them would differ from unit to unit; as a
// declaration, a template instance's fragment is the same in every unit
// that instantiates it the same way. The glue holds every complete class
// the unit's definitions reach (`repocc_retain_unit_types`), and debuggers
// find a declaration's definition by its name, as they do across clang's
// own units. Member declarations a definition names (`declaration:`) stay,
// inside the class's declaration, as in clang's output.
enum StubKind { StubNone = 0, StubCRecords = 1, StubCxxDecls = 2 };

struct RepoccSharedTypes {
  DenseSet<const Metadata *> Clean;
  StubKind Stub = StubNone;
  DenseMap<const DICompositeType *, DICompositeType *> Stubs;
};

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

// A C++ class, struct or union a fragment holds as a declaration (see
// RepoccSharedTypes): it has an ODR identifier and lies at namespace scope
// or in another such class. (Enums stay whole: they hold no members that
// follow their uses. Classes local to a function stay with it.)
bool cxxDeclared(const Metadata *MD) {
  for (int Depth = 0; Depth < 256; Depth++) {
    auto *T = dyn_cast_or_null<DICompositeType>(MD);
    if (!T || !T->getRawIdentifier())
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
    while (auto *NS = dyn_cast_or_null<DINamespace>(Scope))
      Scope = NS->getRawScope();
    if (!Scope || isa<DIFile>(Scope) || isa<DICompileUnit>(Scope))
      return true;
    MD = Scope;
  }
  return false;
}

// A complete struct, union or enum declared at file scope: what
// `repocc_identify_debug_types` gives an identifier in C, and so a type
// unit of its own.
bool fileScopeRecord(const DICompositeType *T) {
  if (T->isForwardDecl())
    return false;
  switch (T->getTag()) {
  case dwarf::DW_TAG_structure_type:
  case dwarf::DW_TAG_union_type:
  case dwarf::DW_TAG_enumeration_type:
    break;
  default:
    return false;
  }
  // Types declared in a function stay in the function's unit (LLVM does
  // not put them in type units).
  const Metadata *Scope = T->getRawScope();
  return !Scope || isa<DIFile>(Scope) || isa<DICompileUnit>(Scope);
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

// Calls `Found` on every metadata node the module's globals and functions
// reach, each once, in a fixed order (globals, then functions, each one's
// operands in order); compile units are not entered.
template <class Found> void forEachReachedNode(const Module &M, Found &&found) {
  DenseSet<const Metadata *> Seen;
  SmallVector<const Metadata *, 64> Stack;
  auto visit = [&](const Metadata *MD) {
    if (MD && Seen.insert(MD).second)
      Stack.push_back(MD);
  };
  auto drain = [&] {
    while (!Stack.empty()) {
      const Metadata *MD = Stack.pop_back_val();
      auto *N = dyn_cast<MDNode>(MD);
      if (!N || isa<DICompileUnit>(N))
        continue;
      found(N);
      // Operands in reverse, so that the walk meets them in order.
      for (unsigned I = N->getNumOperands(); I > 0; I--)
        visit(N->getOperand(I - 1).get());
    }
  };
  for (const GlobalVariable &G : M.globals()) {
    forEachObjectRoot(G, visit);
    drain();
  }
  for (const Function &F : M) {
    forEachObjectRoot(F, visit);
    drain();
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

// For a module the unit's metadata may be shared with (a bodies snapshot,
// written as bitcode at once, while the unit's optimizer waits): maps to
// itself every node `Kept` reach that reaches no global value, distinct
// ones included, so that cloning makes no copy of the unit's debug info
// (the copies stayed in the context for the rest of the compile: about
// 30 MB of sqlite3.c's peak memory at -O2 -g). Returns whether the
// compile unit `CU` maps to itself.
bool shareUnitMetadata(ArrayRef<GlobalValue *> Kept, ValueToValueMapTy &VMap,
                       const DICompileUnit *CU) {
  SmallPtrSet<const Metadata *, 32> Seen;
  SmallVector<const Metadata *, 64> Reached;
  bool AnyValue = false;
  auto visit = [&](const Metadata *MD) {
    if (MD && isa<MDNode>(MD) && Seen.insert(MD).second)
      Reached.push_back(MD);
  };
  for (GlobalValue *GV : Kept)
    if (auto *GO = dyn_cast<GlobalObject>(GV))
      forEachObjectRoot(*GO, visit);
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
  if (CU && Mapped.count(CU))
    return false;
  // Uniqued nodes under them map to themselves as the mapper finds them.
  for (const Metadata *MD : Reached)
    if (cast<MDNode>(MD)->isDistinct() && !Mapped.count(MD))
      mapToSelf(VMap, MD);
  return true;
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
  for (size_t i = 0; i < count; i++) {
    GlobalValue *GV = Src.getNamedValue(names[i]);
    if (!GV || GV->isDeclaration() || Dst->getNamedValue(names[i]))
      continue;
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
      copyComdat(*Dst, *G, *NG);
    } else if (auto *A = dyn_cast<GlobalAlias>(GV)) {
      auto *NA = cast<GlobalAlias>(VMap[A]);
      NA->setAliasee(MapValue(A->getAliasee(), VMap, RF_None, nullptr, &Mat));
    }
  }
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
      if (G->hasInitializer())
        cast<GlobalVariable>(To)->setInitializer(
            MapValue(G->getInitializer(), VMap, RF_None, nullptr, &Mat));
    }
  }
  // A function declared elsewhere keeps the subprogram clang attached to
  // its declaration (at -O1 and above, for call-site information), so that
  // calls to it get their DW_TAG_call_site entries as in clang's object;
  // the callers' digests cover it (see `digest`'s declared callees).
  if (!copy_module_asm) {
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
  }
  // Cloning into another module registers compile units in llvm.dbg.cu even
  // when there are none; an empty list without a "Debug Info Version" flag
  // makes the bitcode reader warn and strip.
  if (NamedMDNode *CUs = Dst->getNamedMetadata("llvm.dbg.cu"))
    if (CUs->getNumOperands() == 0)
      Dst->eraseNamedMetadata(CUs);
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
// block address...).
static bool collectUserFunctions(const Value *V, const GlobalValue *Self,
                                 SmallPtrSetImpl<const Function *> &Found, unsigned Depth) {
  for (const User *U : V->users()) {
    if (auto *I = dyn_cast<Instruction>(U)) {
      const Function *F = I->getFunction();
      if (F != Self)
        Found.insert(F);
      if (Found.size() > 1)
        return true;
    } else if (auto *CE = dyn_cast<ConstantExpr>(U)) {
      if (Depth > 8 || !collectUserFunctions(CE, Self, Found, Depth + 1))
        return false;
    } else {
      return false;
    }
  }
  return true;
}

// How many functions other than itself use the global `value` (0, 1, or 2
// for "more"), with the one in `*sole`; -1 when something other than a
// function's code uses it.
extern "C" int repocc_user_functions(LLVMValueRef value, LLVMValueRef *sole) {
  *sole = nullptr;
  auto *GV = dyn_cast<GlobalValue>(unwrap(value));
  if (!GV)
    return -1;
  SmallPtrSet<const Function *, 2> Found;
  if (!collectUserFunctions(GV, GV, Found, 0))
    return -1;
  if (Found.size() == 1)
    *sole = wrap(const_cast<Function *>(*Found.begin()));
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
    F->deleteBody();
    F->setComdat(nullptr);
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
// "S\t<name>" where it has a use there and its address is significant (not
// unnamed_addr, not thread-local); and "W\t<n>", the basic blocks of its
// functions. The caller frees the string with LLVMDisposeMessage.
extern "C" char *repocc_fragment_reach(LLVMModuleRef module, const char *const *names,
                                       size_t count) {
  Module &M = *unwrap(module);
  SmallPtrSet<GlobalValue *, 16> Inside; // defined in the fragment
  SmallVector<GlobalValue *, 16> Work;
  SetVector<GlobalValue *> Used;       // with a use in the fragment
  SetVector<GlobalValue *> Named;      // named by metadata only
  SmallPtrSet<const Constant *, 32> Seen;
  for (size_t i = 0; i < count; i++) {
    GlobalValue *GV = M.getNamedValue(names[i]);
    if (GV && !GV->isDeclaration() && Inside.insert(GV).second)
      Work.push_back(GV);
  }
  // A local definition is copied into the fragment (the materializer's
  // rule); any other global is declared there.
  std::function<void(const Constant *)> reach = [&](const Constant *C) {
    if (auto *G = dyn_cast<GlobalValue>(C)) {
      auto *GV = const_cast<GlobalValue *>(G);
      Used.insert(GV);
      if (GV->hasLocalLinkage() && !GV->isDeclaration() &&
          (isa<Function>(GV) || isa<GlobalVariable>(GV)) && Inside.insert(GV).second)
        Work.push_back(GV);
      return;
    }
    if (!Seen.insert(C).second)
      return;
    for (const Use &Op : C->operands())
      if (auto *OC = dyn_cast<Constant>(Op.get()))
        reach(OC);
  };
  auto reachOperand = [&](const Value *V) {
    if (auto *C = dyn_cast<Constant>(V)) {
      reach(C);
    } else if (auto *MV = dyn_cast<MetadataAsValue>(V)) {
      if (auto *VM = dyn_cast<ValueAsMetadata>(MV->getMetadata()))
        if (auto *G = dyn_cast<GlobalValue>(VM->getValue()))
          Named.insert(const_cast<GlobalValue *>(G));
    }
  };
  uint64_t Blocks = 0;
  while (!Work.empty()) {
    GlobalValue *GV = Work.pop_back_val();
    if (auto *F = dyn_cast<Function>(GV)) {
      if (F->hasPersonalityFn())
        reach(F->getPersonalityFn());
      if (F->hasPrefixData())
        reach(F->getPrefixData());
      if (F->hasPrologueData())
        reach(F->getPrologueData());
      for (const BasicBlock &BB : *F) {
        Blocks++;
        for (const Instruction &I : BB)
          for (const Use &Op : I.operands())
            reachOperand(Op.get());
      }
    } else if (auto *G = dyn_cast<GlobalVariable>(GV)) {
      if (G->hasInitializer())
        reach(G->getInitializer());
    } else if (auto *A = dyn_cast<GlobalAlias>(GV)) {
      reach(A->getAliasee());
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
    if (G->getUnnamedAddr() == GlobalValue::UnnamedAddr::None && !G->isThreadLocal())
      line('S', G);
  }
  for (GlobalValue *G : Named)
    if (!Inside.count(G) && !Used.count(G))
      line('R', G);
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
  for (DICompileUnit *CU : M->debug_compile_units()) {
    CU->replaceGlobalVariables(MDTuple::get(M->getContext(), Defined));
    if (!glue) {
      CU->replaceEnumTypes(nullptr);
      CU->replaceRetainedTypes(nullptr);
      CU->replaceImportedEntities(nullptr);
      CU->replaceMacros(nullptr);
    }
  }
}

// ---------------------------------------------------------------------------
// Debug types shared between fragments: every fragment is a compile unit of
// its own, and each would repeat the structs, unions and enums it uses. A
// composite type with an identifier can be emitted as a DWARF type unit (in
// a COMDAT group, so the linker keeps one copy; LLVM's
// -generate-type-units). C types have no identifier (C++ ones have their
// mangled name), so each gets one here: a digest of its content, so that
// equal identifiers mean equal type units.
//
// A type's content is its own metadata and every node reachable from it,
// with other composite types entered through their identifiers. Types can
// refer to each other in cycles (a list node pointing to its list), so the
// digests are computed per strongly connected component of the
// type-to-type graph: a type in a cycle is serialized together with the
// rest of its component, in the order a depth-first walk from it meets
// them, and types outside it by their (already computed) identifiers.

#include <llvm/ADT/SmallString.h>
#include <llvm/BinaryFormat/Dwarf.h>
#include <llvm/IR/DebugInfo.h>
#include <llvm/IR/ModuleSlotTracker.h>
#include <llvm/Support/MD5.h>
#include <llvm/Support/raw_ostream.h>
#include <map>

namespace {

using namespace llvm;

// A type's own serialization: text pieces, and references to the other
// types being identified (by index) between them.
struct Shallow {
  std::vector<std::string> Text; // Text.size() == Refs.size() + 1
  std::vector<unsigned> Refs;
};

bool identifiable(const DICompositeType *T) {
  return !T->getRawIdentifier() && fileScopeRecord(T);
}

// Drops the `line: N` fields of a printed node. A type's identifier (and
// so its type unit's signature) must not depend on where it is declared:
// with relative lines a fragment is reused after lines moved, and its type
// units must keep the signatures a compile from scratch gives them. Their
// contents keep the lines, placed when composed.
void withoutLines(std::string &T) {
  static const std::string Field = ", line: ";
  size_t At = 0;
  while ((At = T.find(Field, At)) != std::string::npos) {
    size_t End = At + Field.size();
    while (End < T.size() && isdigit(static_cast<unsigned char>(T[End])))
      End++;
    T.erase(At, End - At);
  }
}

struct TypeIdentifier {
  Module &M;
  ModuleSlotTracker MST;
  DenseMap<const DICompositeType *, unsigned> Index;
  std::vector<DICompositeType *> Types;
  std::vector<Shallow> Own;
  std::vector<std::string> Ident;

  explicit TypeIdentifier(Module &Mod) : M(Mod), MST(&Mod) {}

  // The printed form of one node, its references to other nodes replaced
  // by their position in this walk.
  void walk(const Metadata *MD, unsigned Self, Shallow &S,
            DenseMap<const Metadata *, unsigned> &Seen) {
    auto *N = dyn_cast_or_null<MDNode>(MD);
    if (!N) {
      std::string T;
      raw_string_ostream OS(T);
      if (MD)
        MD->print(OS, MST, &M);
      S.Text.back() += "<" + T + ">";
      return;
    }
    if (auto *CT = dyn_cast<DICompositeType>(N)) {
      auto It = Index.find(CT);
      if (It != Index.end() && It->second != Self) {
        S.Refs.push_back(It->second);
        S.Text.emplace_back();
        return;
      }
      if (CT->getRawIdentifier() && It == Index.end()) {
        S.Text.back() += "<id:" + CT->getIdentifier().str() + ">";
        return;
      }
    }
    if (isa<DICompileUnit>(N) || isa<DISubprogram>(N)) {
      // Never part of a file-scope type's content (a scope at most).
      S.Text.back() += "<scope>";
      return;
    }
    auto [It, New] = Seen.try_emplace(N, Seen.size());
    S.Text.back() += "<#" + std::to_string(It->second) + ">";
    if (!New)
      return;
    std::string T;
    raw_string_ostream OS(T);
    N->print(OS, MST, &M);
    withoutLines(T);
    // Replace "!<slot>" references by walking the referenced nodes (the
    // operands, printed as operands with the same slot tracker).
    std::map<int, const Metadata *> BySlot;
    for (const MDOperand &Op : N->operands())
      if (auto *ON = dyn_cast_or_null<MDNode>(Op.get())) {
        std::string Ref;
        raw_string_ostream ROS(Ref);
        ON->printAsOperand(ROS, MST, &M);
        if (Ref.size() > 1 && Ref[0] == '!' && isdigit(static_cast<unsigned char>(Ref[1])))
          BySlot[std::stoi(Ref.substr(1))] = ON;
      }
    size_t I = 0;
    while (I < T.size()) {
      if (T[I] == '!' && I + 1 < T.size() && isdigit(static_cast<unsigned char>(T[I + 1]))) {
        size_t J = I + 1;
        while (J < T.size() && isdigit(static_cast<unsigned char>(T[J])))
          J++;
        int Slot = std::stoi(T.substr(I + 1, J - I - 1));
        auto B = BySlot.find(Slot);
        if (B != BySlot.end()) {
          walk(B->second, Self, S, Seen);
        } else {
          S.Text.back() += "<?>";
        }
        I = J;
      } else {
        S.Text.back() += T[I++];
      }
    }
  }

  void run() {
    DebugInfoFinder Finder;
    Finder.processModule(M);
    for (DIType *T : Finder.types())
      if (auto *CT = dyn_cast<DICompositeType>(T))
        if (identifiable(CT) && !Index.count(CT)) {
          Index[CT] = Types.size();
          Types.push_back(CT);
        }
    if (Types.empty())
      return;
    Own.resize(Types.size());
    for (unsigned I = 0; I < Types.size(); I++) {
      DenseMap<const Metadata *, unsigned> Seen;
      Own[I].Text.emplace_back();
      walk(Types[I], I, Own[I], Seen);
    }
    Ident.assign(Types.size(), "");
    tarjan();
    for (unsigned I = 0; I < Types.size(); I++)
      Types[I]->replaceOperandWith(7, MDString::get(M.getContext(), Ident[I]));
  }

  // Iterative Tarjan; components come out callees first.
  std::vector<int> Low, Num, Comp;
  std::vector<unsigned> Stack;
  std::vector<bool> OnStack;
  int Counter = 0;

  void tarjan() {
    unsigned N = Types.size();
    Low.assign(N, -1);
    Num.assign(N, -1);
    Comp.assign(N, -1);
    OnStack.assign(N, false);
    for (unsigned Root = 0; Root < N; Root++) {
      if (Num[Root] != -1)
        continue;
      std::vector<std::pair<unsigned, unsigned>> Frames{{Root, 0}};
      Num[Root] = Low[Root] = Counter++;
      Stack.push_back(Root);
      OnStack[Root] = true;
      while (!Frames.empty()) {
        auto &[V, E] = Frames.back();
        if (E < Own[V].Refs.size()) {
          unsigned W = Own[V].Refs[E++];
          if (Num[W] == -1) {
            Num[W] = Low[W] = Counter++;
            Stack.push_back(W);
            OnStack[W] = true;
            Frames.push_back({W, 0});
          } else if (OnStack[W]) {
            Low[V] = std::min(Low[V], Num[W]);
          }
          continue;
        }
        unsigned Done = V;
        Frames.pop_back();
        if (!Frames.empty())
          Low[Frames.back().first] = std::min(Low[Frames.back().first], Low[Done]);
        if (Low[Done] == Num[Done]) {
          std::vector<unsigned> Members;
          unsigned W;
          do {
            W = Stack.back();
            Stack.pop_back();
            OnStack[W] = false;
            Members.push_back(W);
          } while (W != Done);
          identifyComponent(Members);
        }
      }
    }
  }

  void identifyComponent(const std::vector<unsigned> &Members) {
    int C = Counter++;
    for (unsigned M : Members)
      Comp[M] = C;
    std::vector<std::string> Out(Members.size());
    for (size_t K = 0; K < Members.size(); K++) {
      // Serialize the component from this member: members in the order a
      // depth-first walk meets them, others by identifier.
      std::map<unsigned, unsigned> Order;
      std::vector<unsigned> Queue{Members[K]};
      Order[Members[K]] = 0;
      std::string Text;
      for (size_t Q = 0; Q < Queue.size(); Q++) {
        const Shallow &S = Own[Queue[Q]];
        Text += "{";
        for (size_t R = 0; R < S.Refs.size(); R++) {
          Text += S.Text[R];
          unsigned W = S.Refs[R];
          if (Comp[W] == C) {
            auto [It, New] = Order.try_emplace(W, Order.size());
            if (New)
              Queue.push_back(W);
            Text += "<member " + std::to_string(It->second) + ">";
          } else {
            Text += "<type " + Ident[W] + ">";
          }
        }
        Text += S.Text.back() + "}";
      }
      MD5 Hash;
      Hash.update(Text);
      MD5::MD5Result Result;
      Hash.final(Result);
      SmallString<32> Hex;
      MD5::stringifyResult(Result, Hex);
      Out[K] = "repocc." + Hex.str().str();
    }
    for (size_t K = 0; K < Members.size(); K++)
      Ident[Members[K]] = Out[K];
  }
};

} // namespace

// Gives every file-scope struct, union and enum without an identifier a
// digest of its content as identifier (see above).
extern "C" void repocc_identify_debug_types(LLVMModuleRef module) {
  TypeIdentifier(*unwrap(module)).run();
}

// Drops the source checksums (MD5) from the module's DIFile nodes, so that
// the digest of a function says nothing about the rest of its file: clang
// records the file's checksum in every DIFile, which every subprogram,
// type and location of the file reaches, so any edit anywhere in a file
// would change every digest of it. The object then has no MD5 column in
// its line table (DWARF 5 allows it; debuggers do not need it).
//
// DIFile nodes are uniqued and keep the checksum outside their operands,
// so they are replaced, not edited: a ValueMapper seeded with old -> new
// remaps every node that reaches one (uniqued ones are re-created,
// distinct ones such as compile units and subprograms edited in place),
// and then the functions, global variables and llvm.dbg.cu that use them.
// Returns how many files were stripped.
extern "C" unsigned repocc_strip_file_checksums(LLVMModuleRef module) {
  Module &M = *unwrap(module);
  ValueToValueMapTy VM;
  unsigned Stripped = 0;
  auto Strip = [&](const DIFile *F) {
    if (!F->getRawChecksum() || VM.getMappedMD(F))
      return;
    VM.MD()[F].reset(DIFile::get(M.getContext(), F->getRawFilename(),
                                 F->getRawDirectory(), std::nullopt,
                                 F->getRawSource()));
    Stripped++;
  };
  // Every node, not DebugInfoFinder's: it does not enter every operand
  // (a template parameter's, a member declaration's file), and a file
  // left with its checksum makes a header's definitions differ between
  // units that reach it differently.
  forEachReachedNode(M, [&](const MDNode *N) {
    if (auto *F = dyn_cast<DIFile>(N))
      Strip(F);
  });
  DenseSet<const Metadata *> Seen;
  SmallVector<const Metadata *, 64> Stack;
  if (NamedMDNode *CUs = M.getNamedMetadata("llvm.dbg.cu"))
    for (const MDNode *CU : CUs->operands())
      Stack.push_back(CU);
  while (!Stack.empty()) {
    auto *N = dyn_cast<MDNode>(Stack.pop_back_val());
    if (!N || !Seen.insert(N).second)
      continue;
    if (auto *F = dyn_cast<DIFile>(N))
      Strip(F);
    for (const MDOperand &Op : N->operands())
      if (Op.get())
        Stack.push_back(Op.get());
  }
  if (!Stripped)
    return 0;
  // ValueMapper alone leaves uniqued nodes that reach a file only through
  // a cycle with a distinct node (a class's member declarations, whose
  // scope is the class) unmapped. So every uniqued node that reaches a
  // stripped file is re-created here first, without entering distinct
  // nodes (uniqued nodes form no cycle of their own); then each distinct
  // node's operands are replaced in place.
  DenseMap<const Metadata *, Metadata *> Made;
  SmallVector<MDNode *, 64> Distinct;
  DenseSet<const MDNode *> DistinctSeen;
  std::function<Metadata *(Metadata *)> Rebuilt = [&](Metadata *MD) -> Metadata * {
    auto *N = dyn_cast_or_null<MDNode>(MD);
    if (!N)
      return MD;
    if (N->isDistinct()) {
      if (DistinctSeen.insert(N).second)
        Distinct.push_back(N);
      return N;
    }
    if (auto Mapped = VM.getMappedMD(N))
      return const_cast<Metadata *>(*Mapped);
    if (auto It = Made.find(N); It != Made.end())
      return It->second;
    SmallVector<Metadata *, 8> Ops;
    bool Changed = false;
    for (const MDOperand &Op : N->operands()) {
      Ops.push_back(Rebuilt(Op.get()));
      Changed |= Ops.back() != Op.get();
    }
    Metadata *Result = N;
    if (Changed) {
      TempMDNode Copy = N->clone();
      for (unsigned I = 0; I < Ops.size(); I++)
        Copy->replaceOperandWith(I, Ops[I]);
      Result = MDNode::replaceWithUniqued(std::move(Copy));
      if (Result == N) {
        // A member of a class with an ODR identifier is uniqued by its
        // name and class alone, so the copy is the node itself: it is
        // changed in place (nothing else has its key).
        for (unsigned I = 0; I < Ops.size(); I++)
          if (N->getOperand(I).get() != Ops[I])
            N->replaceOperandWith(I, Ops[I]);
      } else {
        VM.MD()[N].reset(Result);
      }
    }
    Made[N] = Result;
    return Result;
  };
  auto rebuildFrom = [&](const Metadata *MD) { Rebuilt(const_cast<Metadata *>(MD)); };
  for (const Function &F : M)
    forEachObjectRoot(F, rebuildFrom);
  for (const GlobalVariable &G : M.globals())
    forEachObjectRoot(G, rebuildFrom);
  if (NamedMDNode *CUs = M.getNamedMetadata("llvm.dbg.cu"))
    for (MDNode *CU : CUs->operands())
      rebuildFrom(CU);
  for (size_t I = 0; I < Distinct.size(); I++) {
    MDNode *N = Distinct[I];
    for (unsigned Op = 0; Op < N->getNumOperands(); Op++) {
      Metadata *Old = N->getOperand(Op).get();
      Metadata *New = Rebuilt(Old);
      if (New != Old)
        N->replaceOperandWith(Op, New);
    }
  }
  ValueMapper Mapper(VM, RF_ReuseAndMutateDistinctMDs | RF_IgnoreMissingLocals);
  for (Function &F : M)
    Mapper.remapFunction(F);
  for (GlobalVariable &GV : M.globals())
    Mapper.remapGlobalObjectMetadata(GV);
  if (NamedMDNode *CUs = M.getNamedMetadata("llvm.dbg.cu"))
    for (unsigned I = 0; I < CUs->getNumOperands(); I++)
      CUs->setOperand(I, Mapper.mapMDNode(*CUs->getOperand(I)));
  return Stripped;
}

// ---------------------------------------------------------------------------
// The optimization pipeline with a hook where the module optimization half
// starts (after the inliner and the function simplification pipeline): as
// LLVMRunPasses, plus one module pass there that calls back into repocc.
// repocc optimizes a unit's statics as hidden external definitions, so the
// optimizer cannot delete one whose calls were all inlined; the hook lets
// repocc delete those before the vectorizers, unrolling and the late
// simplification passes spend time on bodies that would be dropped after.

#include <llvm/Analysis/GlobalsModRef.h>
#include <llvm/Analysis/LazyCallGraph.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Passes/StandardInstrumentations.h>
#include <llvm/Support/Error.h>
#include <llvm-c/Error.h>

namespace {

struct RepoccTuning {
  int loop_vectorization;
  int slp_vectorization;
  int loop_unrolling;
  int loop_interleaving;
  int call_graph_profile;
  int merge_functions;
};

using RepoccModuleHook = void (*)(void *ctx, int point, LLVMModuleRef module);

// Calls the hook. It may delete functions and change linkage, so nothing
// is preserved: the function analysis manager is cleared (as the proxy's
// contract for deleted functions requires) and GlobalsAA, which the
// optimization half's function passes only use when cached, is computed
// again right after (see the pipeline below).
struct ModuleHookPass : llvm::PassInfoMixin<ModuleHookPass> {
  RepoccModuleHook hook;
  void *ctx;
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &) {
    hook(ctx, /*REPOCC_OPTIMIZER_EARLY=*/2, llvm::wrap(&M));
    return llvm::PreservedAnalyses::none();
  }
  static bool isRequired() { return true; }
};

// Where the pipeline calls back into Rust.
enum RepoccHookPoint : int {
  // Right before the CGSCC inliner (after the module simplification's
  // first passes and GlobalsAA): stored bodies may be put in place here.
  REPOCC_BEFORE_INLINER = 0,
  // Right after it: every function is as the inliner and the function
  // simplification left it.
  REPOCC_AFTER_INLINER = 1,
  // The start of the module optimization half.
  REPOCC_OPTIMIZER_EARLY = 2,
};

using RepoccPipelineHook = void (*)(void *ctx, int point, LLVMModuleRef module);

// The string attribute that marks a function whose body was put in place
// as the inliner and function simplification left it in an earlier
// compile (see repocc_substitute_bodies): no optional pass runs on it
// until the inliner is done, when the mark goes.
constexpr const char *kSubstitutedAttr = "repocc-substituted";

bool isSubstituted(const llvm::Function *F) {
  return F && F->hasFnAttribute(kSubstitutedAttr);
}

// Whether an optional pass may run on `IR` (see kSubstitutedAttr).
bool mayRunOn(llvm::Any IR) {
  using namespace llvm;
  if (const auto *F = any_cast<const Function *>(&IR))
    return !isSubstituted(*F);
  if (const auto *C = any_cast<const LazyCallGraph::SCC *>(&IR)) {
    for (const LazyCallGraph::Node &N : **C)
      if (!isSubstituted(&N.getFunction()))
        return true;
    return false;
  }
  if (const auto *L = any_cast<const Loop *>(&IR))
    return !isSubstituted((*L)->getHeader()->getParent());
  return true;
}

constexpr llvm::StringLiteral kInlinerPass = "ModuleInlinerWrapperPass";

} // namespace

extern "C" LLVMErrorRef repocc_run_pipeline(LLVMModuleRef module_ref, LLVMTargetMachineRef tm_ref,
                                            const char *pipeline, const RepoccTuning *tuning,
                                            RepoccPipelineHook hook, int inliner_hooks,
                                            void *ctx) {
  using namespace llvm;
  Module *M = unwrap(module_ref);
  TargetMachine *TM = reinterpret_cast<TargetMachine *>(tm_ref);
  PipelineTuningOptions PTO;
  PTO.LoopVectorization = tuning->loop_vectorization != 0;
  PTO.SLPVectorization = tuning->slp_vectorization != 0;
  PTO.LoopUnrolling = tuning->loop_unrolling != 0;
  PTO.LoopInterleaving = tuning->loop_interleaving != 0;
  PTO.CallGraphProfile = tuning->call_graph_profile != 0;
  PTO.MergeFunctions = tuning->merge_functions != 0;

  PassInstrumentationCallbacks PIC;
  PassBuilder PB(TM, PTO, std::nullopt, &PIC);
  LoopAnalysisManager LAM;
  FunctionAnalysisManager FAM;
  CGSCCAnalysisManager CGAM;
  ModuleAnalysisManager MAM;
  PB.registerLoopAnalyses(LAM);
  PB.registerFunctionAnalyses(FAM);
  PB.registerCGSCCAnalyses(CGAM);
  PB.registerModuleAnalyses(MAM);
  PB.crossRegisterProxies(LAM, FAM, CGAM, MAM);
  StandardInstrumentations SI(M->getContext(), /*DebugLogging=*/false, /*VerifyEach=*/false);
  SI.registerCallbacks(PIC, &MAM);
  if (hook && inliner_hooks) {
    // The module's inliner runs once; its first run is the one meant.
    auto before_done = std::make_shared<bool>(false);
    auto after_done = std::make_shared<bool>(false);
    PIC.registerShouldRunOptionalPassCallback(
        [](StringRef, Any IR) { return mayRunOn(std::move(IR)); });
    PIC.registerBeforeNonSkippedPassCallback([=, &FAM, &MAM](StringRef PassID, Any IR) {
      if (PassID != kInlinerPass || *before_done)
        return;
      *before_done = true;
      hook(ctx, REPOCC_BEFORE_INLINER, module_ref);
      // What the function passes so far cached about a replaced body is
      // stale; so is a call graph built from the old bodies. GlobalsAA
      // stays: it describes the bodies a cold compile's inliner saw too.
      bool replaced = false;
      for (Function &F : *M)
        if (isSubstituted(&F)) {
          FAM.clear(F, F.getName());
          replaced = true;
        }
      if (replaced) {
        PreservedAnalyses PA = PreservedAnalyses::all();
        PA.abandon<LazyCallGraphAnalysis>();
        MAM.invalidate(*M, PA);
      }
    });
    PIC.registerAfterPassCallback(
        [=](StringRef PassID, Any IR, const PreservedAnalyses &) {
          if (PassID != kInlinerPass || *after_done)
            return;
          *after_done = true;
          for (Function &F : *M)
            if (isSubstituted(&F))
              F.removeFnAttr(kSubstitutedAttr);
          hook(ctx, REPOCC_AFTER_INLINER, module_ref);
        });
  }
  if (hook) {
    PB.registerOptimizerEarlyEPCallback(
        [=](ModulePassManager &MPM, OptimizationLevel) {
          ModuleHookPass pass;
          pass.hook = hook;
          pass.ctx = ctx;
          MPM.addPass(std::move(pass));
          MPM.addPass(RequireAnalysisPass<GlobalsAA, Module>());
        });
  }
  ModulePassManager MPM;
  if (Error err = PB.parsePassPipeline(MPM, pipeline))
    return wrap(std::move(err));
  MPM.run(*M, MAM);
  return LLVMErrorSuccess;
}

// ---------------------------------------------------------------------------
// Stored bodies as context (see src/pipeline/bodies.rs). A function the
// optimizer only needs as context for what it inlines gets the body an
// earlier compile's inliner and function simplification left it, read from
// bitcode into the unit's context, and is marked so that no optional pass
// runs on it until the inliner is done.

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/IR/Operator.h>
#include <llvm/IR/TypeFinder.h>
#include <llvm/Support/MemoryBuffer.h>

namespace {

// Maps the types of a module read into the unit's context onto the unit's
// own: the bitcode reader renames an identified struct whose name is taken
// (`%struct.S` is read as `%struct.S.12`), and code that mixes the two
// would not be what a cold compile makes.
struct UnitTypeMapper final : llvm::ValueMapTypeRemapper {
  llvm::StringMap<llvm::StructType *> UnitStructs;
  llvm::DenseMap<llvm::Type *, llvm::Type *> Done;
  // Types with no counterpart in the unit.
  llvm::DenseSet<llvm::Type *> Unmapped;
  bool Failed = false;

  explicit UnitTypeMapper(llvm::Module &Unit) {
    llvm::TypeFinder Found;
    Found.run(Unit, /*onlyNamed=*/true);
    for (llvm::StructType *ST : Found)
      UnitStructs[ST->getName()] = ST;
  }

  llvm::Type *remapType(llvm::Type *T) override { return map(T); }

  // The unit's type for `T`; sets `Failed` when there is none (the type
  // is then kept as it is).
  llvm::Type *map(llvm::Type *T) {
    using namespace llvm;
    if (auto It = Done.find(T); It != Done.end()) {
      if (Unmapped.count(T))
        Failed = true;
      return It->second;
    }
    bool Was = Failed;
    Failed = false;
    Type *R = T;
    if (auto *ST = dyn_cast<StructType>(T)) {
      SmallVector<Type *, 8> Elements;
      for (Type *E : ST->elements())
        Elements.push_back(map(E));
      if (ST->isLiteral()) {
        R = StructType::get(T->getContext(), Elements, ST->isPacked());
      } else if (StructType *U = Failed ? nullptr : unitStruct(ST, Elements)) {
        R = U;
      } else {
        Failed = true;
      }
    } else if (auto *AT = dyn_cast<ArrayType>(T)) {
      R = ArrayType::get(map(AT->getElementType()), AT->getNumElements());
    } else if (auto *VT = dyn_cast<VectorType>(T)) {
      R = VectorType::get(map(VT->getElementType()), VT->getElementCount());
    } else if (auto *FT = dyn_cast<FunctionType>(T)) {
      SmallVector<Type *, 8> Params;
      for (Type *P : FT->params())
        Params.push_back(map(P));
      R = FunctionType::get(map(FT->getReturnType()), Params, FT->isVarArg());
    }
    if (Failed) {
      Unmapped.insert(T);
      R = T;
    }
    Done[T] = R;
    Failed = Failed || Was;
    return R;
  }

  // Whether every type `F`'s body uses has the unit's counterpart.
  bool mapsBody(const llvm::Function &F) {
    using namespace llvm;
    Failed = false;
    map(F.getFunctionType());
    SmallPtrSet<const Constant *, 32> Seen;
    SmallVector<const Constant *, 32> Work;
    auto visit = [&](const Value *V) {
      map(V->getType());
      if (auto *C = dyn_cast<Constant>(V); C && !isa<GlobalValue>(C) && Seen.insert(C).second)
        Work.push_back(C);
    };
    for (const BasicBlock &B : F)
      for (const Instruction &I : B) {
        map(I.getType());
        for (const Value *Op : I.operands())
          visit(Op);
        if (auto *G = dyn_cast<GetElementPtrInst>(&I))
          map(G->getSourceElementType());
        else if (auto *A = dyn_cast<AllocaInst>(&I))
          map(A->getAllocatedType());
        else if (auto *C = dyn_cast<CallBase>(&I))
          map(C->getFunctionType());
      }
    while (!Work.empty()) {
      const Constant *C = Work.pop_back_val();
      if (auto *CE = dyn_cast<ConstantExpr>(C))
        if (auto *G = dyn_cast<GEPOperator>(CE))
          map(G->getSourceElementType());
      for (const Value *Op : C->operands())
        visit(Op);
    }
    return !Failed;
  }

  // The unit's struct `ST` was read as: its name, or the name the reader
  // made unique (one `.N` more), with the same elements.
  llvm::StructType *unitStruct(llvm::StructType *ST, llvm::ArrayRef<llvm::Type *> Elements) {
    using namespace llvm;
    if (!ST->hasName())
      return nullptr;
    StringRef Name = ST->getName();
    SmallVector<StringRef, 2> Candidates{Name};
    size_t Dot = Name.rfind('.');
    if (Dot != StringRef::npos && Dot + 1 < Name.size() &&
        Name.drop_front(Dot + 1).find_first_not_of("0123456789") == StringRef::npos)
      Candidates.push_back(Name.take_front(Dot));
    for (StringRef C : Candidates) {
      auto It = UnitStructs.find(C);
      if (It == UnitStructs.end())
        continue;
      StructType *U = It->second;
      if (U == ST)
        return U;
      if (U->isOpaque() != ST->isOpaque() || U->isPacked() != ST->isPacked() ||
          U->getNumElements() != Elements.size())
        continue;
      bool Same = true;
      for (size_t i = 0; i < Elements.size(); i++)
        Same = Same && U->getElementType(i) == Elements[i];
      if (Same)
        return U;
    }
    return nullptr;
  }
};

// Maps a global value of the read module onto the unit's of the same name;
// a declaration the unit lacks (a library function the optimizer called
// for, an intrinsic) is added as one.
struct UnitGlobalMaterializer final : llvm::ValueMaterializer {
  llvm::Module &Unit;
  UnitTypeMapper &Types;
  UnitGlobalMaterializer(llvm::Module &U, UnitTypeMapper &T) : Unit(U), Types(T) {}

  llvm::Value *materialize(llvm::Value *V) override {
    using namespace llvm;
    auto *GV = dyn_cast<GlobalValue>(V);
    if (!GV || GV->getParent() == &Unit)
      return nullptr;
    if (GlobalValue *Existing = Unit.getNamedValue(GV->getName()))
      return Existing;
    Type *Ty = Types.map(GV->getValueType());
    if (auto *FTy = dyn_cast<FunctionType>(Ty)) {
      Function *NF = Function::Create(FTy, GlobalValue::ExternalLinkage, GV->getAddressSpace(),
                                      GV->getName(), &Unit);
      if (auto *F = dyn_cast<Function>(GV)) {
        NF->setAttributes(F->getAttributes());
        NF->setCallingConv(F->getCallingConv());
      }
      NF->setDSOLocal(GV->isDSOLocal());
      return NF;
    }
    bool Constant = false;
    if (auto *G = dyn_cast<GlobalVariable>(GV))
      Constant = G->isConstant();
    auto *NG = new GlobalVariable(Unit, Ty, Constant, GlobalValue::ExternalLinkage, nullptr,
                                  GV->getName());
    NG->setDSOLocal(GV->isDSOLocal());
    return NG;
  }
};

// The global values `F`'s body names, through constant expressions.
void namedGlobals(const llvm::Function &F, llvm::SmallPtrSetImpl<const llvm::GlobalValue *> &Out) {
  using namespace llvm;
  SmallPtrSet<const Constant *, 32> Seen;
  SmallVector<const Constant *, 32> Work;
  auto visit = [&](const Value *V) {
    if (auto *C = dyn_cast<Constant>(V))
      if (Seen.insert(C).second)
        Work.push_back(C);
  };
  if (F.hasPersonalityFn())
    visit(F.getPersonalityFn());
  for (const BasicBlock &B : F)
    for (const Instruction &I : B)
      for (const Value *Op : I.operands())
        visit(Op);
  while (!Work.empty()) {
    const Constant *C = Work.pop_back_val();
    if (auto *GV = dyn_cast<GlobalValue>(C)) {
      Out.insert(GV);
      continue;
    }
    for (const Value *Op : C->operands())
      visit(Op);
  }
}

bool hasAddressTakenBlock(const llvm::Function &F) {
  for (const llvm::BasicBlock &B : F)
    if (B.hasAddressTaken())
      return true;
  return false;
}

// Whether every global `S`'s body names is the unit's of the same name and
// kind and type, or a declaration the unit may get as it is.
bool resolvesInUnit(const llvm::Function &S, llvm::Module &Unit, UnitTypeMapper &Types) {
  using namespace llvm;
  SmallPtrSet<const GlobalValue *, 32> Named;
  namedGlobals(S, Named);
  for (const GlobalValue *GV : Named) {
    GlobalValue *U = Unit.getNamedValue(GV->getName());
    if (!U) {
      // Only what a cold compile could have named as a plain external
      // declaration (a library function, an intrinsic).
      if (!GV->isDeclaration() || GV->hasLocalLinkage() ||
          GV->getVisibility() != GlobalValue::DefaultVisibility || !GV->hasName())
        return false;
      continue;
    }
    if (isa<Function>(GV) != isa<Function>(U) || isa<GlobalVariable>(GV) != isa<GlobalVariable>(U))
      return false;
    if (Types.map(GV->getValueType()) != U->getValueType())
      return false;
  }
  return true;
}

} // namespace

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

// ---------------------------------------------------------------------------
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

// ---------------------------------------------------------------------------
// Relative lines in memory (see src/pipeline/debug_lines.rs): a fragment is
// stored with what belongs to a definition in its leader's own file relative
// to the leader's line, `base + line - own`, and the unit's file-level nodes
// (types, typedefs, declarations) of its source file relative to
// the unit's anchor. This does to the module what `digest`'s text rebases
// do to its printed text, without printing and parsing it: every metadata
// node of the kind being rebased gets its nonzero `line:` and `scopeLine:`
// moved, and every node that refers to a moved one is rebuilt to refer to
// the new one. Existing nodes are never changed (a fragment extracted in
// the unit's context shares them with the unit), and nothing in the module
// changes unless every node could be rebuilt.
//
// The anchored lines are rebased once per unit, in the unit's module,
// before fragments are extracted: fragments then share those nodes as they
// are, and each fragment's rebase moves only its function's own nodes.

#include <llvm/IR/DebugProgramInstruction.h>
#include <llvm/IR/Instructions.h>

namespace {

using namespace llvm;

// The raw `file:` and `scope:` operands, as the IR printer names them.
std::pair<Metadata *, Metadata *> fileAndScope(const MDNode *N) {
  if (auto *L = dyn_cast<DILocation>(N))
    return {nullptr, L->getRawScope()};
  if (auto *S = dyn_cast<DIScope>(N))
    return {S->getRawFile(), isa<DIFile>(S) ? nullptr : S->getScope()};
  if (auto *V = dyn_cast<DIVariable>(N))
    return {V->getRawFile(), V->getRawScope()};
  if (auto *L = dyn_cast<DILabel>(N))
    return {L->getRawFile(), L->getRawScope()};
  if (auto *I = dyn_cast<DIImportedEntity>(N))
    return {I->getRawFile(), I->getRawScope()};
  if (auto *P = dyn_cast<DIObjCProperty>(N))
    return {P->getRawFile(), nullptr};
  if (auto *F = dyn_cast<DIMacroFile>(N))
    return {F->getRawFile(), nullptr};
  return {nullptr, nullptr};
}

// The node's `line:` and `scopeLine:` values (0: none).
std::pair<unsigned, unsigned> linesOf(const MDNode *N) {
  if (auto *L = dyn_cast<DILocation>(N))
    return {L->getLine(), 0};
  if (auto *SP = dyn_cast<DISubprogram>(N))
    return {SP->getLine(), SP->getScopeLine()};
  if (auto *B = dyn_cast<DILexicalBlock>(N))
    return {B->getLine(), 0};
  if (auto *V = dyn_cast<DIVariable>(N))
    return {V->getLine(), 0};
  if (auto *L = dyn_cast<DILabel>(N))
    return {L->getLine(), 0};
  if (auto *T = dyn_cast<DIType>(N))
    return {T->getLine(), 0};
  if (auto *I = dyn_cast<DIImportedEntity>(N))
    return {I->getLine(), 0};
  if (auto *C = dyn_cast<DICommonBlock>(N))
    return {C->getLineNo(), 0};
  if (auto *M = dyn_cast<DIModule>(N))
    return {M->getLineNo(), 0};
  if (auto *M = dyn_cast<DIMacroNode>(N)) {
    if (auto *D = dyn_cast<DIMacro>(M))
      return {D->getLine(), 0};
    if (auto *F = dyn_cast<DIMacroFile>(M))
      return {F->getLine(), 0};
  }
  if (auto *P = dyn_cast<DIObjCProperty>(N))
    return {P->getLine(), 0};
  return {0, 0};
}

template <class T, class... Args> T *makeNode(bool Distinct, LLVMContext &C, Args &&...A) {
  return Distinct ? T::getDistinct(C, std::forward<Args>(A)...) : T::get(C, std::forward<Args>(A)...);
}

// `N` with each line `l` as `moved(N, l)` and each operand `op` as `O(op)`;
// null when its kind is not one this knows how to rebuild. A uniqued node is made
// with its final operands, never rebuilt from one with the old ones: a
// member of a type with an identifier is uniqued by name and scope
// alone, so getting it with the old scope would give the old member.
template <class MoveFn, class MapOperand>
MDNode *rebuiltWithLines(LLVMContext &C, MDNode *N, MoveFn &&moved, MapOperand &&O) {
  bool D = N->isDistinct();
  if (auto *L = dyn_cast<DILocation>(N))
    return makeNode<DILocation>(D, C, moved(N, L->getLine()), L->getColumn(), O(L->getRawScope()),
                                O(L->getRawInlinedAt()), L->isImplicitCode());
  if (auto *SP = dyn_cast<DISubprogram>(N))
    return makeNode<DISubprogram>(
        D, C, O(SP->getRawScope()), SP->getRawName(), SP->getRawLinkageName(), O(SP->getRawFile()),
        moved(N, SP->getLine()), O(SP->getRawType()), moved(N, SP->getScopeLine()),
        O(SP->getRawContainingType()), SP->getVirtualIndex(), SP->getThisAdjustment(),
        SP->getFlags(), SP->getSPFlags(), O(SP->getRawUnit()), O(SP->getRawTemplateParams()),
        O(SP->getRawDeclaration()), O(SP->getRawRetainedNodes()), O(SP->getRawThrownTypes()),
        O(SP->getRawAnnotations()), SP->getRawTargetFuncName());
  if (auto *B = dyn_cast<DILexicalBlock>(N))
    return makeNode<DILexicalBlock>(D, C, O(B->getRawScope()), O(B->getRawFile()),
                                    moved(N, B->getLine()), B->getColumn());
  if (auto *V = dyn_cast<DILocalVariable>(N))
    return makeNode<DILocalVariable>(D, C, O(V->getRawScope()), V->getRawName(), O(V->getRawFile()),
                                     moved(N, V->getLine()), O(V->getRawType()), V->getArg(),
                                     V->getFlags(), V->getAlignInBits(),
                                     O(V->getRawAnnotations()));
  if (auto *V = dyn_cast<DIGlobalVariable>(N))
    return makeNode<DIGlobalVariable>(
        D, C, O(V->getRawScope()), V->getRawName(), V->getRawLinkageName(), O(V->getRawFile()),
        moved(N, V->getLine()), O(V->getRawType()), V->isLocalToUnit(), V->isDefinition(),
        O(V->getRawStaticDataMemberDeclaration()), O(V->getRawTemplateParams()),
        V->getAlignInBits(), O(V->getRawAnnotations()));
  if (auto *L = dyn_cast<DILabel>(N))
    return makeNode<DILabel>(D, C, O(L->getRawScope()), L->getRawName(), O(L->getRawFile()),
                             moved(N, L->getLine()));
  if (auto *T = dyn_cast<DIDerivedType>(N))
    return makeNode<DIDerivedType>(
        D, C, T->getTag(), T->getRawName(), O(T->getRawFile()), moved(N, T->getLine()),
        O(T->getRawScope()), O(T->getRawBaseType()), T->getSizeInBits(), T->getAlignInBits(),
        T->getOffsetInBits(), T->getDWARFAddressSpace(), T->getPtrAuthData(), T->getFlags(),
        O(T->getRawExtraData()), O(T->getRawAnnotations()));
  if (auto *T = dyn_cast<DICompositeType>(N))
    return makeNode<DICompositeType>(
        D, C, T->getTag(), T->getRawName(), O(T->getRawFile()), moved(N, T->getLine()),
        O(T->getRawScope()), O(T->getRawBaseType()), T->getSizeInBits(), T->getAlignInBits(),
        T->getOffsetInBits(), T->getFlags(), O(T->getRawElements()), T->getRuntimeLang(),
        O(T->getRawVTableHolder()), O(T->getRawTemplateParams()), T->getRawIdentifier(),
        O(T->getRawDiscriminator()), O(T->getRawDataLocation()), O(T->getRawAssociated()),
        O(T->getRawAllocated()), O(T->getRawRank()), O(T->getRawAnnotations()));
  if (auto *I = dyn_cast<DIImportedEntity>(N))
    return makeNode<DIImportedEntity>(D, C, I->getTag(), O(I->getRawScope()), O(I->getRawEntity()),
                                      O(I->getRawFile()), moved(N, I->getLine()), I->getRawName(),
                                      O(I->getRawElements()));
  if (auto *B = dyn_cast<DICommonBlock>(N))
    return makeNode<DICommonBlock>(D, C, O(B->getRawScope()), O(B->getRawDecl()), B->getRawName(),
                                   O(B->getRawFile()), moved(N, B->getLineNo()));
  return nullptr;
}

// The uniqued node `New` with each operand `i` as `Ops[i]` (made again
// where one differs), and whether the node made has exactly those
// operands and `Lines` (uniquing may hand back an equal node that is not
// the one asked for).
std::pair<MDNode *, bool> withOperands(MDNode *New, ArrayRef<Metadata *> Ops,
                                       std::pair<unsigned, unsigned> Lines) {
  bool Changed = false;
  for (unsigned i = 0; i < Ops.size(); i++)
    Changed |= New->getOperand(i) != Ops[i];
  if (Changed) {
    TempMDNode T = New->clone();
    for (unsigned i = 0; i < Ops.size(); i++)
      if (T->getOperand(i) != Ops[i])
        T->replaceOperandWith(i, Ops[i]);
    New = MDNode::replaceWithUniqued(std::move(T));
  }
  bool Same = linesOf(New) == Lines && New->getNumOperands() == Ops.size();
  for (unsigned i = 0; Same && i < Ops.size(); i++)
    Same = New->getOperand(i) == Ops[i];
  return {New, Same};
}

struct LineRebaser {
  LLVMContext &C;
  const Metadata *File;
  uint64_t Own;
  uint64_t Base;
  DenseMap<const MDNode *, const Metadata *> FileMemo;
  DenseMap<const MDNode *, MDNode *> Map;
  SmallPtrSet<const MDNode *, 16> InProgress;
  std::vector<MDNode *> Reachable;
  // The nodes that change: those whose lines move and, transitively,
  // every node that refers to one.
  SmallPtrSet<const MDNode *, 32> Changes;
  bool Failed = false;
  // Which nodes move: those that belong to a definition (false), or the
  // file-level ones of the kinds `anchoredKind` names (true).
  bool Anchored = false;
  DenseMap<const MDNode *, bool> LevelMemo;
  // Nodes known to change in no fragment's rebase (see RepoccSharedTypes):
  // mapped to themselves, not walked.
  const DenseSet<const Metadata *> *Clean = nullptr;
  // Per fragment: the subprogram the leader belongs to (its own; null for
  // a variable), and the other definitions of the unit's source whose
  // inlined code the fragment holds, with their index (in the order of
  // their keys): their nodes' lines are relative to their own line
  // (`debug_lines::DEFINITION_LINE_BASE`).
  const DISubprogram *LeaderOwner = nullptr;
  DenseMap<const MDNode *, const DISubprogram *> OwnerMemo;
  DenseMap<const DISubprogram *, unsigned> OwnerIndex;
  uint64_t DefinitionBase = 0, DefinitionSpan = 0;
  unsigned MaxOwners = 0;
  std::vector<std::string> OwnerKeys;

  // Walks up from `N` asking `Step` at each node: an answer (for that node
  // and every one walked through, remembered in `Memo`), or nothing, to go
  // on to its scope; `None` when the chain ends first.
  template <class T, class StepFn>
  static T upScopes(const MDNode *N, DenseMap<const MDNode *, T> &Memo, T None, StepFn &&Step) {
    SmallVector<const MDNode *, 8> Chain;
    T Found = None;
    const MDNode *At = N;
    for (int i = 0; i < 256 && At; i++) {
      auto It = Memo.find(At);
      if (It != Memo.end()) {
        Found = It->second;
        break;
      }
      Chain.push_back(At);
      if (std::optional<T> Answer = Step(At)) {
        Found = *Answer;
        break;
      }
      At = dyn_cast_or_null<MDNode>(fileAndScope(At).second);
    }
    for (const MDNode *M : Chain)
      Memo[M] = Found;
    return Found;
  }

  // Whether `N` belongs to a definition: a subprogram that is a definition,
  // a scope, variable, label or location inside one, a global variable's
  // own node, or anything scoped in one of those
  // (`digest::definition_level` says the same of the text).
  bool definitionLevel(const MDNode *N) {
    return upScopes(N, LevelMemo, false, [](const MDNode *At) -> std::optional<bool> {
      if (isa<DILocation, DILexicalBlockBase, DILocalVariable, DILabel>(At))
        return true;
      if (auto *SP = dyn_cast<DISubprogram>(At))
        return SP->isDefinition();
      // A global variable's own node (its fragment's leader, placed with
      // it), and a string literal's (no name: where the function that holds
      // the literal is).
      if (auto *GV = dyn_cast<DIGlobalVariable>(At))
        return GV->isDefinition();
      return std::nullopt;
    });
  }

  // The subprogram (a definition) `N` is in: the first one up its scope
  // chain, null at a global variable or a declaration
  // (`digest::owner_subprogram` says the same of the text).
  const DISubprogram *ownerOf(const MDNode *N) {
    return upScopes(N, OwnerMemo, static_cast<const DISubprogram *>(nullptr),
                    [](const MDNode *At) -> std::optional<const DISubprogram *> {
                      if (auto *SP = dyn_cast<DISubprogram>(At))
                        return SP->isDefinition() ? SP : nullptr;
                      if (isa<DIGlobalVariable>(At))
                        return static_cast<const DISubprogram *>(nullptr);
                      return std::nullopt;
                    });
  }

  // Whether `SP` is in its compile unit's own source file.
  // (Asked for every line of every node a fragment holds of it: the paths
  // are compared once per subprogram.)
  DenseMap<const DISubprogram *, bool> UnitSourceMemo;
  bool inUnitSource(const DISubprogram *SP) {
    auto [It, New] = UnitSourceMemo.try_emplace(SP, false);
    if (New) {
      auto *F = dyn_cast_or_null<DIFile>(SP->getRawFile());
      auto *CU = SP->getUnit();
      auto *UF = CU ? dyn_cast_or_null<DIFile>(CU->getRawFile()) : nullptr;
      It->second = F && UF && pathOf(F) == pathOf(UF);
    }
    return It->second;
  }

  // Per fragment: the other definition `N` belongs to, when its lines are
  // relative to that definition's (it is in the unit's source, has a line,
  // and `N` is in its file); null otherwise.
  const DISubprogram *otherOwner(const MDNode *N) {
    if (Anchored || !DefinitionBase || !fileOf(N) || !definitionLevel(N))
      return nullptr;
    const DISubprogram *O = ownerOf(N);
    if (!O || O == LeaderOwner || O->getLine() == 0 || !inUnitSource(O))
      return nullptr;
    // Lines of another file inside it (an #include in a function body)
    // stay as they are, as in the function's own digest.
    if (fileOf(N) != fileOf(O))
      return nullptr;
    return O;
  }

  // The key an inlined definition is known by when placed: its linkage
  // name, else its name (`digest::owner_key`).
  static StringRef ownerKey(const DISubprogram *SP) {
    StringRef K = SP->getLinkageName();
    return K.empty() ? SP->getName() : K;
  }

  static bool anchoredKind(const MDNode *N) {
    return isa<DISubprogram, DIGlobalVariable, DIDerivedType, DICompositeType, DIImportedEntity,
               DICommonBlock>(N);
  }

  const Metadata *fileOf(const MDNode *N) {
    return upScopes(N, FileMemo, static_cast<const Metadata *>(nullptr),
                    [](const MDNode *At) -> std::optional<const Metadata *> {
                      if (isa<DIFile>(At))
                        return At;
                      if (Metadata *F = fileAndScope(At).first)
                        return F;
                      return std::nullopt;
                    });
  }

  unsigned moved(const MDNode *N, unsigned Line) {
    if (Line == 0)
      return 0;
    if (const DISubprogram *O = otherOwner(N)) {
      auto It = OwnerIndex.find(O);
      int64_t Offset = int64_t(Line) - int64_t(O->getLine());
      int64_t Half = int64_t(DefinitionSpan / 2);
      if (It == OwnerIndex.end() || It->second >= MaxOwners || Offset <= -Half || Offset >= Half) {
        Failed = true;
        return Line;
      }
      return unsigned(DefinitionBase + uint64_t(It->second) * DefinitionSpan + uint64_t(Half + Offset));
    }
    uint64_t L = Base + Line - Own;
    if (L > UINT32_MAX || Base + Line < Own) {
      Failed = true;
      return Line;
    }
    return unsigned(L);
  }

  bool movesLines(const MDNode *N) {
    auto [L, S] = linesOf(N);
    if (!(L || S))
      return false;
    if (Anchored)
      return anchoredKind(N) && unitFile(fileOf(N)) && !definitionLevel(N);
    return (fileOf(N) == File && definitionLevel(N)) || otherOwner(N);
  }

  // With `Anchored`: the path of the unit's source, and whether a file
  // node names it (clang gives the compile unit a file node of its own
  // when the source is named by an absolute path; `digest::unit_anchor`
  // compares the same paths).
  std::string UnitPath;
  DenseMap<const Metadata *, bool> UnitFileMemo;

  static std::string pathOf(const DIFile *F) {
    StringRef Name = F->getFilename(), Dir = F->getDirectory();
    if (Name.starts_with("/") || Dir.empty())
      return Name.str();
    return (Dir + "/" + Name).str();
  }

  bool unitFile(const Metadata *F) {
    auto *DF = dyn_cast_or_null<DIFile>(F);
    if (!DF)
      return false;
    auto [It, New] = UnitFileMemo.try_emplace(F, false);
    if (New)
      It->second = pathOf(DF) == UnitPath;
    return It->second;
  }

  // `N` with its lines moved (see rebuiltWithLines).
  template <class MapOperand> MDNode *withMovedLines(MDNode *N, MapOperand &&O) {
    return rebuiltWithLines(
        C, N, [&](const MDNode *M, unsigned Line) { return moved(M, Line); }, O);
  }

  void collect(Metadata *Root) {
    SmallVector<MDNode *, 32> Stack;
    if (auto *N = dyn_cast_or_null<MDNode>(Root))
      Stack.push_back(N);
    while (!Stack.empty()) {
      MDNode *N = Stack.pop_back_val();
      if (Clean && Clean->count(N)) {
        Map.try_emplace(N, N);
        continue;
      }
      if (!Map.try_emplace(N, nullptr).second)
        continue;
      Reachable.push_back(N);
      for (const MDOperand &Op : N->operands())
        if (auto *O = dyn_cast_or_null<MDNode>(Op.get()))
          Stack.push_back(O);
    }
  }

  Metadata *mapped(Metadata *MD) {
    auto *N = dyn_cast_or_null<MDNode>(MD);
    if (!N)
      return MD;
    auto It = Map.find(N);
    return It == Map.end() ? MD : It->second;
  }

  // A uniqued node, rebuilt when its lines move or an operand was
  // rebuilt. Every distinct node is already mapped, so the recursion ends
  // at them; a cycle of uniqued nodes alone fails.
  MDNode *mapUniqued(MDNode *N) {
    // Every reachable node has its entry already (no insertion, no
    // rehash while recursing).
    if (MDNode *Done = Map.lookup(N))
      return Done;
    if (!InProgress.insert(N).second) {
      Failed = true;
      return N;
    }
    SmallVector<Metadata *, 8> Ops;
    for (const MDOperand &Op : N->operands()) {
      Metadata *M = Op.get();
      if (auto *ON = dyn_cast_or_null<MDNode>(M))
        M = ON->isDistinct() ? Map.lookup(ON) : mapUniqued(ON);
      Ops.push_back(M);
    }
    InProgress.erase(N);
    bool Moves = movesLines(N);
    MDNode *New = N;
    if (Moves) {
      New = withMovedLines(N, [&](Metadata *Op) { return mapped(Op); });
      if (!New || New->getNumOperands() != N->getNumOperands()) {
        Failed = true;
        return N;
      }
    }
    // What the getter could not be given (and a node whose lines stay):
    // its operands replaced. Uniquing may hand back an equal node that is
    // not what was asked for (LLVM takes a member of a type with an
    // identifier to be any member of that name in that type; a changed
    // member's type is a new node, so this should not happen): then the
    // printed text is the way.
    auto [L, S] = linesOf(N);
    std::pair<unsigned, unsigned> Lines = Moves ? std::make_pair(moved(N, L), moved(N, S))
                                                : std::make_pair(L, S);
    bool Same;
    std::tie(New, Same) = withOperands(New, Ops, Lines);
    if (!Same)
      Failed = true;
    Map[N] = New;
    return New;
  }
};

// Every metadata root of the module (named metadata, then each global
// object's), handed to `visit(Metadata *)`.
template <class Visit> void forEachRoot(Module &M, Visit &&visit) {
  for (NamedMDNode &NMD : M.named_metadata())
    for (unsigned i = 0; i < NMD.getNumOperands(); i++)
      visit(NMD.getOperand(i));
  for (GlobalVariable &G : M.globals())
    forEachObjectRoot(G, visit);
  for (Function &F : M)
    forEachObjectRoot(F, visit);
}

// Moves the lines `R` says move, in every node reachable from `Mod`'s
// roots; 1, or -1 (nothing changed) when a node could not be rebuilt.
int rebaseLines(Module &Mod, LineRebaser &R) {
  Module *M = &Mod;
  // Everything reachable, and whether each node that moves can be rebuilt,
  // before anything changes.
  forEachRoot(*M, [&](Metadata *MD) { R.collect(MD); });
  // The inlined definitions, indexed in the order of their keys (the same
  // whatever order they are reached in); two with one key could not be
  // told apart when placed.
  if (!R.Anchored && R.DefinitionBase) {
    SmallVector<std::pair<StringRef, const DISubprogram *>, 8> Owners;
    SmallPtrSet<const DISubprogram *, 8> Seen;
    for (MDNode *N : R.Reachable) {
      auto [L, S] = linesOf(N);
      if (!(L || S))
        continue;
      if (const DISubprogram *O = R.otherOwner(N); O && Seen.insert(O).second)
        Owners.push_back({LineRebaser::ownerKey(O), O});
    }
    llvm::sort(Owners, [](const auto &A, const auto &B) { return A.first < B.first; });
    for (unsigned i = 0; i < Owners.size(); i++) {
      if (i > 0 && Owners[i].first == Owners[i - 1].first)
        return -1;
      R.OwnerIndex[Owners[i].second] = i;
      R.OwnerKeys.push_back(Owners[i].first.str());
    }
  }
  for (MDNode *N : R.Reachable)
    if (R.movesLines(N) && !isa<DILocation, DISubprogram, DILexicalBlock, DILocalVariable,
                               DIGlobalVariable, DILabel, DIDerivedType, DICompositeType,
                               DIImportedEntity, DICommonBlock>(N))
      return -1;
  // What changes: the movers, then their users, theirs, and so on.
  DenseMap<const MDNode *, SmallVector<MDNode *, 2>> Users;
  SmallVector<MDNode *, 64> Work;
  for (MDNode *N : R.Reachable) {
    for (const MDOperand &Op : N->operands())
      if (auto *O = dyn_cast_or_null<MDNode>(Op.get()))
        Users[O].push_back(N);
    if (R.movesLines(N) && R.Changes.insert(N).second)
      Work.push_back(N);
  }
  while (!Work.empty()) {
    MDNode *N = Work.pop_back_val();
    auto It = Users.find(N);
    if (It != Users.end())
      for (MDNode *U : It->second)
        if (R.Changes.insert(U).second)
          Work.push_back(U);
  }
  // Nothing existing is changed (its other users, in this module's
  // context, keep it as it is): a distinct node that changes gets a new
  // copy, with its lines moved if they move (operands set below).
  for (MDNode *N : R.Reachable) {
    if (!R.Changes.count(N)) {
      R.Map[N] = N;
      continue;
    }
    if (!N->isDistinct())
      continue;
    MDNode *New = R.movesLines(N) ? R.withMovedLines(N, [](Metadata *Op) { return Op; })
                                  : MDNode::replaceWithDistinct(N->clone());
    if (!New || New->getNumOperands() != N->getNumOperands())
      return -1;
    R.Map[N] = New;
  }
  for (MDNode *N : R.Reachable)
    if (!N->isDistinct())
      R.mapUniqued(N);
  if (R.Failed)
    return -1;
  // The new distinct nodes' operands, then the module's references.
  for (MDNode *N : R.Reachable) {
    if (!N->isDistinct() || !R.Changes.count(N))
      continue;
    MDNode *New = R.Map[N];
    for (unsigned i = 0; i < N->getNumOperands(); i++) {
      Metadata *Mp = R.mapped(N->getOperand(i));
      if (Mp != New->getOperand(i))
        New->replaceOperandWith(i, Mp);
    }
  }
  auto node = [&](MDNode *N) { return cast_or_null<MDNode>(R.mapped(N)); };
  for (NamedMDNode &NMD : M->named_metadata())
    for (unsigned i = 0; i < NMD.getNumOperands(); i++)
      if (MDNode *New = node(NMD.getOperand(i)); New != NMD.getOperand(i))
        NMD.setOperand(i, New);
  SmallVector<std::pair<unsigned, MDNode *>, 4> MDs;
  auto objectMetadata = [&](GlobalObject &GO) {
    MDs.clear();
    GO.getAllMetadata(MDs);
    bool Changed = false;
    for (auto &KM : MDs)
      Changed |= node(KM.second) != KM.second;
    if (!Changed)
      return;
    GO.clearMetadata();
    for (auto &KM : MDs)
      GO.addMetadata(KM.first, *node(KM.second));
  };
  for (GlobalVariable &G : M->globals())
    objectMetadata(G);
  for (Function &F : *M) {
    objectMetadata(F);
    for (BasicBlock &BB : F)
      for (Instruction &I : BB) {
        MDs.clear();
        I.getAllMetadata(MDs);
        for (auto &KM : MDs)
          if (MDNode *New = node(KM.second); New != KM.second)
            I.setMetadata(KM.first, New);
        for (unsigned i = 0; i < I.getNumOperands(); i++)
          if (auto *MAV = dyn_cast<MetadataAsValue>(I.getOperand(i)))
            if (Metadata *New = R.mapped(MAV->getMetadata()); New != MAV->getMetadata())
              I.setOperand(i, MetadataAsValue::get(M->getContext(), New));
        for (DbgRecord &DR : I.getDbgRecordRange()) {
          if (MDNode *Loc = DR.getDebugLoc().getAsMDNode())
            if (MDNode *New = node(Loc); New != Loc)
              DR.setDebugLoc(DebugLoc(New));
          if (auto *DVR = dyn_cast<DbgVariableRecord>(&DR)) {
            if (MDNode *V = DVR->getRawVariable(); node(V) != V)
              DVR->setVariable(cast<DILocalVariable>(node(V)));
            if (MDNode *E = DVR->getRawExpression(); node(E) != E)
              DVR->setExpression(cast<DIExpression>(node(E)));
            if (DVR->isDbgAssign())
              if (MDNode *E = DVR->getRawAddressExpression(); node(E) != E)
                DVR->setAddressExpression(cast<DIExpression>(node(E)));
          } else if (auto *DLR = dyn_cast<DbgLabelRecord>(&DR)) {
            if (MDNode *L = DLR->getRawLabel(); node(L) != L)
              DLR->setLabel(cast<DILabel>(node(L)));
          }
        }
      }
  }
  return 1;
}


// ---------------------------------------------------------------------------
// The debug metadata of stored bodies (see src/pipeline/bodies.rs). A body
// an earlier compile kept names that compile's metadata, read back as new
// nodes: its own compile unit, subprograms, lexical blocks and C's struct,
// union and enum types (distinct nodes), and the lines the source had then.
// The digests hold lines relative (what belongs to a definition, in its
// file, to the definition's own line; the unit's file-level nodes to its
// anchor) and leave out file checksums, so equal final digests say the
// body is the unit's once each node is the unit's node with its lines
// moved by what its owner moved. `StoredDebugInfo` finds that node for
// every node a stored body reaches, or says it cannot (the caller leaves
// the body's group alone):
// - the compile unit: the unit's one;
// - a file: the unit's of the same name, directory and source;
// - a subprogram that is a definition: the unit's of the same key (linkage
//   name, else name) and file; the two lines give its owner's shift;
// - a lexical block: the unit's with the mapped scope and file, the moved
//   line and the same column (a block file: scope, file, discriminator);
// - another distinct type (C's structs, unions and enums): the unit's of
//   the same tag, name, identifier, file, scope, size, alignment, flags and
//   number of elements, whatever its line (fragments hold those types as
//   stubs, whose lines the digests leave out);
// - a uniqued node: rebuilt with mapped operands and moved lines; one a
//   debugger sees (any DINode) must be one the unit already has;
// - what passes make for one function (assignment IDs, loop and alias
//   scope nodes): left to the cloning, which makes new ones, as a cold
//   compile's passes do; the inliner's distinct call-site locations: new
//   ones, with the mapped scope and the moved line.
struct StoredDebugInfo {
  LLVMContext &C;
  // The unit's side, indexed once.
  DICompileUnit *UnitCU = nullptr;
  bool UnitIndexed = false;
  DenseSet<const Metadata *> UnitNodes;
  std::map<std::tuple<std::string, std::string, std::string>, MDNode *> Files;
  std::map<std::pair<std::string, const Metadata *>, MDNode *> Subprograms;
  std::map<std::tuple<const Metadata *, const Metadata *, unsigned, unsigned>, MDNode *> Blocks;
  using TypeKey = std::tuple<unsigned, const Metadata *, const Metadata *, const Metadata *,
                             const Metadata *, uint64_t, uint32_t, unsigned, unsigned>;
  std::map<TypeKey, MDNode *> Types;
  bool HasUnitAnchor = false;
  uint64_t UnitAnchor = 0;

  // One stored module's mapping.
  struct Stored {
    int64_t AnchorShift = 0;
    LineRebaser R;
    DenseMap<const MDNode *, MDNode *> Map;
    // Nodes left to the cloning (mapped to themselves in `Map`).
    DenseSet<const MDNode *> Left;
    DenseMap<const DISubprogram *, int64_t> Shift;
    SmallPtrSet<const MDNode *, 16> InProgress;
    // The blob cannot be mapped at all.
    bool Failed = false;
    explicit Stored(LLVMContext &C) : R{C, nullptr, 0, 0, {}, {}, {}, {}, {}, false} {}
  };
  std::vector<std::unique_ptr<Stored>> Blobs;

  StoredDebugInfo(LLVMContext &Ctx, bool HasAnchor, uint64_t Anchor)
      : C(Ctx), HasUnitAnchor(HasAnchor), UnitAnchor(Anchor) {}

  static std::tuple<std::string, std::string, std::string> fileKey(const DIFile *F) {
    std::string Source;
    if (auto S = F->getSource())
      Source = S->str();
    return {F->getFilename().str(), F->getDirectory().str(), Source};
  }

  static std::string ownerKey(const DISubprogram *SP) { return LineRebaser::ownerKey(SP).str(); }

  static TypeKey typeKey(const DIType *T, const Metadata *File, const Metadata *Scope) {
    unsigned Elements = 0;
    if (auto *CT = dyn_cast<DICompositeType>(T))
      if (auto *E = CT->getRawElements())
        Elements = cast<MDNode>(E)->getNumOperands();
    return {T->getTag(),        T->getRawName(),    isa<DICompositeType>(T)
                                                        ? cast<DICompositeType>(T)->getRawIdentifier()
                                                        : nullptr,
            File,               Scope,              T->getSizeInBits(),
            T->getAlignInBits(), unsigned(T->getFlags()), Elements};
  }

  // Every node the unit's module reaches, and its distinct ones by key.
  // False when the unit does not have exactly one compile unit.
  bool indexUnit(Module &Unit) {
    if (UnitIndexed)
      return UnitCU != nullptr;
    UnitIndexed = true;
    auto CUs = Unit.debug_compile_units();
    if (CUs.empty() || std::next(CUs.begin()) != CUs.end())
      return false;
    UnitCU = *CUs.begin();
    SmallVector<const MDNode *, 64> Stack;
    auto visit = [&](Metadata *MD) {
      if (auto *N = dyn_cast_or_null<MDNode>(MD))
        if (UnitNodes.insert(N).second)
          Stack.push_back(N);
    };
    forEachRoot(Unit, visit);
    while (!Stack.empty()) {
      const MDNode *N = Stack.pop_back_val();
      for (const MDOperand &Op : N->operands())
        visit(Op.get());
    }
    // A key two nodes share finds neither (null).
    auto add = [](auto &Index, auto Key, MDNode *N) {
      auto [It, New] = Index.try_emplace(Key, N);
      if (!New && It->second != N)
        It->second = nullptr;
    };
    for (const Metadata *MD : UnitNodes) {
      auto *N = const_cast<MDNode *>(cast<MDNode>(MD));
      if (auto *F = dyn_cast<DIFile>(N))
        add(Files, fileKey(F), F);
      if (!N->isDistinct())
        continue;
      if (auto *SP = dyn_cast<DISubprogram>(N)) {
        if (SP->isDefinition())
          add(Subprograms, std::make_pair(ownerKey(SP), SP->getRawFile()), SP);
      } else if (auto *B = dyn_cast<DILexicalBlock>(N)) {
        add(Blocks, std::make_tuple(B->getRawScope(), B->getRawFile(), B->getLine(), B->getColumn()),
            B);
      } else if (auto *B = dyn_cast<DILexicalBlockFile>(N)) {
        // Discriminators as columns, line 0: no block has both.
        add(Blocks, std::make_tuple(B->getRawScope(), B->getRawFile(), 0u, B->getDiscriminator()),
            B);
      } else if (auto *T = dyn_cast<DIType>(N)) {
        add(Types, typeKey(T, T->getRawFile(), T->getRawScope()), T);
      }
    }
    return true;
  }

  // Starts the mapping of blob `Index`'s module, whose anchor (when it has
  // one) is in its `repocc.anchor` metadata.
  void addBlob(size_t Index, Module &M) {
    if (Blobs.size() <= Index)
      Blobs.resize(Index + 1);
    auto S = std::make_unique<Stored>(C);
    auto CUs = M.debug_compile_units();
    if (CUs.empty() || std::next(CUs.begin()) != CUs.end() || !(*CUs.begin())->getFile())
      S->Failed = true;
    else {
      S->R.UnitPath = LineRebaser::pathOf((*CUs.begin())->getFile());
      // Also what the cloning asks of each body's subprogram, which this
      // maps whole.
      S->Map[*CUs.begin()] = UnitCU;
    }
    std::optional<uint64_t> Anchor;
    if (NamedMDNode *A = M.getNamedMetadata("repocc.anchor"))
      if (A->getNumOperands() == 1 && A->getOperand(0)->getNumOperands() == 1)
        if (auto *V = mdconst::dyn_extract<ConstantInt>(A->getOperand(0)->getOperand(0)))
          Anchor = V->getZExtValue();
    if (Anchor.has_value() != HasUnitAnchor)
      S->Failed = true;
    else if (Anchor)
      S->AnchorShift = int64_t(UnitAnchor) - int64_t(*Anchor);
    Blobs[Index] = std::move(S);
  }

  // The line `Line` of the stored node `N` has in the unit; `Ok` false
  // when there is none.
  unsigned moved(Stored &S, const MDNode *N, unsigned Line, bool &Ok) {
    if (Line == 0)
      return 0;
    int64_t Shift = 0;
    if (S.R.definitionLevel(N)) {
      const DISubprogram *O = S.R.ownerOf(N);
      // Lines of another file inside a function (an #include in its body)
      // are as they are, as in its digest.
      if (O && S.R.fileOf(N) == S.R.fileOf(O)) {
        map(S, const_cast<DISubprogram *>(O));
        auto It = S.Shift.find(O);
        if (It == S.Shift.end()) {
          Ok = false;
          return Line;
        }
        Shift = It->second;
      }
    } else if (LineRebaser::anchoredKind(N) && S.R.unitFile(S.R.fileOf(N))) {
      Shift = S.AnchorShift;
    }
    int64_t L = int64_t(Line) + Shift;
    if (L <= 0 || L > int64_t(UINT32_MAX)) {
      Ok = false;
      return Line;
    }
    return unsigned(L);
  }

  // An operand's node in the unit; `Ok` false when it has none.
  Metadata *mapOperand(Stored &S, Metadata *MD, bool &Ok) {
    auto *N = dyn_cast_or_null<MDNode>(MD);
    if (!N)
      return MD;
    MDNode *M = map(S, N);
    Ok = Ok && M;
    return M;
  }

  MDNode *fail(Stored &S, MDNode *N) {
    S.Map[N] = nullptr;
    return nullptr;
  }

  MDNode *found(Stored &S, MDNode *N, MDNode *U, bool Ok) {
    return Ok && U ? (S.Map[N] = U) : fail(S, N);
  }

  // The unit's node for the stored node `N` (itself when left to the
  // cloning), or null when the unit has none.
  MDNode *map(Stored &S, MDNode *N) {
    if (auto It = S.Map.find(N); It != S.Map.end())
      return It->second;
    if (isa<DICompileUnit>(N))
      return S.Map[N] = UnitCU;
    if (auto *F = dyn_cast<DIFile>(N)) {
      auto It = Files.find(fileKey(F));
      return found(S, N, It == Files.end() ? nullptr : It->second, true);
    }
    if (N->isDistinct())
      return mapDistinct(S, N);
    return mapUniqued(S, N);
  }

  template <class Index, class Key> static MDNode *lookup(const Index &I, const Key &K) {
    auto It = I.find(K);
    return It == I.end() ? nullptr : It->second;
  }

  MDNode *mapDistinct(Stored &S, MDNode *N) {
    bool Ok = true;
    if (auto *SP = dyn_cast<DISubprogram>(N)) {
      if (!SP->isDefinition())
        return fail(S, N);
      Metadata *File = mapOperand(S, SP->getRawFile(), Ok);
      auto *U = cast_or_null<DISubprogram>(
          lookup(Subprograms, std::make_pair(ownerKey(SP), (const Metadata *)File)));
      if (!Ok || !U)
        return fail(S, N);
      int64_t Shift = int64_t(U->getLine()) - int64_t(SP->getLine());
      bool ScopeLineMoves = SP->getScopeLine() == 0
                                ? U->getScopeLine() == 0
                                : int64_t(U->getScopeLine()) - int64_t(SP->getScopeLine()) == Shift;
      if (!ScopeLineMoves || U->getRawName() != SP->getRawName() ||
          U->getRawLinkageName() != SP->getRawLinkageName())
        return fail(S, N);
      S.Shift[SP] = Shift;
      return S.Map[N] = U;
    }
    if (auto *B = dyn_cast<DILexicalBlock>(N)) {
      Metadata *Scope = mapOperand(S, B->getRawScope(), Ok);
      Metadata *File = mapOperand(S, B->getRawFile(), Ok);
      unsigned Line = moved(S, B, B->getLine(), Ok);
      return found(S, N, lookup(Blocks, std::make_tuple(Scope, File, Line, B->getColumn())), Ok);
    }
    if (auto *B = dyn_cast<DILexicalBlockFile>(N)) {
      Metadata *Scope = mapOperand(S, B->getRawScope(), Ok);
      Metadata *File = mapOperand(S, B->getRawFile(), Ok);
      return found(S, N, lookup(Blocks, std::make_tuple(Scope, File, 0u, B->getDiscriminator())),
                   Ok);
    }
    if (auto *T = dyn_cast<DIType>(N)) {
      Metadata *File = mapOperand(S, T->getRawFile(), Ok);
      Metadata *Scope = mapOperand(S, T->getRawScope(), Ok);
      return found(S, N, lookup(Types, typeKey(T, File, Scope)), Ok);
    }
    if (auto *L = dyn_cast<DILocation>(N)) {
      // The inliner's distinct call site of one inlined copy: a new one,
      // at the moved line.
      unsigned Line = moved(S, L, L->getLine(), Ok);
      Metadata *Scope = mapOperand(S, L->getRawScope(), Ok);
      Metadata *InlinedAt = mapOperand(S, L->getRawInlinedAt(), Ok);
      if (!Ok)
        return fail(S, N);
      return S.Map[N] = DILocation::getDistinct(C, Line, L->getColumn(), Scope, InlinedAt,
                                                L->isImplicitCode());
    }
    if (isa<DIAssignID>(N) || isa<MDTuple>(N)) {
      // Made for one function: a new one, from the cloning. Its operands
      // (a loop's locations) must map.
      S.Map[N] = N;
      S.Left.insert(N);
      for (const MDOperand &Op : N->operands())
        mapOperand(S, Op.get(), Ok);
      return Ok ? N : fail(S, N);
    }
    return fail(S, N);
  }

  MDNode *mapUniqued(Stored &S, MDNode *N) {
    if (!S.InProgress.insert(N).second)
      return fail(S, N);
    bool Ok = true;
    SmallVector<Metadata *, 8> Ops;
    bool LeftOperand = false;
    for (const MDOperand &Op : N->operands()) {
      Metadata *M = Op.get();
      if (auto *ON = dyn_cast_or_null<MDNode>(M)) {
        M = mapOperand(S, ON, Ok);
        LeftOperand |= S.Left.count(ON) > 0;
      } else if (auto *V = dyn_cast_or_null<ValueAsMetadata>(M)) {
        // A global or a local value: the cloning maps it.
        LeftOperand |= !isa<ConstantInt, ConstantFP>(V->getValue());
      }
      Ops.push_back(M);
    }
    S.InProgress.erase(N);
    auto [L, SL] = linesOf(N);
    std::pair<unsigned, unsigned> Lines{moved(S, N, L, Ok), moved(S, N, SL, Ok)};
    if (!Ok)
      return fail(S, N);
    bool Moves = Lines != std::make_pair(L, SL);
    if (LeftOperand) {
      // Left to the cloning as well, which cannot move lines.
      if (Moves)
        return fail(S, N);
      S.Left.insert(N);
      return S.Map[N] = N;
    }
    MDNode *New = N;
    if (Moves) {
      New = rebuiltWithLines(
          C, N, [&](const MDNode *M, unsigned Line) { return moved(S, M, Line, Ok); },
          [&](Metadata *Op) { return mapOperand(S, Op, Ok); });
      if (!Ok || !New || New->getNumOperands() != N->getNumOperands())
        return fail(S, N);
    }
    bool Same;
    std::tie(New, Same) = withOperands(New, Ops, Lines);
    // What a debugger sees of the unit is the unit's: a variable, type or
    // scope the unit does not have means the stored body is not its.
    if (!Same || (isa<DINode>(New) && !UnitNodes.count(New)))
      return fail(S, N);
    return S.Map[N] = New;
  }

  // Maps every node the stored function `F` (of blob `Blob`) reaches;
  // false when one has no node in the unit, or its subprogram would not
  // be `Expected` (the unit's function's).
  bool mapBody(size_t Blob, Function &F, const DISubprogram *Expected) {
    if (Blob >= Blobs.size() || !Blobs[Blob] || Blobs[Blob]->Failed)
      return false;
    Stored &S = *Blobs[Blob];
    bool Ok = true;
    forEachObjectRoot(F, [&](Metadata *MD) { mapOperand(S, MD, Ok); });
    DISubprogram *Own = F.getSubprogram();
    return Ok && Own && Expected && map(S, Own) == Expected;
  }

  // The mapping of blob `Blob`, for the cloning of its bodies.
  void seed(size_t Blob, ValueToValueMapTy &VMap) {
    if (Blob >= Blobs.size() || !Blobs[Blob])
      return;
    for (auto [From, To] : Blobs[Blob]->Map)
      if (To && !Blobs[Blob]->Left.count(From))
        VMap.MD()[From].reset(To);
  }
};

} // namespace

// Replaces the bodies of the named functions of `unit_ref` with those of
// the same names in the modules of `blobs` (bitcode of modules made by
// repocc_extract_definitions in earlier compiles; names[i] is taken from
// blobs[sources[i]]), and marks them (see kSubstitutedAttr). `done[i]` says
// whether names[i] was replaced; a function stays as it is when its blob
// lacks it, its type differs, or its body names something the unit does
// not have, and then so does every other name of the same `groups[i]`.
// A group is a set of functions that reach one another (a call-graph
// cycle, directly or through globals): the optimizer simplifies them
// together, each seeing the others half-done, so a stored body is the
// cold compile's only next to the others' stored bodies. Returns how many
// were replaced. With debug info, each body's metadata becomes the unit's
// (see StoredDebugInfo; `has_anchor` and `anchor`: the unit's anchor, as
// its digests hold lines), or the body's group stays as it is.
extern "C" size_t repocc_substitute_bodies(LLVMModuleRef unit_ref, const char *const *blobs,
                                           const size_t *blob_lens, size_t blob_count,
                                           const char *const *names, const size_t *sources,
                                           const size_t *groups, size_t count,
                                           int has_anchor, uint64_t anchor,
                                           unsigned char *done) {
  using namespace llvm;
  Module &Unit = *unwrap(unit_ref);
  for (size_t i = 0; i < count; i++)
    done[i] = 0;
  if (count == 0)
    return 0;
  bool Debug = !Unit.debug_compile_units().empty();
  std::optional<StoredDebugInfo> DebugInfo;
  if (Debug)
    DebugInfo.emplace(Unit.getContext(), has_anchor != 0, anchor);
  if (Debug && !DebugInfo->indexUnit(Unit))
    return 0;

  // Each blob's module, or null when it cannot be read or is not for this
  // target.
  std::vector<std::unique_ptr<Module>> Sources(blob_count);
  for (size_t b = 0; b < blob_count; b++) {
    MemoryBufferRef Buffer(StringRef(blobs[b], blob_lens[b]), "repocc-bodies");
    Expected<std::unique_ptr<Module>> Read = getLazyBitcodeModule(Buffer, Unit.getContext());
    if (!Read) {
      consumeError(Read.takeError());
      continue;
    }
    if ((*Read)->getDataLayout() != Unit.getDataLayout() ||
        (*Read)->getTargetTriple() != Unit.getTargetTriple())
      continue;
    // Debug info on one side only: not a body of this unit's kind.
    if ((*Read)->debug_compile_units().empty() == Debug)
      continue;
    Sources[b] = std::move(*Read);
    if (Debug)
      DebugInfo->addBlob(b, *Sources[b]);
  }
  UnitTypeMapper Types(Unit);
  // First every check, then the group veto, then the cloning: a group is
  // replaced whole or not at all.
  std::vector<std::pair<Function *, Function *>> Pairs(count, {nullptr, nullptr});
  std::set<size_t> FailedGroups;
  for (size_t i = 0; i < count; i++) {
    Module *Src = sources[i] < blob_count ? Sources[sources[i]].get() : nullptr;
    Function *S = Src ? Src->getFunction(names[i]) : nullptr;
    Function *D = Unit.getFunction(names[i]);
    // Which functions' bodies are their own (a local function's may have
    // been rewritten from its caller) is the caller's to say (bodies.rs).
    bool Ok = S && D && !D->isDeclaration() && !S->isDeclaration() && !isSubstituted(D) &&
              D->hasLocalLinkage() == S->hasLocalLinkage();
    if (Ok) {
      if (Error E = S->materialize()) {
        consumeError(std::move(E));
        Ok = false;
      } else if (S->IsNewDbgInfoFormat != D->IsNewDbgInfoFormat) {
        if (D->IsNewDbgInfoFormat)
          S->convertToNewDbgValues();
        else
          S->convertFromNewDbgValues();
      }
    }
    // A block whose address is taken (computed goto) is named by constants
    // outside the body, which would still name the old blocks; a type the
    // unit lacks means the body is not the unit's kind of code.
    Ok = Ok && !hasAddressTakenBlock(*S) && !hasAddressTakenBlock(*D) && Types.mapsBody(*S) &&
         Types.map(S->getFunctionType()) == D->getFunctionType() &&
         resolvesInUnit(*S, Unit, Types);
    Ok = Ok && (!Debug || DebugInfo->mapBody(sources[i], *S, D->getSubprogram()));
    if (Ok)
      Pairs[i] = {S, D};
    else
      FailedGroups.insert(groups[i]);
  }
  UnitGlobalMaterializer Mat(Unit, Types);
  // The local functions something calls or names now: a stored body
  // comes with its callees already inlined (it is what a cold compile's
  // inliner left), so those of them that only the old body called are
  // dead once it is replaced (see the end).
  std::vector<Function *> UsedLocals;
  for (Function &F : Unit)
    if (F.hasLocalLinkage() && !F.isDeclaration() && !F.use_empty())
      UsedLocals.push_back(&F);
  // One map per blob: its debug metadata's mapping is seeded once, and
  // what the cloning makes of a node is shared as in the blob.
  std::vector<std::unique_ptr<ValueToValueMapTy>> Maps(blob_count);
  size_t replaced = 0;
  for (size_t i = 0; i < count; i++) {
    auto [S, D] = Pairs[i];
    if (!S || FailedGroups.count(groups[i]))
      continue;
    auto &Map = Maps[sources[i]];
    if (!Map) {
      Map = std::make_unique<ValueToValueMapTy>();
      if (Debug)
        DebugInfo->seed(sources[i], *Map);
    }
    ValueToValueMapTy &VMap = *Map;
    GlobalValue::LinkageTypes Linkage = D->getLinkage();
    GlobalValue::VisibilityTypes Visibility = D->getVisibility();
    GlobalValue::DLLStorageClassTypes Dll = D->getDLLStorageClass();
    GlobalValue::UnnamedAddr Unnamed = D->getUnnamedAddr();
    bool DsoLocal = D->isDSOLocal();
    Comdat *C = D->getComdat();
    MaybeAlign Align = D->getAlign();
    std::string Section = D->getSection().str();
    D->deleteBody();
    // Its attachments (its subprogram) come with the stored body.
    D->clearMetadata();
    auto NewArg = D->arg_begin();
    for (const Argument &A : S->args())
      VMap[&A] = &*NewArg++;
    SmallVector<ReturnInst *, 8> Returns;
    CloneFunctionInto(D, S, VMap, CloneFunctionChangeType::DifferentModule, Returns, "", nullptr,
                      &Types, &Mat);
    D->setLinkage(Linkage);
    D->setVisibility(Visibility);
    D->setDLLStorageClass(Dll);
    D->setUnnamedAddr(Unnamed);
    D->setDSOLocal(DsoLocal);
    D->setComdat(C);
    D->setAlignment(Align);
    D->setSection(Section);
    D->addFnAttr(kSubstitutedAttr);
    done[i] = 1;
    replaced++;
  }
  // The local functions the replaced bodies alone used are deleted, as a
  // cold compile's inliner deletes them once it has inlined their last
  // call (no pass before the inliner leaves a local function without
  // uses). Left in place, they would reach the passes after the inliner
  // with no caller, and dead-argument elimination would rewrite them:
  // it marks the subprogram of a function whose signature it changes
  // `DW_CC_nocall`, a node the replaced bodies' inlined code shares, so
  // the object's debug info would differ from a cold compile's.
  if (replaced > 0) {
    bool Erased = true;
    while (Erased) {
      Erased = false;
      for (Function *&F : UsedLocals) {
        if (F && F->use_empty()) {
          F->eraseFromParent();
          F = nullptr;
          Erased = true;
        }
      }
    }
  }
  // Cloning into another module lists compile units even when there are
  // none (see repocc_extract_definitions).
  if (NamedMDNode *CUs = Unit.getNamedMetadata("llvm.dbg.cu"))
    if (CUs->getNumOperands() == 0)
      Unit.eraseNamedMetadata(CUs);
  return replaced;
}

extern "C" {

// 1: rebased; 0: the leader has no position (nothing to do); -1: a node
// could not be rebuilt (the module is unchanged; the caller goes through
// the printed text instead).
// With `definitions` (base, span and how many): the lines of other
// definitions' inlined code relative to theirs (see LineRebaser); their
// keys, one per line in index order, are put in `*inlined` (a message the
// caller disposes of) when rebased.
int repocc_rebase_relative_lines(LLVMModuleRef module, const char *leader, uint64_t base,
                                 const RepoccSharedTypes *shared, uint64_t definition_base,
                                 uint64_t definition_span, unsigned max_definitions,
                                 char **inlined) {
  *inlined = nullptr;
  Module *M = unwrap(module);
  MDNode *OwnNode = nullptr;
  if (Function *F = M->getFunction(leader)) {
    OwnNode = F->getMetadata(LLVMContext::MD_dbg);
  } else if (GlobalVariable *G = M->getGlobalVariable(leader, /*AllowInternal=*/true)) {
    OwnNode = G->getMetadata(LLVMContext::MD_dbg);
    if (auto *GVE = dyn_cast_or_null<DIGlobalVariableExpression>(OwnNode))
      OwnNode = dyn_cast_or_null<MDNode>(GVE->getRawVariable());
  }
  if (!OwnNode)
    return 0;
  LineRebaser R{M->getContext(), nullptr, 0, base, {}, {}, {}, {}, {}, false};
  unsigned OwnLine = linesOf(OwnNode).first;
  const Metadata *File = R.fileOf(OwnNode);
  if (OwnLine == 0 || !File)
    return 0;
  R.File = File;
  R.Own = OwnLine;
  if (shared)
    R.Clean = &shared->Clean;
  R.LeaderOwner = R.ownerOf(OwnNode);
  R.DefinitionBase = definition_base;
  R.DefinitionSpan = definition_span;
  R.MaxOwners = max_definitions;
  int Result = rebaseLines(*M, R);
  if (Result == 1) {
    std::string Keys;
    for (const std::string &K : R.OwnerKeys)
      Keys += K + "\n";
    *inlined = LLVMCreateMessage(Keys.c_str());
  }
  return Result;
}

// 1: rebased; 0: not one compile unit (nothing to do); -1: a node could
// not be rebuilt (the module is unchanged).
int repocc_rebase_anchor_lines(LLVMModuleRef module, uint64_t anchor, uint64_t base) {
  Module *M = unwrap(module);
  auto CUs = M->debug_compile_units();
  if (CUs.empty() || std::next(CUs.begin()) != CUs.end())
    return 0;
  DICompileUnit *CU = *CUs.begin();
  if (!CU->getFile())
    return 0;
  LineRebaser R{M->getContext(), nullptr, anchor, base, {}, {}, {}, {}, {}, false};
  R.Anchored = true;
  R.UnitPath = LineRebaser::pathOf(CU->getFile());
  return rebaseLines(*M, R);
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
  E->PM.run(*M);
  *len = E->Buffer.size();
  return E->Buffer.data();
}

extern "C" void repocc_object_emitter_free(RepoccObjectEmitter *E) { delete E; }
