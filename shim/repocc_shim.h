/* The shim's C interface: every function, struct and callback the Rust side
 * calls or passes. The shim's files include it, so the compiler checks each
 * definition against it; build.rs generates the Rust declarations
 * (src/llvm/ffi.rs includes them) from it, so the two sides cannot drift.
 *
 * The generator reads a small subset of C, one declaration per statement:
 * typedefs of opaque structs and of function pointers, structs of scalar
 * fields, enums of explicit values, and prototypes whose types are the
 * scalars, LLVM-C handles and structs below, with `const` and `*`.
 * Ownership and invariants of each call are written beside its Rust
 * wrapper (src/llvm/). */
#ifndef REPOCC_SHIM_H
#define REPOCC_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include <llvm-c/Error.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- target.cpp: target options clang sets, the object emitter -------- */

/* Codegen options clang sets on its TargetMachine (clang/lib/CodeGen/
 * BackendUtil.cpp, initTargetOptions) that LLVMCreateTargetMachine leaves
 * at TargetOptions' defaults. */
typedef struct RepoccTargetOptions {
  int function_sections;
  int data_sections;
  int unique_section_names;
  int emit_addrsig;
  int use_init_array;
  int emit_call_site_info;
  int debugger_tuning_gdb;
  /* What is larger goes in .ldata, .lbss, .lrodata (medium code model). */
  uint64_t large_data_threshold;
} RepoccTargetOptions;

void repocc_set_target_options(LLVMTargetMachineRef tm, const RepoccTargetOptions *opts);
void repocc_get_target_options(LLVMTargetMachineRef tm, RepoccTargetOptions *out);
unsigned repocc_max_nop_bytes(LLVMTargetMachineRef tm, LLVMModuleRef module);

/* Empties the ELF object-file lowering's set of `llvm.used` globals, which
 * code generation fills per module and never empties (see target.cpp):
 * call before each module's code generation with a shared machine. */
void repocc_forget_used_globals(LLVMTargetMachineRef tm);

typedef struct RepoccObjectEmitter RepoccObjectEmitter;

RepoccObjectEmitter *repocc_object_emitter_new(LLVMTargetMachineRef tm);
const char *repocc_object_emitter_run(RepoccObjectEmitter *emitter, LLVMModuleRef module,
                                      size_t *len);
void repocc_object_emitter_free(RepoccObjectEmitter *emitter);

/* ---- extract.cpp: fragments and the unit's shared debug types --------- */

typedef struct RepoccSharedTypes RepoccSharedTypes;

RepoccSharedTypes *repocc_shared_types_new(LLVMModuleRef module);
void repocc_shared_types_free(RepoccSharedTypes *shared);
int repocc_stubs_unit_types(LLVMModuleRef module);
unsigned repocc_retain_unit_types(LLVMModuleRef module);
unsigned repocc_distinct_member_declarations(LLVMModuleRef module);
LLVMModuleRef repocc_extract_definitions(LLVMModuleRef module, const char *const *names,
                                         size_t count, int copy_module_asm,
                                         RepoccSharedTypes *shared, int share_metadata);
LLVMMemoryBufferRef repocc_write_shared_bitcode(LLVMModuleRef module);

/* ---- queries.cpp: what the C API cannot ask, and small edits ---------- */

const char *repocc_comdat_name(LLVMValueRef global, size_t *len);
LLVMValueRef repocc_alias_base_object(LLVMValueRef alias);
LLVMValueRef repocc_blockaddress_function(LLVMValueRef global);
int repocc_user_functions(LLVMValueRef value, LLVMValueRef *sole, int initializers);
size_t repocc_inlined_size(LLVMValueRef function);
int repocc_is_called(LLVMValueRef function);
int repocc_has_one_call_site(LLVMValueRef function);
unsigned repocc_mark_unwritten_statics_constant(LLVMModuleRef module);
int repocc_is_used(LLVMValueRef value);
void repocc_make_declaration(LLVMValueRef value);
char *repocc_global_users(LLVMModuleRef module);
char *repocc_fragment_reach(LLVMModuleRef module, const char *const *names, size_t count);
char *repocc_print_module(LLVMModuleRef module);
void repocc_sort_functions_by_name(LLVMModuleRef module);
void repocc_order_functions(LLVMModuleRef module, const char *const *names, size_t count);
void repocc_order_local_definitions(LLVMModuleRef module, LLVMTargetMachineRef tm,
                                    const char *const *names, size_t count);
void repocc_trim_debug_units(LLVMModuleRef module, int glue);
void repocc_note_carried_records(LLVMModuleRef module, const char *const *names,
                                 const char *const *carriers, size_t count);
void repocc_keep_removed_records(LLVMModuleRef module);
unsigned repocc_split_shared_lookup_tables(LLVMModuleRef module);
unsigned repocc_number_lookup_tables(LLVMModuleRef module);
unsigned repocc_kill_debug_only_local_references(LLVMModuleRef module);
void repocc_strip_local_names(LLVMModuleRef module);

/* ---- batch.cpp: debug fragments linked into one module ----------------- */

