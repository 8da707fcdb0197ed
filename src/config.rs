//! Configuration: the documented defaults in `config/repocc.json` (compiled
//! in, so the documentation and the defaults cannot drift apart), then the
//! user file `~/.config/repocc/config.json`, then the file named by
//! `REPOCC_CONFIG`, then `REPOCC_<KEY>` environment variables. A broken
//! user file costs a warning line, never a failed build.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const DEFAULTS_JSON: &str = include_str!("../config/repocc.json");

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub clang: String,
    pub clangxx: String,
    pub dir: String,
    pub shared_dir: String,
    pub disable: bool,
    /// Whether units use the program repository: `"auto"` for every unit
    /// but C units at `-O0` without debug info (see [`Switch`]).
    pub fragments: Switch,
    /// Whether units compiled with debug info use the repository:
    /// `"auto"` at `-O1` and above, where it pays.
    pub debug_fragments: Switch,
    /// Whether stored bodies are kept (see `ir::bodies`): `"auto"` from a
    /// unit's second compile on.
    pub context_bodies: Switch,
    pub jobs: usize,
    pub max_size: String,
    pub merge_functions: bool,
    pub stats: bool,
    pub unit_cache: bool,
    pub remote_storage: String,
    pub remote_read_only: bool,
    pub remote_connect_timeout_ms: u64,
    pub remote_timeout_ms: u64,
}

/// A setting that is `true`, `false`, or `"auto"`: what repocc decides
/// case by case (`fragments`, `debug_fragments`, `context_bodies`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    Off,
    On,
    Auto,
}

/// The settings that take `"auto"` besides `true` and `false`.
const SWITCHES: [&str; 3] = ["fragments", "debug_fragments", "context_bodies"];

impl Switch {
    /// Whether it is on, with `auto` what `"auto"` decided.
    pub fn applies(self, auto: bool) -> bool {
        match self {
            Switch::Off => false,
            Switch::On => true,
            Switch::Auto => auto,
        }
    }

    /// The setting from its JSON value: a boolean, or a string naming one
    /// (as the environment spells it) or `auto`.
    fn from_value(v: &Value) -> Option<Switch> {
        match v {
            Value::Bool(true) => Some(Switch::On),
            Value::Bool(false) => Some(Switch::Off),
            Value::String(s) if s.trim().eq_ignore_ascii_case("auto") => Some(Switch::Auto),
            Value::String(s) => parse_bool(s).map(|b| if b { Switch::On } else { Switch::Off }),
            _ => None,
        }
    }

    /// The setting as the configuration spells it.
    pub fn to_value(self) -> Value {
        match self {
            Switch::Off => Value::Bool(false),
            Switch::On => Value::Bool(true),
            Switch::Auto => Value::String("auto".into()),
        }
    }
}

impl Serialize for Switch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Switch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Switch::from_value(&v)
            .ok_or_else(|| serde::de::Error::custom(format!("{v} is not true, false or \"auto\"")))
    }
}

/// Where a setting's value came from (for `--show-config`).
#[derive(Clone, Debug, Serialize)]
pub struct Origin {
    pub key: String,
    pub value: Value,
    pub source: String,
}

#[derive(Clone, Debug)]
pub struct Loaded {
    pub config: Config,
    pub origins: Vec<Origin>,
    /// Problems met while loading (printed once as warnings).
    pub warnings: Vec<String>,
}

fn strip_comments(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m
            .into_iter()
            .filter(|(k, _)| !k.starts_with("//"))
            .collect(),
        _ => Map::new(),
    }
}

fn defaults() -> Map<String, Value> {
    strip_comments(serde_json::from_str(DEFAULTS_JSON).expect("config/repocc.json is valid JSON"))
}

