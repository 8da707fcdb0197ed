//! Tests of the LLVM layer: each call on modules clang-19 makes here.

use super::*;
use inkwell::context::Context;
use inkwell::targets::TargetMachine;
use inkwell::OptimizationLevel;

/// A module whose code generation fails in the backend: an inline asm
/// instruction the assembler does not know.
const BAD_INLINE_ASM_IR: &str = r#"
        target triple = "x86_64-pc-linux-gnu"
        define void @f() {
          call void asm sideeffect "not_an_instruction %eax", ""()
          ret void
        }"#;

#[test]
fn target_options_round_trip() {
    let tm = test_x86_64_machine(OptimizationLevel::Default);
    let before = get_target_options(&tm);
    assert_eq!(before.use_init_array, 0, "C API default differs from clang");
    let want = ShimTargetOptions {
        function_sections: 1,
        data_sections: 1,
        unique_section_names: 0,
        emit_addrsig: 1,
        use_init_array: 1,
        emit_call_site_info: 1,
        debugger_tuning_gdb: 1,
        large_data_threshold: 65536,
    };
    set_target_options(&tm, &want);
    assert_eq!(get_target_options(&tm), want);
}

#[test]
fn backend_errors_reach_the_sink_instead_of_exiting() {
    use inkwell::targets::FileType;
    let ir = BAD_INLINE_ASM_IR;
    let first = with_diagnostic_sink(|context, sink| {
        let module = parse(context, ir);
        let tm = test_x86_64_machine(OptimizationLevel::None);
        let _ = tm.write_to_memory_buffer(&module, FileType::Object);
        sink.first()
    });
    let first = first.expect("the inline asm error was not reported");
    assert!(
        first.contains("not_an_instruction") || first.contains("invalid instruction"),
        "{first}"
    );
}

#[test]
fn extraction_keeps_named_bodies_and_declares_the_rest() {
    let ir = r#"
        target triple = "x86_64-pc-linux-gnu"
        $c = comdat any
        @table = hidden constant [2 x ptr] [ptr @f, ptr @g]
        @switch.table = private unnamed_addr constant [2 x i32] [i32 3, i32 4]
        @counter = hidden global i32 0, align 4
        define i32 @f(i32 %x) { %v = load i32, ptr @counter
          %r = add i32 %x, %v
          ret i32 %r }
        define linkonce_odr i32 @g() comdat($c) { %r = call i32 @f(i32 1)
          ret i32 %r }
        define i32 @unrelated() { ret i32 7 }
        define i32 @uses_private(i64 %i) { %p = getelementptr [2 x i32], ptr @switch.table, i64 0, i64 %i
          %v = load i32, ptr %p
          ret i32 %v }
        !llvm.module.flags = !{!0}
        !0 = !{i32 8, !"PIC Level", i32 2}
    "#;
    let context = crate::llvm::test_context();
    let buf =
        inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "t");
    let module = context.create_module_from_ir(buf).unwrap();
    let part = extract_definitions(&module, &["g", "table"], false, None);
    part.verify().unwrap();
    let text = part.print_to_string().to_string();
    assert!(
        text.contains("define linkonce_odr i32 @g() comdat"),
        "{text}"
    );
    assert!(text.contains("declare i32 @f(i32)"), "{text}");
    assert!(text.contains("@table = hidden constant"), "{text}");
    assert!(!text.contains("unrelated"), "{text}");
    assert!(!text.contains("@counter"), "{text}");
    assert!(text.contains("PIC Level"), "{text}");
    let f = extract_definitions(&module, &["f"], false, None);
    f.verify().unwrap();
    let text = f.print_to_string().to_string();
    // Only loaded here: its address is not significant in this fragment,
    // whatever other definitions of the unit do with it.
    assert!(
        text.contains("@counter = external hidden local_unnamed_addr global i32"),
        "{text}"
    );
    let p = extract_definitions(&module, &["uses_private"], false, None);
    p.verify().unwrap();
    let text = p.print_to_string().to_string();
    assert!(
        text.contains("@switch.table = private unnamed_addr constant [2 x i32] [i32 3, i32 4]"),
        "{text}"
    );
}

/// A global that only a debug record of a fragment names (its code does
/// not use it) is neither declared in the fragment's module nor one of its
/// references, whether or not the unit keeps it for other definitions: a
/// unit that took the fragment put the global in its object, and its cold
/// compile, whose optimizer had deleted the global, did not.
#[test]
fn a_global_only_a_debug_record_names_is_no_reference() {
    let ir = r#"
        target triple = "x86_64-pc-linux-gnu"
        @msg = hidden unnamed_addr constant [4 x i8] c"abc\00"
        define ptr @keep() { ret ptr @msg }
        define i32 @probe(i32 %x) !dbg !5 {
            #dbg_value(ptr @msg, !8, !DIExpression(), !9)
          ret i32 %x, !dbg !9
        }
        !llvm.dbg.cu = !{!0}
        !llvm.module.flags = !{!3, !4}
        !0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "clang", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug)
        !1 = !DIFile(filename: "t.c", directory: "/tmp")
        !3 = !{i32 7, !"Dwarf Version", i32 5}
        !4 = !{i32 2, !"Debug Info Version", i32 3}
        !5 = distinct !DISubprogram(name: "probe", scope: !1, file: !1, line: 1, type: !6, scopeLine: 1, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !10)
        !6 = !DISubroutineType(types: !7)
        !7 = !{null}
        !8 = !DILocalVariable(name: "what", scope: !5, file: !1, line: 1, type: !11)
        !9 = !DILocation(line: 1, column: 1, scope: !5)
        !10 = !{!8}
        !11 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: null, size: 64)
    "#;
    let context = crate::llvm::test_context();
    let module = parse(&context, ir);
    let reach = fragment_reach(&module, &["probe".to_string()]);
    assert!(!reach.references.contains(&"msg".to_string()), "{reach:?}");
    let fragment = extract_definitions(&module, &["probe"], false, None);
    fragment.verify().unwrap();
    let text = fragment.print_to_string().to_string();
    assert!(!text.contains("@msg"), "{text}");
    assert!(text.contains("#dbg_value(ptr poison"), "{text}");
}

