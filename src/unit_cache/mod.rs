//! The unit cache: a whole unit's result, found before the frontend runs,
//! as ccache's direct mode finds it.
//!
//! - The unit key (`key::UnitIdentity::unit_key`) covers what
//!   reaches the compiler: clang's path and identity, repocc's identity, the
//!   configuration that changes objects, the working directory, the unit's
//!   arguments, the environment clang reads, and whether diagnostics are in
//!   colour. Under it, a [`manifest::Manifest`] lists the results seen, each
//!   with the files the unit read (source and every header, with content
//!   digests) and the paths that must stay absent (`search`).
//! - A hit writes the stored object and dependency file and hands back the
//!   stored diagnostics; nothing else runs.
//! - A miss compiles as before, with clang writing the list of headers it
//!   opened (`CC_PRINT_HEADERS_FILE`, system headers included whatever the
//!   `-M` options), and a successful compile is recorded — unless a file
//!   changed while it ran, or uses `__DATE__`/`__TIME__`/`__TIMESTAMP__`
//!   without `SOURCE_DATE_EPOCH`.
//!
//! Failed compiles are never recorded: they run again and print clang's
//! diagnostics and exit code every time.
//!
//! A result's object is stored compressed, where the unit has an earlier
//! result as its difference from that one's object (`delta`), or, where
//! that is smaller, as the stored fragments it was composed from
//! (`recipe`).

pub mod checkout;
mod delta;
pub mod key;
pub mod manifest;
pub mod recipe;
pub mod search;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::repo::storage::{Entry, EntryKind, FragmentDigest, Lookup, Storage};
use key::{UnitIdentity, UnitKeyInputs};
use manifest::{FileState, Manifest};

/// Largest object, dependency file or stderr recorded.
const MAX_OUTPUT_BYTES: u64 = 256 << 20;
/// Files with a time at or after the invocation's start (read from the
/// coarse clock files are stamped with, see `driver`) may have changed
/// while the unit compiled: they are not recorded. No extra margin.
const COARSE_TIME_MARGIN_NS: i128 = 0;
/// Largest manifest read (decompressed).
const MAX_MANIFEST_BYTES: u64 = 64 << 20;
/// Largest header list read back from clang.
const MAX_HEADER_LIST_BYTES: u64 = 64 << 20;

/// Environment variables clang reads that change what it compiles.
const CLANG_ENVIRONMENT: &[&str] = &[
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "OBJC_INCLUDE_PATH",
    "OBJCPLUS_INCLUDE_PATH",
    "SOURCE_DATE_EPOCH",
    "CCC_OVERRIDE_OPTIONS",
    "COMPILER_PATH",
    "GCC_EXEC_PREFIX",
    "SDKROOT",
];

/// The variables of [`CLANG_ENVIRONMENT`] that are set, with their values.
fn clang_environment() -> Vec<(String, String)> {
    CLANG_ENVIRONMENT
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect()
}

/// Options after which a unit is not cached: they read files the
/// dependency list does not name, write outputs besides the object and
/// dependency file, or pass options repocc cannot see through.
const UNCACHEABLE_OPTION_PREFIXES: &[&str] = &[
    "-Xclang",
    "-Xpreprocessor",
    "-Wp,",
    "-mllvm",
    "-B",
    "--config",
    "-fstack-usage",
    "-MJ",
    "-include-pch",
    "-fpch",
    "-fdump",
    "-fsanitize-ignorelist",
    "-fsanitize-blacklist",
    "-fsanitize-coverage-",
    "-fcrash-diagnostics",
    "--serialize-diagnostics",
    "-fmodule",
    "-fembed",
];

/// What a unit's key was made of, and where its outputs go.
pub struct Prepared {
    key: FragmentDigest,
    /// The checkout directory the arguments map away (see [`checkout`]):
    /// the key, the manifest's paths and the stored dependency file and
    /// diagnostics do not name it, so another checkout finds the result.
    base: Option<String>,
    /// The dependency file the user gets (none when not asked for, or
    /// when a later unit writes the same path).
    dep_file: Option<PathBuf>,
}

/// What a compile gave besides its files (see [`UnitCache::record`]).
#[derive(Clone, Copy)]
pub struct Compiled<'a> {
    /// Its diagnostics.
    pub stderr: &'a [u8],
    /// How long it took.
    pub compile_ms: u64,
    /// The key preprocessor mode found for the unit, if it ran.
    pub result_key: Option<FragmentDigest>,
    /// How the pipeline composed the object, if it did (see `recipe`).
    pub recipe: Option<&'a recipe::Recipe>,
}

/// A stored result.
pub struct CachedResult {
    /// What the compile that produced it took, in milliseconds.
    pub compile_ms: u64,
    pub object: Vec<u8>,
    pub dep_file: Option<Vec<u8>>,
    pub stderr: Vec<u8>,
}

pub enum Found {
    Hit(CachedResult),
    /// A miss, and why (for `REPOCC_EXPLAIN`).
    Miss(String),
    /// The unit was compiled before with these arguments, but its files
    /// changed since; whether only in comments and layout (preprocessor
    /// mode may then find a result).
    Changed(String, bool),
    /// An entry failed verification (it has been removed): a miss.
    Corrupt,
}

/// The unit cache of one invocation.
pub struct UnitCache<'a> {
    pub storage: &'a dyn Storage,
    pub key: UnitIdentity<'a>,
    pub clang: &'a Path,
    pub clang_identity: &'a str,
    /// The configuration that changes objects (JSON).
    pub config: String,
    pub cwd: PathBuf,
    pub force_color: bool,
    /// When the invocation started: files newer than this changed while
    /// it ran.
    pub start: SystemTime,
    /// Composes a recipe's object (see `recipe`); without it, results are
    /// stored and read as objects only.
    pub composer: Option<recipe::Composer>,
}

