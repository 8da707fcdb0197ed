//! File access inside the repository that cannot leave it.
//!
//! Everything repocc reads, writes or deletes under its repository goes
//! through a [`RepoDir`]: a directory held open by descriptor, whose
//! children are reached with `openat`/`unlinkat`/`renameat` and
//! `O_NOFOLLOW`. A symlink anywhere below the repository root (a shard
//! directory pointing elsewhere, an entry linked to `/dev/zero`) is never
//! followed: it is "not a directory" or "not a regular file", which callers
//! count and repair by removing the link itself. Reads open with
//! `O_NONBLOCK` (a FIFO never hangs a build), check that the file is
//! regular and read at most a stated bound. Only the repository root itself
//! is reached through the path the user configured, symlinks included:
//! that path is the user's choice (and `trust` checks who can write it).

use std::ffi::{CStr, OsStr};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, CWD};

/// Set when the repository is shared on purpose (`shared_dir`): then what
/// repocc creates is group-accessible as the umask allows, not private.
static SHARED: AtomicBool = AtomicBool::new(false);

/// Marks the repository as shared (see [`SHARED`]); call before any write.
pub fn set_shared(shared: bool) {
    SHARED.store(shared, Ordering::Relaxed);
}

/// Whether a directory or file of the repository may hold what repocc
/// reads: owned by this user and not writable by group or others, as what
/// it creates is (mode 0700 and 0600), unless the repository is shared on
/// purpose. The top directory is checked once (`trust`); this holds every
/// shard and entry below it, as git's `safe.directory` holds a repository:
/// another user who can write a shard (or owns an entry in it) could put
/// code into the user's programs.
fn trusted(st: &rustix::fs::Stat, path: &Path) -> io::Result<()> {
    if SHARED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let uid = current_uid();
    let untrusted = |why: String| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} {why}: not used", path.display()),
        ))
    };
    if st.st_uid != uid {
        return untrusted(format!("is owned by user {} (not {uid})", st.st_uid));
    }
    if st.st_mode & 0o022 != 0 {
        return untrusted(format!(
            "is writable by others (mode {:o})",
            st.st_mode & 0o7777
        ));
    }
    Ok(())
}

/// Mode of the directories repocc creates in its repository (the umask
/// applies as well).
fn dir_mode() -> u32 {
    if SHARED.load(Ordering::Relaxed) {
        0o777
    } else {
        0o700
    }
}

/// Mode of the files repocc creates in its repository.
pub fn file_mode() -> u32 {
    if SHARED.load(Ordering::Relaxed) {
        0o666
    } else {
        0o600
    }
}

/// Deepest directory tree [`RepoDir::remove`] descends into.
const MAX_REMOVE_DEPTH: usize = 16;

/// What is at a name inside a repository directory, without following it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Regular,
    Directory,
    Symlink,
    /// A FIFO, socket or device.
    Special,
}

impl Kind {
    fn of(t: FileType) -> Kind {
        match t {
            FileType::RegularFile => Kind::Regular,
            FileType::Directory => Kind::Directory,
            FileType::Symlink => Kind::Symlink,
            _ => Kind::Special,
        }
    }
}

/// Why a read was refused.
#[derive(Debug)]
pub enum ReadError {
    /// Nothing at that name.
    Missing,
    /// Something that is not a regular file (symlink, directory, FIFO,
    /// device): never opened for reading.
    NotRegular(Kind),
    /// Larger than the caller's bound.
    TooLarge(u64),
    Io(io::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Missing => write!(f, "missing"),
            ReadError::NotRegular(k) => write!(f, "not a regular file ({k:?})"),
            ReadError::TooLarge(n) => write!(f, "too large ({n} bytes)"),
            ReadError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// One entry of a directory listing.
#[derive(Clone, Debug)]
pub struct Listed {
    pub name: String,
    pub kind: Kind,
    pub size: u64,
    pub modified: std::time::SystemTime,
}

/// A directory inside the repository, held open.
pub struct RepoDir {
    fd: OwnedFd,
    path: PathBuf,
}

fn errno_io(e: rustix::io::Errno) -> io::Error {
    io::Error::from_raw_os_error(e.raw_os_error())
}

/// Reads `file` to its end, expecting about `size` bytes and accepting at
/// most `max_bytes` (the bound holds even if the file grows meanwhile).
/// With room for the expected size, that is one `read` and one at the end,
/// not a dozen doubling ones.
pub fn read_at_most(file: &mut File, size: u64, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::with_capacity(size.min(max_bytes) as usize + 1);
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(ReadError::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// A name for a temporary file: `.tmp.<pid>.<counter>.<nanos>`.
fn temporary_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        ".tmp.{}.{}.{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

fn name_ok(name: &str) -> io::Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a plain file name"),
        ));
    }
    Ok(())
}

