// Identity of debug types.
//
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
#include <llvm/Transforms/Utils/Cloning.h>
#include "shim_internal.h"
#include "line_rebaser.h"

using namespace llvm;
using namespace repocc_shim;

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
//
// Also here: the types clang declares itself (`__uint128_t`,
// `__int128_t`, `__va_list_tag` and its members) have no line and name the
// unit's own source as their file, so every function that reaches one
// (fmt's 128-bit arithmetic, anything with a va_list) would differ in
// each unit and never be shared. They lose the file (DW_AT_decl_file;
// without a line it says nothing to a debugger); counted with the files.
extern "C" unsigned repocc_strip_file_checksums(LLVMModuleRef module) {
  Module &M = *unwrap(module);
  ValueToValueMapTy VM;
  unsigned Stripped = 0;
  std::string UnitPath;
  {
    auto CUs = M.debug_compile_units();
    if (!CUs.empty() && std::next(CUs.begin()) == CUs.end() && (*CUs.begin())->getFile())
      UnitPath = LineRebaser::pathOf((*CUs.begin())->getFile());
  }
  auto builtinType = [&](const MDNode *N) {
    auto *T = dyn_cast<DIType>(N);
    if (!T || UnitPath.empty() || T->getLine() != 0 ||
        !(isa<DIDerivedType>(T) || isa<DICompositeType>(T)))
      return false;
    auto *F = dyn_cast_or_null<DIFile>(T->getRawFile());
    return F && LineRebaser::pathOf(F) == UnitPath;
  };
  // Likewise clang's declaration of a builtin it calls (`__builtin_memcmp`,
  // `__builtin_strlen`: artificial, for the call sites), which takes the
  // file and line of the unit's first call: `char_traits<char>::compare`
  // and all that reach it differed between units including the headers in
  // another order. It keeps its name and type, without file or line.
  auto builtinDeclaration = [](const MDNode *N) {
    auto *SP = dyn_cast<DISubprogram>(N);
    return SP && !SP->isDistinct() && !SP->isDefinition() && SP->isArtificial() &&
           SP->getName().starts_with("__builtin_") &&
           (SP->getLine() || SP->getRawFile() || SP->getRawScope());
  };
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
    else if (builtinType(N) || builtinDeclaration(N))
      Stripped++;
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
    // A type's file is its operand 0 (DIScope).
    if (builtinType(N)) {
      Ops[0] = nullptr;
      Changed = true;
    }
    if (builtinDeclaration(N)) {
      auto *SP = cast<DISubprogram>(N);
      Metadata *Result = DISubprogram::get(
          M.getContext(), nullptr, SP->getName(), SP->getLinkageName(), nullptr, 0,
          cast_or_null<DISubroutineType>(Rebuilt(SP->getRawType())), 0,
          cast_or_null<DIType>(Rebuilt(SP->getRawContainingType())), SP->getVirtualIndex(),
          SP->getThisAdjustment(), SP->getFlags(), SP->getSPFlags(),
          cast_or_null<DICompileUnit>(Rebuilt(SP->getRawUnit())),
          cast_or_null<MDTuple>(Rebuilt(SP->getRawTemplateParams())),
          cast_or_null<DISubprogram>(Rebuilt(SP->getRawDeclaration())),
          cast_or_null<MDTuple>(Rebuilt(SP->getRawRetainedNodes())),
          cast_or_null<MDTuple>(Rebuilt(SP->getRawThrownTypes())),
          cast_or_null<MDTuple>(Rebuilt(SP->getRawAnnotations())), SP->getTargetFuncName());
      VM.MD()[N].reset(Result);
      Made[N] = Result;
      return Result;
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
    if (builtinType(N))
      N->replaceOperandWith(0, nullptr);
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

