// Stored bodies: read into the unit's context, with their debug metadata
// mapped to the unit's.
//
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
#include <map>
#include <set>
#include <llvm/Transforms/Utils/Cloning.h>

#include "shim_internal.h"
#include "line_rebaser.h"

using namespace llvm;
using namespace repocc_shim;

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

namespace {
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
    explicit Stored(LLVMContext &C) : R{C, nullptr, 0, 0} {}
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

