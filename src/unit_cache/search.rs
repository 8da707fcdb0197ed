//! Headers that must stay absent: a header created in a directory searched
//! before the one that supplied an include would be used by clang instead,
//! so a unit cache entry is only valid while no such file exists.
//!
//! clang's search order for `#include "x"` is the includer's directory,
//! then `-iquote`, `-I`, system directories; for `#include <x>` it starts
//! at `-I`. The dependency list gives the path clang built (directory as
//! written, then the spelling), not the spelling, so every way of reading
//! a header path as `D/spelling` with `D` a search or includer directory
//! is considered, and every directory that could have been searched before
//! `D` yields a candidate. Over-approximating costs a few `stat`s and, at
//! worst, a miss; it never lets a shadowing header go unseen.
//!
//! The search list comes from clang itself (`-E -v` on an empty input with
//! the unit's options), including the directories it ignored because they
//! did not exist: creating one of those is a shadowing too.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use super::manifest::{dir_times, is_absent, join, AbsentNames};
use crate::support::RECURSION_GUARD;

/// The include search list clang uses for these options (without the
/// source): every directory it would search, in order, the ignored
/// (nonexistent) ones included.
pub fn search_list(clang: &Path, options: &[String], language: &str) -> Option<Vec<String>> {
    let out = Command::new(clang)
        .args(options)
        .args(["-E", "-v", "-x", language, "/dev/null", "-o", "/dev/null"])
        .env(RECURSION_GUARD, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    parse_search_list(&String::from_utf8_lossy(&out.stderr))
}

fn parse_search_list(text: &str) -> Option<Vec<String>> {
    let mut dirs = Vec::new();
    let mut ignored = Vec::new();
    let mut inside = false;
    let mut complete = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("ignoring nonexistent directory \"") {
            if let Some(d) = rest.strip_suffix('"') {
                ignored.push(d.to_string());
            }
        } else if line.starts_with("#include \"...\" search starts here:") {
            inside = true;
        } else if line == "End of search list." {
            complete = inside;
            inside = false;
        } else if inside {
            if let Some(d) = line.strip_prefix(' ') {
                let d = d
                    .strip_suffix(" (framework directory)")
                    .or_else(|| d.strip_suffix(" (headermap)"))
                    .unwrap_or(d);
                dirs.push(d.to_string());
            }
        }
    }
    // Ignored directories go first: where they were in the order is not
    // printed, and assuming "before everything" only adds candidates.
    ignored.extend(dirs);
    complete.then_some(ignored)
}

/// `path` as (directory, last name): "/" for names at the top, "" (the
/// working directory) for a path without a slash.
fn split_last(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(0) => ("/", &path[1..]),
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}

fn dir_of(path: &str) -> String {
    split_last(path).0.to_string()
}

/// The paths that would shadow one of a unit's headers if created,
/// grouped by the directory they would be created under: per directory,
/// the spellings (sorted, each once). A unit has thousands of such paths
/// (every header spelled under every directory searched before the one
/// that supplied it) but only a few dozen directories, so they are kept as
/// slices of the header paths and never joined one by one.
#[derive(Debug, Default)]
pub struct Candidates<'a> {
    by_dir: std::collections::BTreeMap<String, Vec<&'a str>>,
}

