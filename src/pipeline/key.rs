//! Every input of every repository key, in one place.
//!
//! A key must change whenever anything that decides the stored bytes
//! changes, and nothing else may enter it (or reuse drops for nothing).
//!
//! | input | from | keys | why it matters |
//! |---|---|---|---|
//! | repocc's identity (version and executable digest) | `repo::identity` | all | any change to repocc may change the bytes |
//! | LLVM version | the linked LLVM | all | passes and code generation |
//! | code generation settings (`-O` level, sections, vectorizers, unrolling, code model, `-g`, addrsig, init_array) | `driver::plan` | all | the pass pipeline and the TargetMachine |
//! | CPU and features | the unit's TargetMachine | fragments | instruction selection |
//! | target triple, data layout, module flags, digest format | the IR (in `digest`) | fragments | layout and ABI |
//! | the members' final digests | `digest` | fragments | the definitions and all they reach |
//! | clang's identity (executable digest) | `repo::identity` | clang units | clang compiles the unit |
//! | the unit's compiler arguments | `driver::plan` | clang units | everything clang is told |
//! | the frontend's bitcode | `frontend` | clang units | the source as compiled |
//! | clang's path as run | `driver` | units | `clang++` compiles `.c` as C++ (one binary, two behaviours) |
//! | the configuration that changes objects (`fragments`, `merge_functions`, `debug_fragments`) | configuration | units | which compile produced the object |
//! | the working directory, with debug info | the process | units | the compilation directory in debug info (without it, relative paths are checked from the current directory) |
//! | the environment clang reads (`CPATH`, `SOURCE_DATE_EPOCH`, `CCC_OVERRIDE_OPTIONS`, ...) | the process | units | include paths, time macros, options |
//! | colour diagnostics forced | `driver` | units | the stored stderr |
//! | whether the unit writes its dependency file | `driver::plan` | units | the stored result holds it or not |
//! | the source's and headers' content digests | `unit_cache::manifest` | unit results | what was compiled |
//! | the include options, language, working directory, clang and its environment | `unit_cache::search` | search lists | the directories clang searches (relative ones from the working directory) |
//!
//! What is deliberately left out of fragment keys: paths of the repository,
//! of the source (they reach the bitcode where they matter, e.g. debug
//! info), timestamps and the environment. Unit keys (see `unit_cache`) come
//! before the frontend, so they cover what the frontend would see.

use serde::Serialize;

use crate::ir::settings::CodegenSettings;
use crate::repo::storage::FragmentDigest;

/// What every key of one invocation shares.
#[derive(Clone, Debug, Serialize)]
pub struct KeyContext {
    /// repocc's identity: version and executable digest.
    pub repocc: String,
    /// The linked LLVM's version.
    pub llvm: String,
    pub settings: CodegenSettings,
}

impl KeyContext {
    pub fn new(repocc: String, settings: &CodegenSettings) -> KeyContext {
        KeyContext {
            repocc,
            llvm: crate::llvm::llvm_version(),
            settings: settings.clone(),
        }
    }

    /// The bytes the digest stage mixes into every definition's context
    /// digest (with the IR's own target, layout and flags), for a unit
    /// whose TargetMachine has this CPU and these features.
    pub fn fragment_context(&self, cpu: &str, features: &str) -> Vec<u8> {
        serde_json::json!({
            "cpu": cpu,
            "features": features,
            "settings": self.settings,
            "llvm": self.llvm,
            "repocc": self.repocc,
            // Fragments compiled one module each are other bytes.
            "no_carve": crate::config::switches().no_carve,
        })
        .to_string()
        .into_bytes()
    }

    /// The key of a unit clang compiled (see `clang_units`).
    pub fn clang_unit_key(&self, clang: &str, args: &[String], bitcode: &[u8]) -> FragmentDigest {
        let mut h = self.clang_unit_hasher(b"repocc clang unit v2\0", clang, args);
        h.update(blake3::hash(bitcode).as_bytes());
        FragmentDigest(*h.finalize().as_bytes())
    }

    /// The key of the hint that clang compiled a unit with these
    /// arguments, whatever its bitcode (see `clang_units`).
    pub fn clang_unit_hint(&self, clang: &str, args: &[String]) -> FragmentDigest {
        let h = self.clang_unit_hasher(b"repocc clang unit hint v1\0", clang, args);
        FragmentDigest(*h.finalize().as_bytes())
    }

    fn clang_unit_hasher(&self, domain: &[u8], clang: &str, args: &[String]) -> blake3::Hasher {
        let mut h = blake3::Hasher::new();
        h.update(domain);
        let context = serde_json::json!({
            "repocc": self.repocc,
            "llvm": self.llvm,
            "settings": self.settings,
            "clang": clang,
        })
        .to_string();
        update_with_len(&mut h, context.as_bytes());
        h.update(&(args.len() as u64).to_le_bytes());
        for a in args {
            update_with_len(&mut h, a.as_bytes());
        }
        h
    }
}