impl UnitCache<'_> {
    /// The unit's key, or why the unit is not cached. The working
    /// directory enters the key only with debug information (where it is
    /// the compilation directory), as ccache's `hash_dir`: otherwise the
    /// manifest's relative paths are checked from wherever the build runs.
    pub fn prepare(
        &self,
        unit_args: &[String],
        keeps_dep_file: bool,
        debug_info: bool,
    ) -> Result<Prepared, String> {
        if let Some(a) = unit_args
            .iter()
            .find(|a| UNCACHEABLE_OPTION_PREFIXES.iter().any(|p| a.starts_with(p)))
        {
            return Err(format!("option {a}"));
        }
        if let Some((k, _)) = std::env::vars_os().find(|(k, _)| {
            k.to_str()
                .is_some_and(|k| k.starts_with("CC_PRINT_") || k == "CC_LOG_DIAGNOSTICS")
        }) {
            return Err(format!("{} is set", k.to_string_lossy()));
        }
        let env = clang_environment();
        let cwd_text = self
            .cwd
            .to_str()
            .ok_or("the working directory is not UTF-8")?;
        let base = checkout::mapped_base(unit_args, cwd_text);
        let mapped_args: Vec<String>;
        let mapped_cwd: String;
        let (cwd, unit_args) = match &base {
            // Where the working directory lies in the checkout decides
            // what relative paths name: it is in the key, the checkout's
            // own place is not.
            Some(b) => {
                mapped_cwd = checkout::map(cwd_text, b);
                mapped_args = unit_args.iter().map(|a| checkout::map(a, b)).collect();
                (mapped_cwd.as_str(), mapped_args.as_slice())
            }
            None if debug_info => (cwd_text, unit_args),
            None => ("", unit_args),
        };
        let dep_file = if keeps_dep_file {
            dependency_file(unit_args).map(|p| self.cwd.join(p))
        } else {
            None
        };
        let clang = self.clang.to_str().ok_or("clang's path is not UTF-8")?;
        let key = self.key.unit_key(&UnitKeyInputs {
            clang,
            clang_identity: self.clang_identity,
            config: &self.config,
            cwd,
            args: unit_args,
            env: &env,
            force_color: self.force_color,
            keeps_dep_file: dep_file.is_some(),
        });
        Ok(Prepared {
            key,
            base,
            dep_file,
        })
    }

    /// Looks the unit up.
    pub fn lookup(&self, p: &Prepared) -> Found {
        let manifest = match self.storage.get(&p.key) {
            Ok(Lookup::Hit(e)) if e.kind == EntryKind::UnitManifest => {
                match self.decode_manifest(&e.payload) {
                    Ok(m) => m,
                    Err(ManifestUnread::ReferenceGone) => {
                        return Found::Miss("the manifest's reference was evicted".into())
                    }
                    Err(ManifestUnread::Damaged) => {
                        let _ = self.storage.remove(&p.key);
                        return Found::Corrupt;
                    }
                }
            }
            Ok(Lookup::Corrupt(_)) => return Found::Corrupt,
            _ => return Found::Miss("not compiled before with these arguments".into()),
        };
        let valid = match manifest.find_valid(&self.cwd) {
            Ok(valid) => valid,
            Err((why, layout_only)) => return Found::Changed(why, layout_only),
        };
        let Some(result_key) = parse_hex_key(&valid.result) else {
            return Found::Corrupt;
        };
        match self.storage.get(&result_key) {
            Ok(Lookup::Hit(e)) if e.kind == EntryKind::UnitResult => {
                match self.decode_result(&e, p.dep_file.is_some()) {
                    Ok(r) => Found::Hit(checkout::unmap_result(r, p.base.as_deref())),
                    Err(Undecodable::BaseGone) => {
                        Found::Miss("the result it differs from was evicted".into())
                    }
                    Err(Undecodable::FragmentsGone) => Found::Miss(
                        "a fragment its object is composed of was evicted or changed".into(),
                    ),
                    Err(Undecodable::Corrupt) => {
                        let _ = self.storage.remove(&result_key);
                        Found::Corrupt
                    }
                }
            }
            Ok(Lookup::Corrupt(_)) => Found::Corrupt,
            _ => Found::Miss("the result was evicted".into()),
        }
    }

    /// Writes a hit's object and dependency file.
    pub fn write_hit(&self, p: &Prepared, output: &Path, r: &CachedResult) -> anyhow::Result<()> {
        crate::support::output::write_output(output, &r.object)?;
        if let (Some(path), Some(bytes)) = (&p.dep_file, &r.dep_file) {
            crate::support::output::write_output(path, bytes)?;
        }
        Ok(())
    }

    /// Records a successful compile of the unit: `source` and the headers
    /// clang listed in `header_list`, the object at `output`, the
    /// dependency file and what the compile gave (`compiled`). The result
    /// goes under the key preprocessor mode gave, if any, else under a key
    /// over the files' digests. Returns the bytes stored, or why it was
    /// not recorded.
    pub fn record(
        &self,
        p: &Prepared,
        unit: &RecordedUnit,
        header_list: &Path,
        compiled: &Compiled,
    ) -> Result<u64, String> {
        let Compiled {
            stderr,
            compile_ms,
            result_key,
            recipe,
        } = *compiled;
        if !unit.headers_listed {
            list_headers_by_preprocessing(self.clang, unit, header_list)?;
        }
        let (files, absent) = self.files_read(unit, header_list, p.base.as_deref())?;
        let object = read_output(unit.output).ok_or("the object is not a regular ELF file")?;
        let dep_file = match &p.dep_file {
            Some(path) => Some(read_output(path).ok_or("the dependency file cannot be read")?),
            None => None,
        };
        if stderr.len() as u64 > MAX_OUTPUT_BYTES {
            return Err("too many diagnostics".into());
        }
        let mapped;
        let (dep_file, stderr) = match p.base.as_deref() {
            Some(base) => {
                if memchr::memmem::find(&object, base.as_bytes()).is_some() {
                    return Err(format!("the object names the checkout directory {base}"));
                }
                mapped = (
                    match dep_file {
                        Some(d) => Some(
                            checkout::map_bytes(&d, base)
                                .ok_or("the dependency file holds a control byte")?,
                        ),
                        None => None,
                    },
                    checkout::map_bytes(stderr, base)
                        .ok_or("the diagnostics hold a control byte")?,
                );
                (mapped.0, mapped.1.as_slice())
            }
            None => (dep_file, stderr),
        };
        let result_key = result_key.unwrap_or_else(|| files_result_key(&p.key, &files));
        let manifest = self.stored_manifest(&p.key);
        let mut result = encode_result(&object, dep_file.as_deref(), stderr, compile_ms);
        let base = self.earlier_base(&manifest, &result_key);
        let whole = std::mem::take(&mut result.payload);
        result.payload = self.result_payload(&object, whole, base.as_ref(), recipe);
        // One write for both (a pack with two names): the result is named
        // first, so a manifest never points to a result not yet there.
        let mut entries = vec![(result_key, result)];
        entries.extend(self.manifest_entries(&p.key, manifest, &files, absent, &result_key));
        self.storage.put_many(&entries).map_err(|e| e.to_string())
    }

    /// Adds a result found by preprocessor mode to the unit's manifest, so
    /// that the next look-up finds it directly. Returns the bytes stored.
    pub fn record_preprocessed_hit(
        &self,
        p: &Prepared,
        unit: &RecordedUnit,
        header_list: &Path,
        result_key: &FragmentDigest,
    ) -> Result<u64, String> {
        let (files, absent) = self.files_read(unit, header_list, p.base.as_deref())?;
        self.add_to_manifest(p, &files, absent, result_key)
    }

    fn add_to_manifest(
        &self,
        p: &Prepared,
        files: &[FileState],
        absent: Vec<manifest::AbsentNames>,
        result_key: &FragmentDigest,
    ) -> Result<u64, String> {
        let manifest = self.stored_manifest(&p.key);
        let entries = self.manifest_entries(&p.key, manifest, files, absent, result_key);
        self.storage.put_many(&entries).map_err(|e| e.to_string())
    }

    /// The unit's manifest as stored, or a new one.
    fn stored_manifest(&self, unit_key: &FragmentDigest) -> Manifest {
        match self.storage.get(unit_key) {
            Ok(Lookup::Hit(e)) if e.kind == EntryKind::UnitManifest => {
                self.decode_manifest(&e.payload).unwrap_or_default()
            }
            _ => Manifest::default(),
        }
    }

    /// The manifest a stored payload holds: compressed whole, or as its
    /// difference from the repository's manifest reference (see
    /// [`reference_pointer`]).
    fn decode_manifest(&self, payload: &[u8]) -> Result<Manifest, ManifestUnread> {
        let Some(reference) = delta::base_key(payload) else {
            return decode_manifest(payload).ok_or(ManifestUnread::Damaged);
        };
        let content = (self.reference_content(&reference)).ok_or(ManifestUnread::ReferenceGone)?;
        let bytes =
            delta::decode(payload, &content, MAX_MANIFEST_BYTES).ok_or(ManifestUnread::Damaged)?;
        Manifest::decode(&bytes).ok_or(ManifestUnread::Damaged)
    }

    /// The content of the manifest reference stored under `key`.
    fn reference_content(&self, key: &FragmentDigest) -> Option<Vec<u8>> {
        match self.storage.get(key) {
            Ok(Lookup::Hit(e))
                if e.kind == EntryKind::UnitManifest && reference_key(&e.payload) == *key =>
            {
                Some(e.payload)
            }
            _ => None,
        }
    }

    /// The repository's manifest reference, its key and content, if it
    /// has one.
    fn manifest_reference(&self) -> Option<(FragmentDigest, Vec<u8>)> {
        let key = match self.storage.get_local(&reference_pointer()) {
            Ok(Lookup::Hit(e)) if e.kind == EntryKind::UnitManifest => {
                FragmentDigest(e.payload.as_slice().try_into().ok()?)
            }
            _ => return None,
        };
        Some((key, self.reference_content(&key)?))
    }

    /// The entries that store the manifest `m` with `result_key` added for
    /// `files` and `absent`, under `unit_key`: as its difference from the
    /// repository's manifest reference where that is smaller; where the
    /// repository has none, this manifest becomes it (stored as it is, and
    /// named by the pointer), before the manifest itself.
    fn manifest_entries(
        &self,
        unit_key: &FragmentDigest,
        mut m: Manifest,
        files: &[FileState],
        absent: Vec<manifest::AbsentNames>,
        result_key: &FragmentDigest,
    ) -> Vec<(FragmentDigest, Entry)> {
        m.add(files, absent, hex(result_key));
        let encoded = m.encode();
        let whole = compress(&encoded);
        let entry = |payload: Vec<u8>| Entry {
            kind: EntryKind::UnitManifest,
            metadata: Vec::new(),
            payload,
        };
        let mut out = Vec::new();
        let payload = match self.manifest_reference() {
            Some((key, content)) => delta::encode(&encoded, &key, &content, OBJECT_ZSTD_LEVEL)
                .filter(|d| d.len() < whole.len())
                .unwrap_or(whole),
            None => {
                let key = reference_key(&encoded);
                out.push((key, entry(encoded)));
                out.push((reference_pointer(), entry(key.0.to_vec())));
                whole
            }
        };
        out.push((*unit_key, entry(payload)));
        out
    }

    /// The object of the result `key` when it is stored whole (the base a
    /// delta is made from or read with).
    fn whole_object(&self, key: &FragmentDigest) -> Option<Vec<u8>> {
        match self.storage.get(key) {
            Ok(Lookup::Hit(e))
                if e.kind == EntryKind::UnitResult && !delta::is_delta(&e.payload) =>
            {
                result_object(&e.payload)
            }
            _ => None,
        }
    }

    /// The recipe of the result `key` when it is stored whole (the base a
    /// recipe's difference is read with), decompressed.
    fn whole_recipe(&self, key: &FragmentDigest) -> Option<Vec<u8>> {
        match self.storage.get(key) {
            Ok(Lookup::Hit(e)) if e.kind == EntryKind::UnitResult => {
                recipe::whole_body(&e.payload, MAX_RECIPE_BYTES)
            }
            _ => None,
        }
    }

    /// The payload of the object entry under `key` (a recipe's fragment).
    fn fragment(&self, key: &FragmentDigest) -> Option<Vec<u8>> {
        match self.storage.get(key) {
            Ok(Lookup::Hit(e)) if e.kind.is_object() => Some(e.payload),
            _ => None,
        }
    }

    /// A result entry's contents, with what a delta or a recipe needs from
    /// the repository.
    fn decode_result(&self, e: &Entry, wants_dep_file: bool) -> Result<CachedResult, Undecodable> {
        let sources = Sources {
            whole_object: &|k| self.whole_object(k),
            fragment: &|k| self.fragment(k),
            prefetch: &|keys| self.storage.prefetch(keys),
            recipe_body: &|k| self.whole_recipe(k),
            compose: self.composer,
        };
        decode_result(e, wants_dep_file, &sources)
    }

    /// The earlier result a new one may be stored as a difference from,
    /// with its payload: the unit's newest result, or the whole result
    /// that one is a difference from (no chains); never when the new
    /// result is already stored (a revert: a difference must not replace
    /// its base).
    fn earlier_base(
        &self,
        manifest: &Manifest,
        result_key: &FragmentDigest,
    ) -> Option<(FragmentDigest, Vec<u8>)> {
        let newest = parse_hex_key(&manifest.results.first()?.result)?;
        let base_key = match self.storage.get(&newest) {
            Ok(Lookup::Hit(e)) if e.kind == EntryKind::UnitResult => (delta::base_key(&e.payload))
                .or_else(|| recipe::delta_base(&e.payload))
                .unwrap_or(newest),
            _ => return None,
        };
        if base_key == *result_key || matches!(self.storage.get(result_key), Ok(Lookup::Hit(_))) {
            return None;
        }
        match self.storage.get(&base_key) {
            Ok(Lookup::Hit(e)) if e.kind == EntryKind::UnitResult && is_whole(&e.payload) => {
                Some((base_key, e.payload))
            }
            _ => None,
        }
    }

    /// The payload of the result for `object`: the object compressed
    /// (`whole`), or what is smaller of its difference from the earlier
    /// result `base` (when less than half of that one's stored size), its
    /// `recipe`, and the recipe's difference from the base's recipe.
    fn result_payload(
        &self,
        object: &[u8],
        whole: Vec<u8>,
        base: Option<&(FragmentDigest, Vec<u8>)>,
        recipe: Option<&recipe::Recipe>,
    ) -> Vec<u8> {
        let mut best = whole;
        let mut consider = |candidate: Option<Vec<u8>>| {
            if let Some(c) = candidate.filter(|c| c.len() < best.len()) {
                best = c;
            }
        };
        if let Some((base_key, payload)) = base {
            consider(
                (result_object(payload))
                    .and_then(|b| delta::encode(object, base_key, &b, OBJECT_ZSTD_LEVEL))
                    .filter(|d| d.len() < payload.len() / 2),
            );
        }
        // A recipe only of the object at the output (what composed it may
        // not have been the last to write it), and only where composing
        // it again keeps a hit fast (`recipe::MAX_PARTS`).
        let Some(recipe) = recipe.filter(|r| {
            self.composer.is_some()
                && r.parts.len() <= recipe::MAX_PARTS
                && r.object == *blake3::hash(object).as_bytes()
        }) else {
            return best;
        };
        consider(recipe.encode(OBJECT_ZSTD_LEVEL));
        if let Some((base_key, payload)) = base {
            consider(
                recipe::whole_body(payload, MAX_RECIPE_BYTES)
                    .and_then(|b| recipe.encode_delta(base_key, &b, OBJECT_ZSTD_LEVEL)),
            );
        }
        best
    }

    /// The files the unit read (source first, then the headers clang
    /// listed) with their states, and what must stay absent; or why they
    /// cannot be recorded. Paths inside a mapped checkout (`base`) are
    /// recorded relative to the working directory.
    fn files_read(
        &self,
        unit: &RecordedUnit,
        header_list: &Path,
        base: Option<&str>,
    ) -> Result<(Vec<FileState>, Vec<manifest::AbsentNames>), String> {
        let (mut files, mut absent) = self.files_read_as_listed(unit, header_list)?;
        if let (Some(base), Some(cwd)) = (base, self.cwd.to_str()) {
            for f in &mut files {
                f.path = checkout::relative(&f.path, cwd, base);
            }
            for g in &mut absent {
                g.dir = checkout::relative(&g.dir, cwd, base);
            }
        }
        Ok((files, absent))
    }

    fn files_read_as_listed(
        &self,
        unit: &RecordedUnit,
        header_list: &Path,
    ) -> Result<(Vec<FileState>, Vec<manifest::AbsentNames>), String> {
        let listed = match crate::repo::fsx::read_bounded(header_list, MAX_HEADER_LIST_BYTES) {
            Ok(b) => String::from_utf8(b).map_err(|_| "a header path is not UTF-8")?,
            Err(crate::repo::fsx::ReadError::Missing) => String::new(),
            Err(e) => return Err(format!("reading clang's header list: {e}")),
        };
        let mut paths: Vec<String> = vec![unit.source.to_string()];
        let mut seen = std::collections::HashSet::new();
        seen.insert(unit.source.to_string());
        for path in listed.lines() {
            // One path per line, as clang built it (`./g.h`, `inc/g.h`).
            if !path.is_empty() && seen.insert(path.to_string()) {
                paths.push(path.to_string());
            }
        }
        let start_ns = ns_since_epoch(self.start);
        let fixed_time = std::env::var_os("SOURCE_DATE_EPOCH").is_some();
        let mut files = Vec::with_capacity(paths.len());
        for path in &paths {
            let full = self.cwd.join(path);
            let before = manifest::stamp(&full).ok_or_else(|| format!("{path} is gone"))?;
            let bytes =
                manifest::read_content(&full).map_err(|e| format!("reading {path}: {e}"))?;
            if path == unit.source && paths.len() == 1 && mentions_an_include(&bytes) {
                // clang named no header although the source includes: the
                // header list cannot be trusted.
                return Err("clang listed no headers".into());
            }
            if uses_time_macros(&bytes, fixed_time) {
                return Err(format!("{path} uses __DATE__, __TIME__ or __TIMESTAMP__"));
            }
            let after = manifest::stamp(&full).ok_or_else(|| format!("{path} is gone"))?;
            let too_new = start_ns - COARSE_TIME_MARGIN_NS;
            if before != after || after.mtime_ns >= too_new || after.ctime_ns >= too_new {
                return Err(format!("{path} was modified during the compile"));
            }
            files.push(FileState {
                path: path.clone(),
                file_id: after.file_id,
                size: after.size,
                mtime_ns: after.mtime_ns,
                ctime_ns: after.ctime_ns,
                digest: manifest::content_digest(&bytes),
                tokens: Some(manifest::token_digest(&bytes)),
            });
        }
        let absent = match unit.include_search_options {
            _ if paths.len() == 1 => Vec::new(),
            options => {
                let list = self
                    .search_list(options, unit.language)
                    .ok_or("clang did not print its include search list")?;
                let candidates = search::shadow_candidates(&list, &paths, &paths[1..]);
                search::absent_groups(&self.cwd, &candidates, start_ns - COARSE_TIME_MARGIN_NS)
            }
        };
        Ok((files, absent))
    }

    /// clang's include search list for `options`: recorded in the
    /// repository the first time (one `clang -E -v` for all the units of a
    /// build that share their include options, not one per unit), keyed by
    /// everything that decides it (see `pipeline::key`), and reused while
    /// each directory in it is still the one it was (or still missing).
    fn search_list(&self, options: &[String], language: &str) -> Option<Vec<String>> {
        let key = self.key.search_list_key(
            self.clang.to_str()?,
            self.clang_identity,
            self.cwd.to_str()?,
            options,
            language,
            &clang_environment(),
        );
        let stamps = |list: &[String]| -> Vec<Option<(u64, u64)>> {
            use std::os::unix::fs::MetadataExt;
            list.iter()
                .map(|d| {
                    std::fs::metadata(self.cwd.join(d))
                        .ok()
                        .map(|m| (m.dev(), m.ino()))
                })
                .collect()
        };
        if let Ok(Lookup::Hit(e)) = self.storage.get(&key) {
            if e.kind == EntryKind::SearchList {
                if let Ok((list, recorded)) =
                    serde_json::from_slice::<(Vec<String>, Vec<Option<(u64, u64)>>)>(&e.payload)
                {
                    if stamps(&list) == recorded {
                        return Some(list);
                    }
                }
            }
        }
        let list = search::search_list(self.clang, options, language)?;
        if let Ok(payload) = serde_json::to_vec(&(&list, stamps(&list))) {
            let entry = Entry {
                kind: EntryKind::SearchList,
                metadata: Vec::new(),
                payload,
            };
            // Not recorded: the next unit asks clang again.
            let _ = self.storage.put(&key, &entry);
        }
        Some(list)
    }

    /// Preprocessor mode, for a unit compiled before whose files changed:
    /// clang preprocesses it (listing its headers into `header_list`), and
    /// a result recorded under the same arguments and preprocessed text is
    /// reused — a comment or an unused macro edited in a header, a file
    /// touched or rewritten with other times. Only results without
    /// diagnostics qualify (their text quotes the original lines), and
    /// only without debug information (its columns come from the original
    /// text). Returns the result key, and the result if there is one.
    pub fn preprocess(
        &self,
        p: &Prepared,
        unit: &RecordedUnit,
        header_list: &Path,
    ) -> Option<(FragmentDigest, Option<CachedResult>)> {
        let out = preprocess_command(self.clang, unit, header_list, "-")
            .output()
            .ok()
            .filter(|o| o.status.success())?;
        let mut h = blake3::Hasher::new();
        h.update(b"repocc unit preprocessed v1\0");
        h.update(&p.key.0);
        h.update(&out.stdout);
        let key = FragmentDigest(*h.finalize().as_bytes());
        let hit = match self.storage.get(&key) {
            Ok(Lookup::Hit(e)) if e.kind == EntryKind::UnitResult => self
                .decode_result(&e, p.dep_file.is_some())
                .ok()
                .filter(|r| r.stderr.is_empty())
                .map(|r| checkout::unmap_result(r, p.base.as_deref())),
            _ => None,
        };
        Some((key, hit))
    }
}