impl Candidates<'_> {
    /// Every candidate path, joined (for tests).
    #[cfg(test)]
    pub fn paths(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .by_dir
            .iter()
            .flat_map(|(d, ss)| ss.iter().map(move |s| join(d, s)))
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// The candidates that would shadow one of `headers` if created. `files`
/// are every file the unit read (source first), whose directories are
/// searched for quoted includes; `search` is [`search_list`]. Paths are as
/// clang wrote them (relative ones to the working directory). A candidate
/// that exists (a file the unit read, or one only a quoted include would
/// have found) is no shadowing: [`absent_groups`] finds it present.
pub fn shadow_candidates<'a>(
    search: &[String],
    files: &[String],
    headers: &'a [String],
) -> Candidates<'a> {
    let includer_dirs: BTreeSet<String> = files.iter().map(|f| dir_of(f)).collect();
    let mut by_dir: std::collections::BTreeMap<String, Vec<&'a str>> = includer_dirs
        .iter()
        .chain(search)
        .map(|d| (d.clone(), Vec::new()))
        .collect();
    for h in headers {
        // (directory the header came from, directories searched before it)
        let mut readings: Vec<(&str, Vec<&str>)> = Vec::new();
        for (i, d) in search.iter().enumerate() {
            if split_under(h, d).is_some() {
                let before = includer_dirs
                    .iter()
                    .map(String::as_str)
                    .chain(search[..i].iter().map(String::as_str))
                    .collect();
                readings.push((d, before));
            }
        }
        for d in &includer_dirs {
            if split_under(h, d).is_some() {
                readings.push((d, includer_dirs.iter().map(String::as_str).collect()));
            }
        }
        for (d, before) in readings {
            let Some(spelling) = split_under(h, d) else {
                continue;
            };
            for e in before {
                if e != d {
                    if let Some(list) = by_dir.get_mut(e) {
                        list.push(spelling);
                    }
                }
            }
        }
    }
    by_dir.retain(|_, ss| {
        ss.sort_unstable();
        ss.dedup();
        !ss.is_empty()
    });
    Candidates { by_dir }
}

/// What must stay absent for none of the candidates to appear: for each
/// candidate that does not exist, its first missing ancestor (or itself),
/// as `(directory, name)`. Most candidates lie in directories that do not
/// exist (`src/bits/...`), so a few missing directories stand for
/// thousands of paths, and a look-up checks those few.
///
/// Walked per directory a component at a time: a directory's spellings
/// are grouped by their first component, each group asks once whether
/// that name exists, and only the groups under a present name go deeper.
/// The answers are those of asking, for each candidate path, its ancestors
/// from the top down and then itself (see the reference in the tests).
fn absent_roots(cwd: &Path, candidates: &Candidates) -> BTreeSet<(String, String)> {
    let mut listings = Listings::new(cwd);
    let mut out = BTreeSet::new();
    for (dir, spellings) in &candidates.by_dir {
        // Every candidate under `dir` is `base` followed by its spelling.
        let base = join(dir, "");
        let missing = base
            .match_indices('/')
            .map(|(i, _)| i)
            .filter(|&i| i > 0)
            .map(|i| &base[..i])
            .find(|p| !listings.present(p));
        match missing {
            Some(root) => {
                out.insert(split_root(root));
            }
            None => walk_components(&mut listings, &base, spellings, &mut out),
        }
    }
    out
}

/// [`absent_roots`] below a present path: `prefix` followed by each of
/// `rests`, `prefix` being empty or ending in `/`.
fn walk_components(
    listings: &mut Listings,
    prefix: &str,
    rests: &[&str],
    out: &mut BTreeSet<(String, String)>,
) {
    let mut groups: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for r in rests {
        match r.split_once('/') {
            Some((first, deeper)) => groups.entry(first).or_default().push(deeper),
            None => {
                groups.entry(r).or_default();
            }
        }
    }
    for (first, deeper) in groups {
        let path = format!("{prefix}{first}");
        if !listings.present(&path) {
            out.insert(split_root(&path));
        } else if !deeper.is_empty() {
            walk_components(listings, &format!("{path}/"), &deeper, out);
        }
    }
}

/// A root path as (directory, name), owned.
fn split_root(root: &str) -> (String, String) {
    let (dir, name) = split_last(root);
    (dir.to_string(), name.to_string())
}

/// Whether paths exist (as `lstat` would say), answered from a listing of
/// their directory once a directory has been asked about a few times: a
/// unit's candidates sit in a few dozen directories (`/usr/include` and
/// the source's directory hold most), and one listing stands for hundreds
/// of `stat`s.
struct Listings<'a> {
    cwd: &'a Path,
    /// Per directory: look-ups so far, and its names once listed (`None`
    /// when it could not be listed: `stat` answers).
    dirs: std::collections::HashMap<String, (u32, Option<Names>)>,
}

