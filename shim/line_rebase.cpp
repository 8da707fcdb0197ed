// Relative lines in memory: the entry points (the rebaser is in
// line_rebaser.h).
//
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
#include "shim_internal.h"
#include "line_rebaser.h"

using namespace llvm;
using namespace repocc_shim;

namespace {

// One node of each cycle of uniqued nodes that change (LLVM's coroutine
// frame type, made after clang, has a member whose type points back at
// the frame): the targets of a depth-first walk's back edges, which every
// such cycle passes through. A uniqued node can only be made with its
// final operands, so each of these is rebuilt as a distinct copy first,
// as distinct nodes are, for the others to refer to. Only changed nodes
// are walked: every node of a cycle that holds a changed node changes
// too (each reaches it), and an unchanged node is never rebuilt.
DenseSet<const MDNode *> uniquedCycleEntries(LineRebaser &R) {
  DenseMap<const MDNode *, bool> OnStack;
  DenseSet<const MDNode *> Entries;
  SmallVector<std::pair<const MDNode *, unsigned>, 32> Stack;
  for (MDNode *Root : R.Reachable) {
    if (Root->isDistinct() || !R.Changes.count(Root) ||
        !OnStack.try_emplace(Root, true).second)
      continue;
    Stack.push_back({Root, 0});
    while (!Stack.empty()) {
      const MDNode *N = Stack.back().first;
      unsigned I = Stack.back().second++;
      if (I == N->getNumOperands()) {
        OnStack[N] = false;
        Stack.pop_back();
        continue;
      }
      auto *O = dyn_cast_or_null<MDNode>(N->getOperand(I).get());
      if (!O || O->isDistinct() || !R.Changes.count(O))
        continue;
      auto [It, New] = OnStack.try_emplace(O, true);
      if (New)
        Stack.push_back({O, 0});
      else if (It->second)
        Entries.insert(O);
    }
  }
  return Entries;
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
  // told apart when placed, unless they are at one line: LLVM's coroutine
  // split copies the coroutine's subprogram for each part it makes
  // (`f.resume`, `f.destroy`), and their lines are relative to the one
  // line either way, so they share an index.
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
      if (i > 0 && Owners[i].first == Owners[i - 1].first) {
        if (Owners[i].second->getLine() != Owners[i - 1].second->getLine())
          return -1;
      } else {
        R.OwnerKeys.push_back(Owners[i].first.str());
      }
      R.OwnerIndex[Owners[i].second] = R.OwnerKeys.size() - 1;
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
  // Nodes known clean (mapped to themselves when collected) never change:
  // their users are not listed.
  for (MDNode *N : R.Reachable) {
    for (const MDOperand &Op : N->operands())
      if (auto *O = dyn_cast_or_null<MDNode>(Op.get()); O && !R.Map.lookup(O))
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
  // copy, with its lines moved if they move (operands set below); so does
  // a uniqued node a cycle enters by, as a distinct one.
  DenseSet<const MDNode *> CycleEntries = uniquedCycleEntries(R);
  auto copiedDistinct = [&](const MDNode *N) {
    return N->isDistinct() || CycleEntries.count(N);
  };
  for (MDNode *N : R.Reachable) {
    if (!R.Changes.count(N)) {
      R.Map[N] = N;
      continue;
    }
    if (!copiedDistinct(N))
      continue;
    MDNode *New = R.movesLines(N)
                      ? R.withMovedLines(N, [](Metadata *Op) { return Op; }, /*Distinct=*/true)
                      : MDNode::replaceWithDistinct(N->clone());
    if (!New || New->getNumOperands() != N->getNumOperands())
      return -1;
    R.Map[N] = New;
  }
  for (MDNode *N : R.Reachable)
    if (!copiedDistinct(N))
      R.mapUniqued(N);
  if (R.Failed)
    return -1;
  // The new distinct nodes' operands, then the module's references.
  for (MDNode *N : R.Reachable) {
    if (!copiedDistinct(N) || !R.Changes.count(N))
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


} // namespace

extern "C" {

// 1: rebased; 0: the leader has no position (nothing to do); -1: a node
// could not be rebuilt (the module is unchanged; the caller goes through
// the printed text instead).
// With `definitions` (base, span and how many): the lines of other
// definitions' inlined code relative to theirs (see LineRebaser); their
// keys, one per line in index order, are put in `*inlined` (a message the
// caller disposes of) when rebased.
// `unit_source` (may be null): the path of the unit's source, which the
// fragment's compile unit does not name when none of its members is
// defined there (a header's template instance whose code inlines a
// function of the unit's source).
int repocc_rebase_relative_lines(LLVMModuleRef module, const char *leader, uint64_t base,
                                 const RepoccSharedTypes *shared, uint64_t definition_base,
                                 uint64_t definition_span, unsigned max_definitions,
                                 const char *unit_source, char **inlined) {
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
  LineRebaser R{M->getContext(), nullptr, 0, base};
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
  if (unit_source)
    R.UnitPath = unit_source;
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
  LineRebaser R{M->getContext(), nullptr, anchor, base};
  R.Anchored = true;
  R.UnitPath = LineRebaser::pathOf(CU->getFile());
  return rebaseLines(*M, R);
}

} // extern "C"



