// What the shim's files share, in C++ (the C interface is repocc_shim.h):
// the unit's shared debug types, the walks over a module's metadata, the
// mark on substituted bodies. One job per file: target.cpp (target options,
// the object emitter), extract.cpp (fragment extraction), queries.cpp (IR
// queries and small edits), debug_types.cpp (debug type identity),
// passes.cpp (the pass pipeline and its hooks), bodies.cpp (stored bodies),
// line_rebase.cpp (relative lines, with line_rebaser.h), batch.cpp (debug
// fragments linked into one module), interrupts.cpp
// (signals), frontend.cpp (clang in process), startup.cpp (what the link
// holds, and LLVM's static initializers run when first needed).
#pragma once

#include "repocc_shim.h"

#include <llvm-c/Core.h>
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/DebugProgramInstruction.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/BinaryFormat/Dwarf.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

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
  llvm::DenseSet<const llvm::Metadata *> Clean;
  StubKind Stub = StubNone;
  llvm::DenseMap<const llvm::DICompositeType *, llvm::DICompositeType *> Stubs;
};

namespace repocc_shim {

using namespace llvm;

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


// The compile unit a debug scope belongs to (its subprogram's), or null
// (a C++ namespace at the top has none).
inline const DICompileUnit *unitOfScope(const DIScope *S) {
  for (int i = 0; i < 256 && S; i++) {
    if (auto *SP = dyn_cast<DISubprogram>(S))
      return SP->getUnit();
    if (auto *CU = dyn_cast<DICompileUnit>(S))
      return CU;
    S = S->getScope();
  }
  return nullptr;
}

// The compile unit whose list holds the record `E`: its scope's, else the
// module's only one.
inline const DICompileUnit *unitOfRecord(const Module &M, const DIGlobalVariableExpression *E) {
  if (const DICompileUnit *CU = unitOfScope(E->getVariable()->getScope()))
    return CU;
  auto Units = M.debug_compile_units();
  return !Units.empty() && std::next(Units.begin()) == Units.end() ? *Units.begin() : nullptr;
}

// Named metadata of the unit's module, between the optimizer and
// extraction (never in a fragment's module): tuples of a variable's debug
// record and the name of the definition that carries the variable (a
// static only it uses, see canonical.rs's attached locals). Before the
// optimizer, `kCarriedRecords` lists every such variable
// (`!{DIGlobalVariable, !"carrier"}`); after it, `kRemovedRecords` lists
// the compile unit's records of those the optimizer took out of the unit
// (`!{DIGlobalVariableExpression, !"carrier"}`), which the carrier's
// fragment then lists (see repocc_keep_removed_records).
inline constexpr const char *kCarriedRecords = "repocc.carried_records";
inline constexpr const char *kRemovedRecords = "repocc.removed_records";

// The string attribute that marks a function whose body was put in place
// as the inliner and function simplification left it in an earlier
// compile (see repocc_substitute_bodies): no optional pass runs on it
// until the inliner is done, when the mark goes.
inline constexpr const char *kSubstitutedAttr = "repocc-substituted";

inline bool isSubstituted(const llvm::Function *F) {
  return F && F->hasFnAttribute(kSubstitutedAttr);
}


// A complete struct, union or enum declared at file scope: what
// `repocc_identify_debug_types` gives an identifier in C, and so a type
// unit of its own.
inline bool fileScopeRecord(const DICompositeType *T) {
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

// Address significance (.llvm_addrsig, what a linker's safe identical
// code folding goes by) as a fragment's own code decides it. LLVM marks a
// global with a use and no `unnamed_addr`; the optimizer infers
// `local_unnamed_addr` from every use in the unit, so a fragment taken
// from the unit would mark what it only calls when another definition of
// that unit takes the address (glog's `vlog_is_on.cc` marked `abort` when
// built after a unit passing `&abort`), and its object would depend on
// what it was compiled with. A fragment therefore marks a global whose
// address one of its own uses lets escape: anything but a direct call's
// callee or a load's or store's address, through constant GEPs and casts.
// The frontend's `unnamed_addr` (no address anywhere) still holds.

// A use by an instruction that reads or writes through the address or
// calls it, and nothing else.
inline bool addressOnlyAccessed(const Use &U) {
  const User *I = U.getUser();
  if (auto *CB = dyn_cast<CallBase>(I))
    return CB->isCallee(&U);
  if (isa<LoadInst>(I))
    return true;
  if (isa<StoreInst>(I))
    return U.getOperandNo() == StoreInst::getPointerOperandIndex();
  return false;
}

// A constant GEP or pointer cast: what an access through it leaves as
// insignificant as an access to its base.
inline bool addressArithmetic(const Value *V) {
  auto *CE = dyn_cast<ConstantExpr>(V);
  return CE && (CE->getOpcode() == Instruction::GetElementPtr ||
                CE->getOpcode() == Instruction::BitCast ||
                CE->getOpcode() == Instruction::AddrSpaceCast);
}

// Whether a user of a global's address (a constant holding it, or a
// global whose initializer, aliasee or personality it is) lets it escape:
// a constant does where code or a variable's data holds it. What only the
// initializers of `llvm.` variables hold (`llvm.used`, the structor
// lists) does not escape: those lists say what to keep and run, not where
// the address goes.
inline bool constantUserEscapes(const User *Us) {
  if (auto *G = dyn_cast<GlobalVariable>(Us))
    return !G->getName().starts_with("llvm.");
  if (isa<GlobalValue>(Us) || isa<Instruction>(Us))
    return true;
  return llvm::any_of(Us->users(), [](const User *U) { return constantUserEscapes(U); });
}

// Whether a use of `V` (a global, or address arithmetic on one) in a module
// that holds one fragment lets its address escape. A constant no one uses
// (the context keeps such) holds nothing.
inline bool addressEscapes(const Value *V) {
  for (const Use &U : V->uses()) {
    const User *Us = U.getUser();
    if (isa<Instruction>(Us)) {
      if (!addressOnlyAccessed(U))
        return true;
    } else if (addressArithmetic(Us) && U.getOperandNo() == 0) {
      if (addressEscapes(Us))
        return true;
    } else if (constantUserEscapes(Us)) {
      return true;
    }
  }
  return false;
}

// The declaration subprogram a call site entry (DW_TAG_call_site) names
// for `F`, a definition, where `F`'s debug info asks for call sites
// (optimized code with full debug info: `DIFlagAllCallsDescribed`); null
// otherwise. A member function's own declaration (in its class), as its
// definition names it; else the definition's name, linkage name, scope
// and type as a declaration (what clang attaches to a function it only
// declares, `EmitFuncDeclForCallSite`), without a file or line: a line of
// the unit's source would have to be placed when composed as the
// caller's own lines are, and gdb finds the callee by its name. Uniqued:
// the same node whichever way it is asked for.
inline DISubprogram *callSiteDeclaration(const Function &F) {
  DISubprogram *SP = F.getSubprogram();
  if (!SP || !SP->isDefinition() || !SP->areAllCallsDescribed())
    return nullptr;
  if (DISubprogram *Declaration = SP->getDeclaration())
    return Declaration;
  return DISubprogram::get(
      SP->getContext(), SP->getScope(), SP->getName(), SP->getLinkageName(), /*File=*/nullptr,
      /*Line=*/0, SP->getType(), /*ScopeLine=*/0, SP->getContainingType(),
      SP->getVirtualIndex(), SP->getThisAdjustment(),
      SP->getFlags() & ~DINode::FlagAllCallsDescribed,
      SP->getSPFlags() & ~DISubprogram::SPFlagDefinition, /*Unit=*/nullptr,
      SP->getTemplateParams(), /*Declaration=*/nullptr, /*RetainedNodes=*/nullptr,
      SP->getThrownTypes(), SP->getAnnotations(), SP->getTargetFuncName());
}

// Takes the location from each debug record of F, in either form, one of
// whose location values `Names` says yes to, and the address from each
// dbg.assign whose address it says yes to; how many it took. `Names` is
// asked of every value (it may collect what it is asked of).
template <class NamesFn> unsigned killDebugLocations(Function &F, NamesFn Names) {
  auto anyNamed = [&](auto Values) {
    bool Any = false;
    for (Value *V : Values)
      Any |= Names(V);
    return Any;
  };
  unsigned Killed = 0;
  for (BasicBlock &BB : F)
    for (Instruction &I : BB) {
      for (DbgVariableRecord &DVR : filterDbgVars(I.getDbgRecordRange())) {
        if (anyNamed(DVR.location_ops())) {
          DVR.setKillLocation();
          ++Killed;
        }
        if (DVR.isDbgAssign() && Names(DVR.getAddress())) {
          DVR.setKillAddress();
          ++Killed;
        }
      }
      if (auto *DVI = dyn_cast<DbgVariableIntrinsic>(&I)) {
        if (anyNamed(DVI->location_ops())) {
          DVI->setKillLocation();
          ++Killed;
        }
        if (auto *DAI = dyn_cast<DbgAssignIntrinsic>(DVI); DAI && Names(DAI->getAddress())) {
          DAI->setKillAddress();
          ++Killed;
        }
      }
    }
  return Killed;
}

} // namespace repocc_shim
