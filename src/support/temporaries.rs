//! repocc's own temporary files and directories outside the repository:
//! the scratch directory of an invocation (discarded dependency files,
//! header lists), the temporary beside an output before it is renamed
//! onto it, the objects of a compile-and-link. Each is removed when it is
//! done with, and also when the build is interrupted (SIGINT, SIGTERM,
//! SIGHUP), as clang removes its own: a `make` stopped with Ctrl-C leaves
//! nothing of repocc's behind. SIGKILL runs no handler: a later invocation
//! removes the scratch directories of processes that are gone
//! (`sweep_killed_scratch`), and the repository sweeps its own temporaries.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::interrupts;

/// While this lives, an interrupt removes `path` (a regular file, or an
/// empty directory) before the process dies of it.
pub struct RemovedOnInterrupt {
    path: PathBuf,
    list: InterruptList,
}

/// Which list a path is on.
enum InterruptList {
    /// LLVM's, of files.
    Files,
    /// The shim's, of directories.
    Directories,
    /// None (the shim's table of directories was full).
    Neither,
}

impl RemovedOnInterrupt {
    pub fn file(path: &Path) -> RemovedOnInterrupt {
        interrupts::remove_file(path);
        RemovedOnInterrupt {
            path: path.to_path_buf(),
            list: InterruptList::Files,
        }
    }

    /// For a directory whose files are each on the list too (an interrupt
    /// removes the files first).
    pub fn directory(path: &Path) -> RemovedOnInterrupt {
        let list = if interrupts::remove_directory(path) {
            InterruptList::Directories
        } else {
            InterruptList::Neither
        };
        RemovedOnInterrupt {
            path: path.to_path_buf(),
            list,
        }
    }
}

impl Drop for RemovedOnInterrupt {
    fn drop(&mut self) {
        match self.list {
            InterruptList::Files => interrupts::keep_file(&self.path),
            InterruptList::Directories => interrupts::keep_directory(&self.path),
            InterruptList::Neither => {}
        }
    }
}

/// A private directory (mode 0700) in `$TMPDIR` for one invocation's
/// scratch files, removed with them when dropped or interrupted. It is
/// made when the first file is asked for: a unit cache hit needs none, and
/// making it (with the sweep of `$TMPDIR` before, a read of the whole
/// directory) cost a hit a third of its system calls.
pub struct ScratchDir {
    prefix: &'static str,
    dir: OnceLock<Result<MadeScratch, String>>,
    files: Mutex<Vec<RemovedOnInterrupt>>,
}

/// The directory, once made, and its place on the interrupt's list.
struct MadeScratch {
    dir: tempfile::TempDir,
    _removal: RemovedOnInterrupt,
}

impl ScratchDir {
    /// A scratch directory named `PREFIX<pid>.<random>` when made: a later
    /// invocation removes it if this process died without doing so
    /// (SIGKILL), see [`sweep_killed_scratch`].
    pub fn new(prefix: &'static str) -> ScratchDir {
        ScratchDir {
            prefix,
            dir: OnceLock::new(),
            files: Mutex::new(Vec::new()),
        }
    }

    fn made(&self) -> Result<&Path, String> {
        let made = self.dir.get_or_init(|| {
            let parent = std::env::temp_dir();
            sweep_killed_scratch_once(self.prefix);
            let own = format!("{}{}.", self.prefix, std::process::id());
            let dir = (tempfile::Builder::new().prefix(&own).tempdir_in(&parent))
                .map_err(|e| format!("a scratch directory in {}: {e}", parent.display()))?;
            let removal = RemovedOnInterrupt::directory(dir.path());
            Ok(MadeScratch {
                dir,
                _removal: removal,
            })
        });
        made.as_ref().map(|m| m.dir.path()).map_err(Clone::clone)
    }

    /// The path of the scratch file `name` (which a compiler may create),
    /// making the directory if this is the first; `Err` says why it could
    /// not be made.
    pub fn file(&self, name: &str) -> Result<PathBuf, String> {
        let path = self.made()?.join(name);
        let removal = RemovedOnInterrupt::file(&path);
        if let Ok(mut files) = self.files.lock() {
            files.push(removal);
        }
        Ok(path)
    }
}

/// How long a scratch directory of a process that no longer exists is
/// left alone: a process in another PID namespace (a container sharing
/// `/tmp`) looks gone from here, and its compile may still use it.
const KILLED_SCRATCH_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// [`sweep_killed_scratch`] of `$TMPDIR`, at most once per process: when
/// a scratch directory is made, and by a link (so a build whose units were
/// all unit cache hits, which make none, still clears what killed
/// compiles left). It reads the whole of `$TMPDIR`, too much for every hit.
pub fn sweep_killed_scratch_once(prefix: &str) {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| sweep_killed_scratch(&std::env::temp_dir(), prefix, KILLED_SCRATCH_AGE));
}

