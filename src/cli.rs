//! repocc's own commands. They are recognised only when the first argument
//! is one of them (`repocc --show-stats`), so they never collide with a
//! compiler option in a build; everything else is a compiler invocation.

use std::io::Write;

use clap::{ArgGroup, CommandFactory, Parser, ValueEnum};
use clap_complete::Shell;

use crate::config;
use crate::repo::size;
use crate::repo::stats::{self, key};
use crate::repo::store::{self, Store};

#[derive(Parser, Debug)]
#[command(
    name = "repocc",
    version,
    about = "A drop-in clang-19 driver that compiles through an in-process LLVM pipeline.",
    long_about = "A drop-in clang-19 driver that compiles through an in-process LLVM pipeline.\n\n\
        Use it as the compiler: CC=repocc CXX=repocc++ make, the CMake toolchain file \
        config/repocc-toolchain.cmake, or as a launcher: repocc clang-19 -c x.c.\n\
        Every other command line is a compiler invocation; clang's own help is `clang-19 --help`.",
    disable_version_flag = true,
    group(ArgGroup::new("action").required(true))
)]
pub struct AdminCli {
    /// Print the configuration in effect and where each value comes from.
    #[arg(long, group = "action")]
    pub show_config: bool,
    /// Print the statistics counters.
    #[arg(long, group = "action")]
    pub show_stats: bool,
    /// Reset the statistics counters.
    #[arg(long, group = "action")]
    pub zero_stats: bool,
    /// Remove every fragment from the repository.
    #[arg(long, group = "action")]
    pub clear: bool,
    /// Evict least recently used fragments down to the size limit.
    #[arg(long, group = "action")]
    pub cleanup: bool,
    /// Set the repository's size limit (e.g. 500M, 10G) in the user
    /// configuration, then evict down to it.
    #[arg(long, value_name = "SIZE", group = "action")]
    pub max_size: Option<String>,
    /// Remove fragments not used for AGE (e.g. 3600, 90m, 12h, 7d).
    #[arg(long, value_name = "AGE", group = "action")]
    pub evict_older_than: Option<String>,
    /// Check every fragment; report and remove the bad ones.
    #[arg(long, group = "action")]
    pub verify: bool,
    /// Print a shell completion script.
    #[arg(long, value_name = "SHELL", group = "action")]
    pub completions: Option<CompletionShell>,
    /// Output format of --show-config and --show-stats.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
}

/// The first arguments that select repocc's own commands.
pub const COMMANDS: &[&str] = &[
    "--help",
    "--show-config",
    "--show-stats",
    "--zero-stats",
    "--clear",
    "--cleanup",
    "--max-size",
    "--evict-older-than",
    "--verify",
    "--completions",
];

pub fn is_admin_command(first: &str) -> bool {
    COMMANDS
        .iter()
        .any(|c| first == *c || first.starts_with(&format!("{c}=")))
}

/// The completion script for `shell`.
pub fn completion_script(shell: CompletionShell) -> Vec<u8> {
    let shell = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut AdminCli::command(), "repocc", &mut out);
    out
}