/// clang preprocessing the unit with its headers listed into
/// `header_list` (started afresh), its text to `output`.
fn preprocess_command(
    clang: &Path,
    unit: &RecordedUnit,
    header_list: &Path,
    output: &str,
) -> std::process::Command {
    let _ = std::fs::remove_file(header_list);
    let mut cmd = std::process::Command::new(clang);
    cmd.args(unit.search_options)
        .args(["-E", "-x", unit.language, unit.source, "-o", output])
        .env(crate::support::RECURSION_GUARD, "1")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    crate::support::list_headers(&mut cmd, header_list);
    cmd
}

/// Lists the unit's headers by preprocessing it (output discarded).
fn list_headers_by_preprocessing(
    clang: &Path,
    unit: &RecordedUnit,
    header_list: &Path,
) -> Result<(), String> {
    let status = preprocess_command(clang, unit, header_list, "/dev/null")
        .stdout(std::process::Stdio::null())
        .status();
    match status {
        Ok(s) if s.success() => Ok(()),
        _ => Err("preprocessing to list the headers failed".into()),
    }
}

/// What [`UnitCache::record`] needs of the unit.
pub struct RecordedUnit<'a> {
    pub source: &'a str,
    pub output: &'a Path,
    /// The unit's options without the source and the dependency options.
    pub search_options: &'a [String],
    /// Those of them that can change the include search list.
    pub include_search_options: &'a [String],
    /// The `-x` name of its language.
    pub language: &'a str,
    /// clang listed the headers while compiling (see
    /// [`crate::ir::frontend::headers_listable`]).
    pub headers_listed: bool,
}