/// The user file: `$XDG_CONFIG_HOME/repocc/config.json` or
/// `~/.config/repocc/config.json`.
pub fn user_config_path() -> Option<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME").filter(|x| !x.is_empty()) {
        return Some(PathBuf::from(x).join("repocc/config.json"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config/repocc/config.json"))
}

/// Switches read from the environment alone, for diagnosis and
/// comparison (none is a setting of the configuration files), read once:
///
/// | variable | effect |
/// |---|---|
/// | `REPOCC_EXPLAIN` (set) | why each unit and definition was compiled |
/// | `REPOCC_TIMINGS` (set) | each unit's time per stage |
/// | `REPOCC_DIGEST_REPORT` (set) | how far an edit to one definition spreads |
/// | `REPOCC_EXTERNAL_FRONTEND` (not empty, not `0`) | clang-19's frontend as a process |
/// | `REPOCC_NO_CARVE` (set) | new fragments compiled one module each (in the keys: other bytes) |
/// | `REPOCC_DUMP_FRAGMENT_MODULES` (a directory) | each fragment compiled as a module of its own written there as bitcode, as compiled |
/// | `REPOCC_CHECK_DEBUG_CARVING` (set) | each debug fragment carved from a batch also compiled alone and carved; a difference is reported |
/// | `REPOCC_RECURSION_GUARD` (set) | repocc was started by a compiler repocc ran: an error |
#[derive(Clone, Debug, Default)]
pub struct Switches {
    pub explain: bool,
    pub timings: bool,
    pub digest_report: bool,
    pub external_frontend: bool,
    pub no_carve: bool,
    pub dump_fragment_modules: Option<PathBuf>,
    pub check_debug_carving: bool,
    pub recursion: bool,
}

pub use crate::support::RECURSION_GUARD;

impl Switches {
    fn from_env() -> Switches {
        let set = |name: &str| std::env::var_os(name).is_some();
        Switches {
            explain: set("REPOCC_EXPLAIN"),
            timings: set("REPOCC_TIMINGS"),
            digest_report: set("REPOCC_DIGEST_REPORT"),
            external_frontend: std::env::var_os("REPOCC_EXTERNAL_FRONTEND")
                .is_some_and(|v| !v.is_empty() && v != "0"),
            no_carve: set("REPOCC_NO_CARVE"),
            dump_fragment_modules: std::env::var_os("REPOCC_DUMP_FRAGMENT_MODULES")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            check_debug_carving: set("REPOCC_CHECK_DEBUG_CARVING"),
            recursion: set(RECURSION_GUARD),
        }
    }
}

/// The environment's switches (see [`Switches`]).
pub fn switches() -> &'static Switches {
    static SWITCHES: std::sync::OnceLock<Switches> = std::sync::OnceLock::new();
    SWITCHES.get_or_init(Switches::from_env)
}

pub fn load() -> Loaded {
    load_from(
        user_config_path(),
        std::env::var_os("REPOCC_CONFIG").map(PathBuf::from),
        |k| std::env::var(k).ok(),
    )
}

pub fn load_from(
    user_file: Option<PathBuf>,
    env_file: Option<PathBuf>,
    env: impl Fn(&str) -> Option<String>,
) -> Loaded {
    let defaults_map = defaults();
    let mut merged = defaults_map.clone();
    let mut origins: Map<String, Value> = merged
        .keys()
        .map(|k| (k.clone(), Value::String("default".into())))
        .collect();
    let mut warnings = Vec::new();

    let layers = [(user_file, false), (env_file, true)];
    for (path, must_exist) in layers {
        let Some(path) = path else { continue };
        let text = match crate::repo::fsx::read_bounded(&path, MAX_CONFIG_BYTES) {
            Ok(t) => String::from_utf8_lossy(&t).into_owned(),
            Err(crate::repo::fsx::ReadError::Missing) if !must_exist => continue,
            Err(e) => {
                warnings.push(format!("cannot read config {}: {e}", path.display()));
                continue;
            }
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Object(_)) => {
                for (k, v) in strip_comments(v) {
                    let Some(default) = defaults_map.get(&k) else {
                        warnings.push(format!("unknown key {k:?} in {}", path.display()));
                        continue;
                    };
                    match validate(&k, default, v) {
                        Ok(v) => {
                            origins.insert(k.clone(), Value::String(path.display().to_string()));
                            merged.insert(k, v);
                        }
                        Err(why) => {
                            warnings.push(format!("ignoring {k:?} in {}: {why}", path.display()))
                        }
                    }
                }
            }
            Ok(_) => warnings.push(format!("config {} is not a JSON object", path.display())),
            Err(e) => warnings.push(format!("config {} is not valid JSON: {e}", path.display())),
        }
    }

    let keys: Vec<String> = merged.keys().cloned().collect();
    for k in keys {
        let var = format!("REPOCC_{}", k.to_ascii_uppercase());
        let Some(raw) = env(&var) else { continue };
        let default = &defaults_map[&k];
        let parsed = match default {
            Value::Bool(_) => parse_bool(&raw)
                .map(Value::Bool)
                .ok_or("expected true or false".to_string()),
            Value::Number(_) => raw
                .trim()
                .parse::<u64>()
                .map(Value::from)
                .map_err(|_| "expected a non-negative integer".to_string()),
            _ => Ok(Value::String(raw.clone())),
        }
        .and_then(|v| validate(&k, default, v));
        match parsed {
            Ok(v) => {
                merged.insert(k.clone(), v);
                origins.insert(k, Value::String(format!("environment {var}")));
            }
            Err(why) => {
                let shown = if k == "remote_storage" {
                    crate::repo::remote::redact(&raw)
                } else {
                    raw.clone()
                };
                warnings.push(format!("ignoring {var}={shown:?}: {why}"))
            }
        }
    }

    // Every value was checked alone above; this cannot fail, but if it
    // did, the defaults are a working configuration.
    let config = match serde_json::from_value::<Config>(Value::Object(merged.clone())) {
        Ok(c) => c,
        Err(e) => {
            warnings.push(format!("invalid configuration ({e}); using defaults"));
            serde_json::from_value(Value::Object(defaults())).expect("defaults are valid")
        }
    };
    let origins = merged
        .into_iter()
        .map(|(key, value)| match (key.as_str(), &value) {
            // The remote's password is not shown (`--show-config`).
            ("remote_storage", Value::String(url)) => {
                let shown = Value::String(crate::repo::remote::redact(url));
                (key, shown)
            }
            _ => (key, value),
        })
        .map(|(key, value)| Origin {
            source: origins
                .get(&key)
                .and_then(|v| v.as_str())
                .unwrap_or("default")
                .to_string(),
            key,
            value,
        })
        .collect();
    Loaded {
        config,
        origins,
        warnings,
    }
}

