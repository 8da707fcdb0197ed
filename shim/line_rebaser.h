// The line rebaser (see line_rebase.cpp), shared with the stored bodies'
// debug metadata (bodies.cpp): the nodes whose lines move, rebuilt.
#pragma once

#include "shim_internal.h"

namespace repocc_shim {

using namespace llvm;

// The raw `file:` and `scope:` operands, as the IR printer names them.
inline std::pair<Metadata *, Metadata *> fileAndScope(const MDNode *N) {
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
inline std::pair<unsigned, unsigned> linesOf(const MDNode *N) {
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
//
// `Distinct` makes the new node distinct whatever `N` is (see
// `LineRebaser::mapUniqued`).
template <class MoveFn, class MapOperand>
inline MDNode *rebuiltWithLines(LLVMContext &C, MDNode *N, MoveFn &&moved, MapOperand &&O,
                                bool Distinct = false) {
  bool D = Distinct || N->isDistinct();
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
// Whether `N` has exactly the operands `Ops` and the lines `Lines`.
inline bool hasExactly(const MDNode *N, ArrayRef<Metadata *> Ops,
                       std::pair<unsigned, unsigned> Lines) {
  bool Same = N && linesOf(N) == Lines && N->getNumOperands() == Ops.size();
  for (unsigned i = 0; Same && i < Ops.size(); i++)
    Same = N->getOperand(i) == Ops[i];
  return Same;
}

inline std::pair<MDNode *, bool> withOperands(MDNode *New, ArrayRef<Metadata *> Ops,
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
  return {New, hasExactly(New, Ops, Lines)};
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

  LineRebaser(LLVMContext &C, const Metadata *File, uint64_t Own, uint64_t Base)
      : C(C), File(File), Own(Own), Base(Base) {}

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
    auto *F = New ? dyn_cast_or_null<DIFile>(SP->getRawFile()) : nullptr;
    if (New && !UnitPath.empty()) {
      // The unit's source as its own compile unit named it: a fragment's
      // compile unit does not name it when none of its members is defined
      // there (see `repocc_rebase_relative_lines`).
      It->second = F && pathOf(F) == UnitPath;
    } else if (New) {
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
  template <class MapOperand>
  MDNode *withMovedLines(MDNode *N, MapOperand &&O, bool Distinct = false) {
    return rebuiltWithLines(
        C, N, [&](const MDNode *M, unsigned Line) { return moved(M, Line); }, O, Distinct);
  }

  // LLVM takes a member function's declaration in a class with an
  // identifier to be the same node as any other declaration with that
  // scope and linkage name (`isODRMember`), whatever its lines. A member
  // template's specialization declared in a header's class and defined in
  // the unit's source has its declaration's line there: when that line
  // moves and the class does not, uniquing hands back the node with the
  // old line. In a fragment's rebase such a declaration is made distinct
  // instead (it is in the unit's own file, so no other unit's fragment
  // shares it).
  //
  // In the unit's module (the anchored rebase, before any fragment is
  // extracted) it is made again uniqued (`renewedOdrDeclaration`): a distinct one
  // cannot be a function declaration's `!dbg` (the verifier drops the
  // debug info), and a fragment calling the function declares it with
  // that node (`callSiteDeclaration`; a pruned definition's declaration
  // too). A member of a class template instance that the unit declares
  // only (a dynamic class whose vtable is emitted elsewhere) has its
  // class unchanged while its type reaches a type of the unit's source:
  // gmock's `OnCallSpec<F>::GetAction` for a test's `F`. The old node
  // holds the key: it is given another linkage name first, which takes
  // it out of the way (nothing in the module refers to it once the
  // module's references are mapped; a failed anchored rebase sends the
  // unit to clang whole, so no half-changed module is compiled).
  template <class LinesFn> MDNode *renewedOdrDeclaration(MDNode *N, LinesFn &&Lines) {
    auto *SP = cast<DISubprogram>(N);
    constexpr unsigned LinkageNameOperand = 3;
    MDString *Linkage = SP->getRawLinkageName();
    if (N->getOperand(LinkageNameOperand).get() != Linkage) {
      Failed = true;
      return N;
    }
    TempMDNode Old = N->clone();
    N->replaceOperandWith(LinkageNameOperand,
                          MDString::get(C, (Linkage->getString() + ".repocc.replaced").str()));
    return rebuiltWithLines(C, Old.get(), Lines, [&](Metadata *Op) { return mapped(Op); });
  }

  static bool odrUniquedDeclaration(const MDNode *N) {
    auto *SP = dyn_cast<DISubprogram>(N);
    if (!SP || SP->isDefinition() || SP->isDistinct() || !SP->getRawLinkageName())
      return false;
    auto *Scope = dyn_cast_or_null<DICompositeType>(SP->getRawScope());
    return Scope && Scope->getRawIdentifier();
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
    if (!Same && odrUniquedDeclaration(N)) {
      auto lines = [&](const MDNode *, unsigned Line) { return Moves ? moved(N, Line) : Line; };
      New = Anchored ? renewedOdrDeclaration(N, lines)
                     : rebuiltWithLines(
                           C, N, lines, [&](Metadata *Op) { return mapped(Op); }, /*Distinct=*/true);
      Same = hasExactly(New, Ops, Lines);
    }
    if (!Same)
      Failed = true;
    Map[N] = New;
    return New;
  }
};

} // namespace repocc_shim
