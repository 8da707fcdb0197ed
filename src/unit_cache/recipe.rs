//! A result's object stored as the fragments it was composed from (issue
//! 42): the pipeline composes a unit's object from fragments the
//! repository holds anyway, so storing the object whole as well kept the
//! same code twice (lua's cold repository: 224 KB of 1.62 MB). A recipe
//! lists the object's parts in order — the key of each stored fragment
//! whose bytes went in as stored, the bytes of the others (the glue,
//! fragments whose debug lines were placed) — with the composer's
//! arguments and the digest of the object that came out.
//!
//! An edit changes a few of a unit's fragments, so a new result's recipe
//! is stored, where that is smaller, as its difference from the recipe of
//! the unit's earlier result (`delta`, with a whole recipe as the base:
//! no chains); sqlite3.c's recipe names 3,860 fragments.
//!
//! A hit reads the fragments and composes them again in process
//! ([`Composer`], the same code that composed the object). What comes out
//! must have the recorded digest: a fragment evicted or stored again with
//! other bytes makes the hit a miss, never a wrong object. Reading the
//! fragments refreshes their packs' time, so a unit cache hit keeps its
//! fragments alive.

use crate::repo::storage::FragmentDigest;

/// A recipe payload starts with it (a whole object with zstd's or ELF's
/// magic, an object's difference with its own); then the recipe,
/// compressed.
const RECIPE_MAGIC: [u8; 4] = *b"RPRC";
/// A recipe's difference from another result's recipe starts with it;
/// then the difference (`delta`).
const RECIPE_DELTA_MAGIC: [u8; 4] = *b"RPRD";
/// The most parts a recipe is stored for. A hit reads and composes each
/// part again, about 6 µs apiece on a 2-core machine (sqlite3.c's 3,860:
/// 11 ms to read them, 11 ms to compose, making its hit 2.3 times
/// ccache's, which takes 15-20 ms); a hit must stay within 1.5 times
/// ccache's, so a unit of more parts keeps its object (lua's largest has
/// 122 parts, about 1 ms).
pub const MAX_PARTS: usize = 512;
/// Part tags.
const STORED: u8 = 0;
const INLINE: u8 = 1;

/// One part of a composed object, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// The payload of the object entry stored under this key, as it is.
    Stored(FragmentDigest),
    /// Bytes the repository does not hold as they went in.
    Inline(Vec<u8>),
}

/// What composing a unit's object took (see the module comment).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recipe {
    /// The digest (blake3) of the object composed.
    pub object: [u8; 32],
    pub parts: Vec<Part>,
    /// The composer's arguments: symbols made local again, unnamed ones,
    /// and how code is padded (the composer's own encoding).
    pub locals: Vec<String>,
    pub unnamed: Vec<String>,
    /// The order of the constructor and destructor tables (their keys).
    pub structors: Vec<String>,
    pub fill: u8,
}

/// Composes object parts in process, as the pipeline composed the unit
/// (the parts, locals, unnamed symbols, structor order and code fill of
/// [`Recipe`]); `None` where it declines. (The unit cache does not read
/// objects itself: the driver hands it the object layer's composer.)
pub type Composer = fn(&[&[u8]], &[String], &[String], &[String], u8) -> Option<Vec<u8>>;

/// Whether a result's payload is a recipe (whole or a difference).
pub fn is_recipe(payload: &[u8]) -> bool {
    payload.starts_with(&RECIPE_MAGIC) || payload.starts_with(&RECIPE_DELTA_MAGIC)
}

/// The result whose recipe a recipe difference is read with.
pub fn delta_base(payload: &[u8]) -> Option<FragmentDigest> {
    super::delta::base_key(payload.strip_prefix(&RECIPE_DELTA_MAGIC)?)
}

/// The recipe (as [`Recipe::parse`] reads it) of a whole recipe payload;
/// `None` for anything else, a damaged frame or one larger than `limit`.
pub fn whole_body(payload: &[u8], limit: u64) -> Option<Vec<u8>> {
    crate::repo::decompress_bounded(payload.strip_prefix(&RECIPE_MAGIC)?, limit)
}

/// The recipe of a recipe difference, given its base's ([`whole_body`]);
/// `None` when `base` is not the one it was made from.
pub fn delta_body(payload: &[u8], base: &[u8], limit: u64) -> Option<Vec<u8>> {
    super::delta::decode(payload.strip_prefix(&RECIPE_DELTA_MAGIC)?, base, limit)
}