impl RepoDir {
    /// Opens the repository root at `path` (following symlinks: the path is
    /// the user's), creating it with mode 0700 when `create` is set.
    /// `Ok(None)`: it does not exist and `create` is not set.
    pub fn open_root(path: &Path, create: bool) -> io::Result<Option<RepoDir>> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        match rustix::fs::openat(CWD, path, flags, Mode::empty()) {
            Ok(fd) => Ok(Some(RepoDir {
                fd,
                path: path.to_path_buf(),
            })),
            Err(rustix::io::Errno::NOENT) if create => {
                {
                    use std::os::unix::fs::DirBuilderExt;
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(dir_mode())
                        .create(path)?;
                }
                let fd = rustix::fs::openat(CWD, path, flags, Mode::empty()).map_err(errno_io)?;
                Ok(Some(RepoDir {
                    fd,
                    path: path.to_path_buf(),
                }))
            }
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(errno_io(e)),
        }
    }

    /// Opens `root/a/b/...`: the root as [`RepoDir::open_root`], every
    /// component below it without following symlinks. A component that is
    /// not a real directory is an error (`NotADirectory`); with `create`,
    /// missing components are made (mode 0700).
    pub fn open_path(
        root: &Path,
        components: &[&str],
        create: bool,
    ) -> io::Result<Option<RepoDir>> {
        let Some(mut dir) = RepoDir::open_root(root, create)? else {
            return Ok(None);
        };
        for c in components {
            let sub = match dir.subdir(c, create) {
                // Creating: what stands in the way inside the repository (a
                // symlink, a file) goes, never written through.
                Err(e) if create && e.kind() == io::ErrorKind::NotADirectory => {
                    dir.remove(c)?;
                    dir.subdir(c, create)?
                }
                other => other?,
            };
            match sub {
                Some(d) => dir = d,
                None => return Ok(None),
            }
        }
        Ok(Some(dir))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory `name` inside this one, never through a symlink.
    /// `Ok(None)` when missing and `create` is not set; an error with kind
    /// `NotADirectory` when something else is there.
    pub fn subdir(&self, name: &str, create: bool) -> io::Result<Option<RepoDir>> {
        name_ok(name)?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let open = || rustix::fs::openat(&self.fd, name, flags, Mode::empty());
        let fd = match open() {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(dir_mode())) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(errno_io(e)),
                }
                open().map_err(|e| self.not_a_directory(name, e))?
            }
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(self.not_a_directory(name, e)),
        };
        let path = self.path.join(name);
        let st = rustix::fs::fstat(&fd).map_err(errno_io)?;
        trusted(&st, &path)?;
        Ok(Some(RepoDir { fd, path }))
    }

    fn not_a_directory(&self, name: &str, e: rustix::io::Errno) -> io::Error {
        // O_NOFOLLOW on a symlink is ELOOP; O_DIRECTORY on a file ENOTDIR.
        if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
            io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", self.path.join(name).display()),
            )
        } else {
            errno_io(e)
        }
    }

    /// What is at `name`, without following it.
    pub fn kind_of(&self, name: &str) -> io::Result<Option<Kind>> {
        name_ok(name)?;
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(Kind::of(FileType::from_raw_mode(st.st_mode)))),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(errno_io(e)),
        }
    }

    /// The device and inode of `name` (not followed), if it exists: tells
    /// whether a file held open is still the one at that name.
    pub fn identity_of(&self, name: &str) -> io::Result<Option<(u64, u64)>> {
        name_ok(name)?;
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some((st.st_dev, st.st_ino))),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(errno_io(e)),
        }
    }

    /// Opens the regular file `name` for reading (never through a
    /// symlink, never blocking on a FIFO); returns it with its size.
    pub fn open_regular(&self, name: &str) -> Result<(File, u64), ReadError> {
        name_ok(name).map_err(ReadError::Io)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Err(ReadError::Missing),
            Err(rustix::io::Errno::LOOP) => return Err(ReadError::NotRegular(Kind::Symlink)),
            Err(e) => {
                // ENXIO (a socket), EACCES on a device node...: say what it is.
                return match self.kind_of(name) {
                    Ok(Some(k)) if k != Kind::Regular => Err(ReadError::NotRegular(k)),
                    _ => Err(ReadError::Io(errno_io(e))),
                };
            }
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| ReadError::Io(errno_io(e)))?;
        let kind = Kind::of(FileType::from_raw_mode(st.st_mode));
        if kind != Kind::Regular {
            return Err(ReadError::NotRegular(kind));
        }
        trusted(&st, &self.path.join(name)).map_err(ReadError::Io)?;
        Ok((File::from(fd), st.st_size as u64))
    }

    /// Opens the regular file `name` for reading and reads it whole, if it
    /// is at most `max_bytes` long. Returns the bytes and the open file
    /// (for its metadata).
    pub fn read_regular(&self, name: &str, max_bytes: u64) -> Result<(Vec<u8>, File), ReadError> {
        let (mut file, size) = self.open_regular(name)?;
        if size > max_bytes {
            return Err(ReadError::TooLarge(size));
        }
        let bytes = read_at_most(&mut file, size, max_bytes)?;
        Ok((bytes, file))
    }

    /// Writes `bytes` to `name` atomically: a new temporary file in this
    /// directory (`O_EXCL`, never through a symlink), then a rename over
    /// `name`. Returns the bytes written.
    pub fn write_atomic(&self, name: &str, bytes: &[u8], mode: u32) -> io::Result<u64> {
        name_ok(name)?;
        let (tmp, mut file) = self.create_temporary(mode)?;
        let result = file.write_all(bytes).and_then(|()| {
            rustix::fs::renameat(&self.fd, tmp.as_str(), &self.fd, name).map_err(errno_io)
        });
        if let Err(e) = result {
            let _ = rustix::fs::unlinkat(&self.fd, tmp.as_str(), AtFlags::empty());
            return Err(e);
        }
        Ok(bytes.len() as u64)
    }

    /// A new, empty temporary file in this directory, named
    /// `.tmp.<pid>.<counter>.<nanos>`.
    fn create_temporary(&self, mode: u32) -> io::Result<(String, File)> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        loop {
            let name = temporary_name();
            match rustix::fs::openat(&self.fd, name.as_str(), flags, Mode::from_raw_mode(mode)) {
                Ok(fd) => return Ok((name, File::from(fd))),
                Err(rustix::io::Errno::EXIST) => continue,
                Err(e) => return Err(errno_io(e)),
            }
        }
    }

    /// Opens (creating it if needed) a regular file used for its advisory
    /// lock only.
    pub fn lock_file(&self, name: &str) -> io::Result<File> {
        name_ok(name)?;
        let flags =
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(file_mode()))
            .map_err(|e| self.not_a_regular_file(name, e))?;
        let st = rustix::fs::fstat(&fd).map_err(errno_io)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(io::Error::other(format!(
                "{} is not a regular file",
                self.path.join(name).display()
            )));
        }
        Ok(File::from(fd))
    }

    fn not_a_regular_file(&self, name: &str, e: rustix::io::Errno) -> io::Error {
        if e == rustix::io::Errno::LOOP {
            io::Error::other(format!("{} is a symlink", self.path.join(name).display()))
        } else {
            errno_io(e)
        }
    }

    /// Renames `from` to `to` in this directory (whatever `from` is; `to`
    /// is replaced if it is a file or an empty directory).
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        name_ok(from)?;
        name_ok(to)?;
        rustix::fs::renameat(&self.fd, from, &self.fd, to).map_err(errno_io)
    }

    /// Removes whatever is at `name` — a file, a symlink (never what it
    /// points to), a FIFO or device node, or a directory tree (descending
    /// only into real directories). Missing is not an error.
    pub fn remove(&self, name: &str) -> io::Result<()> {
        self.remove_at_depth(name, 0)
    }

    fn remove_at_depth(&self, name: &str, depth: usize) -> io::Result<()> {
        name_ok(name)?;
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => return Ok(()),
            Err(rustix::io::Errno::ISDIR) | Err(rustix::io::Errno::PERM) => {}
            Err(e) => return Err(errno_io(e)),
        }
        if depth >= MAX_REMOVE_DEPTH {
            return Err(io::Error::other(format!(
                "{}: directory tree too deep to remove",
                self.path.join(name).display()
            )));
        }
        let Some(sub) = self.subdir(name, false)? else {
            return Ok(());
        };
        for entry in sub.list()? {
            sub.remove_at_depth(&entry.name, depth + 1)?;
        }
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(errno_io(e)),
        }
    }

    /// Every name in this directory (not `.`/`..`), with what it is, its
    /// size and modification time — nothing is followed or opened.
    pub fn list(&self) -> io::Result<Vec<Listed>> {
        let mut dir = rustix::fs::Dir::read_from(&self.fd).map_err(errno_io)?;
        let mut out = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(errno_io)?;
            let name_c: &CStr = entry.file_name();
            let bytes = name_c.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let name = OsStr::from_bytes(bytes).to_string_lossy().into_owned();
            let Ok(st) = rustix::fs::statat(&self.fd, name_c, AtFlags::SYMLINK_NOFOLLOW) else {
                continue; // removed meanwhile
            };
            let modified = std::time::UNIX_EPOCH
                + std::time::Duration::new(st.st_mtime.max(0) as u64, st.st_mtime_nsec as u32);
            out.push(Listed {
                name,
                kind: Kind::of(FileType::from_raw_mode(st.st_mode)),
                size: st.st_size as u64,
                modified,
            });
        }
        Ok(out)
    }
}