#[test]
fn printed_block_addresses_name_their_blocks_and_leave_the_module_as_it_was() {
    // A computed goto's label table, as clang emits it (blocks unnamed).
    let ir = r#"
        @f.table = internal constant [2 x ptr] [ptr blockaddress(@f, %3), ptr blockaddress(@f, %4)]
        define i32 @f(i32 %0) {
          %2 = getelementptr [2 x ptr], ptr @f.table, i64 0, i32 %0
          %p = load ptr, ptr %2
          indirectbr ptr %p, [label %3, label %4]
        3:
          ret i32 1
        4:
          %5 = add i32 %0, 1
          ret i32 %5
        }
        define i32 @g() { ret i32 0 }
    "#;
    let context = crate::llvm::test_context();
    let buf =
        inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "t");
    let module = context.create_module_from_ir(buf).unwrap();
    let before = module.print_to_string().to_string();
    let text = print_module(&module);
    assert!(
        text.contains(
            "[ptr blockaddress(@f, %repocc.addr.1), ptr blockaddress(@f, %repocc.addr.2)]"
        ),
        "{text}"
    );
    assert!(text.contains("\nrepocc.addr.2:"), "{text}");
    // The value the named blocks no longer number is renumbered.
    assert!(text.contains("%3 = add i32 %0, 1"), "{text}");
    assert!(text.contains("define i32 @g() {\n  ret i32 0\n}"), "{text}");
    assert_eq!(module.print_to_string().to_string(), before);
    // Printed again, the same text; and it reads back as the same code.
    assert_eq!(print_module(&module), text);
    let again = context
        .create_module_from_ir(
            inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(
                text.as_bytes(),
                "t",
            ),
        )
        .unwrap();
    again.verify().unwrap();
    assert_eq!(print_module(&again), text);
}

fn parse<'ctx>(context: &'ctx Context, ir: &str) -> inkwell::module::Module<'ctx> {
    context
        .create_module_from_ir(
            inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "t"),
        )
        .unwrap()
}

/// Unoptimized IR from clang-19 for `c_source` (with `flags`).
fn clang_ir(c_source: &str, flags: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("t.c");
    std::fs::write(&src, c_source).unwrap();
    let out = std::process::Command::new("clang-19")
        .args(["-Xclang", "-disable-llvm-passes", "-S", "-emit-llvm"])
        .args(["-o", "-"])
        .args(flags)
        .arg(&src)
        .output()
        .expect("clang-19");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn one_pipeline_for_many_modules_gives_each_module_its_own_object() {
    use inkwell::targets::FileType;
    let machine = |opt| {
        let tm = test_x86_64_machine(opt);
        set_target_options(
            &tm,
            &ShimTargetOptions {
                function_sections: 1,
                data_sections: 1,
                unique_section_names: 1,
                emit_addrsig: 1,
                use_init_array: 1,
                emit_call_site_info: 0,
                debugger_tuning_gdb: 1,
                large_data_threshold: 0,
            },
        );
        tm
    };
    let sources = [
        "static int twice(int x) { return 2 * x; }\n\
         int f(int x) { const char *s = \"text\"; return twice(x) + s[x & 3]; }\n",
        "#include <stdio.h>\n\
         struct point { int x, y; };\n\
         int g(struct point p, int k) {\n\
           static void *table[] = { &&a, &&b };\n\
           int r = 0;\n\
           goto *table[k & 1];\n\
         a: r = p.x; printf(\"%d\\n\", r); return r;\n\
         b: switch (p.y) { case 1: return 5; case 2: return 9; case 3: return 11; case 4: return 2; }\n\
           return r;\n\
         }\n",
    ];
    for (opt, flags) in [
        (OptimizationLevel::None, &["-O0", "-g"][..]),
        (OptimizationLevel::Default, &["-O2", "-g"][..]),
        (OptimizationLevel::Default, &["-O2"][..]),
    ] {
        let irs: Vec<String> = sources.iter().map(|s| clang_ir(s, flags)).collect();
        let tm = machine(opt);
        let alone: Vec<Vec<u8>> = irs
            .iter()
            .map(|ir| {
                let context = crate::llvm::test_context();
                let object = tm
                    .write_to_memory_buffer(&parse(&context, ir), FileType::Object)
                    .unwrap();
                object.as_slice().to_vec()
            })
            .collect();
        assert_ne!(alone[0], alone[1]);
        // One pipeline, modules in one context and in contexts of their
        // own, in both orders and twice: every object as compiled alone.
        let mut emitter = ObjectEmitter::new(&tm).unwrap();
        let shared = crate::llvm::test_context();
        for i in [0, 1, 1, 0, 0, 1] {
            assert_eq!(
                emitter.emit(&parse(&shared, &irs[i])),
                alone[i],
                "{flags:?} {i}"
            );
            let own = crate::llvm::test_context();
            assert_eq!(
                emitter.emit(&parse(&own, &irs[i])),
                alone[i],
                "{flags:?} {i}"
            );
        }
    }
}

#[test]
fn a_backend_error_in_one_module_leaves_the_pipeline_good_for_the_next() {
    use inkwell::targets::FileType;
    let tm = test_x86_64_machine(OptimizationLevel::None);
    let bad = BAD_INLINE_ASM_IR;
    let good = &clang_ir("int g(int x) { return x * 3 + 1; }\n", &["-O0", "-g"]);
    let alone = {
        let context = crate::llvm::test_context();
        let object = tm
            .write_to_memory_buffer(&parse(&context, good), FileType::Object)
            .unwrap();
        object.as_slice().to_vec()
    };
    let mut emitter = ObjectEmitter::new(&tm).unwrap();
    let reported = with_diagnostic_sink(|context, sink| {
        let _ = emitter.emit(&parse(context, bad));
        sink.first()
    });
    assert!(reported.is_some(), "the inline asm error was not reported");
    let clean = with_diagnostic_sink(|context, sink| {
        let object = emitter.emit(&parse(context, good));
        (object, sink.first())
    });
    assert_eq!(clean.1, None);
    assert_eq!(clean.0, alone);
}

const BODIES_IR: &str = r#"
    target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
    target triple = "x86_64-pc-linux-gnu"
    %struct.S = type { i32, i32 }
    define hidden i32 @sq(i32 %x) {
      %z = add i32 %x, 0
      %m = mul i32 %z, %z
      ret i32 %m
    }
    define hidden i32 @f(ptr %p) {
      %a = getelementptr %struct.S, ptr %p, i64 0, i32 1
      %v = load i32, ptr %a
      %s = call i32 @sq(i32 %v)
      %r = add i32 %s, 1
      ret i32 %r
    }
    define i32 @g(ptr %p) {
      %r = call i32 @f(ptr %p)
      %t = mul i32 %r, 2
      ret i32 %t
    }"#;

fn plain_tuning() -> PipelineTuning {
    PipelineTuning {
        loop_vectorization: 1,
        slp_vectorization: 1,
        loop_unrolling: 1,
        loop_interleaving: 1,
        call_graph_profile: 1,
        merge_functions: 0,
    }
}

fn requests<'a>(r: &[(&'a str, usize, usize)]) -> Vec<BodyRequest<'a>> {
    r.iter()
        .map(|&(name, source, group)| BodyRequest {
            name,
            source,
            group,
        })
        .collect()
}