/// The `-MF` value among the unit's arguments.
fn dependency_file(args: &[String]) -> Option<&str> {
    let mut found = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-MF" {
            found = it.next().map(String::as_str);
        } else if let Some(v) = a.strip_prefix("-MF") {
            found = Some(v);
        }
    }
    found
}

fn ns_since_epoch(t: SystemTime) -> i128 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

/// Whether `needle` occurs in `haystack` (SIMD search: every header of a
/// unit is scanned for several words, and some are megabytes of tables).
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// Whether the text uses a macro whose value is the time of the compile:
/// `__DATE__` and `__TIME__` unless `SOURCE_DATE_EPOCH` fixes them, and
/// `__TIMESTAMP__` (a file's modification time) always.
fn uses_time_macros(bytes: &[u8], fixed_time: bool) -> bool {
    contains(bytes, b"__TIMESTAMP__")
        || (!fixed_time && (contains(bytes, b"__DATE__") || contains(bytes, b"__TIME__")))
}

fn mentions_an_include(bytes: &[u8]) -> bool {
    [&b"include"[..], b"import", b"embed"]
        .iter()
        .any(|m| contains(bytes, m))
}

fn read_output(path: &Path) -> Option<Vec<u8>> {
    crate::repo::fsx::read_bounded(path, MAX_OUTPUT_BYTES).ok()
}