impl KeyContext {
    /// Who compiles, as the unit cache's keys hold it.
    pub fn unit_identity(&self) -> crate::unit_cache::key::UnitIdentity<'_> {
        crate::unit_cache::key::UnitIdentity {
            repocc: &self.repocc,
            llvm: &self.llvm,
        }
    }
}

fn update_with_len(h: &mut blake3::Hasher, bytes: &[u8]) {
    h.update(&(bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

/// The key of a fragment from its members' parts (a final digest, an
/// alias's text digest, or the name): order-independent.
pub fn fragment_key_of_parts(mut parts: Vec<Vec<u8>>) -> FragmentDigest {
    parts.sort();
    let mut h = blake3::Hasher::new();
    h.update(b"repocc fragment v1");
    for p in parts {
        update_with_len(&mut h, &p);
    }
    FragmentDigest(*h.finalize().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::settings::{CodeModelSetting, OptLevel};
    use crate::unit_cache::key::UnitKeyInputs;

    fn settings() -> CodegenSettings {
        CodegenSettings::plain_o2()
    }

    fn base() -> KeyContext {
        KeyContext {
            repocc: "0.1.0 abc".into(),
            llvm: "19.1.7".into(),
            settings: settings(),
        }
    }

    /// Each input, changed alone, changes the fragment context and the
    /// clang unit key.
    #[test]
    fn every_input_changes_the_keys() {
        let b = base();
        let frag = |k: &KeyContext, cpu: &str, features: &str| k.fragment_context(cpu, features);
        let unit = |k: &KeyContext| k.clang_unit_key("clang1", &["-O2".into()], b"bc");
        let mut variants: Vec<(&str, KeyContext)> = Vec::new();
        let mut k = base();
        k.repocc = "0.1.0 abd".into();
        variants.push(("repocc identity", k));
        let mut k = base();
        k.llvm = "19.1.8".into();
        variants.push(("LLVM version", k));
        let mut k = base();
        k.settings.opt = OptLevel::O3;
        variants.push(("-O level", k));
        let mut k = base();
        k.settings.debug_info = true;
        variants.push(("debug info", k));
        let mut k = base();
        k.settings.function_sections = true;
        variants.push(("function sections", k));
        let mut k = base();
        k.settings.code_model = CodeModelSetting::Large;
        variants.push(("code model", k));
        let mut k = base();
        k.settings.vectorize_loops = false;
        variants.push(("loop vectorizer", k));
        for (what, k) in &variants {
            assert_ne!(frag(&b, "x86-64", ""), frag(k, "x86-64", ""), "{what}");
            assert_ne!(unit(&b), unit(k), "{what}");
        }
        assert_ne!(frag(&b, "x86-64", ""), frag(&b, "znver3", ""), "CPU");
        assert_ne!(
            frag(&b, "x86-64", ""),
            frag(&b, "x86-64", "+avx2"),
            "features"
        );
        assert_ne!(
            unit(&b),
            b.clang_unit_key("clang2", &["-O2".into()], b"bc"),
            "clang"
        );
        assert_ne!(
            unit(&b),
            b.clang_unit_key("clang1", &["-O3".into()], b"bc"),
            "arguments"
        );
        assert_ne!(
            b.clang_unit_key("c", &["-O2a".into(), ".c".into()], b"bc"),
            b.clang_unit_key("c", &["-O2".into(), "a.c".into()], b"bc"),
            "argument boundaries"
        );
        assert_ne!(
            unit(&b),
            b.clang_unit_key("clang1", &["-O2".into()], b"bc2"),
            "bitcode"
        );
        // The hint covers all but the bitcode, and is never a unit's key.
        let hint = |k: &KeyContext, args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            k.clang_unit_hint("clang1", &args)
        };
        for (what, k) in &variants {
            assert_ne!(hint(&b, &["-O2"]), hint(k, &["-O2"]), "hint: {what}");
        }
        assert_ne!(hint(&b, &["-O2"]), hint(&b, &["-O3"]), "hint: arguments");
        assert_ne!(
            hint(&b, &["-O2"]),
            b.clang_unit_hint("clang2", &["-O2".into()]),
            "hint: clang"
        );
        assert_ne!(hint(&b, &["-O2"]), unit(&b), "hint and key");
        assert_ne!(
            hint(&b, &["-O2"]),
            b.clang_unit_key("clang1", &["-O2".into()], b""),
            "hint and key of empty bitcode"
        );
        assert_eq!(hint(&b, &["-O2"]), hint(&base(), &["-O2"]));
        // The same inputs give the same keys.
        assert_eq!(frag(&b, "x86-64", ""), frag(&base(), "x86-64", ""));
        assert_eq!(unit(&b), unit(&base()));
    }

    /// Each input of a unit key, changed alone, changes it.
    #[test]
    fn every_unit_input_changes_the_unit_key() {
        let args = vec!["-O2".to_string(), "a.c".to_string()];
        let env = vec![("CPATH".to_string(), "/x".to_string())];
        let inputs = || UnitKeyInputs {
            clang: "/usr/bin/clang-19",
            clang_identity: "d1",
            config: "{}",
            cwd: "/src",
            args: &args,
            env: &env,
            force_color: false,
            keeps_dep_file: true,
        };
        let b = base();
        let k0 = b.unit_identity().unit_key(&inputs());
        assert_eq!(k0, base().unit_identity().unit_key(&inputs()));
        let other_args = vec!["-O3".to_string(), "a.c".to_string()];
        let split_args = vec!["-O2a".to_string(), ".c".to_string()];
        let other_env = vec![("CPATH".to_string(), "/y".to_string())];
        let variants: Vec<(&str, UnitKeyInputs)> = vec![
            (
                "clang path",
                UnitKeyInputs {
                    clang: "/usr/bin/clang++-19",
                    ..inputs()
                },
            ),
            (
                "clang identity",
                UnitKeyInputs {
                    clang_identity: "d2",
                    ..inputs()
                },
            ),
            (
                "configuration",
                UnitKeyInputs {
                    config: "{\"fragments\":false}",
                    ..inputs()
                },
            ),
            (
                "working directory",
                UnitKeyInputs {
                    cwd: "/src2",
                    ..inputs()
                },
            ),
            (
                "arguments",
                UnitKeyInputs {
                    args: &other_args,
                    ..inputs()
                },
            ),
            (
                "argument boundaries",
                UnitKeyInputs {
                    args: &split_args,
                    ..inputs()
                },
            ),
            (
                "environment",
                UnitKeyInputs {
                    env: &other_env,
                    ..inputs()
                },
            ),
            (
                "colour",
                UnitKeyInputs {
                    force_color: true,
                    ..inputs()
                },
            ),
            (
                "dependency file",
                UnitKeyInputs {
                    keeps_dep_file: false,
                    ..inputs()
                },
            ),
        ];
        for (what, u) in &variants {
            assert_ne!(k0, b.unit_identity().unit_key(u), "{what}");
        }
        let mut k = base();
        k.repocc = "0.1.0 abd".into();
        assert_ne!(k0, k.unit_identity().unit_key(&inputs()), "repocc identity");
        let mut k = base();
        k.llvm = "19.1.8".into();
        assert_ne!(k0, k.unit_identity().unit_key(&inputs()), "LLVM version");
    }

    /// Each input of a search list key, changed alone, changes it; and it
    /// is never a unit key.
    #[test]
    fn every_search_list_input_changes_the_search_list_key() {
        let b = base();
        let opts = |o: &[&str]| o.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let env = vec![("CPATH".to_string(), "/x".to_string())];
        let key =
            |clang: &str, id: &str, cwd: &str, o: &[&str], lang: &str, env: &[(String, String)]| {
                b.unit_identity()
                    .search_list_key(clang, id, cwd, &opts(o), lang, env)
            };
        let k0 = key("clang-19", "d1", "/src", &["-Iinc"], "c", &env);
        assert_eq!(k0, key("clang-19", "d1", "/src", &["-Iinc"], "c", &env));
        let other_env = vec![("CPATH".to_string(), "/y".to_string())];
        for (what, k) in [
            (
                "clang",
                key("clang++-19", "d1", "/src", &["-Iinc"], "c", &env),
            ),
            (
                "clang identity",
                key("clang-19", "d2", "/src", &["-Iinc"], "c", &env),
            ),
            (
                "working directory",
                key("clang-19", "d1", "/other", &["-Iinc"], "c", &env),
            ),
            (
                "options",
                key("clang-19", "d1", "/src", &["-Iinc2"], "c", &env),
            ),
            (
                "language",
                key("clang-19", "d1", "/src", &["-Iinc"], "c++", &env),
            ),
            (
                "environment",
                key("clang-19", "d1", "/src", &["-Iinc"], "c", &other_env),
            ),
            (
                "no environment",
                key("clang-19", "d1", "/src", &["-Iinc"], "c", &[]),
            ),
        ] {
            assert_ne!(k0, k, "{what}");
        }
        let mut k = base();
        k.repocc = "0.1.0 abd".into();
        assert_ne!(
            k0,
            k.unit_identity().search_list_key(
                "clang-19",
                "d1",
                "/src",
                &opts(&["-Iinc"]),
                "c",
                &env
            ),
            "repocc identity"
        );
        let args = opts(&["-Iinc", "-x", "c"]);
        let as_unit = b.unit_identity().unit_key(&UnitKeyInputs {
            clang: "clang-19",
            clang_identity: "d1",
            config: "",
            cwd: "/src",
            args: &args,
            env: &env,
            force_color: false,
            keeps_dep_file: false,
        });
        assert_ne!(k0, as_unit, "a search list key is never a unit key");
    }

    #[test]
    fn fragment_keys_ignore_member_order() {
        let a = fragment_key_of_parts(vec![b"f".to_vec(), b"g".to_vec()]);
        assert_eq!(a, fragment_key_of_parts(vec![b"g".to_vec(), b"f".to_vec()]));
        assert_ne!(a, fragment_key_of_parts(vec![b"fg".to_vec()]));
    }
}