void repocc_share_debug_types_by_identifier(LLVMContextRef context);
int repocc_debug_types_unshareable(LLVMModuleRef module);
const char *repocc_debug_compile_directory(LLVMModuleRef module, size_t *len);
typedef struct RepoccBatchLinker RepoccBatchLinker;

RepoccBatchLinker *repocc_batch_linker_new(LLVMModuleRef batch);
void repocc_batch_linker_free(RepoccBatchLinker *linker);
int repocc_batch_declaration_conflicts(RepoccBatchLinker *linker, LLVMModuleRef source);
int repocc_link_fragment(RepoccBatchLinker *linker, LLVMModuleRef source, const char *suffix,
                         char **error);

/* ---- debug_types.cpp: identity of debug types ------------------------- */

void repocc_identify_debug_types(LLVMModuleRef module);
unsigned repocc_strip_file_checksums(LLVMModuleRef module);

/* ---- line_rebase.cpp: relative lines ---------------------------------- */

int repocc_rebase_relative_lines(LLVMModuleRef module, const char *leader, uint64_t base,
                                 const RepoccSharedTypes *shared, uint64_t definition_base,
                                 uint64_t definition_span, unsigned max_definitions,
                                 const char *unit_source, char **inlined);
int repocc_rebase_anchor_lines(LLVMModuleRef module, uint64_t anchor, uint64_t base);

/* ---- passes.cpp: the optimization pipeline and its hooks -------------- */

/* The pipeline settings clang takes from the command line. */
typedef struct RepoccTuning {
  int loop_vectorization;
  int slp_vectorization;
  int loop_unrolling;
  int loop_interleaving;
  int call_graph_profile;
  int merge_functions;
} RepoccTuning;

/* Where the pipeline calls back into Rust. */
enum RepoccHookPoint {
  /* Right before the CGSCC inliner (after the module simplification's
   * first passes and GlobalsAA): stored bodies may be put in place here. */
  REPOCC_BEFORE_INLINER = 0,
  /* Right after it: every function is as the inliner and the function
   * simplification left it. */
  REPOCC_AFTER_INLINER = 1,
  /* The start of the module optimization half. */
  REPOCC_OPTIMIZER_EARLY = 2
};

typedef void (*RepoccPipelineHook)(void *ctx, int point, LLVMModuleRef module);

LLVMErrorRef repocc_run_pipeline(LLVMModuleRef module, LLVMTargetMachineRef tm,
                                 const char *pipeline, const RepoccTuning *tuning,
                                 RepoccPipelineHook hook, int inliner_hooks, void *ctx);

/* ---- bodies.cpp: stored bodies as context ----------------------------- */

size_t repocc_substitute_bodies(LLVMModuleRef unit, const char *const *blobs,
                                const size_t *blob_lens, size_t blob_count,
                                const char *const *names, const size_t *sources,
                                const size_t *groups, size_t count, int has_anchor,
                                uint64_t anchor, unsigned char *done);

/* ---- startup.cpp: LLVM's and clang's static initializers, run late ---- */

void repocc_run_deferred_initializers(void);

/* ---- interrupts.cpp: files and directories removed on a signal -------- */

void repocc_remove_file_on_interrupt(const char *path, size_t len);
void repocc_keep_file_on_interrupt(const char *path, size_t len);
void repocc_remove_interrupt_files(void);
int repocc_remove_directory_on_interrupt(const char *path);
void repocc_keep_directory_on_interrupt(const char *path);

/* ---- frontend.cpp: clang's driver and frontend in process ------------- */

typedef struct RepoccFrontendOutput {
  /* clang's exit code; -1 when the unit was declined (nothing ran). */
  int status;
  /* The module, when the caller gave a context (status 0 only): owned by
   * the caller from here on. */
  LLVMModuleRef module;
  /* The bitcode (status 0 only) and the diagnostics clang printed, both
   * malloc'd; released with repocc_frontend_free. */
  char *bitcode;
  size_t bitcode_len;
  char *diagnostics;
  size_t diagnostics_len;
  /* Why the unit was declined (a static string), or null. */
  const char *declined;
  /* 1 where a header list was asked for and could not be written whole
   * (its file could not be opened, or a write failed: a full $TMPDIR); the
   * compile goes on, and what the list holds is not the unit's whole list. */
  int header_list_failed;
} RepoccFrontendOutput;

/* object: a whole compile (`-c -o FILE`), clang's compiler proper writing
 * the object itself as `clang ARGS` would (`context` null; `out` holds the
 * status and diagnostics only); declined also for any other job than one
 * -cc1 writing an object file of a target registered here. */
void repocc_frontend_run(const char *clang_path, const char *prog_name, const char *const *args,
                         size_t nargs, const char *header_list, int disable_free,
                         LLVMContextRef context, int object, RepoccFrontendOutput *out);
void repocc_frontend_free(RepoccFrontendOutput *out);
int repocc_link_run(const char *clang_path, const char *prog_name, const char *const *args,
                    size_t nargs, const char *const *environment, const char **declined);

#ifdef __cplusplus
}
#endif

#endif