/// The bitcode of `names` as [`BODIES_IR`] has them, no pass run on
/// them.
fn raw_bodies(context: &Context, names: &[&str]) -> Vec<u8> {
    let raw = parse(context, BODIES_IR);
    extract_definitions(&raw, names, false, None)
        .write_bitcode_to_memory()
        .as_slice()
        .to_vec()
}

/// Runs `default<O2>` on `module`, putting the `requests` (name, blob,
/// group) from `blob` in place right before the inliner; returns which
/// were, and `watch`'s IR right after the inliner.
fn run_substituting(
    module: &inkwell::module::Module,
    tm: &TargetMachine,
    blob: &[u8],
    wanted: &[(&str, usize, usize)],
    watch: &str,
) -> (Vec<bool>, String) {
    run_substituting_at(module, tm, blob, wanted, watch, None)
}

/// [`run_substituting`] with the unit's anchor.
fn run_substituting_at(
    module: &inkwell::module::Module,
    tm: &TargetMachine,
    blob: &[u8],
    wanted: &[(&str, usize, usize)],
    watch: &str,
    anchor: Option<u64>,
) -> (Vec<bool>, String) {
    let mut done = Vec::new();
    let mut after_inliner = String::new();
    run_pipeline_with_hooks(
        module,
        tm,
        "default<O2>",
        &plain_tuning(),
        true,
        &mut |p| match p {
            HookPoint::BeforeInliner => {
                done = substitute_bodies(module, &[blob], &requests(wanted), anchor)
            }
            HookPoint::AfterInliner => after_inliner = function_ir(module, watch),
            HookPoint::OptimizerEarly => {}
        },
    )
    .unwrap();
    (done, after_inliner)
}

/// Runs `default<O2>` on `module` and returns the bitcode of the
/// bodies of `names` as its inliner left them (a first compile's
/// stored bodies).
fn bodies_after_inliner(
    module: &inkwell::module::Module,
    tm: &TargetMachine,
    names: &[&str],
) -> Vec<u8> {
    let mut blob = Vec::new();
    run_pipeline_with_hooks(module, tm, "default<O2>", &plain_tuning(), true, &mut |p| {
        if p == HookPoint::AfterInliner {
            let m = extract_definitions(module, names, false, None);
            blob = m.write_bitcode_to_memory().as_slice().to_vec();
        }
    })
    .unwrap();
    blob
}

fn function_ir(module: &inkwell::module::Module, name: &str) -> String {
    use inkwell::values::AnyValue;
    module
        .get_function(name)
        .unwrap()
        .print_to_string()
        .to_string()
}

#[test]
fn stored_bodies_are_inlined_as_the_first_compile_left_them() {
    let context = crate::llvm::test_context();
    let tm = test_x86_64_machine(OptimizationLevel::Default);
    // The first compile keeps f and sq as its inliner left them.
    let first = parse(&context, BODIES_IR);
    let blob = bodies_after_inliner(&first, &tm, &["sq", "f"]);
    assert!(!blob.is_empty());
    // A second compile of the same module takes them from the blob
    // (read into the same context: `%struct.S` is renamed there and
    // must map back) and makes the same g.
    let second = parse(&context, BODIES_IR);
    let (done, at_inliner_end) = run_substituting(
        &second,
        &tm,
        &blob,
        &[("f", 0, 0), ("sq", 0, 1), ("nosuch", 0, 2)],
        "f",
    );
    assert_eq!(done, vec![true, true, false]);
    assert_eq!(function_ir(&first, "g"), function_ir(&second, "g"));
    assert_eq!(function_ir(&first, "f"), function_ir(&second, "f"));
    assert!(!at_inliner_end.contains("%struct.S."), "{at_inliner_end}");
    // The shim's `kSubstitutedAttr` is gone once the inliner is done.
    assert!(!second
        .print_to_string()
        .to_string()
        .contains("repocc-substituted"));
}