/// Long on purpose: one arm per admin command, each a few lines of printing.
pub fn run(args: Vec<String>) -> i32 {
    let cli = match AdminCli::try_parse_from(std::iter::once("repocc".to_string()).chain(args)) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let loaded = config::load();
    for w in &loaded.warnings {
        say!("repocc: warning: {w}");
    }
    let mut out = std::io::stdout().lock();
    // The repository for the commands that change it: only a trusted one.
    let usable_repo = || {
        loaded.config.usable_repo_dir().map_err(|e| {
            say!("repocc: error: {e}");
            1
        })
    };
    let shown_repo = loaded.config.repo_dir().map_or_else(
        || "(none: HOME is not set)".to_string(),
        |d| d.display().to_string(),
    );
    if let Some(shell) = cli.completions {
        let _ = out.write_all(&completion_script(shell));
    } else if cli.show_config {
        show_config(&mut out, &loaded, &shown_repo, cli.format);
    } else if cli.show_stats {
        let code = show_stats(&mut out, &loaded, &shown_repo, cli.format);
        if code != 0 {
            return code;
        }
    } else if cli.clear {
        let dir = match usable_repo() {
            Ok(d) => d,
            Err(code) => return code,
        };
        let st = Store::new(&dir);
        if let Err(e) = st.clear() {
            say!("repocc: error: clearing {}: {e}", st.root().display());
            return 1;
        }
        let _ = size::record_measured(&dir, 0);
        let _ = writeln!(out, "Repository cleared");
    } else if cli.cleanup {
        let dir = match usable_repo() {
            Ok(d) => d,
            Err(code) => return code,
        };
        let r = Store::new(&dir).evict_to(loaded.config.max_size_bytes());
        let _ = size::record_measured(&dir, r.bytes_after);
        let _ = writeln!(
            out,
            "Evicted {} of {} entries; {} -> {} bytes (limit {})",
            r.removed, r.entries_before, r.bytes_before, r.bytes_after, loaded.config.max_size
        );
    } else if let Some(size) = &cli.max_size {
        let Some(bytes) = store::parse_size(size) else {
            say!("repocc: error: invalid size {size:?} (examples: 500M, 10G)");
            return 2;
        };
        match config::set_user_value("max_size", size.clone().into()) {
            Ok(path) => {
                let _ = writeln!(out, "Set max_size = {size} in {}", path.display());
            }
            Err(e) => {
                say!("repocc: error: {e:#}");
                return 1;
            }
        }
        let dir = match usable_repo() {
            Ok(d) => d,
            Err(code) => return code,
        };
        let r = Store::new(&dir).evict_to(bytes);
        let _ = size::record_measured(&dir, r.bytes_after);
        if r.removed > 0 {
            let _ = writeln!(out, "Evicted {} entries", r.removed);
        }
    } else if let Some(age) = &cli.evict_older_than {
        let Some(age) = store::parse_age(age) else {
            say!("repocc: error: invalid age {age:?} (examples: 3600, 90m, 12h, 7d)");
            return 2;
        };
        let dir = match usable_repo() {
            Ok(d) => d,
            Err(code) => return code,
        };
        let r = Store::new(&dir).evict_older_than(age);
        let _ = size::record_measured(&dir, r.bytes_after);
        let _ = writeln!(out, "Evicted {} of {} entries", r.removed, r.entries_before);
    } else if cli.verify {
        let dir = match usable_repo() {
            Ok(d) => d,
            Err(code) => return code,
        };
        let r = Store::new(&dir).verify_all();
        for (path, why) in &r.removed {
            let _ = writeln!(out, "removed {}: {why}", path.display());
        }
        let _ = writeln!(
            out,
            "Checked {} entries, removed {} bad",
            r.checked,
            r.removed.len()
        );
        if !r.removed.is_empty() {
            return 1;
        }
    } else if cli.zero_stats {
        let dir = match usable_repo() {
            Ok(d) => d,
            Err(code) => return code,
        };
        if let Err(e) = stats::zero(&dir) {
            say!("repocc: error: {e:#}");
            return 1;
        }
        let _ = writeln!(out, "Statistics zeroed");
    }
    0
}

/// `--show-config`: every setting, its value and where it came from.
fn show_config(out: &mut impl Write, loaded: &config::Loaded, shown_repo: &str, format: Format) {
    if format == Format::Json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&loaded.origins).unwrap_or_default()
        );
        return;
    }
    for o in &loaded.origins {
        let _ = writeln!(
            out,
            "{:<16} = {:<24} ({})",
            o.key,
            o.value.to_string(),
            o.source
        );
    }
    let _ = writeln!(
        out,
        "{:<16} = {:<24} (derived)",
        "repository",
        format!("{shown_repo:?}")
    );
}