fn files_result_key(unit_key: &FragmentDigest, files: &[FileState]) -> FragmentDigest {
    let mut h = blake3::Hasher::new();
    h.update(b"repocc unit result v1\0");
    h.update(&unit_key.0);
    for f in files {
        h.update(&(f.path.len() as u64).to_le_bytes());
        h.update(f.path.as_bytes());
        h.update(f.digest.as_bytes());
    }
    FragmentDigest(*h.finalize().as_bytes())
}

fn hex(k: &FragmentDigest) -> String {
    k.0.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex_key(s: &str) -> Option<FragmentDigest> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(FragmentDigest(out))
}

/// How manifests, recipes and differences are compressed: zstd's fastest
/// level, as ccache stores its results (manifests, JSON rewritten whole
/// at every edit, shrink about 7 times).
const OBJECT_ZSTD_LEVEL: i32 = 1;
/// How an object stored whole is compressed. Compressed once, read at
/// every hit: zstd decompresses level 6 as fast as level 1, and level 6
/// takes 14% off sqlite3.c's `-O2 -g` object (2.18 to 1.88 MB, 95 ms
/// against 22 ms of a 30 s compile), 15% off its `-O2` one (688 to 587
/// KB), 11% off fmt's `format-test.cc` at `-O0 -g` (1.48 to 1.32 MB, 99
/// ms against 24 ms of a 10 s compile) and 8% off lua5.4's `-O2 -g`
/// objects. Past 6 the time grows faster than the bytes shrink.
const WHOLE_OBJECT_ZSTD_LEVEL: i32 = 6;
/// A zstd frame starts with it; an object, with ELF's magic.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Result entry: payload the object, zstd-compressed; metadata the
/// compile time, the stderr, then a flag and the dependency file, each
/// length-prefixed.
fn encode_result(object: &[u8], dep_file: Option<&[u8]>, stderr: &[u8], compile_ms: u64) -> Entry {
    let mut metadata = Vec::with_capacity(25 + stderr.len() + dep_file.map_or(0, <[u8]>::len));
    metadata.extend_from_slice(&compile_ms.to_le_bytes());
    metadata.extend_from_slice(&(stderr.len() as u64).to_le_bytes());
    metadata.extend_from_slice(stderr);
    match dep_file {
        Some(d) => {
            metadata.push(1);
            metadata.extend_from_slice(&(d.len() as u64).to_le_bytes());
            metadata.extend_from_slice(d);
        }
        None => metadata.push(0),
    }
    Entry {
        kind: EntryKind::UnitResult,
        metadata,
        payload: zstd::bulk::compress(object, WHOLE_OBJECT_ZSTD_LEVEL)
            .unwrap_or_else(|_| object.to_vec()),
    }
}

