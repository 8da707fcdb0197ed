// repocc's in-process frontend: clang-19's driver and compiler proper,
// linked from Debian's static clang libraries (libclang-19-dev), run on a
// unit's arguments exactly as `clang-19 ARGS` would run them, but without
// the two processes (driver, then `-cc1`) each unit used to cost.
//
// What it reproduces from clang's own `clang_main` and `cc1_main`
// (clang/tools/driver): the driver's diagnostic options and warning
// processing, the driver mode from the program name (`clang++-19`), the
// `CC_PRINT_HEADERS` header list (set on the compiler proper, leaving an -MMD
// dependency file alone), the
// compiler proper's diagnostics and its "N errors generated." line, and
// clang's exit code (0, or 1 on errors). The bitcode is written by clang's
// own EmitBCAction into memory, so it is byte for byte what `-o -` prints;
// or, when the caller asks for it, clang's module is handed over in a
// context of the caller's (EmitLLVMOnlyAction: the same code generation,
// without writing the bitcode and parsing it back). Or, for a unit
// compiled whole (`object`), clang's EmitObjAction writes the object
// itself: the object of `clang-19 -c`, without its process.
//
// Whatever it does not reproduce it declines (status -1) before running
// anything that writes: the caller then runs clang as a process. Declined:
// a command line the driver rejects (clang prints the error itself), more
// or other jobs than one `-cc1` emitting bitcode, standard input, `-H`
// (written to stderr as headers are entered), and the options that load
// code or touch process-wide state (-mllvm, plugins, timers, statistics).
//
// Links go through the same driver (repocc_link_run): it builds the
// linker's command and runs it with clang's own ExecuteCompilation, so a
// link costs no clang process; what it declines (options the driver acts
// on itself, driver diagnostics, anything but one link job) clang runs.

#include "repocc_shim.h"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Basic/HeaderInclude.h>
#include <clang/Basic/Stack.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Driver/Compilation.h>
#include <clang/Driver/Driver.h>
#include <clang/Driver/Job.h>
#include <clang/Driver/Options.h>
#include <clang/Driver/Tool.h>
#include <clang/Driver/ToolChain.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/DependencyOutputOptions.h>
#include <clang/Frontend/FrontendOptions.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Lex/Lexer.h>
#include <clang/Lex/PPCallbacks.h>
#include <clang/Lex/Preprocessor.h>
#include <llvm-c/Core.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Option/ArgList.h>
#include <llvm/Option/OptTable.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

// The cc1 options whose effect is process-wide (LLVM's global option
// registry, loaded plugins, timer and statistics output at exit): clang
// gets them as a process of its own.
bool process_wide_option(llvm::StringRef arg) {
  static const char *const prefixes[] = {
      "-mllvm", "-load", "-plugin", "-add-plugin", "-fpass-plugin",
      "-ftime-report", "-ftime-trace", "-print-stats", "-stats-file",
  };
  for (const char *p : prefixes)
    if (arg.starts_with(p))
      return true;
  return false;
}

// The header list of CC_PRINT_HEADERS_FILE, written as clang's textual
// HeaderIncludesCallback writes it (every header entered after the
// predefines, the name as the preprocessor built it, one per line), but
// without the driver's -sys-header-deps, which would also put system
// headers into an -MMD dependency file.
class HeaderListCallbacks : public clang::PPCallbacks {
public:
  HeaderListCallbacks(const clang::SourceManager &sources,
                      llvm::raw_ostream &out)
      : sources_(sources), out_(out) {}

  void FileChanged(clang::SourceLocation loc, FileChangeReason reason,
                   clang::SrcMgr::CharacteristicKind,
                   clang::FileID) override {
    clang::PresumedLoc where = sources_.getPresumedLoc(loc);
    if (where.isInvalid())
      return;
    if (reason == ExitFile) {
      if (depth_)
        --depth_;
      // Back at the main file's level: the predefines are done.
      if (depth_ == 1)
        past_predefines_ = true;
      return;
    }
    if (reason != EnterFile)
      return;
    ++depth_;
    // Headers the predefines include (-include) count too: they are past
    // the main file and the <built-in> buffer.
    bool show = past_predefines_ || depth_ > 2;
    llvm::StringRef name = where.getFilename();
    if (show && name != "<command line>") {
      llvm::SmallString<512> path(name);
      clang::Lexer::Stringify(path);
      out_ << path << '\n';
    }
  }

private:
  const clang::SourceManager &sources_;
  llvm::raw_ostream &out_;
  unsigned depth_ = 0;
  bool past_predefines_ = false;
};

