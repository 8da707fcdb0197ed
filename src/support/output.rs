//! Stage 7, output: the object reaches its path atomically (a temporary
//! file in the same directory, renamed over the target), so no reader ever
//! sees a partial object and a failed compile leaves nothing behind. The
//! file is created with mode 0666 minus the umask, as clang's would be.
//!
//! Only a regular file (or a path where nothing exists yet) is replaced
//! that way. An output that exists and is something else — `/dev/null`, a
//! FIFO, a terminal — is opened and written in place, as clang does: a
//! rename over a device would replace it for the whole machine.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{Context, Result};

use super::temporaries::TemporaryFile;

/// The output refused its bytes: its directory refused a new file (a
/// read-only or virtual file system, no permission), or the write failed
/// (no space left, a device such as `/dev/full`). clang, run instead,
/// meets the same and says so in its own words.
#[derive(Debug)]
pub struct OutputRefused {
    /// The directory of the temporary file, or the device written in place.
    pub path: std::path::PathBuf,
    pub error: std::io::Error,
}

impl std::fmt::Display for OutputRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "writing in {}: {}", self.path.display(), self.error)
    }
}

impl std::error::Error for OutputRefused {}

/// A temporary file in `path`'s directory holding `bytes`, to be renamed
/// onto `path` (`persist`) once it is complete.
pub fn temporary_beside(path: &Path, bytes: &[u8]) -> Result<TemporaryFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder
        .prefix(&prefix)
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666));
    let refused = |error| OutputRefused {
        path: dir.to_path_buf(),
        error,
    };
    let mut tmp = TemporaryFile::new_in(&builder, dir).map_err(refused)?;
    tmp.write_all(bytes).map_err(refused)?;
    Ok(tmp)
}

/// Whether `path` exists and is neither a regular file nor a directory
/// (symlinks followed, as clang's `status` does).
pub fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Writes `bytes` to the existing special file `path` in place.
pub fn write_in_place(path: &Path, bytes: &[u8]) -> Result<()> {
    let refused = |error| OutputRefused {
        path: path.to_path_buf(),
        error,
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(refused)?;
    f.write_all(bytes).map_err(refused)?;
    Ok(())
}

/// Writes the user's output: atomically when it is (or will be) a regular
/// file, in place when it is a device or FIFO.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<()> {
    if is_special(path) {
        return write_in_place(path, bytes);
    }
    write_atomically(path, bytes)
}

/// Removes the output of a failed compile, as clang's driver does: only a
/// regular file (never a device, FIFO or directory).
pub fn remove_failed_output(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        let _ = std::fs::remove_file(path);
    }
}

pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temporary_beside(path, bytes)?;
    tmp.persist(path)
        .with_context(|| format!("renaming onto {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_whole_file_and_leaves_no_temporaries() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.o");
        write_atomically(&p, b"first").unwrap();
        write_atomically(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o644, 0o644, "mode {mode:o}");
    }

    #[test]
    fn special_files_are_written_in_place() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_output(&fifo, b"object").unwrap();
        assert_eq!(reader.join().unwrap(), b"object");
        assert!(is_special(&fifo), "the FIFO was replaced");
        write_output(Path::new("/dev/null"), b"x").unwrap();
        assert!(is_special(Path::new("/dev/null")));
        remove_failed_output(&fifo);
        assert!(fifo.exists());
        let p = d.path().join("x.o");
        write_output(&p, b"o").unwrap();
        remove_failed_output(&p);
        assert!(!p.exists());
    }

    #[test]
    fn missing_directory_is_an_error() {
        assert!(write_atomically(Path::new("/nonexistent/dir/x.o"), b"x").is_err());
    }
}