/// Why a stored manifest gives no manifest.
enum ManifestUnread {
    /// It is damaged: it goes.
    Damaged,
    /// It is a difference from a manifest reference no longer stored: a
    /// miss.
    ReferenceGone,
}

/// Where the repository's manifest reference is named. Every unit's
/// manifest lists the states of the same system headers (lua's 34
/// manifests: 3,058 rows, 194 distinct, 206 KB compressed whole, a sixth
/// of its repository); each is stored as its difference from one
/// reference manifest, the first one recorded, kept under its content's
/// key ([`reference_key`]): 72 KB. Reading it on every hit keeps it from
/// eviction; a manifest whose reference was evicted is a miss.
fn reference_pointer() -> FragmentDigest {
    FragmentDigest(*blake3::hash(b"repocc unit cache manifest reference v1").as_bytes())
}

/// The key a manifest reference with this content is stored under.
fn reference_key(content: &[u8]) -> FragmentDigest {
    let mut h = blake3::Hasher::new();
    h.update(b"repocc unit cache manifest reference\0");
    h.update(content);
    FragmentDigest(*h.finalize().as_bytes())
}

/// `bytes` compressed as results and manifests are stored (see
/// [`OBJECT_ZSTD_LEVEL`]), or as they are should zstd fail.
fn compress(bytes: &[u8]) -> Vec<u8> {
    zstd::bulk::compress(bytes, OBJECT_ZSTD_LEVEL).unwrap_or_else(|_| bytes.to_vec())
}

/// What [`compress`] made of at most `limit` bytes: decompressed when it
/// is a zstd frame, else as it is (entries stored before compression);
/// `None` for a damaged or larger frame.
fn decompress(stored: &[u8], limit: u64) -> Option<std::borrow::Cow<'_, [u8]>> {
    if !stored.starts_with(&ZSTD_MAGIC) {
        return Some(std::borrow::Cow::Borrowed(stored));
    }
    crate::repo::decompress_bounded(stored, limit).map(std::borrow::Cow::Owned)
}