// A clang code generation action (`Base`: the bitcode action, or the one
// that leaves the module in memory), with the header list written along
// the way.
template <class Base> class ListingHeaders : public Base {
public:
  ListingHeaders(const char *header_list, llvm::LLVMContext *context)
      : Base(context), header_list_(header_list) {}

  // A stream destroyed with an unhandled write error is a fatal error in
  // LLVM (`IO failure on output stream`): the compile would end there.
  ~ListingHeaders() override { abandonListIfFailed(); }

  // Whether a list was asked for and is not whole (see the header).
  bool listFailed() const { return failed_; }

protected:
  bool BeginSourceFileAction(clang::CompilerInstance &ci) override {
    if (header_list_) {
      std::error_code error;
      list_ = std::make_unique<llvm::raw_fd_ostream>(
          header_list_, error, llvm::sys::fs::OF_Append | llvm::sys::fs::OF_Text);
      // Without the list the unit is only not recorded (the caller is
      // told); the compile goes on, as clang's would.
      if (error) {
        list_.reset();
        failed_ = true;
      } else {
        ci.getPreprocessor().addPPCallbacks(
            std::make_unique<HeaderListCallbacks>(ci.getSourceManager(), *list_));
      }
    }
    return Base::BeginSourceFileAction(ci);
  }

  void EndSourceFileAction() override {
    Base::EndSourceFileAction();
    if (list_)
      list_->flush();
    abandonListIfFailed();
  }

private:
  // A list with a failed write (a full $TMPDIR) misses headers: the
  // caller is told, and does not take it for the unit's whole list. The
  // stream stays (the preprocessor's callbacks hold it), its error cleared.
  void abandonListIfFailed() {
    if (!list_ || !list_->has_error())
      return;
    list_->clear_error();
    failed_ = true;
  }

  const char *header_list_;
  std::unique_ptr<llvm::raw_fd_ostream> list_;
  bool failed_ = false;
};

// clang's driver for `prog_name ARGS` as clang_main sets it up: the
// driver's own diagnostic options and warning processing, its diagnostics
// written into `text` (in colour where clang's would be, prefixed with the
// program's name), and the target and driver mode the program name gives
// (`clang++-19`), inserted after argv[0] as insertTargetAndModeArgs does so
// that the command line can override them.
class InProcessDriver {
public:
  InProcessDriver(const char *clang_path, const char *prog_name,
                  const char *const *args, size_t nargs)
      : argv(with_program(prog_name, args, nargs)),
        diag_opts(driver_diagnostic_options(argv)), text_stream(text),
        printer(new clang::TextDiagnosticPrinter(text_stream, &*diag_opts)),
        diags(new clang::DiagnosticIDs(), &*diag_opts, printer),
        driver(clang_path, llvm::sys::getDefaultTargetTriple(), diags,
               "clang LLVM compiler") {
    text_stream.enable_colors(diag_opts->ShowColors);
    printer->setPrefix(std::string(llvm::sys::path::stem(prog_name)));
    clang::ProcessWarningOptions(diags, *diag_opts, /*ReportDiags=*/false);
    clang::driver::ParsedClangName name =
        clang::driver::ToolChain::getTargetAndModeFromProgramName(prog_name);
    driver.setTargetAndMode(name);
    target_prefix = name.TargetPrefix;
    if (name.DriverMode)
      argv.insert(argv.begin() + 1, name.DriverMode);
    if (name.TargetIsValid) {
      argv.insert(argv.begin() + 1, target_prefix.c_str());
      argv.insert(argv.begin() + 1, "-target");
    }
  }
  InProcessDriver(const InProcessDriver &) = delete;
  InProcessDriver &operator=(const InProcessDriver &) = delete;

  std::vector<const char *> argv;
  std::string target_prefix;
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> diag_opts;
  std::string text;
  llvm::raw_string_ostream text_stream;
  // Owned by `diags`.
  clang::TextDiagnosticPrinter *printer;
  clang::DiagnosticsEngine diags;
  clang::driver::Driver driver;

private:
  static std::vector<const char *> with_program(const char *prog_name,
                                                const char *const *args,
                                                size_t nargs) {
    std::vector<const char *> argv;
    argv.push_back(prog_name);
    argv.insert(argv.end(), args, args + nargs);
    return argv;
  }

