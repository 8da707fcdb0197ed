//! Stage 8, composition: the object at the user's `-o`. Definitions the
//! canonical stage made hidden external for the optimizer are local symbols
//! again, so two units' `static int counter` stay separate, exactly as in
//! clang's object. The fragments are combined and the symbols localized in
//! process (`obj::combine`); where that declines (an object it does not
//! handle), `ld.lld -r` and `llvm-objcopy --localize-symbols` do it as
//! before. The object is written atomically (a temporary file in the
//! output's directory, then a rename).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};

use crate::obj::Decline;
use crate::support::output;

/// An LLVM 19 tool: `name-19` on PATH, else LLVM 19's own bin directory.
fn llvm_tool(name: &str, cache: &'static OnceLock<Option<PathBuf>>) -> Result<&'static Path> {
    cache
        .get_or_init(|| {
            which::which(format!("{name}-19")).ok().or_else(|| {
                let p = PathBuf::from("/usr/lib/llvm-19/bin").join(name);
                p.exists().then_some(p)
            })
        })
        .as_deref()
        .with_context(|| format!("{name}-19 not found (install llvm-19 and lld-19)"))
}

fn lld() -> Result<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    llvm_tool("ld.lld", &FOUND)
}

fn objcopy() -> Result<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    llvm_tool("llvm-objcopy", &FOUND)
}

/// The unit's constructor and destructor tables in the order its code
/// generator would write them, as the composer takes them
/// (`obj::structor_order::table_entry`).
pub fn structor_tables(module: &inkwell::module::Module) -> Vec<String> {
    (crate::llvm::structor_order(module).iter())
        .map(|(dtor, priority, key)| crate::obj::structor_order::table_entry(*dtor, *priority, key))
        .collect()
}

/// Whether the unit `module` must be compiled whole for the order of its
/// constructor and destructor tables: the in-process composer places them
/// as clang does, `ld.lld -r` (what composes the objects of other targets,
/// i386's) keeps the fragments' order.
pub fn whole_for_structor_order(module: &inkwell::module::Module) -> bool {
    let triple = module.get_triple();
    !crate::obj::combine::composes_for_triple(&triple.as_str().to_string_lossy())
        && crate::obj::structor_order::order_matters(&structor_tables(module))
}

/// How a recipe records the code fill (see `unit_cache::recipe`).
pub fn fill_byte(fill: crate::obj::combine::CodeFill) -> u8 {
    match fill {
        crate::obj::combine::CodeFill::Trap => u8::MAX,
        crate::obj::combine::CodeFill::Nops(n) => n.min(u8::MAX - 1),
    }
}

/// The unit cache's composer (`unit_cache::recipe::Composer`): what
/// [`compose_fragments`] does in process, giving the object's bytes.
pub fn compose_for_recipe(
    objects: &[&[u8]],
    locals: &[String],
    unnamed: &[String],
    structors: &[String],
    fill: u8,
) -> Option<Vec<u8>> {
    let fill = match fill {
        u8::MAX => crate::obj::combine::CodeFill::Trap,
        n => crate::obj::combine::CodeFill::Nops(n),
    };
    crate::obj::combine::combine_filling(objects, locals, unnamed, structors, fill).ok()
}