type Names = std::collections::HashSet<Vec<u8>>;

impl<'a> Listings<'a> {
    /// Look-ups in one directory before it is listed.
    const LIST_AFTER: u32 = 4;
    /// Larger directories are not listed.
    const MAX_NAMES: usize = 20_000;

    fn new(cwd: &'a Path) -> Self {
        Listings {
            cwd,
            dirs: Default::default(),
        }
    }

    fn present(&mut self, path: &str) -> bool {
        let (dir, name) = split_last(path);
        // `.` and `..` are in no listing `read_dir` returns.
        if name.is_empty() || name == "." || name == ".." {
            return !is_absent(&self.cwd.join(path));
        }
        let cwd = self.cwd;
        let dir = listing_key(dir);
        let (asked, names) = self.dirs.entry(dir.to_string()).or_insert((0, None));
        *asked += 1;
        if *asked == Self::LIST_AFTER {
            *names = list_names(&if dir.is_empty() {
                cwd.to_path_buf()
            } else {
                cwd.join(dir)
            });
        }
        match names {
            Some(names) => names.contains(name.as_bytes()),
            None => !is_absent(&cwd.join(path)),
        }
    }
}

/// The directory a listing is kept under: `dir` without the spellings
/// that name the same directory (`./` in front, `/.` or `/` behind, `.`
/// for the working directory, which is ""), so that `X`, `X/.` and `./X`
/// share one listing. clang's header list spells the same directory
/// several ways (`./lapi.h` beside `lapi.c`, `/usr/include/./stdio.h`
/// through `-I`): each spelling was listed on its own, twice the reading
/// for lua's units. `..` stays (through a symlink it is not the textual
/// parent). A name looked up under the key is the same file as under
/// `dir` whenever the key lists (it is then a directory).
fn listing_key(dir: &str) -> &str {
    let mut d = dir;
    loop {
        d = if d == "." {
            ""
        } else if let Some(rest) = d.strip_prefix("./") {
            // `.//usr` is `usr`, not `/usr`.
            rest.trim_start_matches('/')
        } else if d == "/." {
            "/"
        } else if d.len() > 2 && d.ends_with("/.") {
            &d[..d.len() - 2]
        } else if d.len() > 1 && d.ends_with('/') {
            &d[..d.len() - 1]
        } else {
            return d;
        };
    }
}

/// The names in a directory (following a symlink to it, as a path through
/// it would), or `None` when it cannot be listed or is too large.
fn list_names(dir: &Path) -> Option<Names> {
    use std::os::unix::ffi::OsStrExt;
    let mut names = Names::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        if names.len() == Listings::MAX_NAMES {
            return None;
        }
        names.insert(entry.file_name().as_bytes().to_vec());
    }
    Some(names)
}

/// [`absent_roots`] grouped by directory, with each directory's times
/// when they are older than `trusted_before_ns`, which must precede the
/// call: a directory not modified since then had those times when
/// [`absent_roots`] found the names missing, so a look-up that finds the
/// same times needs no look-up per name. (Checking the names a second
/// time between two reads of the times, as this did, proved nothing more
/// and doubled the `stat`s: 1,000-2,000 per zlib unit.) File times are
/// coarse: a directory modified recently could change again within the
/// same tick, so it gets no times and its names are checked one by one.
pub fn absent_groups(
    cwd: &Path,
    candidates: &Candidates,
    trusted_before_ns: i128,
) -> Vec<AbsentNames> {
    let mut by_dir: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for (dir, name) in absent_roots(cwd, candidates) {
        by_dir
            .entry(without_dot_components(&dir))
            .or_default()
            .insert(name);
    }
    by_dir
        .into_iter()
        .map(|(dir, names)| {
            let names: Vec<String> = names.into_iter().collect();
            let path = if dir.is_empty() {
                cwd.to_path_buf()
            } else {
                cwd.join(&dir)
            };
            let times = dir_times(&path)
                .filter(|t| t.mtime_ns < trusted_before_ns && t.ctime_ns < trusted_before_ns);
            AbsentNames { dir, times, names }
        })
        .collect()
}