#[test]
fn no_pass_runs_on_a_stored_body_before_the_inliner_is_done() {
    let context = crate::llvm::test_context();
    let tm = test_x86_64_machine(OptimizationLevel::Default);
    // A blob of bodies no pass ran on: sq keeps its `add i32 %x, 0`.
    let blob = raw_bodies(&context, &["sq", "f"]);
    let module = parse(&context, BODIES_IR);
    let (done, sq_after_inliner) = run_substituting(&module, &tm, &blob, &[("sq", 0, 0)], "sq");
    assert_eq!(done, vec![true]);
    assert!(
        sq_after_inliner.contains("add i32 %x, 0"),
        "{sq_after_inliner}"
    );
    // f, not taken from the blob, was simplified: sq inlined.
    assert!(!function_ir(&module, "f").contains("call"));
}

#[test]
fn statics_only_a_replaced_body_called_are_deleted_with_it() {
    // helper is local and f its one caller: the first compile's
    // inliner inlines it and deletes it. In the second compile f's
    // stored body (helper already inlined) replaces f's, and helper,
    // called by nothing now, must go too: left in place, it would
    // reach dead-argument elimination, which rewrites a local function
    // without callers (and marks its debug subprogram `DW_CC_nocall`).
    const IR: &str = r#"
define internal i32 @helper(i32 %x, i32 %unused) {
  %y = mul i32 %x, 3
  ret i32 %y
}
define internal i32 @only_helper_calls(i32 %x) {
  %y = add i32 %x, 1
  ret i32 %y
}
define internal i32 @kept(i32 %x) noinline {
  %y = sub i32 %x, 1
  ret i32 %y
}
define i32 @f(i32 %a) {
  %r = call i32 @helper(i32 %a, i32 7)
  %s = call i32 @only_helper_calls(i32 %r)
  ret i32 %s
}
define i32 @g(i32 %a) {
  %r = call i32 @kept(i32 %a)
  ret i32 %r
}
"#;
    let context = crate::llvm::test_context();
    let tm = test_x86_64_machine(OptimizationLevel::Default);
    let first = parse(&context, IR);
    let blob = bodies_after_inliner(&first, &tm, &["f"]);
    let second = parse(&context, IR);
    let mut done = Vec::new();
    let mut after_substitution = Vec::new();
    run_pipeline_with_hooks(
        &second,
        &tm,
        "default<O2>",
        &plain_tuning(),
        true,
        &mut |p| {
            if p == HookPoint::BeforeInliner {
                done = substitute_bodies(&second, &[&blob], &requests(&[("f", 0, 0)]), None);
                after_substitution = ["helper", "only_helper_calls", "kept", "f"]
                    .iter()
                    .map(|n| second.get_function(n).is_some())
                    .collect();
            }
        },
    )
    .unwrap();
    assert_eq!(done, vec![true]);
    // kept is still called (by g); f's stored body calls neither of
    // the others.
    assert_eq!(after_substitution, vec![false, false, true, true]);
    assert_eq!(function_ir(&first, "f"), function_ir(&second, "f"));
}

#[test]
fn a_group_is_replaced_whole_or_not_at_all() {
    let context = crate::llvm::test_context();
    let tm = test_x86_64_machine(OptimizationLevel::Default);
    // Bodies no pass ran on (see the test above), of functions that
    // use no struct type: the unit's optimizer may have dropped its
    // uses of `%struct.S` before the inliner, and a body using a type
    // the unit lacks is not put in place.
    let blob = raw_bodies(&context, &["sq", "g"]);
    // g's group also holds a function the blob lacks, and sq names a
    // blob there is not: nothing is replaced.
    let module = parse(&context, BODIES_IR);
    let (done, _) = run_substituting(
        &module,
        &tm,
        &blob,
        &[("g", 0, 7), ("nosuch", 0, 7), ("sq", 3, 8)],
        "sq",
    );
    assert_eq!(done, vec![false, false, false]);
    // Nothing was replaced, so the optimizer simplified sq as usual.
    assert!(!function_ir(&module, "sq").contains("add i32 %x, 0"));
    let again = parse(&context, BODIES_IR);
    let (done, sq_after_inliner) =
        run_substituting(&again, &tm, &blob, &[("g", 0, 7), ("sq", 0, 7)], "sq");
    assert_eq!(done, vec![true, true]);
    // Put in place: sq keeps the `add i32 %x, 0` no pass removed.
    assert!(
        sq_after_inliner.contains("add i32 %x, 0"),
        "{sq_after_inliner}"
    );
}