/// Largest configuration file read.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Checks one value against its key: the type of the default, and what the
/// key itself requires. A bad value fails alone, with the reason.
fn validate(key: &str, default: &Value, v: Value) -> Result<Value, String> {
    if SWITCHES.contains(&key) {
        // A boolean, or "auto": one value, whichever way it was spelled.
        return Switch::from_value(&v)
            .map(Switch::to_value)
            .ok_or_else(|| format!("{v} is not true, false or \"auto\""));
    }
    let type_ok = match default {
        Value::Bool(_) => v.is_boolean(),
        Value::Number(_) => v.is_u64(),
        Value::String(_) => v.is_string(),
        _ => true,
    };
    if !type_ok {
        let want = match default {
            Value::Bool(_) => "true or false",
            Value::Number(_) => "a non-negative integer",
            _ => "a string",
        };
        return Err(format!("{v} is not {want}"));
    }
    if key == "remote_storage" {
        let text = v.as_str().unwrap_or("");
        if !text.is_empty() {
            crate::repo::remote::check_url(text)?;
        }
    }
    if key == "max_size" {
        let text = v.as_str().unwrap_or("");
        if crate::repo::store::parse_size(text).is_none() {
            return Err(format!("{text:?} is not a size (examples: 500M, 10G, 0)"));
        }
    }
    Ok(v)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

impl Config {
    /// The repository directory: `dir`, else `$XDG_CACHE_HOME/repocc`,
    /// else `~/.cache/repocc` (the home directory from the password
    /// database when `HOME` is unset). `None` when there is no home at all:
    /// never a predictable path in a shared directory such as /tmp.
    pub fn repo_dir(&self) -> Option<PathBuf> {
        if !self.dir.is_empty() {
            return Some(PathBuf::from(&self.dir));
        }
        if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
            return Some(PathBuf::from(x).join("repocc"));
        }
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| crate::repo::trust::home_of(crate::repo::fsx::current_uid()))?;
        Some(home.join(".cache/repocc"))
    }

    /// The remote tier, if configured.
    pub fn remote(&self) -> Option<crate::repo::remote::RemoteSettings> {
        (!self.remote_storage.is_empty()).then(|| crate::repo::remote::RemoteSettings {
            url: self.remote_storage.clone(),
            read_only: self.remote_read_only,
            connect_timeout: std::time::Duration::from_millis(
                self.remote_connect_timeout_ms.max(1),
            ),
            request_timeout: std::time::Duration::from_millis(self.remote_timeout_ms.max(1)),
        })
    }

    /// The repository shared on purpose, if configured.
    pub fn shared_dir(&self) -> Option<PathBuf> {
        (!self.shared_dir.is_empty()).then(|| PathBuf::from(&self.shared_dir))
    }

    /// The repository this process may use: configured, and trusted (see
    /// `repo::trust`). The error is the one warning line to print.
    pub fn usable_repo_dir(&self) -> Result<PathBuf, String> {
        let dir = self.repo_dir().ok_or(
            "no repository: HOME is not set and the user has no home directory; set REPOCC_DIR",
        )?;
        let shared = self.shared_dir();
        crate::repo::trust::check(&dir, crate::repo::fsx::current_uid(), shared.as_deref())
            .map_err(|why| {
                format!(
                    "not using the repository {}: {why} (others could put code into your programs; \
                     fix the permissions, or name it in shared_dir to share it on purpose)",
                    dir.display()
                )
            })?;
        crate::repo::fsx::set_shared(shared.is_some());
        Ok(dir)
    }

    /// The store's size limit in bytes (validated when loaded).
    pub fn max_size_bytes(&self) -> u64 {
        crate::repo::store::parse_size(&self.max_size).unwrap_or(10 << 30)
    }

    pub fn jobs(&self) -> Jobs {
        Jobs(self.jobs)
    }
}

