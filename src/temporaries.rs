//! repocc's own temporary files and directories outside the repository:
//! the scratch directory of an invocation (discarded dependency files,
//! header lists), the temporary beside an output before it is renamed
//! onto it, the objects of a compile-and-link. Each is removed when it is
//! done with, and also when the build is interrupted (SIGINT, SIGTERM,
//! SIGHUP), as clang removes its own: a `make` stopped with Ctrl-C leaves
//! nothing of repocc's behind. (SIGKILL leaves what it leaves, as it does
//! with clang; the repository sweeps its own temporaries.)

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::llvm_shim;

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
        llvm_shim::remove_file_on_interrupt(path);
        RemovedOnInterrupt {
            path: path.to_path_buf(),
            list: InterruptList::Files,
        }
    }

    /// For a directory whose files are each on the list too (an interrupt
    /// removes the files first).
    pub fn directory(path: &Path) -> RemovedOnInterrupt {
        let list = if llvm_shim::remove_directory_on_interrupt(path) {
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
            InterruptList::Files => llvm_shim::keep_file_on_interrupt(&self.path),
            InterruptList::Directories => llvm_shim::keep_directory_on_interrupt(&self.path),
            InterruptList::Neither => {}
        }
    }
}

/// A private directory (mode 0700) in `$TMPDIR` for one invocation's
/// scratch files, removed with them when dropped or interrupted.
pub struct ScratchDir {
    dir: Option<tempfile::TempDir>,
    files: Mutex<Vec<RemovedOnInterrupt>>,
    _removal: RemovedOnInterrupt,
}

impl ScratchDir {
    pub fn new(prefix: &str) -> std::io::Result<ScratchDir> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
        let removal = RemovedOnInterrupt::directory(dir.path());
        Ok(ScratchDir {
            dir: Some(dir),
            files: Mutex::new(Vec::new()),
            _removal: removal,
        })
    }

    /// The path of the scratch file `name` (which a compiler may create).
    pub fn file(&self, name: &str) -> PathBuf {
        let dir = self
            .dir
            .as_ref()
            .map(|d| d.path())
            .unwrap_or(Path::new("."));
        let path = dir.join(name);
        let removal = RemovedOnInterrupt::file(&path);
        if let Ok(mut files) = self.files.lock() {
            files.push(removal);
        }
        path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // The directory and its files go first; then they leave the
        // interrupt's list (the fields, dropped after this).
        if let Some(dir) = self.dir.take() {
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

    #[test]
    fn scratch_files_and_temporaries_go_when_dropped() {
        let scratch = ScratchDir::new("repocc-test-").unwrap();
        let list = scratch.file("0.headers");
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
