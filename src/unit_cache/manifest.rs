//! The unit cache's manifest: for one unit key, the versions of the files
//! the unit read, each with the result it gave.
//!
//! A result is valid while every file it lists still has the recorded
//! content and every path it lists as absent still does not exist (a header
//! created there would shadow one the compile used). Files are checked
//! cheaply: size, modification and change time first; the content digest
//! only when a time differs (a `touch`, a checkout of the same content).
//!
//! The manifest keeps the [`MAX_RESULTS`] most recent results, newest
//! first, over one table of files (results of one unit mostly share their
//! headers).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::repo::fsx::{read_bounded, ReadError};

/// Results kept per unit key.
pub const MAX_RESULTS: usize = 16;
/// Largest source or header hashed (a bigger one makes the unit uncacheable).
pub const MAX_FILE_BYTES: u64 = 512 << 20;

/// One file as the compile saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
pub struct FileState {
    pub path: String,
    /// Device and inode: a symlink retargeted to another file of the same
    /// size and times is another file.
    pub file_id: (u64, u64),
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    /// blake3 of the content, hex ([`content_digest`]).
    pub digest: String,
    /// blake3 of the content without comments and with whitespace runs
    /// collapsed ([`token_digest`]): when only this one still holds, the
    /// edit was to comments or layout, and preprocessor mode is worth a
    /// try. (Absent in manifests written before it was recorded.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<String>,
}

/// The digest of `bytes` as the preprocessor sees it, roughly: comments
/// (outside string and character literals) become a space, runs of spaces
/// and tabs one space, runs of line breaks one line break. Two files with
/// the same token digest differ only in comments and layout; files that
/// differ in tokens almost always have different ones. Only a hint: it
/// decides whether preprocessing a changed unit is worth trying.
pub fn token_digest(bytes: &[u8]) -> String {
    // Every header of every unit goes through here when a unit is
    // recorded: runs of ordinary bytes are copied whole, and comment ends
    // are found with memchr rather than byte by byte.
    const fn special_bytes() -> [bool; 256] {
        let mut t = [false; 256];
        let specials = *b"/\"' \t\r\x0c\x0b\n";
        let mut k = 0;
        while k < specials.len() {
            t[specials[k] as usize] = true;
            k += 1;
        }
        t
    }
    static SPECIAL: [bool; 256] = special_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let blank = |out: &mut Vec<u8>, c: u8| match (out.last(), c) {
        (Some(b'\n'), _) => {}
        (Some(b' '), b'\n') => *out.last_mut().unwrap() = b'\n',
        (Some(b' '), _) => {}
        _ => out.push(c),
    };
    let mut i = 0;
    while i < bytes.len() {
        let run = bytes[i..]
            .iter()
            .position(|&b| SPECIAL[b as usize])
            .unwrap_or(bytes.len() - i);
        out.extend_from_slice(&bytes[i..i + run]);
        i += run;
        let Some(&c) = bytes.get(i) else { break };
        match c {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |n| i + n);
                blank(&mut out, b' ');
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let body = (i + 2).min(bytes.len());
                i = memchr::memmem::find(&bytes[body..], b"*/")
                    .map_or(bytes.len(), |n| body + n + 2);
                blank(&mut out, b' ');
                continue;
            }
            b'"' | b'\'' => {
                out.push(c);
                i += 1;
                while i < bytes.len() && bytes[i] != c && bytes[i] != b'\n' {
                    if bytes[i] == b'\\' && i + 1 < bytes.len() {
                        out.push(bytes[i]);
                        i += 1;
                    }
                    out.push(bytes[i]);
                    i += 1;
                }
                if i < bytes.len() {
                    out.push(bytes[i]);
                    i += 1;
                }
                continue;
            }
            b' ' | b'\t' | b'\r' | b'\x0c' | b'\x0b' => blank(&mut out, b' '),
            b'\n' => blank(&mut out, b'\n'),
            _ => out.push(c),
        }
        i += 1;
    }
    // A hint only (see above): 64 bits are plenty.
    blake3::hash(&out).to_hex()[..16].to_string()
}

/// Names that must not exist in one directory. While the directory's
/// times are the recorded ones, nothing was created in it, and the names
/// need no look-up each; a directory that changed (a build directory where
/// objects are written) has its names checked one by one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbsentNames {
    /// The directory (relative to the working directory; "" is itself).
    pub dir: String,
    /// Its device, inode, modification and change times, when they could
    /// be trusted.
    pub times: Option<DirTimes>,
    pub names: Vec<String>,
}

impl AbsentNames {
    pub fn path_of(&self, name: &str) -> String {
        join(&self.dir, name)
    }
}