/// The manifest a stored payload holds (see [`decompress`]).
fn decode_manifest(payload: &[u8]) -> Option<Manifest> {
    Manifest::decode(&decompress(payload, MAX_MANIFEST_BYTES)?)
}

/// Whether a result's payload is whole: an object or a recipe, not a
/// difference from another result.
fn is_whole(payload: &[u8]) -> bool {
    !delta::is_delta(payload) && recipe::delta_base(payload).is_none()
}

/// The object of a result's payload; `None` unless it is an ELF object of
/// at most [`MAX_OUTPUT_BYTES`].
fn result_object(payload: &[u8]) -> Option<Vec<u8>> {
    let object = decompress(payload, MAX_OUTPUT_BYTES)?.into_owned();
    object.starts_with(b"\x7fELF").then_some(object)
}

/// Why a result entry gives no result.
#[derive(Debug, PartialEq, Eq)]
enum Undecodable {
    /// The entry is damaged: it goes.
    Corrupt,
    /// It is a delta whose base is not stored whole any more: a miss.
    BaseGone,
    /// It is a recipe whose fragments do not give the object any more
    /// (one was evicted or stored again otherwise): a miss.
    FragmentsGone,
}

/// What a result stored as a difference or a recipe needs.
struct Sources<'s> {
    /// A delta's base: the object of the result under a key, stored whole.
    whole_object: &'s dyn Fn(&FragmentDigest) -> Option<Vec<u8>>,
    /// A recipe's fragment: the payload of the object entry under a key.
    fragment: &'s dyn Fn(&FragmentDigest) -> Option<Vec<u8>>,
    /// Says which fragments are about to be read (a remote tier asks for
    /// them in one round trip).
    prefetch: &'s dyn Fn(&[FragmentDigest]),
    /// A recipe difference's base: the recipe of the result under a key,
    /// stored whole (decompressed).
    recipe_body: &'s dyn Fn(&FragmentDigest) -> Option<Vec<u8>>,
    compose: Option<recipe::Composer>,
}

/// Largest recipe read (decompressed).
const MAX_RECIPE_BYTES: u64 = 256 << 20;

/// A result entry's contents; a delta's base object and a recipe's
/// fragments come from `sources`.
fn decode_result(
    e: &Entry,
    wants_dep_file: bool,
    sources: &Sources,
) -> Result<CachedResult, Undecodable> {
    let parts = result_parts(e, wants_dep_file).ok_or(Undecodable::Corrupt)?;
    let (compile_ms, stderr, dep_file) = parts;
    let object = if recipe::is_recipe(&e.payload) {
        let body = match recipe::delta_base(&e.payload) {
            Some(base_key) => {
                let base = (sources.recipe_body)(&base_key).ok_or(Undecodable::BaseGone)?;
                recipe::delta_body(&e.payload, &base, MAX_RECIPE_BYTES)
                    .ok_or(Undecodable::BaseGone)?
            }
            None => recipe::whole_body(&e.payload, MAX_RECIPE_BYTES).ok_or(Undecodable::Corrupt)?,
        };
        let r = recipe::Recipe::parse(&body).ok_or(Undecodable::Corrupt)?;
        (sources.prefetch)(&r.stored_keys());
        let compose = sources.compose.ok_or(Undecodable::FragmentsGone)?;
        r.cook(sources.fragment, compose)
            .ok_or(Undecodable::FragmentsGone)?
    } else {
        match delta::base_key(&e.payload) {
            Some(base_key) => {
                let base = (sources.whole_object)(&base_key).ok_or(Undecodable::BaseGone)?;
                delta::decode(&e.payload, &base, MAX_OUTPUT_BYTES)
                    .filter(|o| o.starts_with(b"\x7fELF"))
                    .ok_or(Undecodable::BaseGone)?
            }
            None => result_object(&e.payload).ok_or(Undecodable::Corrupt)?,
        }
    };
    Ok(CachedResult {
        compile_ms,
        object,
        dep_file,
        stderr,
    })
}

