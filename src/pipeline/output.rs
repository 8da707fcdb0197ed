//! Stage 7, output: the object reaches its path atomically (a temporary
//! file in the same directory, renamed over the target), so no reader ever
//! sees a partial object and a failed compile leaves nothing behind. The
//! file is created with mode 0666 minus the umask, as clang's would be.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{Context, Result};

/// A temporary file in `path`'s directory holding `bytes`, to be renamed
/// onto `path` (`persist`) once it is complete.
pub fn temporary_beside(path: &Path, bytes: &[u8]) -> Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))?;
    tmp.flush()?;
    Ok(tmp)
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
    fn missing_directory_is_an_error() {
        assert!(write_atomically(Path::new("/nonexistent/dir/x.o"), b"x").is_err());
    }
}