/// `--show-stats`: the counters, the repository's size and the reasons;
/// the exit code.
fn show_stats(
    out: &mut impl Write,
    loaded: &config::Loaded,
    shown_repo: &str,
    format: Format,
) -> i32 {
    let Some(dir) = loaded.config.repo_dir() else {
        say!("repocc: error: no repository: HOME is not set; set REPOCC_DIR");
        return 1;
    };
    if let Err(e) = loaded.config.usable_repo_dir() {
        say!("repocc: warning: {e}");
    }
    let s = stats::read(&dir);
    let (repo_bytes, repo_entries) = Store::new(&dir).size();
    if format == Format::Json {
        let mut m = serde_json::Map::new();
        for k in key::ALL {
            m.insert(k.to_string(), s.get(k).into());
        }
        for (k, v) in &s.counters {
            m.insert(k.clone(), (*v).into());
        }
        m.insert("repo_bytes".into(), repo_bytes.into());
        m.insert("repo_entries".into(), repo_entries.into());
        m.insert(
            "max_size_bytes".into(),
            loaded.config.max_size_bytes().into(),
        );
        m.insert(
            "reasons".into(),
            serde_json::to_value(&s.reasons).unwrap_or_default(),
        );
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&serde_json::Value::Object(m)).unwrap_or_default()
        );
        return 0;
    }
    let _ = writeln!(out, "repository: {shown_repo}");
    for line in summary_lines(&s) {
        let _ = writeln!(out, "{line}");
    }
    let mut keys: Vec<&str> = key::ALL.to_vec();
    for k in s.counters.keys() {
        if !keys.contains(&k.as_str()) {
            keys.push(k);
        }
    }
    for k in keys {
        let _ = writeln!(out, "  {:<24} {:>10}", k, s.get(k));
    }
    let _ = writeln!(
        out,
        "  {:<24} {:>10}\n  {:<24} {:>10}  (limit {})",
        "repo_entries", repo_entries, "repo_bytes", repo_bytes, loaded.config.max_size
    );
    if !s.reasons.is_empty() {
        let _ = writeln!(out, "reasons (passthrough, fallback, unit cache):");
        for (r, n) in &s.reasons {
            let _ = writeln!(out, "  {:>8}  {r}", n.count);
            for d in &n.details {
                let _ = writeln!(out, "            {d}");
            }
        }
    }
    0
}

/// The lines people read first: hit rates as ccache shows them.
fn summary_lines(s: &stats::Counters) -> Vec<String> {
    let rate = |what: &str, n: u64, of: u64| {
        let pct = if of == 0 {
            0.0
        } else {
            n as f64 * 100.0 / of as f64
        };
        format!("  {what:<24} {n:>10} / {of} ({pct:.1} %)")
    };
    let hits = s.get(key::UNIT_HITS);
    let looked_up = hits.saturating_add(s.get(key::UNIT_MISSES));
    vec![
        rate("Unit cache hits:", hits, looked_up),
        rate(
            "Definitions reused:",
            s.get(key::DEFINITIONS_PRUNED),
            s.get(key::DEFINITIONS_TOTAL),
        ),
        format!(
            "  {:<24} {:>10.1} s",
            "Compile time saved:",
            s.get(key::COMPILE_MS_SAVED) as f64 / 1000.0
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        AdminCli::command().debug_assert();
    }

    #[test]
    fn checked_in_completions_are_current() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("completions");
        for (shell, file) in [
            (CompletionShell::Bash, "repocc.bash"),
            (CompletionShell::Zsh, "_repocc"),
            (CompletionShell::Fish, "repocc.fish"),
        ] {
            let want = completion_script(shell);
            let have = std::fs::read(dir.join(file)).unwrap_or_default();
            assert!(
                have == want,
                "completions/{file} is stale: run `repocc --completions {shell:?}`"
            );
        }
    }

    #[test]
    fn admin_commands_do_not_shadow_compiler_options() {
        assert!(is_admin_command("--show-stats"));
        assert!(is_admin_command("--completions=bash"));
        assert!(!is_admin_command("-c"));
        assert!(!is_admin_command("--version"));
        assert!(!is_admin_command("--target=x86_64-linux-gnu"));
    }
}
