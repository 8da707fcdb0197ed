//! Units the pipeline could not finish, remembered. When LLVM reports a
//! diagnostic while optimizing (a vectorizer warning, `-Wframe-larger-than`)
//! or the pipeline fails on a unit, clang compiles it; without a memory,
//! every rebuild would pay the pipeline and then clang again.
//!
//! After such a compile, the repository records, under a key over
//! everything that decides clang's object (`key::KeyContext::clang_unit_key`:
//! repocc's and clang's identities, the unit's arguments, the code
//! generation settings and the frontend's bitcode) —
//! - clang's object (`ClangObject`), when clang printed nothing: the next
//!   compile of the same bitcode writes it without running clang; or
//! - `ClangOnly`, when clang printed diagnostics (the user must see them
//!   again): the next compile runs clang at once, without the pipeline.
//!
//! The frontend still runs first (its diagnostics and dependency file are
//! the user's), so the key can include the bitcode.
//!
//! Writing that bitcode costs 2-10 ms a unit, and almost every unit never
//! needs clang. So a second, empty entry (`ClangUnitHint`, keyed by the
//! arguments without the bitcode) records that clang compiled a unit with
//! these arguments: a unit without a hint has nothing remembered, and its
//! key is not computed. On the way to clang, such a unit's key is made
//! from a second run of the frontend (clang's own compile costs several
//! of those), so that the next compile finds the unit remembered.

use std::path::Path;

use crate::repo::storage::{Entry, EntryKind, FragmentDigest, Lookup, Storage};

/// Largest object remembered.
const MAX_OBJECT_BYTES: u64 = 256 << 20;

/// What the repository remembers of a unit.
pub enum Remembered {
    /// clang's object for this bitcode.
    Object(Vec<u8>),
    /// clang must compile it (its diagnostics are part of the result).
    ClangOnly,
    Nothing,
}

pub fn lookup(store: &dyn Storage, key: &FragmentDigest) -> Remembered {
    match store.get(key) {
        Ok(Lookup::Hit(e)) if e.kind == EntryKind::ClangObject => Remembered::Object(e.payload),
        Ok(Lookup::Hit(e)) if e.kind == EntryKind::ClangOnly => Remembered::ClangOnly,
        _ => Remembered::Nothing,
    }
}

/// Whether clang compiled a unit with the arguments of `hint`
/// ([`crate::pipeline::key::KeyContext::clang_unit_hint`]).
pub fn hinted(store: &dyn Storage, hint: &FragmentDigest) -> bool {
    matches!(store.get(hint), Ok(Lookup::Hit(e)) if e.kind == EntryKind::ClangUnitHint)
}

/// Records the hint that clang compiled a unit with these arguments.
/// Returns the bytes written.
pub fn remember_hint(store: &dyn Storage, hint: &FragmentDigest) -> u64 {
    let entry = Entry {
        kind: EntryKind::ClangUnitHint,
        metadata: Vec::new(),
        payload: Vec::new(),
    };
    store.put(hint, &entry).unwrap_or(0)
}

/// Records clang's compile of a unit: its object at `output` when clang
/// printed nothing, else that the unit needs clang. Returns the bytes
/// written to the repository.
pub fn remember(store: &dyn Storage, key: &FragmentDigest, output: &Path, quiet: bool) -> u64 {
    let object = quiet.then(|| read_object(output)).flatten();
    let entry = match object {
        Some(payload) => Entry {
            kind: EntryKind::ClangObject,
            metadata: Vec::new(),
            payload,
        },
        None => Entry {
            kind: EntryKind::ClangOnly,
            metadata: Vec::new(),
            payload: Vec::new(),
        },
    };
    store.put(key, &entry).unwrap_or(0)
}

/// clang's object, if `output` is a regular file of a sane size.
fn read_object(output: &Path) -> Option<Vec<u8>> {
    let m = std::fs::symlink_metadata(output).ok()?;
    if !m.is_file() || m.len() > MAX_OBJECT_BYTES {
        return None;
    }
    let bytes = std::fs::read(output).ok()?;
    bytes.starts_with(b"\x7fELF").then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_quiet_objects_and_noisy_units() {
        let d = tempfile::tempdir().unwrap();
        let store = crate::repo::store::Store::new(&d.path().join("repo"));
        let out = d.path().join("x.o");
        std::fs::write(&out, b"\x7fELF object").unwrap();
        let (k1, k2) = (FragmentDigest([1; 32]), FragmentDigest([2; 32]));
        assert!(matches!(lookup(&store, &k1), Remembered::Nothing));
        assert!(remember(&store, &k1, &out, true) > 0);
        assert!(matches!(lookup(&store, &k1), Remembered::Object(o) if o == b"\x7fELF object"));
        remember(&store, &k2, &out, false);
        assert!(matches!(lookup(&store, &k2), Remembered::ClangOnly));
        // A device output is never read back as an object.
        remember(&store, &k1, Path::new("/dev/null"), true);
        assert!(matches!(lookup(&store, &k1), Remembered::ClangOnly));
    }

    #[test]
    fn a_hint_is_its_own_entry() {
        let d = tempfile::tempdir().unwrap();
        let store = crate::repo::store::Store::new(&d.path().join("repo"));
        let (h, k) = (FragmentDigest([3; 32]), FragmentDigest([4; 32]));
        assert!(!hinted(&store, &h));
        assert!(remember_hint(&store, &h) > 0);
        assert!(hinted(&store, &h));
        // A hint is no remembered unit, and a remembered unit no hint.
        assert!(matches!(lookup(&store, &h), Remembered::Nothing));
        let out = d.path().join("x.o");
        std::fs::write(&out, b"\x7fELF object").unwrap();
        remember(&store, &k, &out, true);
        assert!(!hinted(&store, &k));
    }
}