impl Recipe {
    /// The keys of the fragments it takes from the repository.
    pub fn stored_keys(&self) -> Vec<FragmentDigest> {
        (self.parts.iter())
            .filter_map(|p| match p {
                Part::Stored(key) => Some(*key),
                Part::Inline(_) => None,
            })
            .collect()
    }

    /// The payload of a result whose object is what the recipe composed,
    /// compressed at `level`.
    pub fn encode(&self, level: i32) -> Option<Vec<u8>> {
        let mut out = RECIPE_MAGIC.to_vec();
        out.extend_from_slice(&zstd::bulk::compress(&self.body(), level).ok()?);
        Some(out)
    }

    /// The payload as the difference from the recipe `base` ([`whole_body`])
    /// of the result `base_key`.
    pub fn encode_delta(
        &self,
        base_key: &FragmentDigest,
        base: &[u8],
        level: i32,
    ) -> Option<Vec<u8>> {
        let mut out = RECIPE_DELTA_MAGIC.to_vec();
        out.extend_from_slice(&super::delta::encode(&self.body(), base_key, base, level)?);
        Some(out)
    }

    /// The recipe, uncompressed.
    fn body(&self) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&self.object);
        body.push(self.fill);
        put_len(&mut body, self.parts.len());
        for p in &self.parts {
            match p {
                Part::Stored(key) => {
                    body.push(STORED);
                    body.extend_from_slice(&key.0);
                }
                Part::Inline(bytes) => {
                    body.push(INLINE);
                    put_bytes(&mut body, bytes);
                }
            }
        }
        for names in [&self.locals, &self.unnamed, &self.structors] {
            put_len(&mut body, names.len());
            for n in names {
                put_bytes(&mut body, n.as_bytes());
            }
        }
        body
    }

    /// The recipe `body` holds ([`whole_body`], [`delta_body`]); `None`
    /// for a damaged one.
    pub fn parse(body: &[u8]) -> Option<Recipe> {
        let mut r = Reader { bytes: body, at: 0 };
        let object: [u8; 32] = r.take(32)?.try_into().ok()?;
        let fill = r.take(1)?[0];
        let count = r.len()?;
        let mut parts = Vec::with_capacity(count.min(1 << 16));
        for _ in 0..count {
            parts.push(match r.take(1)?[0] {
                STORED => Part::Stored(FragmentDigest(r.take(32)?.try_into().ok()?)),
                INLINE => Part::Inline(r.bytes()?.to_vec()),
                _ => return None,
            });
        }
        let mut names = || -> Option<Vec<String>> {
            let n = r.len()?;
            let mut out = Vec::with_capacity(n.min(1 << 16));
            for _ in 0..n {
                out.push(String::from_utf8(r.bytes()?.to_vec()).ok()?);
            }
            Some(out)
        };
        let locals = names()?;
        let unnamed = names()?;
        let structors = names()?;
        (r.at == body.len()).then_some(Recipe {
            object,
            parts,
            locals,
            unnamed,
            structors,
            fill,
        })
    }

    /// The object, composed again from the fragments `fetch` gives (the
    /// payload of the object entry under a key) with `compose`; `None`
    /// when a fragment is gone or the object is not the one recorded.
    pub fn cook(
        &self,
        fetch: &dyn Fn(&FragmentDigest) -> Option<Vec<u8>>,
        compose: Composer,
    ) -> Option<Vec<u8>> {
        let fetched: Vec<Vec<u8>> = (self.stored_keys().iter())
            .map(fetch)
            .collect::<Option<_>>()?;
        let mut stored = fetched.iter();
        let objects: Vec<&[u8]> = (self.parts.iter())
            .map(|p| match p {
                Part::Stored(_) => stored.next().map_or(&[][..], |b| b.as_slice()),
                Part::Inline(bytes) => bytes.as_slice(),
            })
            .collect();
        let object = compose(
            &objects,
            &self.locals,
            &self.unnamed,
            &self.structors,
            self.fill,
        )?;
        (*blake3::hash(&object).as_bytes() == self.object).then_some(object)
    }
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u32).to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_len(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// Reads a decompressed recipe; every read is bounded by what is there.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(out)
    }

    fn len(&mut self) -> Option<usize> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize)
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.len()?;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> FragmentDigest {
        FragmentDigest([n; 32])
    }

    /// Joins the parts and the names: enough to see that each went in,
    /// in order.
    fn joining(
        objects: &[&[u8]],
        locals: &[String],
        unnamed: &[String],
        structors: &[String],
        fill: u8,
    ) -> Option<Vec<u8>> {
        let mut out = objects.concat();
        out.extend((locals.iter().chain(unnamed).chain(structors)).flat_map(|n| n.bytes()));
        out.push(fill);
        Some(out)
    }

    fn recipe() -> Recipe {
        let object = joining(
            &[b"glue", b"-one", b"-two"],
            &["counter".into()],
            &[".L.str".into()],
            &["a".into(), "".into()],
            15,
        )
        .unwrap();
        Recipe {
            object: *blake3::hash(&object).as_bytes(),
            parts: vec![
                Part::Inline(b"glue".to_vec()),
                Part::Stored(key(1)),
                Part::Stored(key(2)),
                Part::Inline(Vec::new()),
            ],
            locals: vec!["counter".into()],
            unnamed: vec![".L.str".into()],
            structors: vec!["a".into(), "".into()],
            fill: 15,
        }
    }

    fn fetch(k: &FragmentDigest) -> Option<Vec<u8>> {
        match k.0[0] {
            1 => Some(b"-one".to_vec()),
            2 => Some(b"-two".to_vec()),
            _ => None,
        }
    }

    #[test]
    fn a_recipe_reads_back_and_composes_its_object() {
        let r = recipe();
        let object = joining(
            &[b"glue", b"-one", b"-two"],
            &r.locals,
            &r.unnamed,
            &r.structors,
            15,
        )
        .unwrap();
        let payload = r.encode(3).unwrap();
        assert!(is_recipe(&payload));
        assert_eq!(delta_base(&payload), None);
        let back = Recipe::parse(&whole_body(&payload, 1 << 20).unwrap()).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.cook(&fetch, joining), Some(object));
    }

    /// A fragment gone, or stored again with other bytes: no object.
    #[test]
    fn a_missing_or_changed_fragment_gives_no_object() {
        let back = Recipe::parse(&recipe().body()).unwrap();
        let gone = |k: &FragmentDigest| if k.0[0] == 2 { None } else { fetch(k) };
        assert_eq!(back.cook(&gone, joining), None);
        let changed = |k: &FragmentDigest| {
            fetch(k).map(|mut b| {
                b.push(b'!');
                b
            })
        };
        assert_eq!(back.cook(&changed, joining), None);
    }

    #[test]
    fn damaged_recipes_read_as_none() {
        let r = recipe();
        let payload = r.encode(3).unwrap();
        for cut in 0..payload.len() {
            assert!(
                whole_body(&payload[..cut], 1 << 20).is_none(),
                "cut at {cut}"
            );
        }
        assert!(whole_body(&payload, 8).is_none(), "over the limit");
        assert!(whole_body(b"\x28\xb5\x2f\xfd", 1 << 20).is_none());
        let body = r.body();
        for cut in 0..body.len() {
            assert!(Recipe::parse(&body[..cut]).is_none(), "cut at {cut}");
        }
        assert!(Recipe::parse(&[body.clone(), vec![0]].concat()).is_none());
    }

    /// An edit's recipe as its difference from the earlier one: a few
    /// bytes, read back only with that base.
    #[test]
    fn a_recipe_difference_needs_its_base() {
        let base = Recipe {
            parts: (0..2000u32)
                .map(|i| Part::Stored(FragmentDigest(*blake3::hash(&i.to_le_bytes()).as_bytes())))
                .collect(),
            ..recipe()
        };
        let mut edited = base.clone();
        edited.parts[1000] = Part::Stored(key(9));
        edited.object = [7; 32];
        let base_key = key(5);
        let base_body = base.body();
        let payload = edited.encode_delta(&base_key, &base_body, 3).unwrap();
        let whole = edited.encode(3).unwrap();
        assert!(
            payload.len() * 20 < whole.len(),
            "{} of {}",
            payload.len(),
            whole.len()
        );
        assert!(is_recipe(&payload));
        assert_eq!(delta_base(&payload), Some(base_key));
        let body = delta_body(&payload, &base_body, 1 << 20).unwrap();
        assert_eq!(Recipe::parse(&body).unwrap(), edited);
        assert!(delta_body(&payload, &edited.body(), 1 << 20).is_none());
        assert!(whole_body(&payload, 1 << 20).is_none());
    }
}