/// `dir` without its `.` components ("" for the working directory): the
/// quoted includes' directory of a source named `./x.c` and the working
/// directory are one directory, and a lookup checked each missing name
/// in both (lua's `lvm.c`: 230 `stat`s of a hit where 115 do).
fn without_dot_components(dir: &str) -> String {
    let parts: Vec<&str> = (dir.split('/'))
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if dir.starts_with('/') {
        format!("/{}", parts.join("/"))
    } else {
        parts.join("/")
    }
}

/// `path` as `dir/spelling`: the spelling.
fn split_under<'a>(path: &'a str, dir: &str) -> Option<&'a str> {
    if dir.is_empty() {
        return (!path.starts_with('/')).then_some(path);
    }
    let rest = path.strip_prefix(dir)?;
    if dir.ends_with('/') {
        return Some(rest);
    }
    rest.strip_prefix('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Candidates from whole paths (relative ones under the working
    /// directory, absolute ones under `/`).
    fn from_paths(paths: &[String]) -> Candidates<'_> {
        let mut c = Candidates::default();
        for p in paths {
            let (dir, rest) = match p.strip_prefix('/') {
                Some(rest) => ("/", rest),
                None => ("", p.as_str()),
            };
            c.by_dir.entry(dir.to_string()).or_default().push(rest);
        }
        for ss in c.by_dir.values_mut() {
            ss.sort_unstable();
            ss.dedup();
        }
        c
    }

    /// What the roots are by definition: for each candidate path, its
    /// ancestors from the top down, then itself; the first one `lstat`
    /// does not find.
    fn reference_roots(cwd: &Path, paths: &[String]) -> BTreeSet<(String, String)> {
        let mut out = BTreeSet::new();
        for c in paths {
            let ancestors = c.match_indices('/').map(|(i, _)| i).filter(|&i| i > 0);
            let missing = ancestors
                .map(|i| &c[..i])
                .chain(std::iter::once(c.as_str()))
                .find(|p| is_absent(&cwd.join(p)));
            if let Some(root) = missing {
                out.insert(split_root(root));
            }
        }
        out
    }

    #[test]
    fn missing_directories_stand_for_their_contents() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("inc")).unwrap();
        std::fs::write(d.path().join("inc/here.h"), "").unwrap();
        let gone = d.path().join("gone");
        let c: Vec<String> = [
            "inc/bits/a.h",
            "inc/bits/types/b.h",
            "inc/c.h",
            "inc/here.h",
            "inc/here.h/under/a file.h",
            "gone/x/y.h",
            &format!("{}/z/q.h", gone.display()),
        ]
        .map(String::from)
        .to_vec();
        let mut roots: Vec<String> = absent_roots(d.path(), &from_paths(&c))
            .into_iter()
            .map(|(dir, name)| join(&dir, &name))
            .collect();
        roots.sort();
        let mut expected = vec![
            gone.display().to_string(),
            "gone".into(),
            "inc/bits".into(),
            "inc/c.h".into(),
        ];
        expected.sort();
        assert_eq!(roots, expected);
    }

    /// One directory under several spellings is one group: each missing
    /// name is looked up once by a hit.
    #[test]
    fn a_directorys_spellings_are_one_group() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("inc")).unwrap();
        let abs = d.path().display().to_string();
        let c: Vec<String> = [
            "a.h",
            "./a.h",
            "./b.h",
            "inc/c.h",
            "inc/./c.h",
            "./inc//d.h",
            &format!("{abs}/./e.h"),
            &format!("{abs}/e.h"),
        ]
        .map(String::from)
        .to_vec();
        let groups = absent_groups(d.path(), &from_paths(&c), 0);
        let got: Vec<(String, Vec<String>)> =
            groups.into_iter().map(|g| (g.dir, g.names)).collect();
        assert_eq!(
            got,
            vec![
                ("".into(), vec!["a.h".into(), "b.h".into()]),
                (abs.clone(), vec!["e.h".into()]),
                ("inc".into(), vec!["c.h".into(), "d.h".into()]),
            ]
        );
        for (dir, expected) in [
            ("", ""),
            (".", ""),
            ("./", ""),
            ("/", "/"),
            ("/a/./b/", "/a/b"),
            ("a//b/.", "a/b"),
        ] {
            assert_eq!(without_dot_components(dir), expected, "{dir}");
        }
    }

    #[test]
    fn roots_are_those_of_each_path_on_its_own() {
        // A tree with files, directories, symlinks (to directories, to
        // files, dangling) and odd spellings (`.`, `..`, `//`), and every
        // way of reaching it from a few search directories, present and
        // missing: the walk by components finds what asking each path on
        // its own finds.
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        for dir in ["a", "a/b", "a/b/c", "big", "s", "s/bits"] {
            std::fs::create_dir(root.join(dir)).unwrap();
        }
        for f in ["a/x.h", "a/b/y.h", "a/b/c/z.h", "s/bits/t.h", "s/u.h"] {
            std::fs::write(root.join(f), "").unwrap();
        }
        for i in 0..40 {
            std::fs::write(root.join(format!("big/h{i}.h")), "").unwrap();
        }
        std::os::unix::fs::symlink("b", root.join("a/lb")).unwrap();
        std::os::unix::fs::symlink("x.h", root.join("a/lx.h")).unwrap();
        std::os::unix::fs::symlink("nowhere", root.join("a/dangling")).unwrap();
        let dirs = [
            "",
            ".",
            "./.",
            "a",
            "a/",
            "a/.",
            "./a",
            "a/b",
            "a/./b",
            "big",
            "s",
            "missing",
            "missing/deeper",
            "a/x.h",
        ];
        let mut spellings: Vec<String> = [
            "x.h",
            "y.h",
            "z.h",
            "b/y.h",
            "b/c/z.h",
            "b/c/none.h",
            "c/z.h",
            "lb/y.h",
            "lb/q.h",
            "lx.h",
            "lx.h/under.h",
            "dangling",
            "dangling/under.h",
            "bits/t.h",
            "bits/none/deep.h",
            "u.h",
            "./x.h",
            "../a/x.h",
            "b/../x.h",
            "b//y.h",
            "none/x.h",
        ]
        .map(String::from)
        .to_vec();
        spellings.extend((0..60).map(|i| format!("h{i}.h")));
        let abs = root.display().to_string();
        let mut all_dirs: Vec<String> = dirs.map(String::from).to_vec();
        all_dirs.push(format!("{abs}/a"));
        all_dirs.push(format!("{abs}/a/."));
        all_dirs.push(format!("{abs}/gone"));
        // Several subsets, so that listing thresholds fall differently.
        for (k, step) in [1usize, 2, 3, 7].into_iter().enumerate() {
            let mut c = Candidates::default();
            for (i, dir) in all_dirs.iter().enumerate() {
                let chosen: Vec<&str> = spellings
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| (i + j + k) % step == 0)
                    .map(|(_, s)| s.as_str())
                    .collect();
                let mut chosen = chosen;
                chosen.sort_unstable();
                c.by_dir.insert(dir.clone(), chosen);
            }
            let paths = c.paths();
            assert_eq!(
                absent_roots(root, &c),
                reference_roots(root, &paths),
                "subset {step}"
            );
        }
    }

    #[test]
    fn spellings_of_one_directory_share_a_listing() {
        for (dir, key) in [
            ("", ""),
            (".", ""),
            ("./.", ""),
            ("./", ""),
            ("./a", "a"),
            (".//a", "a"),
            ("a/.", "a"),
            ("a/./.", "a"),
            ("a/", "a"),
            ("./a/./", "a"),
            ("/", "/"),
            ("/.", "/"),
            ("/usr/include/.", "/usr/include"),
            ("/usr/include/", "/usr/include"),
            ("a/..", "a/.."),
            ("..", ".."),
            ("../.", ".."),
        ] {
            assert_eq!(listing_key(dir), key, "{dir:?}");
        }
    }

    #[test]
    fn listed_directories_answer_as_stat_does() {
        let d = tempfile::tempdir().unwrap();
        let inc = d.path().join("inc");
        std::fs::create_dir(&inc).unwrap();
        for n in ["a.h", "b.h", "c.h", "d.h", "e.h"] {
            std::fs::write(inc.join(n), "").unwrap();
        }
        std::fs::create_dir(inc.join("sub")).unwrap();
        std::os::unix::fs::symlink("nowhere", inc.join("dangling.h")).unwrap();
        std::os::unix::fs::symlink("sub", inc.join("link")).unwrap();
        std::fs::write(inc.join("sub/s.h"), "").unwrap();
        let mut l = Listings::new(d.path());
        // Asked often enough, `inc` is listed; every answer stays stat's.
        for _ in 0..2 {
            for (p, present) in [
                ("inc/a.h", true),
                ("inc/x.h", false),
                ("inc/e.h", true),
                ("inc/dangling.h", true),
                ("inc/sub", true),
                ("inc/y.h", false),
                ("inc/.", true),
                ("inc/link/s.h", true),
                ("inc/link/t.h", false),
                ("inc/./b.h", true),
                ("./inc/c.h", true),
                ("inc/./z.h", false),
                ("./inc/./d.h", true),
                ("inc", true),
                ("nothing", false),
            ] {
                assert_eq!(l.present(p), present, "{p}");
                assert_eq!(!is_absent(&d.path().join(p)), present, "{p}");
            }
        }
        assert!(l.dirs["inc"].1.is_some(), "inc was listed");
        assert!(
            !l.dirs.contains_key("inc/.") && !l.dirs.contains_key("./inc"),
            "{:?}",
            l.dirs.keys().collect::<Vec<_>>()
        );
    }

    #[test]
    fn parses_clangs_search_list() {
        let text = "clang -cc1 version 19\n\
            ignoring nonexistent directory \"/include\"\n\
            #include \"...\" search starts here:\n \
            q\n\
            #include <...> search starts here:\n \
            inc\n /usr/include\n\
            End of search list.\n";
        assert_eq!(
            parse_search_list(text).unwrap(),
            ["/include", "q", "inc", "/usr/include"]
        );
        assert!(parse_search_list("no list").is_none());
    }

    #[test]
    fn earlier_directories_give_candidates() {
        let search: Vec<String> = ["inc", "/usr/include", "/opt/after"]
            .map(String::from)
            .to_vec();
        let files: Vec<String> = ["src/m.c", "/usr/include/stdio.h", "inc/g.h"]
            .map(String::from)
            .to_vec();
        let c = shadow_candidates(&search, &files, &files[1..]).paths();
        // <stdio.h> could be shadowed from inc/ and from the includers'
        // directories; inc/g.h from the source's directory.
        assert!(c.contains(&"inc/stdio.h".to_string()));
        assert!(c.contains(&"src/stdio.h".to_string()));
        assert!(c.contains(&"src/g.h".to_string()));
        // Nothing after the directory that supplied the header.
        assert!(!c.contains(&"/opt/after/stdio.h".to_string()));
        // An includer's directory comes first for quoted includes.
        assert!(c.contains(&"/usr/include/g.h".to_string()));
        // A quoted include next to the source: candidates only from other
        // includer directories.
        let files: Vec<String> = ["m.c", "a.h"].map(String::from).to_vec();
        assert!(shadow_candidates(&search, &files, &files[1..])
            .paths()
            .is_empty());
    }
}