/// sq, f (a lexical block; inlines sq) and g of a C file compiled with
/// `-g`, after mem2reg; the struct and its typedef on line 1.
const DEBUG_BODIES_IR: &str = r#"
    target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
    target triple = "x86_64-pc-linux-gnu"
    %struct.pair = type { i32, i32 }
    define dso_local i32 @f(ptr noundef %p) !dbg !9 {
    entry:
        #dbg_value(ptr %p, !20, !DIExpression(), !24)
      %b = getelementptr inbounds %struct.pair, ptr %p, i32 0, i32 1, !dbg !25
      %0 = load i32, ptr %b, align 4, !dbg !25
        #dbg_value(i32 %0, !21, !DIExpression(), !24)
      %call = call i32 @sq(i32 noundef %0), !dbg !31
        #dbg_value(i32 %call, !22, !DIExpression(), !32)
      %add = add nsw i32 %call, 1, !dbg !33
      ret i32 %add, !dbg !34
    }
    define hidden i32 @sq(i32 noundef %x) !dbg !35 {
    entry:
        #dbg_value(i32 %x, !39, !DIExpression(), !41)
      %add = add nsw i32 %x, 0, !dbg !42
        #dbg_value(i32 %add, !40, !DIExpression(), !41)
      %mul = mul nsw i32 %add, %add, !dbg !43
      ret i32 %mul, !dbg !44
    }
    define dso_local i32 @g(ptr noundef %p) !dbg !45 {
    entry:
        #dbg_value(ptr %p, !47, !DIExpression(), !48)
      %call = call i32 @f(ptr noundef %p), !dbg !49
      %mul = mul nsw i32 %call, 2, !dbg !50
      ret i32 %mul, !dbg !51
    }
    !llvm.dbg.cu = !{!0}
    !llvm.module.flags = !{!2, !3}
    !0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "Debian clang version 19.1.7 (3~deb12u1)", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug, splitDebugInlining: false, nameTableKind: None)
    !1 = !DIFile(filename: "dt.c", directory: "/tmp/dx", checksumkind: CSK_MD5, checksum: "5a7e1c1c887f53d47c7ca5b5d56771eb")
    !2 = !{i32 7, !"Dwarf Version", i32 5}
    !3 = !{i32 2, !"Debug Info Version", i32 3}
    !9 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 6, type: !10, scopeLine: 6, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !19)
    !10 = !DISubroutineType(types: !11)
    !11 = !{!12, !13}
    !12 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
    !13 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !14, size: 64)
    !14 = !DIDerivedType(tag: DW_TAG_typedef, name: "pair", file: !1, line: 1, baseType: !15)
    !15 = distinct !DICompositeType(tag: DW_TAG_structure_type, name: "pair", file: !1, line: 1, size: 64, elements: !16)
    !16 = !{!17, !18}
    !17 = !DIDerivedType(tag: DW_TAG_member, name: "a", scope: !15, file: !1, line: 1, baseType: !12, size: 32)
    !18 = !DIDerivedType(tag: DW_TAG_member, name: "b", scope: !15, file: !1, line: 1, baseType: !12, size: 32, offset: 32)
    !19 = !{!20, !21, !22}
    !20 = !DILocalVariable(name: "p", arg: 1, scope: !9, file: !1, line: 6, type: !13)
    !21 = !DILocalVariable(name: "v", scope: !9, file: !1, line: 7, type: !12)
    !22 = !DILocalVariable(name: "s", scope: !23, file: !1, line: 9, type: !12)
    !23 = distinct !DILexicalBlock(scope: !9, file: !1, line: 8, column: 3)
    !24 = !DILocation(line: 0, scope: !9)
    !25 = !DILocation(line: 7, column: 14, scope: !9)
    !31 = !DILocation(line: 9, column: 13, scope: !23)
    !32 = !DILocation(line: 0, scope: !23)
    !33 = !DILocation(line: 10, column: 14, scope: !23)
    !34 = !DILocation(line: 10, column: 5, scope: !23)
    !35 = distinct !DISubprogram(name: "sq", scope: !1, file: !1, line: 2, type: !36, scopeLine: 2, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !38)
    !36 = !DISubroutineType(types: !37)
    !37 = !{!12, !12}
    !38 = !{!39, !40}
    !39 = !DILocalVariable(name: "x", arg: 1, scope: !35, file: !1, line: 2, type: !12)
    !40 = !DILocalVariable(name: "z", scope: !35, file: !1, line: 3, type: !12)
    !41 = !DILocation(line: 0, scope: !35)
    !42 = !DILocation(line: 3, column: 13, scope: !35)
    !43 = !DILocation(line: 4, column: 12, scope: !35)
    !44 = !DILocation(line: 4, column: 3, scope: !35)
    !45 = distinct !DISubprogram(name: "g", scope: !1, file: !1, line: 13, type: !10, scopeLine: 13, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !46)
    !46 = !{!47}
    !47 = !DILocalVariable(name: "p", arg: 1, scope: !45, file: !1, line: 13, type: !13)
    !48 = !DILocation(line: 0, scope: !45)
    !49 = !DILocation(line: 13, column: 25, scope: !45)
    !50 = !DILocation(line: 13, column: 30, scope: !45)
    !51 = !DILocation(line: 13, column: 18, scope: !45)
"#;

