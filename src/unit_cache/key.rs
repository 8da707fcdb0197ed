//! The unit cache's keys: a unit's manifest and clang's include search
//! list, each a digest of everything that decides it (repocc's and LLVM's
//! identity, clang and its identity, the configuration that changes
//! objects, the working directory where it matters, the arguments, clang's
//! environment).

use crate::repo::storage::FragmentDigest;

/// Who compiles: repocc's identity (version and executable digest) and
/// the linked LLVM's version, as every key of the invocation has them
/// (`pipeline::key::KeyContext`).
#[derive(Clone, Copy, Debug)]
pub struct UnitIdentity<'a> {
    pub repocc: &'a str,
    pub llvm: &'a str,
}

/// What a unit key covers besides the [`UnitIdentity`].
pub struct UnitKeyInputs<'a> {
    pub clang: &'a str,
    pub clang_identity: &'a str,
    pub config: &'a str,
    pub cwd: &'a str,
    pub args: &'a [String],
    pub env: &'a [(String, String)],
    pub force_color: bool,
    pub keeps_dep_file: bool,
}

impl UnitIdentity<'_> {
    /// The key of a unit's manifest in the unit cache.
    pub fn unit_key(&self, u: &UnitKeyInputs) -> FragmentDigest {
        self.hash_unit_inputs(b"repocc unit v1\0", u)
    }

    /// The key of clang's include search list for a unit's options (see
    /// `search`): clang, its environment, the working directory, the
    /// options and the language.
    pub fn search_list_key(
        &self,
        clang: &str,
        clang_identity: &str,
        cwd: &str,
        options: &[String],
        language: &str,
        env: &[(String, String)],
    ) -> FragmentDigest {
        let mut args = options.to_vec();
        args.extend(["-x".to_string(), language.to_string()]);
        self.hash_unit_inputs(
            b"repocc search list v1\0",
            &UnitKeyInputs {
                clang,
                clang_identity,
                config: "",
                cwd,
                args: &args,
                env,
                force_color: false,
                keeps_dep_file: false,
            },
        )
    }

    fn hash_unit_inputs(&self, tag: &[u8], u: &UnitKeyInputs) -> FragmentDigest {
        let mut h = blake3::Hasher::new();
        h.update(tag);
        for part in [
            self.repocc,
            self.llvm,
            u.clang,
            u.clang_identity,
            u.config,
            u.cwd,
        ] {
            update_with_len(&mut h, part.as_bytes());
        }
        h.update(&[u.force_color as u8, u.keeps_dep_file as u8]);
        h.update(&(u.args.len() as u64).to_le_bytes());
        for a in u.args {
            update_with_len(&mut h, a.as_bytes());
        }
        h.update(&(u.env.len() as u64).to_le_bytes());
        for (k, v) in u.env {
            update_with_len(&mut h, k.as_bytes());
            update_with_len(&mut h, v.as_bytes());
        }
        FragmentDigest(*h.finalize().as_bytes())
    }
}

fn update_with_len(h: &mut blake3::Hasher, bytes: &[u8]) {
    h.update(&(bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}