/// A result's compile time, diagnostics and dependency file (`None`: a
/// damaged entry, or one without the dependency file the unit needs).
#[allow(clippy::type_complexity)]
fn result_parts(e: &Entry, wants_dep_file: bool) -> Option<(u64, Vec<u8>, Option<Vec<u8>>)> {
    let m = &e.metadata;
    let take = |at: usize| -> Option<(&[u8], usize)> {
        let len = u64::from_le_bytes(m.get(at..at + 8)?.try_into().ok()?) as usize;
        let end = (at + 8).checked_add(len)?;
        Some((m.get(at + 8..end)?, end))
    };
    let compile_ms = u64::from_le_bytes(m.get(..8)?.try_into().ok()?);
    let (stderr, at) = take(8)?;
    let dep_file = match m.get(at)? {
        0 => None,
        1 => {
            let (d, end) = take(at + 1)?;
            if end != m.len() {
                return None;
            }
            Some(d.to_vec())
        }
        _ => return None,
    };
    if wants_dep_file != dep_file.is_some() {
        return None;
    }
    Some((compile_ms, stderr.to_vec(), dep_file))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a result needs, from `whole_object` (nothing for a recipe).
    fn with_bases(whole_object: &dyn Fn(&FragmentDigest) -> Option<Vec<u8>>) -> Sources<'_> {
        Sources {
            whole_object,
            fragment: &|_| None,
            prefetch: &|_| {},
            recipe_body: &|_| None,
            compose: None,
        }
    }

    /// A result entry decoded without a store (no delta bases).
    fn decoded(e: &Entry, wants_dep_file: bool) -> Option<CachedResult> {
        decode_result(e, wants_dep_file, &with_bases(&|_| None)).ok()
    }

    #[test]
    fn result_entries_round_trip_and_reject_garbage() {
        let e = encode_result(b"\x7fELF obj", Some(b"x.o: x.c\n"), b"warning\n", 42);
        let r = decoded(&e, true).unwrap();
        assert_eq!(r.object, b"\x7fELF obj");
        assert_eq!(r.dep_file.as_deref(), Some(&b"x.o: x.c\n"[..]));
        assert_eq!(r.stderr, b"warning\n");
        assert_eq!(r.compile_ms, 42);
        // A result without the dependency file the unit needs is no hit.
        assert!(decoded(&e, false).is_none());
        let mut bad = e.clone();
        bad.metadata.truncate(5);
        assert!(decoded(&bad, true).is_none());
        let e = encode_result(b"\x7fELF", None, b"", 0);
        assert!(decoded(&e, false).is_some());
        // Objects are stored compressed; one stored as it is (before
        // compression) still reads; a damaged frame or anything but an
        // object does not.
        let object: Vec<u8> = b"\x7fELF"
            .iter()
            .copied()
            .chain((0..4096u32).flat_map(|i| (i % 7).to_le_bytes()))
            .collect();
        let e = encode_result(&object, None, b"", 1);
        assert!(e.payload.len() < object.len() / 4, "{}", e.payload.len());
        assert_eq!(decoded(&e, false).unwrap().object, object);
        let mut raw = e.clone();
        raw.payload = object.clone();
        assert_eq!(decoded(&raw, false).unwrap().object, object);
        let mut damaged = e.clone();
        let last = damaged.payload.len() - 1;
        damaged.payload.truncate(last);
        assert!(decoded(&damaged, false).is_none());
        let mut not_elf = e;
        not_elf.payload = zstd::bulk::compress(b"not an object", 1).unwrap();
        assert!(decoded(&not_elf, false).is_none());
    }

    #[test]
    fn a_delta_result_reads_with_its_base_and_misses_without() {
        let base: Vec<u8> = b"\x7fELF"
            .iter()
            .copied()
            .chain((0..200_000u32).flat_map(|i| (i.wrapping_mul(2654435761)).to_le_bytes()))
            .collect();
        let mut edited = base.clone();
        edited[5000..5004].copy_from_slice(b"edit");
        let base_key = FragmentDigest([9; 32]);
        let mut e = encode_result(&edited, None, b"", 3);
        let whole = e.payload.len();
        e.payload = delta::encode(&edited, &base_key, &base, OBJECT_ZSTD_LEVEL).unwrap();
        assert!(
            e.payload.len() * 20 < whole,
            "{} of {whole}",
            e.payload.len()
        );
        let with_base = |k: &FragmentDigest| (*k == base_key).then(|| base.clone());
        let decode = |f: &dyn Fn(&FragmentDigest) -> Option<Vec<u8>>| {
            decode_result(&e, false, &with_bases(f))
        };
        assert_eq!(decode(&with_base).unwrap().object, edited);
        assert_eq!(decode(&|_| None).err(), Some(Undecodable::BaseGone));
        let other = |_: &FragmentDigest| Some(edited.clone());
        assert_eq!(decode(&other).err(), Some(Undecodable::BaseGone));
    }

    /// Manifests of units that read the same headers are stored as their
    /// difference from the first one recorded; one whose reference is gone
    /// reads as a miss, not as damage.
    #[test]
    fn manifests_are_stored_against_the_reference() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::repo::store::Store::new(dir.path());
        let uc = UnitCache {
            storage: &store,
            key: UnitIdentity {
                repocc: "test",
                llvm: "19",
            },
            clang: Path::new("clang-19"),
            clang_identity: "clang",
            config: String::new(),
            cwd: dir.path().to_path_buf(),
            force_color: false,
            start: SystemTime::now(),
            composer: None,
        };
        let header = |i: u64| FileState {
            path: format!("/usr/include/header{i}.h"),
            file_id: (64769, 1000 + i * 7919),
            size: 1000 + i * 37,
            mtime_ns: 1_700_000_000_000_000_000 + i as i128 * 1_000_003,
            ctime_ns: 1_700_000_000_000_000_000 + i as i128 * 999_983,
            digest: blake3::hash(&i.to_le_bytes()).to_hex()[..40].to_string(),
            tokens: Some(blake3::hash(&(i + 1).to_le_bytes()).to_hex()[..16].to_string()),
        };
        let files = |unit: u64| -> Vec<FileState> {
            let mut f: Vec<FileState> = (0..80).map(header).collect();
            f.insert(0, header(1000 + unit));
            f
        };
        let mut sizes = Vec::new();
        for unit in 0..3u64 {
            let key = FragmentDigest([unit as u8 + 1; 32]);
            let result = FragmentDigest([unit as u8 + 100; 32]);
            let entries =
                uc.manifest_entries(&key, Manifest::default(), &files(unit), Vec::new(), &result);
            assert_eq!(entries.len(), if unit == 0 { 3 } else { 1 }, "unit {unit}");
            sizes.push(entries.last().unwrap().1.payload.len());
            store.put_many(&entries).unwrap();
            let m = uc.stored_manifest(&key);
            assert_eq!(m.results.len(), 1);
            assert_eq!(m.results[0].result, hex(&result));
        }
        assert!(sizes[1] * 4 < sizes[0], "{sizes:?}");
        let reference = uc.manifest_reference().unwrap().0;
        store.remove(&reference).unwrap();
        match store.get(&FragmentDigest([2; 32])).unwrap() {
            Lookup::Hit(e) => assert!(matches!(
                uc.decode_manifest(&e.payload),
                Err(ManifestUnread::ReferenceGone)
            )),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn finds_the_dependency_file_and_time_macros() {
        let args: Vec<String> = ["-MD", "-MF", "a.d", "-MFb.d"].map(String::from).to_vec();
        assert_eq!(dependency_file(&args), Some("b.d"));
        assert!(uses_time_macros(b"const char *t = __TIME__;", false));
        assert!(!uses_time_macros(b"const char *t = __TIME__;", true));
        assert!(uses_time_macros(b"__TIMESTAMP__", true));
        assert!(!uses_time_macros(b"__TIME", false));
        let k = FragmentDigest([7; 32]);
        assert_eq!(parse_hex_key(&hex(&k)), Some(k));
    }
}
