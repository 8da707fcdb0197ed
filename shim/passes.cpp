// The optimization pipeline and its hooks.
//
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
#include <llvm/IR/ValueHandle.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Passes/StandardInstrumentations.h>
#include <llvm/Support/Error.h>
#include <llvm-c/Error.h>
#include "shim_internal.h"

using namespace llvm;
using namespace repocc_shim;

namespace {


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
constexpr llvm::StringLiteral kIPSCCPPass = "IPSCCPPass";

// Function specialization (part of IPSCCP at -O1 to -O3) clones a
// function for constant arguments some call passes it (a function
// pointer), within budgets the whole module shares: a number of clones
// per module ranked by score, and a growth per callee that its earlier
// specializations use up. Whether one call is specialized then depends
// on the other calls in the module, which a warm compile that pruned them
// does not have (and the clone's number, `.specialized.N`, counts the
// module's clones): the warm object differed from the cold one. repocc
// does not specialize: a call with `minsize` never is, so every call to a
// definition with arguments gets it before the pipeline runs and loses it
// once IPSCCP has run (nothing before IPSCCP reads a call's `minsize`).
// Clang specializes rarely (no clone in sqlite3.c, lua or yaml-cpp at
// -O2): the price is small.
std::vector<WeakVH> keepCallsUnspecialized(Module &M) {
  std::vector<WeakVH> Marked;
  for (Function &F : M)
    for (BasicBlock &BB : F)
      for (Instruction &I : BB)
        if (auto *Call = dyn_cast<CallBase>(&I)) {
          Function *Callee = Call->getCalledFunction();
          if (Callee && !Callee->isDeclaration() && !Callee->arg_empty() &&
              !Call->hasFnAttr(Attribute::MinSize)) {
            Call->addFnAttr(Attribute::MinSize);
            Marked.emplace_back(Call);
          }
        }
  return Marked;
}

void releaseCalls(std::vector<WeakVH> &Marked) {
  for (WeakVH &V : Marked)
    if (auto *Call = dyn_cast_or_null<CallBase>(V))
      Call->removeFnAttr(Attribute::MinSize);
  Marked.clear();
}

// The section that holds a variable's alignment still while the pipeline
// runs (see pinVariableAlignments); never seen outside it.
constexpr llvm::StringLiteral kPinnedSection = ".repocc.pinned-alignment";

// The optimizer raises the alignment of a variable the module defines to
// what a load or store of it prefers (InferAlignment: a `char buf[10]`
// that a 4-byte `memcpy` became an `i32` store to is then 4-aligned, an
// array a loop was vectorized over for AVX 32-aligned), and the code of
// every function from then on assumes it. A variable's bytes would then
// depend on its users, not on what its digest covers: a variable stored
// by a unit without such a user, or by this unit before an edit added
// one, would be placed with less alignment than a recompiled user
// assumes (`vmovaps` on a 16-aligned array faults), and the object would
// differ from a cold compile's. LLVM raises no alignment of a global that
// has both a section and an alignment (GlobalObject::canIncreaseAlignment),
// so every variable defined here that it could raise gets one for the
// pipeline's run. Nothing else in the optimizer reads a section but
// ConstantMerge, which then leaves such a constant unmerged: as it leaves
// the content-named ones, and as a warm compile, in which the other
// constant may be stored code, would have to.
void pinVariableAlignments(llvm::Module &M) {
  for (llvm::GlobalVariable &GV : M.globals())
    if (GV.isStrongDefinitionForLinker() && GV.isDSOLocal() && !GV.hasSection() && GV.getAlign())
      GV.setSection(kPinnedSection);
}

// Takes the section pinVariableAlignments gave away again, from every
// global that has it (a pass may have copied it to a new one).
void unpinVariableAlignments(llvm::Module &M) {
  for (llvm::GlobalVariable &GV : M.globals())
    if (GV.hasSection() && GV.getSection() == kPinnedSection)
      GV.setSection("");
}

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
    PIC.registerBeforeNonSkippedPassCallback([=, &FAM, &MAM](StringRef PassID, Any) {
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
        [=](StringRef PassID, Any, const PreservedAnalyses &) {
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
  auto Unspecialized = std::make_shared<std::vector<WeakVH>>(keepCallsUnspecialized(*M));
  PIC.registerAfterPassCallback([=](StringRef PassID, Any, const PreservedAnalyses &) {
    if (PassID == kIPSCCPPass)
      releaseCalls(*Unspecialized);
  });
  pinVariableAlignments(*M);
  MPM.run(*M, MAM);
  unpinVariableAlignments(*M);
  releaseCalls(*Unspecialized); // A pipeline without IPSCCP.
  return LLVMErrorSuccess;
}