  static llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions>
  driver_diagnostic_options(const std::vector<const char *> &argv) {
    llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> opts =
        new clang::DiagnosticOptions();
    unsigned missing_index = 0, missing_count = 0;
    llvm::opt::InputArgList parsed =
        clang::driver::getDriverOptTable().ParseArgs(
            llvm::ArrayRef(argv).slice(1), missing_index, missing_count);
    (void)clang::ParseDiagnosticArgs(*opts, parsed);
    return opts;
  }
};

char *copy_out(llvm::StringRef bytes, size_t *len) {
  *len = bytes.size();
  char *out = static_cast<char *>(std::malloc(bytes.size() ? bytes.size() : 1));
  if (out && !bytes.empty())
    std::memcpy(out, bytes.data(), bytes.size());
  return out;
}

} // namespace

extern "C" {


void repocc_frontend_free(RepoccFrontendOutput *out) {
  std::free(out->bitcode);
  std::free(out->diagnostics);
  out->bitcode = nullptr;
  out->diagnostics = nullptr;
}

// clang_path: the compiler's executable, symlinks resolved (the driver
// finds its resource directory and tools next to it). prog_name: argv[0]
// as repocc would have run it (the diagnostics' prefix and the driver
// mode come from it). header_list: null, or the CC_PRINT_HEADERS_FILE.
// context: null for bitcode, or the context the module is to be built in
// (the module is then handed over instead of written: the same module, as
// clang's bitcode writer would have written it, without the write and the
// parse back). object: clang's EmitObjAction writes the object of a whole
// compile (`-c -o FILE`) where the arguments name it, as `clang-19 -c`
// would (`context` is then null).
void repocc_frontend_run(const char *clang_path, const char *prog_name,
                         const char *const *args, size_t nargs,
                         const char *header_list, int disable_free,
                         LLVMContextRef context, int object,
                         RepoccFrontendOutput *out) {
  using namespace clang;
  std::memset(out, 0, sizeof *out);
  out->status = -1;
  // clang's deep-recursion guard grows the stack on a new thread when
  // parsing nests deeply; it measures from here.
  noteBottomOfStack();

  InProcessDriver d(clang_path, prog_name, args, nargs);
  const std::vector<const char *> &argv = d.argv;
  DiagnosticsEngine &diags = d.diags;
  auto *driver_printer = d.printer;
  std::string &text = d.text;
  llvm::raw_string_ostream &text_stream = d.text_stream;

  std::unique_ptr<driver::Compilation> compilation(
      d.driver.BuildCompilation(argv));
  if (!compilation || compilation->containsError() ||
      diags.hasErrorOccurred()) {
    out->declined = "the driver reported an error";
    return;
  }
  const driver::JobList &jobs = compilation->getJobs();
  if (jobs.size() != 1) {
    out->declined = "not exactly one job";
    return;
  }
  const driver::Command &job = *jobs.begin();
  const llvm::opt::ArgStringList &cc1 = job.getArguments();
  if (cc1.empty() || llvm::StringRef(cc1[0]) != "-cc1") {
    out->declined = "the job is not clang -cc1";
    return;
  }
  for (size_t i = 1; i < argv.size(); ++i)
    if (llvm::StringRef(argv[i]).starts_with("-fproc-stat-report")) {
      out->declined = "the driver reports process statistics";
      return;
    }
  for (const char *arg : cc1) {
    if (process_wide_option(arg)) {
      out->declined = "an option with process-wide effects";
      return;
    }
    // `-Wp,-v`: the search list, printed straight to stderr.
    if (llvm::StringRef(arg) == "-v") {
      out->declined = "-v writes to stderr while compiling";
      return;
    }
  }

  auto invocation = std::make_shared<CompilerInvocation>();
  if (!CompilerInvocation::CreateFromArgs(*invocation, cc1, diags, prog_name) ||
      diags.hasErrorOccurred()) {
    out->declined = "the compiler's arguments did not parse";
    return;
  }
  FrontendOptions &fe = invocation->getFrontendOpts();
  if (fe.ProgramAction != (object ? frontend::EmitObj : frontend::EmitBC) ||
      fe.Inputs.size() != 1 || !fe.Inputs[0].isFile() ||
      fe.Inputs[0].getFile() == "-" || !fe.Plugins.empty() ||
      !fe.ActionName.empty() || !fe.AddPluginActions.empty()) {
    out->declined = object ? "not an object compile of one file"
                           : "not a bitcode compile of one file";
    return;
  }
  if (object) {
    // The object is written where clang would write it, by clang (a
    // temporary beside it, renamed); standard output is the caller's.
    if (fe.OutputFile.empty() || fe.OutputFile == "-") {
      out->declined = "the object goes to standard output";
      return;
    }
    // Code generation needs the target, and only repocc's are registered
    // (clang registers all of them).
    llvm::Triple triple(invocation->getTargetOpts().Triple);
    if (triple.getArch() != llvm::Triple::x86_64 &&
        triple.getArch() != llvm::Triple::x86 &&
        triple.getArch() != llvm::Triple::aarch64) {
      out->declined = "a target repocc does not generate code for";
      return;
    }
  }
  // `-H` lists headers straight to stderr as they are entered: in clang
  // those lines interleave with the diagnostics, which here are captured.
  const DependencyOutputOptions &deps = invocation->getDependencyOutputOpts();
  if (deps.ShowHeaderIncludes || !deps.HeaderIncludeOutputFile.empty()) {
    out->declined = "-H writes to stderr while compiling";
    return;
  }
  // The driver asks the compiler proper not to free what process exit
  // reclaims; here only when the process ends with this unit (the caller
  // says so), as it usually goes on to optimize and store it.
  fe.DisableFree = disable_free != 0;

  // The driver's diagnostics are in `text`; the compiler proper's follow,
  // in its own options' colours, as on clang's stderr.
  driver_printer->finish();
  CompilerInstance compiler;
  compiler.setInvocation(invocation);
  text_stream.enable_colors(invocation->getDiagnosticOpts().ShowColors);
  compiler.createDiagnostics(
      new TextDiagnosticPrinter(text_stream, &invocation->getDiagnosticOpts()),
      /*ShouldOwnClient=*/true);
  if (!compiler.hasDiagnostics()) {
    out->declined = "no diagnostics engine";
    return;
  }
  compiler.setVerboseOutputStream(text_stream);
  llvm::SmallString<0> bitcode;
  if (!object)
    compiler.setOutputStream(std::make_unique<llvm::raw_svector_ostream>(bitcode));

  bool ok;
  bool list_failed = false;
  std::unique_ptr<llvm::Module> module;
  // An optimization record is written through a stream the context would
  // keep after clang's action ends: such units are written as bitcode.
  if (!invocation->getCodeGenOpts().OptRecordFile.empty())
    context = nullptr;
  if (object) {
    // clang's own action in a context of its own: the object is clang's,
    // byte for byte (the same libraries as the clang-19 executable).
    ListingHeaders<EmitObjAction> action(header_list, nullptr);
    ok = compiler.ExecuteAction(action);
    list_failed = action.listFailed();
  } else if (context) {
    // A function made while its context discards value names has no
    // symbol table, and names given later (mem2reg's, the optimizer's)
    // are then not made unique: two values could print alike. So names
    // are kept while clang generates the code (the pipeline takes every
    // local name off once mem2reg ran, see canonical.rs), and every
    // function has its symbol table.
    invocation->getCodeGenOpts().DiscardValueNames = false;
    ListingHeaders<EmitLLVMOnlyAction> action(header_list, llvm::unwrap(context));
    ok = compiler.ExecuteAction(action);
    list_failed = action.listFailed();
    if (ok)
      module = action.takeModule();
  } else {
    ListingHeaders<EmitBCAction> action(header_list, nullptr);
    ok = compiler.ExecuteAction(action);
    list_failed = action.listFailed();
  }
  ok = ok && !compiler.getDiagnostics().hasErrorOccurred();
  if (context && ok && !module)
    ok = false;
  compiler.getDiagnostics().getClient()->finish();
  text_stream.flush();

  out->declined = nullptr;
  out->status = ok ? 0 : 1;
  out->header_list_failed = list_failed ? 1 : 0;
  out->diagnostics = copy_out(text, &out->diagnostics_len);
  if (object) {
    // Nothing to hand over: clang wrote the object (or, on errors,
    // removed its temporary).
  } else if (ok && module) {
    // The context as a fresh one is (what the bitcode is read into): clang
    // set some of its state for its own code generation.
    llvm::LLVMContext &ctx = module->getContext();
    ctx.setDiscardValueNames(false);
    ctx.disableDebugTypeODRUniquing();
    ctx.setDiagnosticsHotnessRequested(false);
    ctx.setMisExpectWarningRequested(false);
    out->module = llvm::wrap(module.release());
  } else if (ok) {
    out->bitcode = copy_out(bitcode.str(), &out->bitcode_len);
  }
}

// The options after which clang's driver does something else than link, or
// does it differently: it prints (versions, search directories, the
// commands, statistics, help), keeps temporaries, writes a reproducer, or
// resolves its own path otherwise. A link with one of them is declined.
static bool declined_link_option(llvm::StringRef arg) {
  static const char *const exact[] = {
      "-v",      "-###",   "--version", "-help", "--help", "--help-hidden",
      "-time",   "-save-temps", "-fdriver-only", "-canonical-prefixes",
      "-no-canonical-prefixes", "-Xclang",
  };
  static const char *const prefixes[] = {
      "-print", "--print", "-dump", "--dump", "-ccc-", "-save-temps=",
      "--save-temps", "-gen-reproducer", "-fproc-stat-report",
      "-autocomplete", "--autocomplete", "-fcrash-diagnostics",
  };
  for (const char *e : exact)
    if (arg == e)
      return true;
  for (const char *p : prefixes)
    if (arg.starts_with(p))
      return true;
  return false;
}

// clang's link of `prog_name ARGS` (inputs that are all objects, archives
// and libraries), run by clang's own driver in this process: it builds the
// linker's command, starts the linker with `environment` (NULL-terminated
// `NAME=value` strings), prints clang's error when the linker fails and
// removes its output as clang does, and the exit code is clang_main's
// (clang-19: the linker's code, 1 after a signal or a crash code). This
// saves the clang process a link through repocc would otherwise start.
// Returns the exit code, or -1 with the reason in `*declined` when nothing
// ran (the caller then runs clang): an option above, a driver diagnostic of
// any kind (clang prints those itself), or a job other than one link.
int repocc_link_run(const char *clang_path, const char *prog_name,
                    const char *const *args, size_t nargs,
                    const char *const *environment, const char **declined) {
  using namespace clang;
  *declined = nullptr;
  for (size_t i = 0; i < nargs; ++i)
    if (declined_link_option(args[i])) {
      *declined = "an option the driver handles itself";
      return -1;
    }
  InProcessDriver d(clang_path, prog_name, args, nargs);
  std::unique_ptr<driver::Compilation> compilation(
      d.driver.BuildCompilation(d.argv));
  if (!compilation || compilation->containsError() ||
      d.diags.hasErrorOccurred()) {
    *declined = "the driver reported an error";
    return -1;
  }
  d.text_stream.flush();
  if (!d.text.empty()) {
    *declined = "the driver printed a diagnostic";
    return -1;
  }
  driver::JobList &jobs = compilation->getJobs();
  if (jobs.size() != 1 || !jobs.begin()->getCreator().isLinkJob()) {
    *declined = "not exactly one link job";
    return -1;
  }
  driver::Command &job = *jobs.begin();
  // (No toolchain of a Linux target gives its link job an environment of
  // its own: this one is the process's, with repocc's guard.)
  std::vector<const char *> env;
  for (const char *const *e = environment; *e; ++e)
    env.push_back(*e);
  job.setEnvironment(env);

  // As clang_main runs the compilation and makes its exit code.
  llvm::SmallVector<std::pair<int, const driver::Command *>, 4> failing;
  int res = d.driver.ExecuteCompilation(*compilation, failing);
  driver::Driver::CommandStatus status = driver::Driver::CommandStatus::Ok;
  const driver::Command *failing_command = &job;
  for (const auto &p : failing) {
    int command_res = p.first;
    failing_command = p.second;
    if (!res)
      res = command_res;
    bool crash = command_res < 0 || command_res == 70 || command_res > 128;
    status = crash ? driver::Driver::CommandStatus::Crash
                   : driver::Driver::CommandStatus::Error;
    if (crash)
      break;
  }
  if (d.driver.maybeGenerateCompilationDiagnostics(
          status, driver::Driver::ReproLevel::OnCrash, *compilation,
          *failing_command))
    res = 1;
  d.diags.getClient()->finish();
  d.text_stream.flush();
  llvm::errs() << d.text;
  llvm::errs().flush();
  return res;
}

} // extern "C"