/// `ir` with every line from `from` on moved down by `by`.
fn lines_moved(ir: &str, from: u64, by: u64) -> String {
    let mut out = String::new();
    let mut rest = ir;
    while let Some(at) = rest.find("ine: ") {
        let (head, tail) = rest.split_at(at + 5);
        out.push_str(head);
        let digits = tail.chars().take_while(char::is_ascii_digit).count();
        let n: u64 = tail[..digits].parse().unwrap();
        out.push_str(&(if n >= from { n + by } else { n }).to_string());
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

/// The blob of sq and f as `ir`'s inliner leaves them, with the anchor
/// (line 1) as `bodies::snapshot` records it.
fn debug_bodies_after_inliner(context: &Context, tm: &TargetMachine, ir: &str) -> Vec<u8> {
    let first = parse(context, ir);
    let mut blob = Vec::new();
    run_pipeline_with_hooks(&first, tm, "default<O2>", &plain_tuning(), true, &mut |p| {
        if p == HookPoint::AfterInliner {
            let m = extract_definitions_sharing_metadata(&first, &["sq", "f"]);
            let anchor = context.i64_type().const_int(1, false);
            m.add_global_metadata("repocc.anchor", &context.metadata_node(&[anchor.into()]))
                .unwrap();
            blob = shared_bitcode(&m).as_slice().to_vec();
        }
    })
    .unwrap();
    blob
}

#[test]
fn a_bodies_snapshot_shares_the_units_debug_info_and_leaves_the_unit_as_it_was() {
    // f's call names h in `!callees`: that node is the snapshot's own
    // (h is declared there); the rest is the unit's, compile unit
    // included, whose list of globals stays out of the bitcode.
    let ir = r#"
        target triple = "x86_64-pc-linux-gnu"
        @counter = global i32 0, !dbg !20
        define void @h() { ret void }
        define void @f(ptr %fp) !dbg !9 {
          call void %fp(), !dbg !12, !callees !13
          ret void, !dbg !12
        }
        !llvm.dbg.cu = !{!0}
        !llvm.module.flags = !{!2, !3}
        !0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "clang", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug, globals: !21)
        !1 = !DIFile(filename: "s.c", directory: "/tmp")
        !2 = !{i32 7, !"Dwarf Version", i32 5}
        !3 = !{i32 2, !"Debug Info Version", i32 3}
        !9 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 3, type: !10, scopeLine: 3, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
        !10 = !DISubroutineType(types: !11)
        !11 = !{null}
        !12 = !DILocation(line: 4, column: 3, scope: !9)
        !13 = !{ptr @h}
        !20 = !DIGlobalVariableExpression(var: !22, expr: !DIExpression())
        !21 = !{!20}
        !22 = distinct !DIGlobalVariable(name: "counter", scope: !0, file: !1, line: 1, type: !23, isLocal: false, isDefinition: true)
        !23 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
    "#;
    use inkwell::values::AsValueRef;
    let context = crate::llvm::test_context();
    let unit = parse(&context, ir);
    let before = unit.print_to_string().to_string();
    let snapshot = extract_definitions_sharing_metadata(&unit, &["f"]);
    let subprogram = |m: &inkwell::module::Module| {
        let f = m.get_function("f").unwrap();
        // SAFETY: `f` is a live function of a live module.
        unsafe { llvm_sys::debuginfo::LLVMGetSubprogram(f.as_value_ref()) }
    };
    assert!(!subprogram(&unit).is_null());
    assert_eq!(subprogram(&snapshot), subprogram(&unit));
    let bitcode = shared_bitcode(&snapshot);
    drop(snapshot);
    assert_eq!(unit.print_to_string().to_string(), before);
    let other = crate::llvm::test_context();
    let read = inkwell::module::Module::parse_bitcode_from_buffer(&bitcode, &other).unwrap();
    read.verify().unwrap();
    let text = read.print_to_string().to_string();
    assert!(text.contains("!callees"), "{text}");
    assert!(text.contains("declare void @h()"), "{text}");
    assert!(text.contains("!{ptr @h}"), "{text}");
    assert!(text.contains("distinct !DICompileUnit"), "{text}");
    assert!(!text.contains("globals:"), "{text}");
    assert!(!text.contains("counter"), "{text}");
}

/// Puts f (group 0) and sq (group 1) in place from `blob` in
/// `module`, whose anchor is `anchor`; which were.
fn substitute_f_and_sq(
    module: &inkwell::module::Module,
    tm: &TargetMachine,
    blob: &[u8],
    anchor: u64,
) -> Vec<bool> {
    let wanted = [("f", 0, 0), ("sq", 0, 1)];
    run_substituting_at(module, tm, blob, &wanted, "f", Some(anchor)).0
}

#[test]
fn stored_bodies_with_debug_info_take_the_units_metadata_and_lines() {
    let context = crate::llvm::test_context();
    let tm = test_x86_64_machine(OptimizationLevel::Default);
    let blob = debug_bodies_after_inliner(&context, &tm, DEBUG_BODIES_IR);
    // Ten lines added between sq and f: f's and g's lines move, sq's,
    // the struct's and the anchor stay. The stored f holds sq's code
    // inlined (sq's lines) in f's lexical block (f's).
    let moved = lines_moved(DEBUG_BODIES_IR, 5, 10);
    let warm = parse(&context, &moved);
    let done = substitute_f_and_sq(&warm, &tm, &blob, 1);
    assert_eq!(done, vec![true, true]);
    let cold = parse(&context, &moved);
    run_pipeline_with_hooks(
        &cold,
        &tm,
        "default<O2>",
        &plain_tuning(),
        true,
        &mut |_| {},
    )
    .unwrap();
    // One compile unit, the unit's nodes, the moved lines: what a
    // compile without stored bodies makes.
    let warm_ir = warm.print_to_string().to_string();
    assert_eq!(warm_ir, cold.print_to_string().to_string());
    assert!(warm_ir.contains("line: 19, column: 13"), "{warm_ir}");
    assert!(warm.verify().is_ok());
}

#[test]
fn a_stored_body_naming_debug_info_the_unit_lacks_stays_out() {
    let context = crate::llvm::test_context();
    let tm = test_x86_64_machine(OptimizationLevel::Default);
    let blob = debug_bodies_after_inliner(&context, &tm, DEBUG_BODIES_IR);
    // f's local `v` is `w` in this unit: the stored f names a variable
    // the unit does not have. sq, a group of its own, is still taken.
    let renamed = DEBUG_BODIES_IR.replace(r#"name: "v""#, r#"name: "w""#);
    let module = parse(&context, &renamed);
    let done = substitute_f_and_sq(&module, &tm, &blob, 1);
    assert_eq!(done, vec![false, true]);
    // The file-level lines moved, but the blob's anchor did not: the
    // struct's typedef would not be the unit's.
    let moved = lines_moved(DEBUG_BODIES_IR, 1, 10);
    let module = parse(&context, &moved);
    let done = substitute_f_and_sq(&module, &tm, &blob, 1);
    assert_eq!(done, vec![false, true]);
    // With the anchor moved as well, both are.
    let module = parse(&context, &moved);
    let done = substitute_f_and_sq(&module, &tm, &blob, 11);
    assert_eq!(done, vec![true, true]);
}

/// Two fragments linked into one batch: each keeps its definitions under
/// its own suffix (COMDAT groups too), a call to the other's function
/// stays a call to a declaration of the original name, every definition
/// is linked (local and linkonce ones that nothing else names included),
/// and each fragment's functions follow in their own order.
#[test]
fn fragments_link_into_a_batch_apart_and_in_order() {
    let context = crate::llvm::test_context();
    share_debug_types_by_identifier(&context);
    let first = parse(
        &context,
        r#"
        $g = comdat any
        declare void @h()
        define void @f() {
          call void @h()
          call void @local()
          ret void
        }
        define internal void @local() {
          ret void
        }
        define linkonce_odr void @g() comdat {
          ret void
        }"#,
    );
    let second = parse(
        &context,
        r#"
        define void @h() {
          ret void
        }"#,
    );
    let batch = context.create_module("batch");
    let mut linker = BatchLinker::new(&batch);
    linker.link(first, ".F0").unwrap();
    linker.link(second, ".F1").unwrap();
    drop(linker);
    let defined: Vec<String> = batch
        .get_functions()
        .filter(|f| f.count_basic_blocks() > 0)
        .map(|f| f.get_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(defined, ["f.F0", "local.F0", "g.F0", "h.F1"]);
    let text = batch.print_to_string().to_string();
    assert!(text.contains("call void @h()"), "{text}");
    assert!(text.contains("declare void @h()"), "{text}");
    assert!(text.contains("$g.F0 = comdat any"), "{text}");
    assert!(text.contains("@g.F0() comdat {"), "{text}");
}

/// A module with two types of one identifier is found; one naming a type
/// local to a function goes in a batch.
#[test]
fn two_types_of_one_identifier_are_found() {
    let context = crate::llvm::test_context();
    let module = |types: &str| {
        parse(
            &context,
            &format!(
                r#"
                define void @f() !dbg !5 {{
                  ret void
                }}
                !llvm.dbg.cu = !{{!0}}
                !llvm.module.flags = !{{!3, !4}}
                !0 = distinct !DICompileUnit(language: DW_LANG_C_plus_plus_14, file: !1, isOptimized: false, emissionKind: FullDebug, retainedTypes: !2)
                !1 = !DIFile(filename: "a.cc", directory: "/d")
                !3 = !{{i32 7, !"Dwarf Version", i32 5}}
                !4 = !{{i32 2, !"Debug Info Version", i32 3}}
                !5 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 1, type: !6, scopeLine: 1, spFlags: DISPFlagDefinition, unit: !0)
                !6 = !DISubroutineType(types: !{{null}})
                {types}"#
            ),
        )
    };
    let one = module(
        r#"!2 = !{!7}
        !7 = distinct !DICompositeType(tag: DW_TAG_structure_type, name: "S", file: !1, size: 8, identifier: "_ZTS1S")"#,
    );
    assert!(!debug_types_unshareable(&one));
    let local = module(
        r#"!2 = !{!7}
        !7 = distinct !DICompositeType(tag: DW_TAG_structure_type, name: "L", scope: !5, file: !1, size: 8, identifier: "_ZTSZ1fvE1L")"#,
    );
    // A type local to a function is the fragment's own in a batch too (a
    // class named after it may be a type unit per fragment: the carver
    // takes the one its compile unit made).
    assert!(!debug_types_unshareable(&local));
    let twice = module(
        r#"!2 = !{!7, !8}
        !7 = distinct !DICompositeType(tag: DW_TAG_structure_type, name: "T", file: !1, flags: DIFlagFwdDecl, identifier: "repocc.1")
        !8 = distinct !DICompositeType(tag: DW_TAG_structure_type, name: "T", file: !1, flags: DIFlagFwdDecl, identifier: "repocc.1")"#,
    );
    assert!(debug_types_unshareable(&twice));
}

#[test]
fn a_lookup_table_two_functions_share_becomes_one_each() {
    let ir = r#"
        target triple = "x86_64-pc-linux-gnu"
        @.a = private unnamed_addr constant [2 x i8] c"a\00"
        @.b = private unnamed_addr constant [2 x i8] c"b\00"
        @switch.table.second = private unnamed_addr constant [2 x ptr] [ptr @.a, ptr @.b]
        @exported = constant [2 x ptr] [ptr @.a, ptr @.b]
        define ptr @first(i64 %i) { %p = getelementptr [2 x ptr], ptr @switch.table.second, i64 0, i64 %i
          %v = load ptr, ptr %p
          ret ptr %v }
        define ptr @second(i64 %i) { %p = getelementptr [2 x ptr], ptr @switch.table.second, i64 0, i64 %i
          %v = load ptr, ptr %p
          ret ptr %v }
        define ptr @third(i64 %i) { %p = getelementptr [2 x ptr], ptr @exported, i64 0, i64 %i
          %v = load ptr, ptr %p
          %q = getelementptr [2 x ptr], ptr @exported, i64 0, i64 1
          ret ptr %q }
        !llvm.module.flags = !{!0}
        !0 = !{i32 8, !"PIC Level", i32 2}
    "#;
    let context = crate::llvm::test_context();
    let module = parse(&context, ir);
    // One copy: for `second` (the first function in module order keeps the
    // table); `exported` is no local table.
    assert_eq!(split_shared_lookup_tables(&module), 1);
    module.verify().unwrap();
    // Each named as the switch conversion names a table it makes.
    assert_eq!(number_lookup_tables(&module), 2);
    let text = module.print_to_string().to_string();
    assert!(
        text.contains(
            "@switch.table.second = private unnamed_addr constant [2 x ptr] [ptr @.a, ptr @.b]"
        ),
        "{text}"
    );
    assert!(
        text.contains("ptr @switch.table.first, i64 0, i64 %i"),
        "{text}"
    );
    assert!(
        text.contains("ptr @switch.table.second, i64 0, i64 %i"),
        "{text}"
    );
    // Each table has one function's uses now: nothing more to split.
    assert_eq!(split_shared_lookup_tables(&module), 0);
}

#[test]
fn a_functions_lookup_tables_are_numbered_by_that_function_alone() {
    // `g`'s tables as LLVM names them after six collisions elsewhere in
    // the module, and one table two functions use.
    let ir = r#"
        target triple = "x86_64-pc-linux-gnu"
        @switch.table.g.7 = private unnamed_addr constant [2 x i32] [i32 5, i32 6]
        @switch.table.g = private unnamed_addr constant [2 x i32] [i32 1, i32 2]
        @reltable.g.9 = private unnamed_addr constant [2 x i32] [i32 3, i32 4]
        @switch.table.h.3 = private unnamed_addr constant [2 x i32] [i32 7, i32 8]
        define i32 @g(i64 %i) { %p = getelementptr [2 x i32], ptr @switch.table.g.7, i64 0, i64 %i
          %v = load i32, ptr %p
          %q = getelementptr [2 x i32], ptr @switch.table.g, i64 0, i64 %i
          %w = load i32, ptr %q
          %r = getelementptr [2 x i32], ptr @reltable.g.9, i64 0, i64 %i
          %x = load i32, ptr %r
          %s = getelementptr [2 x i32], ptr @switch.table.h.3, i64 0, i64 %i
          %y = load i32, ptr %s
          %a = add i32 %v, %w
          %b = add i32 %a, %x
          %c = add i32 %b, %y
          ret i32 %c }
        define i32 @h(i64 %i) { %p = getelementptr [2 x i32], ptr @switch.table.h.3, i64 0, i64 %i
          %v = load i32, ptr %p
          ret i32 %v }
    "#;
    let context = crate::llvm::test_context();
    let module = parse(&context, ir);
    assert_eq!(number_lookup_tables(&module), 3);
    module.verify().unwrap();
    let text = module.print_to_string().to_string();
    // In the order of their first use in `g`, each kind counted apart.
    for (name, init) in [
        ("switch.table.g", "[i32 5, i32 6]"),
        ("switch.table.g.1", "[i32 1, i32 2]"),
        ("reltable.g", "[i32 3, i32 4]"),
        ("switch.table.h.3", "[i32 7, i32 8]"),
    ] {
        let line = format!("@{name} = private unnamed_addr constant [2 x i32] {init}");
        assert!(text.contains(&line), "{line} in {text}");
    }
    // Numbered again, nothing changes.
    assert_eq!(number_lookup_tables(&module), 0);
}

#[test]
fn member_declarations_only_a_class_lists_become_distinct() {
    let context = crate::llvm::test_context();
    let module = |language: &str| {
        parse(
            &context,
            &format!(
                r#"
                define void @f() !dbg !5 {{
                  ret void
                }}
                declare !dbg !11 void @_ZN1C1bEv()
                !llvm.dbg.cu = !{{!0}}
                !llvm.module.flags = !{{!3, !4}}
                !0 = distinct !DICompileUnit(language: {language}, file: !1, isOptimized: true, emissionKind: FullDebug, retainedTypes: !2, imports: !14)
                !1 = !DIFile(filename: "a.cc", directory: "/d")
                !2 = !{{!7}}
                !3 = !{{i32 7, !"Dwarf Version", i32 5}}
                !4 = !{{i32 2, !"Debug Info Version", i32 3}}
                !5 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 1, type: !6, scopeLine: 1, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
                !6 = !DISubroutineType(types: !{{null}})
                !7 = distinct !DICompositeType(tag: DW_TAG_class_type, name: "C", file: !1, line: 2, size: 8, elements: !8)
                !8 = !{{!10, !11, !12}}
                !10 = !DISubprogram(name: "a", linkageName: "_ZN1C1aEv", scope: !7, file: !1, line: 3, type: !6, scopeLine: 3, spFlags: DISPFlagOptimized)
                !11 = !DISubprogram(name: "b", linkageName: "_ZN1C1bEv", scope: !7, file: !1, line: 4, type: !6, scopeLine: 4, spFlags: DISPFlagOptimized)
                !12 = !DISubprogram(name: "c", linkageName: "_ZN1C1cEv", scope: !7, file: !1, line: 5, type: !6, scopeLine: 5, spFlags: DISPFlagOptimized)
                !13 = !DIImportedEntity(tag: DW_TAG_imported_declaration, scope: !1, entity: !12, file: !1, line: 6)
                !14 = !{{!13}}"#
            ),
        )
    };
    // How many nodes the module prints for member `name`, and how many of
    // them are distinct.
    let members = |m: &inkwell::module::Module, name: &str| {
        let text = print_module(m);
        let lines: Vec<&str> = (text.lines())
            .filter(|l| l.contains(&format!("!DISubprogram(name: \"{name}\"")))
            .collect();
        let distinct = lines.iter().filter(|l| l.contains("= distinct !")).count();
        (lines.len(), distinct)
    };
    let cxx = module("DW_LANG_C_plus_plus_14");
    assert_eq!(distinct_member_declarations(&cxx), 1);
    cxx.verify().unwrap();
    // `a`, which only the class lists, is one distinct node, the one the
    // class lists (the printer shows what the module reaches); `b`, a
    // function's declaration (its `!dbg` must be uniqued), and `c`, which
    // an imported entity names too, stay as they were.
    assert_eq!(members(&cxx, "a"), (1, 1));
    assert_eq!(members(&cxx, "b"), (1, 0));
    assert_eq!(members(&cxx, "c"), (1, 0));
    assert_eq!(distinct_member_declarations(&cxx), 0);
    // Not C: its fragments hold no classes as C++ does.
    let c = module("DW_LANG_C11");
    assert_eq!(distinct_member_declarations(&c), 0);
    assert_eq!(members(&c, "a"), (1, 0));
}