/// Combines fragment objects, in order, into one relocatable object, its
/// constructor and destructor tables last in the order of `structors`
/// (`llvm::structor_order`), and writes it like [`write_object`]; returns
/// the digest (blake3) of what it wrote. Where `obj::combine` declines (the reason is returned, for
/// the statistics), `ld.lld -r` combines them over a single archive of
/// them (thousands of fragments cost one file).
pub fn compose_fragments(
    objects: &[&[u8]],
    locals: &[String],
    unnamed: &[String],
    structors: &[String],
    fill: crate::obj::combine::CodeFill,
    output: &Path,
) -> Result<std::result::Result<[u8; 32], Decline>> {
    let decline =
        match crate::obj::combine::combine_filling(objects, locals, unnamed, structors, fill) {
            Ok(bytes) => {
                output::write_output(output, &bytes)?;
                return Ok(Ok(*blake3::hash(&bytes).as_bytes()));
            }
            Err(decline) => decline,
        };
    // `ld.lld -r` keeps sections in the parts' order, where the glue's
    // shared constructor table comes first and keyed ones in fragment
    // order: clang compiles such a unit (a C++ inline variable's
    // initializer must run after those of the ones defined before it).
    if crate::obj::structor_order::order_matters(structors) {
        bail!("composing with ld.lld -r ({decline}) would not keep the order of the unit's keyed initializers");
    }
    let dir = tempfile::Builder::new()
        .prefix("repocc-fragments")
        .tempdir()
        .context("creating a directory for fragments")?;
    let archive = dir.path().join("fragments.a");
    let objects: Vec<std::borrow::Cow<[u8]>> = objects
        .iter()
        .map(|o| crate::obj::combine::unwind_aligned_to_records(o))
        .collect();
    let objects: Vec<&[u8]> = objects.iter().map(|o| o.as_ref()).collect();
    std::fs::write(&archive, ar_archive(&objects))
        .with_context(|| format!("writing {}", archive.display()))?;
    let combined = dir.path().join("combined.o");
    let tool = lld()?;
    let out = Command::new(tool)
        .arg("-r")
        .arg("-o")
        .arg(&combined)
        .arg("--whole-archive")
        .arg(&archive)
        .output()
        .with_context(|| format!("running {}", tool.display()))?;
    if !out.status.success() {
        bail!(
            "{} -r failed for {}: {}",
            tool.display(),
            output.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let bytes = std::fs::read(&combined).context("reading the composed object")?;
    write_object(&bytes, locals, unnamed, fill, output)?;
    Ok(Err(decline))
}

/// A System V `ar` archive of the objects, members named `f<N>.o`, in
/// order, with zero timestamps (deterministic).
pub fn ar_archive(objects: &[&[u8]]) -> Vec<u8> {
    let total: usize = objects.iter().map(|o| o.len() + 61).sum();
    let mut out = Vec::with_capacity(8 + total);
    out.extend_from_slice(b"!<arch>\n");
    for (i, o) in objects.iter().enumerate() {
        let header = format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            format!("f{i}.o/"),
            0,
            0,
            0,
            644,
            o.len()
        );
        debug_assert_eq!(header.len(), 60);
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(o);
        if o.len() % 2 == 1 {
            out.push(b'\n');
        }
    }
    out
}

/// Writes `object` to `output` with `locals` made local symbols and the
/// symbols of `unnamed` (a subset: private in the source) left out where
/// `obj::combine` can; the external tools keep them as locals (and the
/// reason `obj::combine` declined is returned, for the statistics).
pub fn write_object(
    object: &[u8],
    locals: &[String],
    unnamed: &[String],
    fill: crate::obj::combine::CodeFill,
    output: &Path,
) -> Result<Option<Decline>> {
    if locals.is_empty() {
        return output::write_output(output, object).map(|()| None);
    }
    let decline = match crate::obj::combine::combine_filling(&[object], locals, unnamed, &[], fill)
    {
        Ok(bytes) => return output::write_output(output, &bytes).map(|()| None),
        Err(decline) => decline,
    };
    // A device or FIFO output: localize in a temporary file, then write the
    // result in place.
    let special = output::is_special(output);
    let tmp = if special {
        let mut builder = tempfile::Builder::new();
        builder.prefix("repocc-object").suffix(".o");
        let mut t =
            crate::support::temporaries::TemporaryFile::new_in(&builder, &std::env::temp_dir())
                .context("creating a temporary object")?;
        t.write_all(object)?;
        t
    } else {
        output::temporary_beside(output, object)?
    };
    let list = symbol_list("repocc-locals", locals.iter().cloned())?;
    // The private constants get `.L` names, as `obj::combine`
    // gives them (localizing matches the old name, renaming comes after).
    let renames = symbol_list(
        "repocc-renames",
        unnamed.iter().map(|u| format!("{u} .L{u}")),
    )?;
    let tool = objcopy()?;
    let out = Command::new(tool)
        .arg(format!("--localize-symbols={}", list.path().display()))
        .arg(format!("--redefine-syms={}", renames.path().display()))
        .arg(tmp.path())
        .output()
        .with_context(|| format!("running {}", tool.display()))?;
    if !out.status.success() {
        bail!(
            "{} failed on {}: {}",
            tool.display(),
            output.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    if special {
        let bytes = std::fs::read(tmp.path()).context("reading the localized object")?;
        output::write_in_place(output, &bytes)?;
        return Ok(Some(decline));
    }
    tmp.persist(output)
        .with_context(|| format!("renaming onto {}", output.display()))?;
    Ok(Some(decline))
}

/// A temporary file of `lines`, one a line, for llvm-objcopy's list options.
fn symbol_list(
    prefix: &str,
    lines: impl Iterator<Item = String>,
) -> Result<tempfile::NamedTempFile> {
    let mut list = tempfile::Builder::new()
        .prefix(prefix)
        .tempfile()
        .with_context(|| format!("creating a temporary list ({prefix})"))?;
    for l in lines {
        writeln!(list, "{l}")?;
    }
    list.flush()?;
    Ok(list)
}

#[cfg(test)]
mod tests {
    use crate::obj::combine::tests::compile;
    use crate::obj::combine::CodeFill;
    use crate::obj::Decline;

    /// What `obj::combine` declines, the tools compose, and the reason
    /// comes back for the statistics (`compose_declines`).
    #[test]
    fn a_declined_composition_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let x86_32 = compile(d, "m32.c", "int f(int x) { return x + 1; }\n", &["-m32"]);
        let out = d.join("m32-out.o");
        let declined =
            super::compose_fragments(&[&x86_32], &[], &[], &[], CodeFill::Trap, &out).unwrap();
        assert_eq!(
            declined,
            Err(Decline("a part that is not an object read here"))
        );
        assert!(std::fs::read(&out).unwrap().starts_with(b"\x7fELF\x01"));
        let ok = compile(d, "ok.c", "int g(int x) { return x * 3; }\n", &[]);
        let out = d.join("ok-out.o");
        let composed =
            super::compose_fragments(&[&ok], &[], &[], &[], CodeFill::Trap, &out).unwrap();
        let written = std::fs::read(&out).unwrap();
        assert_eq!(composed, Ok(*blake3::hash(&written).as_bytes()));
    }
}
