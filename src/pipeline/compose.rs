//! Stage 8, composition: the object at the user's `-o`. Definitions the
//! canonical stage made hidden external for the optimizer are local symbols
//! again (`llvm-objcopy --localize-symbols`), so two units' `static int
//! counter` stay separate, exactly as in clang's object. The object is
//! written atomically (a temporary file in the output's directory, then a
//! rename).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};

/// ld.lld from LLVM 19.
fn lld() -> Result<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            which::which("ld.lld-19").ok().or_else(|| {
                let p = PathBuf::from("/usr/lib/llvm-19/bin/ld.lld");
                p.exists().then_some(p)
            })
        })
        .as_deref()
        .context("ld.lld-19 not found (install lld-19)")
}

/// Combines fragment objects, in order, into one relocatable object
/// (`ld.lld -r` over a single archive of them, so that thousands of
/// fragments cost one file, not thousands) and writes it like
/// [`write_object`].
pub fn compose_fragments(objects: &[&[u8]], locals: &[String], output: &Path) -> Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("repocc-fragments")
        .tempdir()
        .context("creating a directory for fragments")?;
    let archive = dir.path().join("fragments.a");
    std::fs::write(&archive, ar_archive(objects))
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
    write_object(&bytes, locals, output)
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

/// llvm-objcopy from LLVM 19.
fn objcopy() -> Result<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            which::which("llvm-objcopy-19").ok().or_else(|| {
                let p = PathBuf::from("/usr/lib/llvm-19/bin/llvm-objcopy");
                p.exists().then_some(p)
            })
        })
        .as_deref()
        .context("llvm-objcopy-19 not found (install llvm-19)")
}

/// Writes `object` to `output` with `locals` made local symbols.
pub fn write_object(object: &[u8], locals: &[String], output: &Path) -> Result<()> {
    if locals.is_empty() {
        return super::output::write_atomically(output, object);
    }
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    tmp.write_all(object)
        .with_context(|| format!("writing {}", output.display()))?;
    tmp.flush()?;
    let mut list = tempfile::Builder::new()
        .prefix("repocc-locals")
        .tempfile()
        .context("creating the list of local symbols")?;
    for l in locals {
        writeln!(list, "{l}")?;
    }
    list.flush()?;
    let tool = objcopy()?;
    let out = Command::new(tool)
        .arg(format!("--localize-symbols={}", list.path().display()))
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
    tmp.persist(output)
        .with_context(|| format!("renaming onto {}", output.display()))?;
    Ok(())
}