/// Whether nothing exists at `path` (a dangling symlink is something).
pub fn is_absent(path: &Path) -> bool {
    matches!(
        std::fs::symlink_metadata(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound
    )
}

/// What says a directory is unchanged: device, inode, modification and
/// change times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirTimes {
    pub id: (u64, u64),
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

pub fn dir_times(path: &Path) -> Option<DirTimes> {
    let m = std::fs::metadata(path).ok()?;
    m.is_dir().then(|| DirTimes {
        id: (m.dev(), m.ino()),
        mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        ctime_ns: m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128,
    })
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultRecord {
    /// Indices into [`Manifest::files`].
    pub files: Vec<u32>,
    /// Paths that must not exist.
    pub absent: Vec<AbsentNames>,
    /// The result entry's key, hex.
    pub result: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub files: Vec<FileState>,
    /// Newest first.
    pub results: Vec<ResultRecord>,
}

/// What stat says of a file (the parts a manifest compares).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub file_id: (u64, u64),
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

pub fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(path).ok()?;
    if !m.is_file() {
        return None;
    }
    Some(Stamp {
        file_id: (m.dev(), m.ino()),
        size: m.len(),
        mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        ctime_ns: m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128,
    })
}

/// Reads a file for its digest (bounded; regular files only).
pub fn read_content(path: &Path) -> Result<Vec<u8>, ReadError> {
    read_bounded(path, MAX_FILE_BYTES)
}

/// A file's content digest as a manifest records it: blake3's first 160
/// bits (as ccache keeps), in hex. The digests are most of what a
/// compressed manifest weighs (about 80 files per lua unit), and the
/// repository is the user's disk (issue 42).
pub fn content_digest(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex()[..40].to_string()
}

impl Manifest {
    pub fn decode(bytes: &[u8]) -> Option<Manifest> {
        let m: Manifest = serde_json::from_slice(bytes).ok()?;
        let n = m.files.len();
        let sane = m
            .results
            .iter()
            .all(|r| r.files.iter().all(|&i| (i as usize) < n));
        sane.then_some(m)
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The first result whose files and absences still hold. `cwd`
    /// resolves relative paths. Without one, what failed for the newest,
    /// and whether, for some result, every file that changed kept its
    /// tokens (see [`token_digest`]) and no name appeared: an edit to
    /// comments or layout, which preprocessor mode may find a result for.
    pub fn find_valid(&self, cwd: &Path) -> Result<&ResultRecord, (String, bool)> {
        let mut checker = Checker::new(cwd);
        let mut newest_failure = None;
        for r in &self.results {
            let changed = r
                .files
                .iter()
                .map(|&i| &self.files[i as usize])
                .find(|f| !checker.still_holds(f))
                .map(|f| format!("{} changed", f.path));
            let failure = changed.or_else(|| {
                r.absent.iter().find(|g| !checker.still_absent(g)).map(|g| {
                    format!(
                        "a file appeared in {} (it could shadow a header)",
                        display_dir(&g.dir)
                    )
                })
            });
            match failure {
                None => return Ok(r),
                Some(why) => {
                    newest_failure.get_or_insert(why);
                }
            }
        }
        // No result holds (a hit never gets here): did the files of one of
        // them change only in comments and layout?
        let layout_only = self.results.iter().any(|r| {
            r.absent.iter().all(|g| checker.still_absent(g))
                && r.files
                    .iter()
                    .map(|&i| &self.files[i as usize])
                    .all(|f| checker.still_holds(f) || checker.same_tokens(f))
        });
        Err((
            newest_failure.unwrap_or_else(|| "no results recorded".into()),
            layout_only,
        ))
    }

    /// Adds `result` (reading `files`) as the newest, keeping at most
    /// [`MAX_RESULTS`] and only the files they use.
    pub fn add(&mut self, files: &[FileState], absent: Vec<AbsentNames>, result: String) {
        let mut kept: Vec<(Vec<FileState>, Vec<AbsentNames>, String)> =
            vec![(files.to_vec(), absent, result.clone())];
        for r in &self.results {
            if kept.len() == MAX_RESULTS {
                break;
            }
            if r.result == result {
                continue;
            }
            let fs = r
                .files
                .iter()
                .map(|&i| self.files[i as usize].clone())
                .collect();
            kept.push((fs, r.absent.clone(), r.result.clone()));
        }
        let mut table: Vec<FileState> = Vec::new();
        let mut index: HashMap<FileState, u32> = HashMap::new();
        let mut results = Vec::with_capacity(kept.len());
        for (fs, absent, result) in kept {
            let files = fs
                .into_iter()
                .map(|f| {
                    *index.entry(f.clone()).or_insert_with(|| {
                        table.push(f);
                        (table.len() - 1) as u32
                    })
                })
                .collect();
            results.push(ResultRecord {
                files,
                absent,
                result,
            });
        }
        self.files = table;
        self.results = results;
    }
}

fn display_dir(dir: &str) -> &str {
    if dir.is_empty() {
        "."
    } else {
        dir
    }
}

/// Checks files against their recorded state, each file at most once per
/// look-up.
struct Checker<'a> {
    cwd: &'a Path,
    /// path → (stamp, digest once computed)
    seen: HashMap<String, Option<(Stamp, Option<String>)>>,
    /// path → token digest of its current content (None: unreadable)
    tokens: HashMap<String, Option<String>>,
}

impl<'a> Checker<'a> {
    fn new(cwd: &'a Path) -> Checker<'a> {
        Checker {
            cwd,
            seen: HashMap::new(),
            tokens: HashMap::new(),
        }
    }

    fn still_holds(&mut self, f: &FileState) -> bool {
        let cwd = self.cwd;
        let slot = self
            .seen
            .entry(f.path.clone())
            .or_insert_with(|| stamp(&cwd.join(&f.path)).map(|s| (s, None)));
        let Some((st, digest)) = slot else {
            return false;
        };
        if st.size != f.size {
            return false;
        }
        if st.file_id == f.file_id && st.mtime_ns == f.mtime_ns && st.ctime_ns == f.ctime_ns {
            return true;
        }
        if digest.is_none() {
            match read_content(&cwd.join(&f.path)) {
                Ok(bytes) => *digest = Some(content_digest(&bytes)),
                Err(_) => return false,
            }
        }
        digest.as_deref() == Some(f.digest.as_str())
    }

    /// Whether `f`'s current content has its recorded token digest.
    fn same_tokens(&mut self, f: &FileState) -> bool {
        let Some(recorded) = &f.tokens else {
            return false;
        };
        let cwd = self.cwd;
        let current = self.tokens.entry(f.path.clone()).or_insert_with(|| {
            read_content(&cwd.join(&f.path))
                .ok()
                .map(|b| token_digest(&b))
        });
        current.as_deref() == Some(recorded.as_str())
    }

    fn still_absent(&mut self, group: &AbsentNames) -> bool {
        let dir = if group.dir.is_empty() {
            self.cwd.to_path_buf()
        } else {
            self.cwd.join(&group.dir)
        };
        if group.times.is_some() && dir_times(&dir) == group.times {
            return true;
        }
        group
            .names
            .iter()
            .all(|n| is_absent(&self.cwd.join(group.path_of(n))))
    }
}

/// `rest` under `dir` ("" is the working directory).
pub fn join(dir: &str, rest: &str) -> String {
    if dir.is_empty() {
        rest.to_string()
    } else if dir.ends_with('/') {
        format!("{dir}{rest}")
    } else {
        format!("{dir}/{rest}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-by-byte definition [`token_digest`] must agree with.
    fn token_digest_bytewise(bytes: &[u8]) -> String {
        let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
        let blank = |out: &mut Vec<u8>, c: u8| match (out.last(), c) {
            (Some(b'\n'), _) => {}
            (Some(b' '), b'\n') => *out.last_mut().unwrap() = b'\n',
            (Some(b' '), _) => {}
            _ => out.push(c),
        };
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i];
            match c {
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    while i < bytes.len() && bytes[i] != b'\n' {
                        i += 1;
                    }
                    blank(&mut out, b' ');
                    continue;
                }
                b'/' if bytes.get(i + 1) == Some(&b'*') => {
                    i += 2;
                    while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/'))
                    {
                        i += 1;
                    }
                    i += 2;
                    blank(&mut out, b' ');
                    continue;
                }
                b'"' | b'\'' => {
                    out.push(c);
                    i += 1;
                    while i < bytes.len() && bytes[i] != c && bytes[i] != b'\n' {
                        if bytes[i] == b'\\' && i + 1 < bytes.len() {
                            out.push(bytes[i]);
                            i += 1;
                        }
                        out.push(bytes[i]);
                        i += 1;
                    }
                    if i < bytes.len() {
                        out.push(bytes[i]);
                        i += 1;
                    }
                    continue;
                }
                b' ' | b'\t' | b'\r' | b'\x0c' | b'\x0b' => blank(&mut out, b' '),
                b'\n' => blank(&mut out, b'\n'),
                _ => out.push(c),
            }
            i += 1;
        }
        blake3::hash(&out).to_hex()[..16].to_string()
    }

    #[test]
    fn token_digest_agrees_with_the_bytewise_definition() {
        let pieces: [&[u8]; 16] = [
            b"int",
            b" ",
            b"\t",
            b"\n",
            b"\r\n",
            b"/",
            b"*",
            b"//c\n",
            b"/* c */",
            b"\"s\\\"q\"",
            b"'\\''",
            b"'",
            b"\"",
            b"x/y",
            b"\x0b\x0c",
            b"#include <a.h>",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for round in 0..3000 {
            let mut text = Vec::new();
            for _ in 0..(round % 40) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.extend_from_slice(pieces[(seed % pieces.len() as u64) as usize]);
            }
            assert_eq!(
                token_digest(&text),
                token_digest_bytewise(&text),
                "{:?}",
                String::from_utf8_lossy(&text)
            );
        }
    }

    fn state_of(dir: &Path, name: &str) -> FileState {
        let p = dir.join(name);
        let s = stamp(&p).unwrap();
        FileState {
            path: name.into(),
            file_id: s.file_id,
            size: s.size,
            mtime_ns: s.mtime_ns,
            ctime_ns: s.ctime_ns,
            digest: content_digest(&std::fs::read(&p).unwrap()),
            tokens: Some(token_digest(&std::fs::read(&p).unwrap())),
        }
    }

    #[test]
    fn token_digests_see_through_comments_and_layout_only() {
        let t = |s: &str| token_digest(s.as_bytes());
        let base = t("#define VALUE 7\nint f(int x) { return x + VALUE; }\n");
        // Comments and layout.
        assert_eq!(
            base,
            t("#define VALUE 7 /* seven */\nint f(int x) {  return x + VALUE; } // f\n")
        );
        assert_eq!(
            base,
            t("#define VALUE 7\n\n\nint f(int x)\t{ return x + VALUE; }\n")
        );
        // Tokens.
        assert_ne!(
            base,
            t("#define VALUE 8\nint f(int x) { return x + VALUE; }\n")
        );
        assert_ne!(
            base,
            t("#define VALUE 7 int f(int x) { return x + VALUE; }\n")
        );
        // Comment markers inside literals are text.
        assert_ne!(
            t("const char *s = \"/* a */\";\n"),
            t("const char *s = \"\";\n")
        );
        assert_ne!(t("char c = '/'; // x\n"), t("char c = '*'; // x\n"));
    }

    #[test]
    fn a_result_holds_until_a_file_changes_or_an_absent_one_appears() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.h"), "int a;").unwrap();
        let mut m = Manifest::default();
        let absent = AbsentNames {
            dir: "inc".into(),
            times: None,
            names: vec!["a.h".into()],
        };
        m.add(&[state_of(d.path(), "a.h")], vec![absent], "r1".into());
        let m = Manifest::decode(&m.encode()).unwrap();
        assert_eq!(m.find_valid(d.path()).unwrap().result, "r1");

        // Same content, new times: still valid (the digest decides).
        std::fs::write(d.path().join("a.h"), "int a;").unwrap();
        assert_eq!(m.find_valid(d.path()).unwrap().result, "r1");
        // Same size, other content.
        std::fs::write(d.path().join("a.h"), "int b;").unwrap();
        assert!(m.find_valid(d.path()).is_err());
        std::fs::write(d.path().join("a.h"), "int a;").unwrap();
        // A shadowing header appears.
        std::fs::create_dir(d.path().join("inc")).unwrap();
        std::fs::write(d.path().join("inc/a.h"), "int c;").unwrap();
        assert!(m.find_valid(d.path()).is_err());

        // Recorded directory times stand for the names while they hold.
        std::fs::remove_file(d.path().join("inc/a.h")).unwrap();
        let mut m = Manifest::default();
        let absent = AbsentNames {
            dir: "inc".into(),
            times: dir_times(&d.path().join("inc")),
            names: vec!["a.h".into()],
        };
        m.add(&[state_of(d.path(), "a.h")], vec![absent], "r2".into());
        assert_eq!(m.find_valid(d.path()).unwrap().result, "r2");
        std::fs::write(d.path().join("inc/a.h"), "int c;").unwrap();
        assert!(m.find_valid(d.path()).is_err());
    }

    #[test]
    fn newest_first_bounded_and_sharing_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.h"), "1").unwrap();
        let a1 = state_of(d.path(), "a.h");
        let mut m = Manifest::default();
        for i in 0..(MAX_RESULTS + 3) {
            m.add(std::slice::from_ref(&a1), vec![], format!("r{i}"));
        }
        assert_eq!(m.results.len(), MAX_RESULTS);
        assert_eq!(m.files.len(), 1);
        assert_eq!(m.results[0].result, format!("r{}", MAX_RESULTS + 2));
        // Re-adding an existing result moves it to the front, once.
        m.add(&[a1], vec![], "r5".into());
        assert_eq!(m.results[0].result, "r5");
        assert_eq!(m.results.iter().filter(|r| r.result == "r5").count(), 1);
        // Garbage and out-of-range indices are not manifests.
        assert!(Manifest::decode(b"{").is_none());
        let mut bad = m.clone();
        bad.results[0].files.push(99);
        assert!(Manifest::decode(&bad.encode()).is_none());
    }
}