/// A number of workers as configured: 0 is the machine's parallelism,
/// found when first asked for. A unit cache hit never asks (finding it
/// reads the cgroup's CPU limits, 2% of a small unit's hit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jobs(pub usize);

impl Jobs {
    pub fn get(self) -> usize {
        static MACHINE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        match self.0 {
            0 => {
                *MACHINE.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            }
            n => n,
        }
    }
}

/// Sets `key` to `value` in the user configuration file, keeping the rest.
pub fn set_user_value(key: &str, value: Value) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    let path = user_config_path().context("no home directory for the user configuration")?;
    let mut map = match std::fs::read_to_string(&path) {
        Ok(t) => match serde_json::from_str::<Value>(&t) {
            Ok(Value::Object(m)) => m,
            _ => anyhow::bail!("{} is not a JSON object; not changing it", path.display()),
        },
        Err(_) => Map::new(),
    };
    map.insert(key.to_string(), value);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(&Value::Object(map))? + "\n";
    crate::support::output::write_atomically(&path, text.as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_document_every_key() {
        let raw: Value = serde_json::from_str(DEFAULTS_JSON).unwrap();
        let obj = raw.as_object().unwrap();
        for k in defaults().keys() {
            assert!(obj.contains_key(&format!("//{k}")), "key {k} has no // doc");
        }
        let l = load_from(None, None, |_| None);
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(l.config.clang, "clang-19");
    }

    /// `fragments` and `context_bodies` from the environment: booleans
    /// (as configurations written when `fragments` was one spell them) or
    /// `auto`, the default; anything else is a warning and the default.
    #[test]
    fn switches_are_a_boolean_or_auto() {
        type Setting = fn(&Config) -> Switch;
        let settings: [(&str, Setting); 2] = [
            ("REPOCC_FRAGMENTS", |c| c.fragments),
            ("REPOCC_CONTEXT_BODIES", |c| c.context_bodies),
        ];
        for (var, setting) in settings {
            assert_eq!(
                setting(&load_from(None, None, |_| None).config),
                Switch::Auto
            );
            for (raw, want) in [
                ("1", Switch::On),
                ("false", Switch::Off),
                ("auto", Switch::Auto),
            ] {
                let l = load_from(None, None, |k| (k == var).then(|| raw.to_string()));
                assert_eq!(setting(&l.config), want, "{var}={raw:?}");
                assert!(l.warnings.is_empty(), "{:?}", l.warnings);
            }
            let bad = load_from(None, None, |k| (k == var).then(|| "often".to_string()));
            assert_eq!(setting(&bad.config), Switch::Auto, "{var}");
            assert_eq!(bad.warnings.len(), 1, "{:?}", bad.warnings);
        }
    }

    #[test]
    fn debug_fragments_is_a_boolean_or_auto() {
        let d = tempfile::tempdir().unwrap();
        let user = d.path().join("user.json");
        let auto = load_from(None, None, |_| None);
        assert_eq!(auto.config.debug_fragments, Switch::Auto);
        assert!(auto.config.debug_fragments.applies(true));
        assert!(!auto.config.debug_fragments.applies(false));
        std::fs::write(&user, r#"{"debug_fragments": true}"#).unwrap();
        let on = load_from(Some(user.clone()), None, |_| None);
        assert_eq!(on.config.debug_fragments, Switch::On);
        assert!(on.config.debug_fragments.applies(false));
        for (raw, want) in [
            ("0", Switch::Off),
            ("yes", Switch::On),
            (" AUTO ", Switch::Auto),
        ] {
            let l = load_from(Some(user.clone()), None, |k| {
                (k == "REPOCC_DEBUG_FRAGMENTS").then(|| raw.to_string())
            });
            assert_eq!(l.config.debug_fragments, want, "{raw:?}");
            assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        }
        std::fs::write(&user, r#"{"debug_fragments": "sometimes"}"#).unwrap();
        let bad = load_from(Some(user), None, |_| None);
        assert_eq!(bad.config.debug_fragments, Switch::Auto);
        assert_eq!(bad.warnings.len(), 1, "{:?}", bad.warnings);
    }

    #[test]
    fn layers_override_in_order() {
        let d = tempfile::tempdir().unwrap();
        let user = d.path().join("user.json");
        let envf = d.path().join("env.json");
        std::fs::write(&user, r#"{"clang": "/u/clang", "jobs": 3, "stats": false}"#).unwrap();
        std::fs::write(&envf, r#"{"clang": "/e/clang"}"#).unwrap();
        let l = load_from(Some(user), Some(envf.clone()), |k| {
            (k == "REPOCC_JOBS").then(|| "7".to_string())
        });
        assert_eq!(l.config.clang, "/e/clang");
        assert_eq!(l.config.jobs, 7);
        assert!(!l.config.stats);
        let o = l.origins.iter().find(|o| o.key == "clang").unwrap();
        assert_eq!(o.source, envf.display().to_string());
    }

    #[test]
    fn broken_files_and_values_warn_not_fail() {
        let d = tempfile::tempdir().unwrap();
        let user = d.path().join("user.json");
        std::fs::write(&user, "{not json").unwrap();
        let l = load_from(Some(user), Some(d.path().join("missing.json")), |k| {
            (k == "REPOCC_DISABLE").then(|| "maybe".to_string())
        });
        assert_eq!(l.warnings.len(), 3, "{:?}", l.warnings);
        assert!(!l.config.disable);
    }

    #[test]
    fn a_bad_value_fails_alone() {
        let d = tempfile::tempdir().unwrap();
        let user = d.path().join("user.json");
        std::fs::write(
            &user,
            r#"{"jobs": "many", "dir": "/my/repo", "max_size": "lots", "stats": false}"#,
        )
        .unwrap();
        let l = load_from(Some(user), None, |k| {
            (k == "REPOCC_MAX_SIZE").then(|| "12Q".to_string())
        });
        assert_eq!(l.config.jobs, 0);
        assert_eq!(l.config.dir, "/my/repo", "the other keys stay");
        assert!(!l.config.stats);
        assert_eq!(l.config.max_size, "10G");
        assert_eq!(l.warnings.len(), 3, "{:?}", l.warnings);
        assert!(l.warnings[0].contains("\"jobs\""), "{:?}", l.warnings);
        assert!(l.warnings.iter().any(|w| w.contains("REPOCC_MAX_SIZE")));
        let l = load_from(None, None, |k| {
            (k == "REPOCC_MAX_SIZE").then(|| "500M".into())
        });
        assert_eq!(l.config.max_size_bytes(), 500 << 20);
        assert!(l.warnings.is_empty());
    }

    #[test]
    fn remote_urls_are_checked_and_passwords_never_shown() {
        let l = load_from(None, None, |k| {
            (k == "REPOCC_REMOTE_STORAGE").then(|| "redis://:hunter2@127.0.0.1:6379/1".into())
        });
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        let remote = l.config.remote().unwrap();
        assert_eq!(remote.url, "redis://:hunter2@127.0.0.1:6379/1");
        let shown = serde_json::to_string(&l.origins).unwrap();
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("redis://***@127.0.0.1:6379/1"), "{shown}");
        let l = load_from(None, None, |k| {
            (k == "REPOCC_REMOTE_STORAGE").then(|| "http://user:hunter2@cache/".into())
        });
        assert!(l.config.remote().is_none(), "a bad URL is ignored");
        assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
        assert!(!l.warnings[0].contains("hunter2"), "{:?}", l.warnings);
        assert!(load_from(None, None, |_| None).config.remote().is_none());
    }
}