/// Reads a regular file at an arbitrary path (configuration, response
/// files) with a bound: `O_NONBLOCK` so a FIFO does not hang, at most
/// `max_bytes`. Symlinks are followed (these are the user's paths).
pub fn read_bounded(path: &Path, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(CWD, path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Err(ReadError::Missing),
        Err(e) => return Err(ReadError::Io(errno_io(e))),
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| ReadError::Io(errno_io(e)))?;
    let kind = Kind::of(FileType::from_raw_mode(st.st_mode));
    if kind != Kind::Regular {
        return Err(ReadError::NotRegular(kind));
    }
    read_at_most(&mut File::from(fd), st.st_size as u64, max_bytes)
}

pub use crate::support::current_uid;

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn symlinked_subdirectory_is_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let outside = d.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("precious"), b"keep").unwrap();
        let repo = d.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        symlink(&outside, repo.join("ab")).unwrap();
        let root = RepoDir::open_root(&repo, false).unwrap().unwrap();
        let err = root.subdir("ab", true).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::NotADirectory);
        assert_eq!(root.kind_of("ab").unwrap(), Some(Kind::Symlink));
        root.remove("ab").unwrap();
        assert_eq!(std::fs::read(outside.join("precious")).unwrap(), b"keep");
        assert!(root.subdir("ab", true).unwrap().is_some());
    }

    #[test]
    fn special_and_linked_files_are_not_read() {
        let d = tempfile::tempdir().unwrap();
        let root = RepoDir::open_root(d.path(), false).unwrap().unwrap();
        symlink("/dev/zero", d.path().join("zero")).unwrap();
        assert!(matches!(
            root.read_regular("zero", 1 << 20),
            Err(ReadError::NotRegular(Kind::Symlink))
        ));
        let fifo = d.path().join("fifo");
        rustix::fs::mkfifoat(CWD, &fifo, Mode::from_raw_mode(0o600)).unwrap();
        assert!(matches!(
            root.read_regular("fifo", 1 << 20),
            Err(ReadError::NotRegular(Kind::Special))
        ));
        std::fs::create_dir(d.path().join("dir")).unwrap();
        std::fs::write(d.path().join("dir/x"), b"x").unwrap();
        assert!(matches!(
            root.read_regular("dir", 1 << 20),
            Err(ReadError::NotRegular(Kind::Directory))
        ));
        root.write_atomic("big", &[7u8; 100], 0o600).unwrap();
        assert!(matches!(
            root.read_regular("big", 99),
            Err(ReadError::TooLarge(100))
        ));
        assert_eq!(root.read_regular("big", 100).unwrap().0.len(), 100);
        for n in ["zero", "fifo", "dir", "big"] {
            root.remove(n).unwrap();
        }
        assert!(root.list().unwrap().is_empty());
        assert!(matches!(read_bounded(&fifo, 10), Err(ReadError::Missing)));
    }

    #[test]
    fn atomic_write_replaces_a_symlink_not_its_target() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target");
        std::fs::write(&target, b"original").unwrap();
        let repo = d.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        symlink(&target, repo.join("entry")).unwrap();
        let root = RepoDir::open_root(&repo, false).unwrap().unwrap();
        root.write_atomic("entry", b"new", 0o600).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"original");
        assert_eq!(root.kind_of("entry").unwrap(), Some(Kind::Regular));
        assert!(root.lock_file("entry").is_ok());
        symlink(&target, repo.join("lock")).unwrap();
        assert!(root.lock_file("lock").is_err());
    }
}