/// Removes the scratch directories in `parent` (named `PREFIX<pid>.…`)
/// that this user owns, whose process is gone and that nothing changed for
/// `age`: what compiles killed with SIGKILL left (no handler runs). Only the
/// regular files directly inside are removed, then the directory if that
/// emptied it; a symlink is never followed, and anything unexpected stays.
pub fn sweep_killed_scratch(parent: &Path, prefix: &str, age: std::time::Duration) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let me = super::current_uid();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split('.').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|elapsed| elapsed >= age);
        if !meta.is_dir() || meta.uid() != me || !old || process_exists(pid) {
            continue;
        }
        if let Ok(files) = std::fs::read_dir(&path) {
            for f in files.flatten() {
                if f.file_type().is_ok_and(|t| t.is_file()) {
                    let _ = std::fs::remove_file(f.path());
                }
            }
        }
        let _ = std::fs::remove_dir(&path);
    }
}

/// Whether a process with this id exists (or cannot be told apart from
/// one: anything but "no such process").
fn process_exists(pid: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid) else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // The directory and its files go first; then they leave the
        // interrupt's list (the files' entries, dropped after this, and the
        // directory's, dropped here after it is removed).
        if let Some(Ok(made)) = self.dir.take() {
            let MadeScratch { dir, _removal } = made;
            let _ = dir.close();
        }
    }
}

/// A new regular file, to be renamed onto its final name
/// ([`TemporaryFile::persist`]); removed if dropped first or interrupted.
pub struct TemporaryFile {
    file: tempfile::NamedTempFile,
    _removal: RemovedOnInterrupt,
}

impl TemporaryFile {
    /// A new, empty temporary made by `builder` in `dir`.
    pub fn new_in(builder: &tempfile::Builder, dir: &Path) -> std::io::Result<TemporaryFile> {
        let file = builder.tempfile_in(dir)?;
        let removal = RemovedOnInterrupt::file(file.path());
        Ok(TemporaryFile {
            file,
            _removal: removal,
        })
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all(bytes)?;
        self.file.flush()
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Renames the file onto `path`.
    pub fn persist(self, path: &Path) -> Result<(), tempfile::PersistError> {
        self.file.persist(path).map(drop)
    }
}

/// A file `builder` creates in `$TMPDIR` for a compiler to write (the
/// objects of a compile-and-link, named like clang's), removed when
/// dropped or interrupted.
pub struct TemporaryPath {
    path: tempfile::TempPath,
    _removal: RemovedOnInterrupt,
}

impl TemporaryPath {
    pub fn create(builder: &tempfile::Builder) -> std::io::Result<TemporaryPath> {
        let path = builder.tempfile()?.into_temp_path();
        let removal = RemovedOnInterrupt::file(&path);
        Ok(TemporaryPath {
            path,
            _removal: removal,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a compile killed with SIGKILL left is removed by the next one;
    /// a live process's directory, another name, or one changed lately stay.
    #[test]
    fn scratch_of_killed_processes_is_swept() {
        let parent = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let make = |name: &str| {
            let dir = parent.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("0.d"), "x.o: x.c\n").unwrap();
            dir
        };
        let killed = make(&format!("repocc-dep-{dead}.abc"));
        let alive = make(&format!("repocc-dep-{}.def", std::process::id()));
        let other = make(&format!("other-{dead}.ghi"));
        let zero = std::time::Duration::ZERO;
        sweep_killed_scratch(
            parent.path(),
            "repocc-dep-",
            std::time::Duration::from_secs(600),
        );
        assert!(killed.exists(), "changed lately: left alone");
        sweep_killed_scratch(parent.path(), "repocc-dep-", zero);
        assert!(!killed.exists());
        assert!(alive.join("0.d").exists() && other.join("0.d").exists());
    }

    #[test]
    fn scratch_files_and_temporaries_go_when_dropped() {
        let parent_before = std::env::temp_dir();
        let scratch = ScratchDir::new("repocc-test-");
        assert!(
            scratch.dir.get().is_none(),
            "made only when a file is asked for"
        );
        let list = scratch.file("0.headers").unwrap();
        assert!(list.starts_with(&parent_before));
        std::fs::write(&list, "a.h\n").unwrap();
        let dir = list.parent().unwrap().to_path_buf();
        assert!(dir.is_dir());
        drop(scratch);
        assert!(!dir.exists() && !list.exists());

        let out = tempfile::tempdir().unwrap();
        let mut builder = tempfile::Builder::new();
        builder.prefix(".x.o.");
        let mut kept = TemporaryFile::new_in(&builder, out.path()).unwrap();
        kept.write_all(b"object").unwrap();
        let target = out.path().join("x.o");
        kept.persist(&target).unwrap();
        let mut dropped = TemporaryFile::new_in(&builder, out.path()).unwrap();
        dropped.write_all(b"partial").unwrap();
        let name = dropped.path().to_path_buf();
        drop(dropped);
        assert!(!name.exists());
        let left: Vec<_> = std::fs::read_dir(out.path()).unwrap().collect();
        assert_eq!(left.len(), 1);
        assert_eq!(std::fs::read(&target).unwrap(), b"object");
    }
}
