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
    pub disable: bool,
    pub fragments: bool,
    pub debug_fragments: bool,
    pub jobs: usize,
    pub max_size: String,
    pub merge_functions: bool,
    pub stats: bool,
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
    let mut merged = defaults();
    let mut origins: Map<String, Value> = merged
        .keys()
        .map(|k| (k.clone(), Value::String("default".into())))
        .collect();
    let mut warnings = Vec::new();

    let layers = [(user_file, false), (env_file, true)];
    for (path, must_exist) in layers {
        let Some(path) = path else { continue };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                if must_exist || e.kind() != std::io::ErrorKind::NotFound {
                    warnings.push(format!("cannot read config {}: {e}", path.display()));
                }
                continue;
            }
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Object(_)) => {
                for (k, v) in strip_comments(v) {
                    if !merged.contains_key(&k) {
                        warnings.push(format!("unknown key {k:?} in {}", path.display()));
                        continue;
                    }
                    origins.insert(k.clone(), Value::String(path.display().to_string()));
                    merged.insert(k, v);
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
        let default = &merged[&k];
        let parsed = match default {
            Value::Bool(_) => parse_bool(&raw).map(Value::Bool),
            Value::Number(_) => raw.trim().parse::<u64>().ok().map(Value::from),
            _ => Some(Value::String(raw.clone())),
        };
        match parsed {
            Some(v) => {
                merged.insert(k.clone(), v);
                origins.insert(k, Value::String(format!("environment {var}")));
            }
            None => warnings.push(format!("ignoring {var}={raw:?}: not a valid value")),
        }
    }

    let config = match serde_json::from_value::<Config>(Value::Object(merged.clone())) {
        Ok(c) => c,
        Err(e) => {
            warnings.push(format!("invalid configuration ({e}); using defaults"));
            serde_json::from_value(Value::Object(defaults())).expect("defaults are valid")
        }
    };
    let origins = merged
        .into_iter()
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

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

impl Config {
    /// The repository directory.
    pub fn repo_dir(&self) -> PathBuf {
        if !self.dir.is_empty() {
            return PathBuf::from(&self.dir);
        }
        if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
            return PathBuf::from(x).join("repocc");
        }
        match std::env::var_os("HOME") {
            Some(h) => PathBuf::from(h).join(".cache/repocc"),
            None => PathBuf::from("/tmp/repocc"),
        }
    }

    /// The store's size limit in bytes (the default if the value is bad).
    pub fn max_size_bytes(&self) -> u64 {
        crate::repo::store::parse_size(&self.max_size).unwrap_or(10 << 30)
    }

    pub fn jobs(&self) -> usize {
        if self.jobs == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            self.jobs
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
    crate::pipeline::output::write_atomically(&path, text.as_bytes())?;
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
    fn wrong_type_in_file_falls_back_to_defaults() {
        let d = tempfile::tempdir().unwrap();
        let user = d.path().join("user.json");
        std::fs::write(&user, r#"{"jobs": "many"}"#).unwrap();
        let l = load_from(Some(user), None, |_| None);
        assert_eq!(l.config.jobs, 0);
        assert_eq!(l.warnings.len(), 1);
    }
}
