//! Stage 3, repository metadata: a digest per definition (function or global
//! variable) of the canonical module, and the final digest that decides
//! whether a stored fragment can be reused.
//!
//! The digests are computed from LLVM's own textual form of the module
//! (printed once per unit). The text round-trips the IR, so every field of
//! every instruction that can change code is in it by construction; what
//! the text holds by *reference* is resolved to content:
//!
//! | in the text | in the digest |
//! |---|---|
//! | the definition's own line(s): linkage, visibility, `unnamed_addr`, TLS mode, calling convention, section, alignment, comdat, GC, personality, prefix data, types, the body in printed order with flags and operands | as printed |
//! | `#N` attribute groups | the group's attributes |
//! | `!N` metadata (TBAA, loop hints, ranges, debug info) | the node's content, recursively |
//! | `%struct.T` named types | the type's body, recursively |
//! | `@name` other globals | the name (their content enters through the graph); a declared one's declaration line (visibility, linkage) |
//! | local values `%0`, blocks | printed numbering: canonical for a given body |
//! | comments (`; preds = ...`) | left out |
//!
//! plus a context digest: format version, repocc and LLVM versions, target
//! triple, data layout, module flags, CPU and features, `-O` level and
//! codegen options. Names of locals are not in the text (clang discards
//! them), nor is the position of the definition in the module.
//!
//! The graph: an edge `u → v` means "v's content can change u's bytes".
//! Edges follow how a definition is used (DESIGN.md, "precision and
//! soundness"):
//! - a function: a call, or any other use by a function or by the
//!   initializer of a constant variable (devirtualization, inlining through
//!   a passed or stored address) → `u → f`; if `f` is local (internal), any
//!   use also → `f → u` (its call sites and address uses decide constant
//!   propagation, argument promotion, dead-argument elimination, deletion);
//! - a local variable: a direct load → `u → g`; any other use (store,
//!   address taken, initializer) → both ways (GlobalOpt decides from all
//!   uses whether it is constant, and rewrites it);
//! - an external variable: only a constant one's content can be folded
//!   into users → `u → g`; a mutable one → no edge (its name is in `u`).
//!
//! The final digest of `x` is the digest of `x` followed by the set of
//! initial digests of everything reachable from `x` (cycles included):
//! edges are determined by the definitions' contents (references are by
//! name), so that set fixes the whole reachable graph.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use anyhow::{bail, Result};

use crate::llvm::StubKind;
use crate::repo::storage::FragmentDigest;

/// Bump when what the digest covers changes.
pub const DIGEST_FORMAT_VERSION: u32 = 19;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefKind {
    Function,
    Variable,
    /// `llvm.global_ctors`, `llvm.used`...: module glue, never a fragment.
    Glue,
}

#[derive(Clone, Debug)]
pub struct Definition {
    pub name: String,
    pub kind: DefKind,
    /// internal or private linkage.
    pub local: bool,
    /// A `constant` variable.
    pub constant: bool,
    pub initial: [u8; 32],
    /// What the final digest of a definition that reaches this one takes
    /// of it: the initial digest, but for a variable that is a fragment of
    /// its own, without its debug records. Its `DIGlobalVariable` (line,
    /// file, type, scope) is in its own fragment alone; the fragments that
    /// use it declare it without one. clang gives a string literal the
    /// line of its first use, so a header's template using a literal that
    /// the unit's own code used first would otherwise have another digest
    /// in each unit.
    pub reached_as: [u8; 32],
    pub final_digest: FragmentDigest,
    /// Where its debug info says it is (with relative lines only).
    pub position: Option<Position>,
}

/// A definition's place in its source: the line of its `DISubprogram`
/// or `DIGlobalVariable`, and the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// The file's metadata node in this module (`!N`).
    file: String,
    /// The file's content digest (name and directory): the same in every
    /// module.
    file_key: String,
    pub line: u64,
    /// A function of the unit's source: where its code is inlined (or
    /// carried in another's fragment), its lines are relative to its own
    /// (see `debug_lines`), so where it lies is not part of the other's
    /// digest.
    pub placed_in_inliners: bool,
}

impl Position {
    /// Where this lies for a fragment whose lines are relative to
    /// `leader`: the difference in the same file, else file and line.
    pub fn relative_to(&self, leader: &Position) -> String {
        if self.file == leader.file {
            format!("R{}", self.line as i64 - leader.line as i64)
        } else {
            format!("{} {}", self.file_key, self.line)
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct ModuleDigests {
    pub defs: Vec<Definition>,
    /// Directed edges `(u, v)`: v's content can change u's bytes.
    pub edges: Vec<(usize, usize)>,
    /// The digests hold the lines of each definition's own file relative
    /// to the definition's line (see `Lines`), and so must its fragment.
    pub relative_lines: bool,
    /// With relative lines: the unit's anchor, the first line of its
    /// source file that a file-level node is on (see `debug_lines`); the
    /// lines of those nodes are relative to it in every digest and
    /// fragment. `None`: there are none.
    pub anchor: Option<u64>,
    /// With relative lines: the line of each function of the unit's source
    /// by the key fragments that inline it know it by (see
    /// `split::Fragment::inlined`); keys two functions share are left out.
    pub inlined_lines: std::collections::HashMap<String, u64>,
    /// With relative lines: the path of the unit's source, as its compile
    /// unit names it. A fragment's compile unit does not name it when none
    /// of the fragment's members is defined there (a header's template
    /// instance), and its rebase must still know which inlined code is the
    /// unit source's.
    pub unit_source: Option<String>,
    /// `(u, v)`: u names v (every use, whether or not it is an edge: a
    /// load of a mutable variable is not one, yet it keeps the variable
    /// in the object).
    pub references: Vec<(usize, usize)>,
    /// For each function of a recursion (functions that reach one another
    /// through `edges` and `references`, see [`recursion_code_keys`]): a
    /// digest of its code alone, the same with and without `-g`.
    pub recursion_code_keys: HashMap<usize, [u8; 32]>,
}

impl ModuleDigests {
    /// The position of the definition named `name` (a linear search, for
    /// tests).
    #[cfg(test)]
    pub fn position(&self, name: &str) -> Option<usize> {
        self.defs.iter().position(|d| d.name == name)
    }
}

/// The pieces of the printed module.
#[derive(Default)]
struct Parsed<'a> {
    types: HashMap<&'a str, &'a str>,
    attrs: HashMap<&'a str, &'a str>,
    metadata: HashMap<&'a str, &'a str>,
    header: Vec<&'a str>,
    /// `$name = comdat KIND` lines by group name.
    comdats: HashMap<&'a str, &'a str>,
    module_flags: Option<&'a str>,
    /// (name, full text) of definitions.
    functions: Vec<(String, String)>,
    variables: Vec<(String, &'a str)>,
    aliases: Vec<(String, &'a str)>,
    /// Functions declared with a debug subprogram (`declare !dbg !N`):
    /// name → the subprogram's metadata id.
    declared: HashMap<String, &'a str>,
    /// Every declaration's line (`declare ...`, `@x = external ...`) by
    /// name: its linkage, visibility and attributes are in the bytes of
    /// every fragment that refers to it (the undefined symbol's binding
    /// and visibility).
    declarations: HashMap<String, &'a str>,
}

/// A name or metadata string as LLVM prints it in quotes, as the module
/// holds it: a byte that is not printable ASCII, `"` or `\\` is printed as
/// `\\` and two hex digits (every byte of a UTF-8 `À`). The digests work
/// on the printed forms; a name or path that leaves this module, or is
/// compared with one the module's API gives (`leader`, the unit's source),
/// is the module's.
pub fn unescape_printed(printed: &str) -> std::borrow::Cow<'_, str> {
    if !printed.contains('\\') {
        return std::borrow::Cow::Borrowed(printed);
    }
    let b = printed.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).and_then(|&c| hex(c)),
            b.get(i + 2).and_then(|&c| hex(c)),
        ) {
            (b'\\', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    std::borrow::Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// Reads an identifier after a sigil (`@`, `%`, `$`): a quoted string or
/// the usual identifier characters. Returns (name, bytes consumed).
fn read_ident(s: &str) -> Option<(&str, usize)> {
    let b = s.as_bytes();
    if b.first() == Some(&b'"') {
        let end = s[1..].find('"')? + 1;
        return Some((&s[1..end], end + 1));
    }
    let n = b
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'$' | b'.' | b'_'))
        .count();
    (n > 0).then(|| (&s[..n], n))
}

fn parse(text: &str) -> Result<Parsed<'_>> {
    let mut p = Parsed::default();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.is_empty() || line.starts_with(';') {
            continue;
        }
        if line.starts_with("declare ") {
            if let Some(name) = global_name_in(line) {
                if let Some(rest) = line.strip_prefix("declare !dbg !") {
                    let n = rest.bytes().take_while(u8::is_ascii_digit).count();
                    if n > 0 {
                        p.declared.insert(name.clone(), &rest[..n]);
                    }
                }
                p.declarations.insert(name, line);
            }
            continue;
        }
        if line.starts_with("define ") {
            let name = global_name_in(line).unwrap_or_default();
            let mut body = String::from(line);
            body.push('\n');
            for l in lines.by_ref() {
                body.push_str(l);
                body.push('\n');
                if l == "}" {
                    break;
                }
            }
            p.functions.push((name, body));
        } else if let Some(rest) = line.strip_prefix('@') {
            let Some((name, n)) = read_ident(rest) else {
                bail!("unreadable global line: {line}");
            };
            let after = &rest[n..];
            if after.contains(" alias ") || after.contains(" ifunc ") {
                p.aliases.push((name.to_string(), line));
            } else {
                p.variables.push((name.to_string(), line));
            }
        } else if let Some(rest) = line.strip_prefix('%') {
            if let Some((name, n)) = read_ident(rest) {
                if let Some(body) = rest[n..].strip_prefix(" = type ") {
                    p.types.insert(name, body);
                }
            }
        } else if let Some(rest) = line.strip_prefix("attributes #") {
            if let Some((id, body)) = rest.split_once(" = ") {
                p.attrs.insert(id, body);
            }
        } else if let Some(rest) = line.strip_prefix('!') {
            if let Some((id, body)) = rest.split_once(" = ") {
                if id.bytes().all(|c| c.is_ascii_digit()) {
                    p.metadata.insert(id, body);
                } else if id == "llvm.module.flags" {
                    p.module_flags = Some(body);
                }
            }
        } else if let Some(rest) = line.strip_prefix('$') {
            if let Some((name, _)) = read_ident(rest) {
                p.comdats.insert(name, line);
            }
        } else if line.starts_with("target ") || line.starts_with("module asm") {
            // Not the `$name = comdat any` lines: a definition's own group
            // enters its own digest (`own_comdat`), and another's cannot
            // change its bytes, so the unit's list of groups (its inline
            // functions and template instances) is not context: two units
            // that hold different sets still share them.
            p.header.push(line);
        }
    }
    Ok(p)
}

/// The compile unit's file node (its text), when the module has one
/// compile unit.
fn unit_file<'a>(p: &Parsed<'a>) -> Option<&'a str> {
    let unit = only_compile_unit(p)?;
    md_reference(p, unit, "file").and_then(|f| p.metadata.get(f).copied())
}

/// The module's compile unit node, when it has exactly one.
fn only_compile_unit<'a>(p: &Parsed<'a>) -> Option<&'a str> {
    let mut units = p.metadata.values().filter(|b| {
        b.strip_prefix("distinct ")
            .unwrap_or(b)
            .starts_with("!DICompileUnit(")
    });
    let unit = units.next()?;
    units.next().is_none().then_some(*unit)
}

/// Whether the debug info a definition's first line attaches (a
/// subprogram, or a global variable's expression) is in the compile unit's
/// own file, by path (`repocc_extract_definitions` decides the same way):
/// its fragment's compile unit then names that file.
fn defined_in_unit_file(p: &Parsed, first_line: &str, unit_file: &str) -> bool {
    let Some(node) = dbg_attachment(p, first_line).and_then(|id| p.metadata.get(id)) else {
        return false;
    };
    let node = match md_reference(p, node, "var").and_then(|v| p.metadata.get(v)) {
        Some(variable) => *variable,
        None => node,
    };
    let file = md_reference(p, node, "file").and_then(|f| p.metadata.get(f));
    file.and_then(|f| file_path(f))
        .is_some_and(|path| file_path(unit_file) == Some(path))
}

/// Appends the `$name = comdat KIND` line of the group a definition's
/// first line names (`comdat` alone: the definition's own name), so that
/// its selection kind is in its digest.
fn own_comdat(p: &Parsed, name: &str, first_line: &str, out: &mut String) {
    let Some(at) = first_line.rfind(" comdat") else {
        return;
    };
    let after = &first_line[at + " comdat".len()..];
    let group = match after.strip_prefix("($") {
        Some(rest) => read_ident(rest).map_or(name, |(g, _)| g),
        None => name,
    };
    if let Some(line) = p.comdats.get(group) {
        out.push('\n');
        out.push_str(line);
    }
}

/// The defined name in a `define` line: the first `@` outside strings.
fn global_name_in(line: &str) -> Option<String> {
    let mut in_str = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => in_str = !in_str,
            '@' if !in_str => return read_ident(&line[i + 1..]).map(|(n, _)| n.to_string()),
            _ => {}
        }
    }
    None
}

/// Resolves references in printed IR to content.
struct Canonicalizer<'a> {
    p: &'a Parsed<'a>,
    type_memo: HashMap<&'a str, String>,
    /// Texts that hold no line a definition could hold relative to its
    /// own: the same for every definition of the unit.
    md_memo_any: HashMap<&'a str, String>,
    /// Texts that hold a definition-level line judged against `own`'s
    /// file (absolute, as another file's): valid while that file is
    /// `own`'s. Before `md_memo_any`, every text was made again at each
    /// change of file (1.8 texts per node of a C++ unit with debug info).
    md_memo: HashMap<&'a str, String>,
    /// The nodes being made, in the order they were entered (Tarjan's
    /// stack: see `md_text`), and where each is in it.
    open: Vec<OpenNode<'a>>,
    open_at: HashMap<(bool, &'a str), usize>,
    /// The lowest place in `open` the node being made refers to.
    low: usize,
    /// Work budget for metadata; past it, metadata is hashed coarsely.
    budget: usize,
    /// With relative lines: the definition being digested (its file's
    /// node, its line and the subprogram it belongs to). `md_memo` holds
    /// texts valid for `own`'s file, `md_memo_own` those that also depend
    /// on its line or subprogram.
    own: Option<Own<'a>>,
    md_memo_own: HashMap<&'a str, String>,
    /// Set when a metadata text just made depends on `own`'s line.
    depends_on_own: bool,
    /// Set when a metadata text just made depends on `own`'s file (see
    /// `md_memo`).
    depends_on_own_file: bool,
    memos: LineMemos<'a>,
    /// With relative lines: the unit's source file node and its anchor;
    /// file-level nodes of that file have their lines relative to it.
    unit_anchor: Option<(HashSet<&'a str>, u64)>,
    /// How fragments hold the unit's types ([`stubs_unit_types`]).
    stubs: StubKind,
    /// Inside such a type (depth): no node's lines count (`LineKind::Stub`);
    /// texts so made are memoized apart.
    lineless: usize,
    md_memo_lineless: HashMap<&'a str, String>,
    /// Metadata references are left as `!`, not resolved: for a key of a
    /// function's code alone ([`code_without_metadata`]).
    without_metadata: bool,
}

/// Where the definition being digested is (see `Canonicalizer::own`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Own<'a> {
    file: &'a str,
    line: u64,
    /// The subprogram its node belongs to (`owner_subprogram`).
    owner: Option<&'a str>,
}

/// The memos of the walks that say how a node's lines are held.
#[derive(Default)]
struct LineMemos<'a> {
    files: HashMap<&'a str, Option<&'a str>>,
    levels: HashMap<&'a str, bool>,
    owners: HashMap<&'a str, Option<&'a str>>,
    unit_source: HashMap<&'a str, bool>,
}

/// How a global is used on one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Use {
    Call,
    Load,
    Other,
}

impl<'a> Canonicalizer<'a> {
    fn new(p: &'a Parsed<'a>) -> Self {
        Canonicalizer {
            p,
            type_memo: HashMap::default(),
            md_memo_any: HashMap::default(),
            md_memo: HashMap::default(),
            open: Vec::new(),
            open_at: HashMap::default(),
            low: usize::MAX,
            budget: 50_000_000,
            own: None,
            md_memo_own: HashMap::default(),
            depends_on_own: false,
            depends_on_own_file: false,
            memos: LineMemos::default(),
            unit_anchor: None,
            stubs: stubs_unit_types(p),
            lineless: 0,
            md_memo_lineless: HashMap::default(),
            without_metadata: false,
        }
    }

    /// Digests from here on are of a definition at `own` (file node, line):
    /// its file's lines are made relative to its line.
    fn set_own(&mut self, own: Option<Own<'a>>) {
        if own.map(|o| o.file) != self.own.map(|o| o.file) {
            self.md_memo.clear();
            self.md_memo_own.clear();
        } else if own != self.own {
            self.md_memo_own.clear();
        }
        self.own = own;
    }

    fn type_text(&mut self, name: &'a str) -> String {
        if let Some(t) = self.type_memo.get(name) {
            return t.clone();
        }
        let body = self.p.types.get(name).copied().unwrap_or("opaque");
        // Guard against a (malformed) cycle.
        self.type_memo.insert(name, format!("<cycle {name}>"));
        let mut out = String::new();
        self.canonical_into(body, &mut out, &mut |_, _| {});
        let h = format!("%T{}", &blake3::hash(out.as_bytes()).to_hex()[..32]);
        self.type_memo.insert(name, h.clone());
        h
    }

    /// The text a reference to metadata node `id` stands for: a digest of
    /// the node's content and of everything it reaches.
    ///
    /// Debug info is full of cycles (a struct, its members, a pointer to
    /// it). The nodes are entered depth first and their strongly
    /// connected components found as they close (Tarjan's algorithm):
    /// a reference inside a component is held as a placeholder until the
    /// component is whole, then every member's text is made from the
    /// whole component (`component_texts`). So a node's text depends on
    /// the node alone, never on which definition reached it first, and a
    /// template instance's digest does not follow what else its unit
    /// holds; nor is a memoized text missing what its cycle reached
    /// through a node that was being made at the time.
    fn md_text(&mut self, id: &'a str) -> String {
        let lineless_mode = self.lineless > 0;
        if lineless_mode {
            if let Some(t) = self.md_memo_lineless.get(id) {
                return t.clone();
            }
        } else {
            if let Some(t) = self.md_memo_any.get(id) {
                return t.clone();
            }
            if let Some(t) = self.md_memo.get(id) {
                self.depends_on_own_file = true;
                return t.clone();
            }
            if let Some(t) = self.md_memo_own.get(id) {
                self.depends_on_own = true;
                return t.clone();
            }
        }
        let key = (lineless_mode, id);
        if let Some(&at) = self.open_at.get(&key) {
            self.low = self.low.min(at);
            return placeholder(id);
        }
        let Some(body) = self.p.metadata.get(id).copied() else {
            return format!("!missing{id}");
        };
        if self.budget == 0 {
            return format!("!coarse{}", blake3::hash(body.as_bytes()).to_hex());
        }
        self.budget = self.budget.saturating_sub(body.len());
        let at = self.open.len();
        self.open.push(OpenNode {
            key,
            text: String::new(),
            stub_entered: false,
        });
        self.open_at.insert(key, at);
        let outer_low = std::mem::replace(&mut self.low, at);
        let outer = std::mem::replace(&mut self.depends_on_own, false);
        let outer_file = std::mem::replace(&mut self.depends_on_own_file, false);
        let (text, stub_entered) = self.node_text(id, body);
        let low = std::mem::replace(&mut self.low, outer_low);
        let dependent = self.depends_on_own;
        let dependent_on_file = self.depends_on_own_file;
        self.depends_on_own = outer || dependent;
        self.depends_on_own_file = outer_file || dependent_on_file;
        self.open[at].text = text;
        self.open[at].stub_entered = stub_entered;
        if low < at {
            // Part of a component entered further up: made with it.
            self.low = self.low.min(low);
            return placeholder(id);
        }
        // The first node of a component: the component is whole. What its
        // first node depends on, every member does (all were made under
        // it).
        let members: Vec<OpenNode<'a>> = self.open.drain(at..).collect();
        for m in &members {
            self.open_at.remove(&m.key);
        }
        let texts = component_texts(&members);
        for (m, h) in members.iter().zip(&texts) {
            let (lineless_mode, id) = m.key;
            // A stub entered from outside has the same text in either mode.
            if lineless_mode || m.stub_entered {
                self.md_memo_lineless.insert(id, h.clone());
            }
            if !lineless_mode {
                if dependent {
                    self.md_memo_own.insert(id, h.clone());
                } else if dependent_on_file {
                    self.md_memo.insert(id, h.clone());
                } else {
                    self.md_memo_any.insert(id, h.clone());
                }
            }
        }
        texts.into_iter().next().unwrap_or_default()
    }

    /// A node's own text, references to the nodes of its component as
    /// placeholders, its lines as a fragment holds them; and whether it
    /// is a stub entered from outside one (lines left out from here down).
    fn node_text(&mut self, id: &'a str, body: &'a str) -> (String, bool) {
        // A type fragments hold as a stub, and all its content: no lines.
        if self.stubs == StubKind::CxxDecls && cxx_declared(self.p, body) {
            // Fragments hold the class as a declaration: its tag, name,
            // identifier and scope chain are all of it they say.
            return (self.cxx_declaration_text(body), false);
        }
        let entered_stub =
            self.lineless == 0 && self.stubs == StubKind::CRecords && stubbed_type(self.p, body);
        let lineless = self.lineless > 0 || entered_stub;
        self.lineless += usize::from(lineless);
        let mut out = String::new();
        self.canonical_into_md(body, &mut out);
        // Most nodes have no line (types without one, expressions, tuples,
        // files): nothing to make relative, no walk up their scopes.
        let kind = if !body.contains("ine: ") {
            LineKind::Absolute
        } else if lineless {
            LineKind::Stub
        } else {
            // A definition-level line is relative in its own file's
            // definitions only (`line_kind`); without a definition, none
            // is.
            if self.own.is_none() || definition_level(self.p, id, &mut self.memos.levels) {
                self.depends_on_own_file = true;
            }
            line_kind(
                self.p,
                id,
                self.own,
                self.unit_anchor.as_ref(),
                &mut self.memos,
            )
        };
        match kind {
            LineKind::Stub => {
                out = map_line_fields(&out, &|_| "S".to_string());
            }
            LineKind::Inlined(_, line) => {
                // Relative to the definition it is inlined from; depends
                // on which definition is being digested (its own nodes
                // are relative to its line).
                out = map_line_fields(&out, &|n| format!("D{}", n as i64 - line as i64));
                self.depends_on_own = true;
            }
            LineKind::Own(line) => {
                let relative = map_line_fields(&out, &|n| format!("R{}", n as i64 - line as i64));
                if relative != out {
                    out = relative;
                    self.depends_on_own = true;
                }
            }
            LineKind::Anchor(anchor) => {
                out = map_line_fields(&out, &|n| format!("A{}", n as i64 - anchor as i64));
            }
            LineKind::Absolute => {}
        }
        if lineless {
            self.lineless -= 1;
        }
        (out, entered_stub)
    }

    /// The text of a C++ class as fragments declare it (the shim's
    /// `stubOf` with `CxxDecls`): tag, name, identifier, and the scope as
    /// namespaces and the enclosing class's declaration.
    fn cxx_declaration_text(&mut self, body: &'a str) -> String {
        let tag = md_field(body, "tag").unwrap_or_default();
        let name = md_string_field(body, "name").unwrap_or_default();
        let identifier = md_string_field(body, "identifier").unwrap_or_default();
        let scope = match md_reference(self.p, body, "scope") {
            Some(s)
                if self.p.metadata.get(s).is_some_and(|b| {
                    let b = b.strip_prefix("distinct ").unwrap_or(b);
                    b.starts_with("!DINamespace(") || b.starts_with("!DICompositeType(")
                }) =>
            {
                self.md_text(s)
            }
            _ => "none".to_string(),
        };
        format!("declaration {tag} {name} {identifier} scope: {scope}")
    }

    fn canonical_into_md(&mut self, body: &'a str, out: &mut String) {
        if body.contains("!DICompileUnit(") {
            // A fragment's compile unit is a copy without the unit-wide
            // lists, and it names the source file and its directory only
            // for a definition of that file (see
            // `repocc_extract_definitions`; the digest says so apart, see
            // `defined_in_unit_file`); the glue, which keeps them, is
            // compiled every time. Left out here, a definition's digest
            // does not follow every global's line, and an inline function
            // of a header has the same digest in every unit that includes
            // it, wherever it is compiled (its own file is in its
            // subprogram).
            for piece in without_fields(body, FRAGMENT_UNIT_LEAVES_OUT) {
                self.canonical_into(piece, out, &mut |_, _| {});
            }
        } else {
            self.canonical_into(body, out, &mut |_, _| {});
        }
    }

    /// Copies `text` into `out` with references resolved and comments
    /// dropped; reports every `@global` use through `on_global`.
    fn canonical_into(
        &mut self,
        text: &'a str,
        out: &mut String,
        on_global: &mut dyn FnMut(&'a str, usize),
    ) {
        let b = text.as_bytes();
        let mut i = 0;
        let mut copied = 0;
        while i < b.len() {
            match b[i] {
                b'"' => {
                    // Strings never hold references; skip to the closing quote.
                    match text[i + 1..].find('"') {
                        Some(e) => i += e + 2,
                        None => i = b.len(),
                    }
                }
                b';' => {
                    out.push_str(&text[copied..i]);
                    let e = text[i..].find('\n').map_or(b.len(), |e| i + e);
                    i = e;
                    copied = i;
                }
                b'@' => {
                    if let Some((name, n)) = read_ident(&text[i + 1..]) {
                        on_global(name, i);
                        i += 1 + n;
                    } else {
                        i += 1;
                    }
                }
                b'%' => match read_ident(&text[i + 1..]) {
                    Some((name, n)) if self.p.types.contains_key(name) => {
                        out.push_str(&text[copied..i]);
                        let t = self.type_text(name);
                        out.push_str(&t);
                        i += 1 + n;
                        copied = i;
                    }
                    Some((_, n)) => i += 1 + n,
                    None => i += 1,
                },
                b'#' if b.get(i + 1).is_some_and(|c| c.is_ascii_digit()) => {
                    let n = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                    let id = &text[i + 1..i + 1 + n];
                    out.push_str(&text[copied..i]);
                    out.push_str("#{");
                    if let Some(a) = self.p.attrs.get(id) {
                        out.push_str(a);
                    }
                    out.push('}');
                    i += 1 + n;
                    copied = i;
                }
                b'!' if b.get(i + 1).is_some_and(|c| c.is_ascii_digit()) => {
                    let n = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                    let id = &text[i + 1..i + 1 + n];
                    if self.without_metadata {
                        out.push_str(&text[copied..=i]);
                    } else {
                        out.push_str(&text[copied..i]);
                        let m = self.md_text(id);
                        out.push_str(&m);
                    }
                    i += 1 + n;
                    copied = i;
                }
                _ => i += 1,
            }
        }
        out.push_str(&text[copied..]);
    }
}

/// A metadata node being made (see `Canonicalizer::md_text`).
struct OpenNode<'a> {
    /// Whether it is made as a stub's content (no lines), and its id.
    key: (bool, &'a str),
    /// Its text, references to its component as placeholders; empty until
    /// made.
    text: String,
    /// A stub entered from outside one: its text is the same in either
    /// mode.
    stub_entered: bool,
}

/// Marks a reference to a node of the component being made. Printed IR
/// holds no control characters (strings escape them), so none can be
/// mistaken for one.
const PLACEHOLDER: char = '\u{1}';

fn placeholder(id: &str) -> String {
    format!("{PLACEHOLDER}{id}{PLACEHOLDER}")
}

/// The texts of a strongly connected component's members (`members[0]`
/// first), from the members alone: not their ids (a unit's numbering),
/// not the order they were entered in.
///
/// A member alone, without a reference to itself, is the digest of its
/// text. Otherwise each member is coloured by its text with the
/// placeholders blanked, and the colours refined by those of the members
/// it refers to, in order, until no colour splits any more
/// (Weisfeiler-Lehman refinement); each member's text is then its colour
/// with the sorted colours of the whole component, which every member's
/// content enters.
fn component_texts(members: &[OpenNode]) -> Vec<String> {
    let finish = |h: &[u8]| format!("!M{}", &blake3::hash(h).to_hex()[..32]);
    if let [only] = members {
        if !only.text.contains(PLACEHOLDER) {
            return vec![finish(only.text.as_bytes())];
        }
    }
    let at: HashMap<&str, usize> = members
        .iter()
        .enumerate()
        .map(|(i, m)| (m.key.1, i))
        .collect();
    // Each text as its pieces between placeholders, and whom those name.
    let split: Vec<(Vec<&str>, Vec<usize>)> = members
        .iter()
        .map(|m| {
            let mut pieces = Vec::new();
            let mut targets = Vec::new();
            let mut parts = m.text.split(PLACEHOLDER);
            pieces.extend(parts.next());
            while let (Some(id), Some(piece)) = (parts.next(), parts.next()) {
                // Only members are held as placeholders (Tarjan: a node
                // still open is in the component of whatever refers to it).
                targets.push(at.get(id).copied().unwrap_or(usize::MAX));
                pieces.push(piece);
            }
            (pieces, targets)
        })
        .collect();
    let mut colours: Vec<[u8; 32]> = split
        .iter()
        .map(|(pieces, _)| {
            let mut h = blake3::Hasher::new();
            for piece in pieces {
                h.update(piece.as_bytes());
                h.update(b"\x01");
            }
            *h.finalize().as_bytes()
        })
        .collect();
    let distinct = |c: &[[u8; 32]]| c.iter().collect::<HashSet<_>>().len();
    let mut classes = distinct(&colours);
    for _ in 0..members.len() {
        let next: Vec<[u8; 32]> = split
            .iter()
            .zip(&colours)
            .map(|((_, targets), own)| {
                let mut h = blake3::Hasher::new();
                h.update(own);
                for &t in targets {
                    h.update(colours.get(t).map_or(&[0u8; 32], |c| c));
                }
                *h.finalize().as_bytes()
            })
            .collect();
        let now = distinct(&next);
        colours = next;
        if now == classes {
            break;
        }
        classes = now;
    }
    let mut all = colours.clone();
    all.sort_unstable();
    let whole = blake3::hash(all.concat().as_slice());
    colours
        .iter()
        .map(|c| finish(&[c.as_slice(), whole.as_bytes()].concat()))
        .collect()
}

/// What a fragment's copy of the compile unit does not have: the unit-wide
/// lists and the source file.
const FRAGMENT_UNIT_LEAVES_OUT: &[&str] = &[
    "enums",
    "retainedTypes",
    "globals",
    "imports",
    "macros",
    "file",
];

/// `body` without its top-level `, name: value` fields named in `fields`,
/// as the slices between them.
fn without_fields<'b>(body: &'b str, fields: &[&str]) -> Vec<&'b str> {
    let mut pieces = Vec::new();
    let mut from = 0;
    let mut in_str = false;
    let mut i = 0;
    let b = body.as_bytes();
    while i < b.len() {
        match b[i] {
            b'"' => in_str = !in_str,
            b',' if !in_str => {
                let rest = &body[i..];
                let skip = fields.iter().find_map(|f| {
                    let value = rest
                        .strip_prefix(", ")?
                        .strip_prefix(f)?
                        .strip_prefix(": ")?;
                    let end = value.find([',', ')']).unwrap_or(value.len());
                    Some(rest.len() - value.len() + end)
                });
                if let Some(len) = skip {
                    pieces.push(&body[from..i]);
                    i += len;
                    from = i;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    pieces.push(&body[from..]);
    pieces
}

/// The value of a top-level `name: value` field of a specialized metadata
/// node (`!DISubprogram(name: "f", file: !3, line: 7, ...)`), outside
/// strings.
fn md_field<'b>(body: &'b str, name: &str) -> Option<&'b str> {
    let b = body.as_bytes();
    // Most places a field could start hold another one: compared by their
    // first byte before the name (this runs for most nodes of a unit,
    // several times each).
    let first = name.as_bytes().first().copied();
    let mut in_str = false;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'"' => in_str = !in_str,
            b'(' | b' ' if !in_str && b.get(i + 1).copied() == first => {
                let rest = &body[i + 1..];
                if let Some(value) = rest.strip_prefix(name).and_then(|r| r.strip_prefix(": ")) {
                    let end = value.find([',', ')']).unwrap_or(value.len());
                    return Some(&value[..end]);
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` with the numbers of its top-level `line:` and `scopeLine:`
/// fields mapped (outside strings); a zero (no line) stays.
fn map_line_fields(text: &str, map: &dyn Fn(u64) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut in_str = false;
    for (i, c) in text.bytes().enumerate() {
        match c {
            b'"' => in_str = !in_str,
            b'(' | b' ' if !in_str => {
                let rest = &text[i + 1..];
                let Some(value) = ["line: ", "scopeLine: "]
                    .iter()
                    .find_map(|f| rest.strip_prefix(f))
                else {
                    continue;
                };
                let digits = value.bytes().take_while(u8::is_ascii_digit).count();
                let Ok(n) = value[..digits].parse::<u64>() else {
                    continue;
                };
                if n == 0 {
                    continue;
                }
                let at = text.len() - value.len();
                out.push_str(&text[copied..at]);
                out.push_str(&map(n));
                copied = at + digits;
            }
            _ => {}
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Where a walk up a node's scope chain goes from one node.
enum ScopeStep<'a, T> {
    /// The answer, for this node and every one below it on the walk.
    Found(T),
    /// Not known here: ask this node (the scope).
    Up(&'a str),
}

/// The node `field: !N` of a printed node names.
fn md_reference<'a>(p: &Parsed<'a>, body: &str, field: &str) -> Option<&'a str> {
    md_field(body, field)
        .and_then(|v| v.strip_prefix('!'))
        .and_then(|v| p.metadata.get_key_value(v).map(|(k, _)| *k))
}

/// Walks up from `id` asking `step` (the node's id and text) at each node,
/// until it answers; `none` when the chain ends first. Every node walked
/// through is given the answer in `memo`.
fn up_scopes<'a, T: Copy>(
    p: &Parsed<'a>,
    id: &'a str,
    memo: &mut HashMap<&'a str, T>,
    none: T,
    step: impl Fn(&'a str, &'a str) -> Option<ScopeStep<'a, T>>,
) -> T {
    let mut chain: Vec<&'a str> = Vec::new();
    let mut at = id;
    let mut found = none;
    for _ in 0..256 {
        if let Some(&f) = memo.get(at) {
            found = f;
            break;
        }
        chain.push(at);
        let Some(body) = p.metadata.get(at).copied() else {
            break;
        };
        match step(at, body) {
            Some(ScopeStep::Found(f)) => {
                found = f;
                break;
            }
            Some(ScopeStep::Up(scope)) => at = scope,
            None => break,
        }
    }
    for c in chain {
        memo.insert(c, found);
    }
    found
}

/// The file node (`!N`'s id) a metadata node belongs to: its `file:`, or
/// its scope's (a `DILocation`, through its scope chain).
fn node_file<'a>(
    p: &Parsed<'a>,
    id: &'a str,
    memo: &mut HashMap<&'a str, Option<&'a str>>,
) -> Option<&'a str> {
    up_scopes(p, id, memo, None, |at, body| {
        if body.starts_with("!DIFile(") || body.starts_with("distinct !DIFile(") {
            return Some(ScopeStep::Found(Some(at)));
        }
        if let Some(file) = md_reference(p, body, "file") {
            return Some(ScopeStep::Found(Some(file)));
        }
        md_reference(p, body, "scope").map(ScopeStep::Up)
    })
}

/// Whether a printed `DISubprogram` is a definition (not a declaration).
fn defines_a_subprogram(body: &str) -> bool {
    md_field(body, "spFlags").is_some_and(|f| f.contains("DISPFlagDefinition"))
}

/// Whether a metadata node belongs to a definition: a subprogram that is a
/// definition, a scope, variable, label or location inside one, a global
/// variable's own node (a string literal's too: clang gives it the line of
/// the literal), or anything whose scope is one of those (a type declared
/// in a function). Everything else (types, typedefs, declarations) is
/// file-level.
/// `llvm`'s `definitionLevel` says the same of the module in memory.
fn definition_level<'a>(p: &Parsed<'a>, id: &'a str, memo: &mut HashMap<&'a str, bool>) -> bool {
    up_scopes(p, id, memo, false, |_, body| {
        let kind = body.strip_prefix("distinct ").unwrap_or(body);
        if [
            "!DILocation(",
            "!DILexicalBlock(",
            "!DILexicalBlockFile(",
            "!DILocalVariable(",
            "!DILabel(",
        ]
        .iter()
        .any(|k| kind.starts_with(k))
        {
            return Some(ScopeStep::Found(true));
        }
        if kind.starts_with("!DISubprogram(") {
            return Some(ScopeStep::Found(defines_a_subprogram(body)));
        }
        // A global variable's own node (its fragment's leader, placed with
        // it), and a string literal's (no name: where the function that
        // holds the literal is).
        if kind.starts_with("!DIGlobalVariable(") {
            return Some(ScopeStep::Found(
                md_field(body, "isDefinition") != Some("false"),
            ));
        }
        md_reference(p, body, "scope").map(ScopeStep::Up)
    })
}

/// The subprogram (a definition) a node belongs to: the first one up its
/// scope chain; none at a global variable or a declaration.
/// `llvm`'s `ownerOf` says the same of the module in memory.
fn owner_subprogram<'a>(
    p: &Parsed<'a>,
    id: &'a str,
    memo: &mut HashMap<&'a str, Option<&'a str>>,
) -> Option<&'a str> {
    up_scopes(p, id, memo, None, |at, body| {
        let kind = body.strip_prefix("distinct ").unwrap_or(body);
        if kind.starts_with("!DISubprogram(") {
            return Some(ScopeStep::Found(defines_a_subprogram(body).then_some(at)));
        }
        if kind.starts_with("!DIGlobalVariable(") {
            return Some(ScopeStep::Found(None));
        }
        md_reference(p, body, "scope").map(ScopeStep::Up)
    })
}

/// Whether a subprogram is in its compile unit's own source file (by
/// path, as `llvm`'s `inUnitSource`).
fn in_unit_source<'a>(p: &Parsed<'a>, sp: &'a str, memo: &mut HashMap<&'a str, bool>) -> bool {
    if let Some(&known) = memo.get(sp) {
        return known;
    }
    let path_of = |body: &str, field: &str| {
        md_reference(p, body, field)
            .and_then(|f| p.metadata.get(f))
            .and_then(|f| file_path(f))
    };
    let found = p.metadata.get(sp).is_some_and(|body| {
        let unit = md_reference(p, body, "unit").and_then(|u| p.metadata.get(u));
        match (path_of(body, "file"), unit.and_then(|u| path_of(u, "file"))) {
            (Some(file), Some(unit)) => file == unit,
            _ => false,
        }
    });
    memo.insert(sp, found);
    found
}

/// The key a definition inlined into a fragment is known by when its
/// lines are placed: its linkage name, else its name (`llvm`'s
/// `ownerKey`).
fn owner_key(body: &str) -> Option<&str> {
    md_string_field(body, "linkageName")
        .filter(|k| !k.is_empty())
        .or_else(|| md_string_field(body, "name"))
}

/// The line of a subprogram's node (0: none).
fn node_line(p: &Parsed, id: &str) -> u64 {
    p.metadata
        .get(id)
        .and_then(|b| md_field(b, "line"))
        .and_then(|l| l.parse().ok())
        .unwrap_or(0)
}

/// The other definition a definition-level node belongs to, when its lines
/// are relative to that definition's (see `debug_lines`): a subprogram of
/// the unit's source with a line, in whose file the node is, not the one
/// of the definition being digested. `llvm`'s `otherOwner` says the
/// same.
fn other_owner<'a>(
    p: &Parsed<'a>,
    id: &'a str,
    own: Own<'a>,
    memos: &mut LineMemos<'a>,
) -> Option<&'a str> {
    let owner = owner_subprogram(p, id, &mut memos.owners)?;
    (Some(owner) != own.owner
        && node_line(p, owner) > 0
        && in_unit_source(p, owner, &mut memos.unit_source)
        // Lines of another file inside it (an #include in a function
        // body) stay as they are, as in the function's own digest.
        && node_file(p, id, &mut memos.files) == node_file(p, owner, &mut memos.files))
    .then_some(owner)
}

/// The node kinds whose file-level lines are relative to the unit's
/// anchor (those `llvm` can rebuild with moved lines); other kinds
/// keep their lines.
fn anchored_kind(body: &str) -> bool {
    let kind = body.strip_prefix("distinct ").unwrap_or(body);
    [
        "!DISubprogram(",
        "!DIGlobalVariable(",
        "!DIDerivedType(",
        "!DICompositeType(",
        "!DIImportedEntity(",
        "!DICommonBlock(",
    ]
    .iter()
    .any(|k| kind.starts_with(k))
}

/// How a node's lines are held with relative lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineKind<'a> {
    /// Relative to the definition's own line (it belongs to a definition and
    /// is in the definition's file).
    Own(u64),
    /// Relative to the unit's anchor (file-level, in the unit's source).
    Anchor(u64),
    /// Relative to the line of another definition inlined into the one
    /// being digested (it belongs to that one): its subprogram and line.
    Inlined(&'a str, u64),
    /// In no fragment: a file-scope type that fragments hold as a stub,
    /// without lines, or anything reached through one (members, nested
    /// types, their typedefs); the glue, compiled every time, holds it
    /// whole.
    Stub,
    Absolute,
}

/// How fragments hold the unit's types: C records when every compile unit
/// is C with full debug info, C++ declarations when every one is C++ with
/// full debug info. The shim's `stubsUnitTypes` decides the same from the
/// module.
fn stubs_unit_types(p: &Parsed) -> StubKind {
    let mut kind = StubKind::None;
    for b in p.metadata.values() {
        if !b
            .strip_prefix("distinct ")
            .unwrap_or(b)
            .starts_with("!DICompileUnit(")
        {
            continue;
        }
        if md_field(b, "emissionKind") != Some("FullDebug") {
            return StubKind::None;
        }
        let this = match md_field(b, "language") {
            Some("DW_LANG_C" | "DW_LANG_C89" | "DW_LANG_C99" | "DW_LANG_C11" | "DW_LANG_C17") => {
                StubKind::CRecords
            }
            Some(
                "DW_LANG_C_plus_plus"
                | "DW_LANG_C_plus_plus_03"
                | "DW_LANG_C_plus_plus_11"
                | "DW_LANG_C_plus_plus_14"
                | "DW_LANG_C_plus_plus_17"
                | "DW_LANG_C_plus_plus_20",
            ) => StubKind::CxxDecls,
            _ => return StubKind::None,
        };
        if kind != StubKind::None && kind != this {
            return StubKind::None;
        }
        kind = this;
    }
    kind
}

/// A dynamic class whose key function the unit defines, which fragments
/// declare by name (the shim's `homedDynamicClass`): no identifier, a
/// vtable holder, a definition, a name without a parenthesis.
fn homed_dynamic_class(body: &str) -> bool {
    md_string_field(body, "identifier").is_none()
        && md_field(body, "vtableHolder").is_some()
        && !md_field(body, "flags").is_some_and(|f| f.contains("DIFlagFwdDecl"))
        && md_string_field(body, "name").is_some_and(|n| !n.is_empty() && !n.contains('('))
}

/// A C++ class, struct or union fragments hold as a declaration (the
/// shim's `cxxDeclared`): it has an identifier (or is a dynamic class the
/// unit homes, outside any anonymous namespace) and lies at namespace
/// scope or inside another such class.
fn cxx_declared(p: &Parsed, body: &str) -> bool {
    let mut body = body;
    for _ in 0..256 {
        let kind = body.strip_prefix("distinct ").unwrap_or(body);
        let tagged = [
            "!DICompositeType(tag: DW_TAG_class_type,",
            "!DICompositeType(tag: DW_TAG_structure_type,",
            "!DICompositeType(tag: DW_TAG_union_type,",
        ]
        .iter()
        .any(|k| kind.starts_with(k));
        let homed = homed_dynamic_class(body);
        if !tagged || (md_string_field(body, "identifier").is_none() && !homed) {
            return false;
        }
        let mut scope = md_reference(p, body, "scope").and_then(|s| p.metadata.get(s).copied());
        while let Some(s) = scope.filter(|s| {
            s.strip_prefix("distinct ")
                .unwrap_or(s)
                .starts_with("!DINamespace(")
        }) {
            if homed && md_string_field(s, "name").is_none_or(str::is_empty) {
                return false;
            }
            scope = md_reference(p, s, "scope").and_then(|s| p.metadata.get(s).copied());
        }
        match scope {
            None => return true,
            Some(s) => {
                let s2 = s.strip_prefix("distinct ").unwrap_or(s);
                if s2.starts_with("!DIFile(") || s2.starts_with("!DICompileUnit(") {
                    return true;
                }
                body = s;
            }
        }
    }
    false
}

/// A type fragments hold as a stub (see `LineKind::Stub`): a complete
/// file-scope struct, union or enum (the shim's `stubbable`, which sees
/// the identifier this digest precedes).
fn stubbed_type(p: &Parsed, body: &str) -> bool {
    let kind = body.strip_prefix("distinct ").unwrap_or(body);
    let tagged = [
        "!DICompositeType(tag: DW_TAG_structure_type,",
        "!DICompositeType(tag: DW_TAG_union_type,",
        "!DICompositeType(tag: DW_TAG_enumeration_type,",
    ]
    .iter()
    .any(|k| kind.starts_with(k));
    if !tagged
        || md_field(body, "flags").is_some_and(|f| f.contains("DIFlagFwdDecl"))
        || md_field(body, "identifier").is_some()
    {
        return false;
    }
    match md_field(body, "scope") {
        None => true,
        Some(_) => md_reference(p, body, "scope")
            .and_then(|s| p.metadata.get(s))
            .is_some_and(|scope| {
                let scope = scope.strip_prefix("distinct ").unwrap_or(scope);
                scope.starts_with("!DIFile(") || scope.starts_with("!DICompileUnit(")
            }),
    }
}

fn line_kind<'a>(
    p: &Parsed<'a>,
    id: &'a str,
    own: Option<Own<'a>>,
    unit_anchor: Option<&(HashSet<&'a str>, u64)>,
    memos: &mut LineMemos<'a>,
) -> LineKind<'a> {
    if own.is_none() && unit_anchor.is_none() {
        return LineKind::Absolute;
    }
    let Some(file) = node_file(p, id, &mut memos.files) else {
        return LineKind::Absolute;
    };
    if definition_level(p, id, &mut memos.levels) {
        let Some(own) = own else {
            return LineKind::Absolute;
        };
        if let Some(owner) = other_owner(p, id, own, memos) {
            return LineKind::Inlined(owner, node_line(p, owner));
        }
        return if own.file == file {
            LineKind::Own(own.line)
        } else {
            LineKind::Absolute
        };
    }
    match unit_anchor {
        Some((unit_files, anchor))
            if unit_files.contains(file)
                && p.metadata.get(id).is_some_and(|b| anchored_kind(b)) =>
        {
            LineKind::Anchor(*anchor)
        }
        _ => LineKind::Absolute,
    }
}

/// A quoted string field of a printed node, as printed (escapes kept).
fn md_string_field<'b>(body: &'b str, name: &str) -> Option<&'b str> {
    // ` name: "` anywhere, else `(name: "` (a name holds neither a space
    // nor `(`: see `md_field`), without making either pattern.
    let b = body.as_bytes();
    let after = |before: u8| {
        body.match_indices(name).find_map(|(at, _)| {
            (at > 0 && b[at - 1] == before)
                .then(|| body[at + name.len()..].strip_prefix(": \""))
                .flatten()
        })
    };
    let value = after(b' ').or_else(|| after(b'('))?;
    Some(&value[..value.find('"')?])
}

/// The path a `DIFile` names: its file name, under its directory unless
/// absolute (as printed: comparing two such paths compares the names).
fn file_path(body: &str) -> Option<String> {
    let kind = body.strip_prefix("distinct ").unwrap_or(body);
    if !kind.starts_with("!DIFile(") {
        return None;
    }
    let name = md_string_field(body, "filename")?;
    let dir = md_string_field(body, "directory").unwrap_or("");
    Some(if name.starts_with('/') || dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    })
}

/// The unit's source files (every file node naming the path its one
/// compile unit names: clang gives the compile unit a node of its own when
/// the source is named by an absolute path) and its anchor: the lowest line
/// of a file-level node of those (see `debug_lines`). `None` with no
/// compile unit, several, or no such node. `llvm`'s
/// `repocc_rebase_anchor_lines` finds the same files.
fn unit_anchor<'a>(p: &Parsed<'a>) -> Option<(HashSet<&'a str>, u64)> {
    let unit = only_compile_unit(p)?;
    let path = file_path(p.metadata.get(md_reference(p, unit, "file")?)?)?;
    let files: HashSet<&'a str> = p
        .metadata
        .iter()
        .filter(|(_, b)| file_path(b).as_deref() == Some(path.as_str()))
        .map(|(&id, _)| id)
        .collect();
    let (mut file_memo, mut level_memo) = (HashMap::default(), HashMap::default());
    let mut anchor: Option<u64> = None;
    for (&id, body) in &p.metadata {
        if !anchored_kind(body) {
            continue;
        }
        let lines = ["line", "scopeLine"]
            .iter()
            .filter_map(|f| md_field(body, f)?.parse::<u64>().ok())
            .filter(|&n| n > 0)
            .min();
        let Some(line) = lines else { continue };
        if anchor.is_some_and(|a| a <= line) {
            continue;
        }
        if node_file(p, id, &mut file_memo).is_some_and(|f| files.contains(f))
            && !definition_level(p, id, &mut level_memo)
        {
            anchor = Some(line);
        }
    }
    Some((files, anchor?))
}

/// The `!dbg !N` attachment of a definition's line, as a metadata id.
fn dbg_attachment<'a>(p: &Parsed<'a>, line: &str) -> Option<&'a str> {
    let mut in_str = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => in_str = !in_str,
            '!' if !in_str && line[i..].starts_with("!dbg !") => {
                let rest = &line[i + 6..];
                let n = rest.bytes().take_while(u8::is_ascii_digit).count();
                return p.metadata.get_key_value(&rest[..n]).map(|(k, _)| *k);
            }
            _ => {}
        }
    }
    None
}

/// A global's line as the pieces around its `!dbg` attachments (a global
/// variable may have several).
fn without_dbg_attachments(line: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut in_str, mut copied) = (false, 0);
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => in_str = !in_str,
            b',' if !in_str && line[i..].starts_with(", !dbg !") => {
                let n = b[i + 8..].iter().take_while(|c| c.is_ascii_digit()).count();
                pieces.push(&line[copied..i]);
                i += 8 + n;
                copied = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    pieces.push(&line[copied..]);
    pieces
}

/// Where a definition is, from its `!dbg` attachment: the file node and
/// the line of its `DISubprogram` (a function) or `DIGlobalVariable`.
fn own_position<'a>(p: &Parsed<'a>, header: &str, memos: &mut LineMemos<'a>) -> Option<Own<'a>> {
    let mut node = dbg_attachment(p, header)?;
    let body = p.metadata.get(node)?;
    if body.contains("!DIGlobalVariableExpression(") {
        let var = md_field(body, "var")?.strip_prefix('!')?;
        node = p.metadata.get_key_value(var)?.0;
    }
    let line: u64 = md_field(p.metadata.get(node)?, "line")?.parse().ok()?;
    let file = node_file(p, node, &mut memos.files)?;
    let owner = owner_subprogram(p, node, &mut memos.owners);
    (line > 0).then_some(Own { file, line, owner })
}

/// Whether any metadata line of the module is too high for relative lines.
fn has_line_at_or_above(p: &Parsed, threshold: u64) -> bool {
    p.metadata.values().any(|body| {
        ["line", "scopeLine"].iter().any(|f| {
            md_field(body, f)
                .and_then(|v| v.parse::<u64>().ok())
                .is_some_and(|n| n >= threshold)
        })
    })
}

/// A fragment rebased by `rebase_relative_lines`: its printed module, and
/// the keys of the definitions inlined into it whose lines are relative to
/// theirs, by index.
pub struct RebasedText {
    pub text: String,
    pub inlined: Vec<String>,
}

/// The printed `module_text` of a fragment whose leader is `leader`, with
/// the lines of what belongs to a definition in the leader's own file made
/// relative to its line, as its digest holds them: `RELATIVE_LINE_BASE +
/// line - own line`, and those of other definitions of the unit's source
/// inlined into it relative to theirs (see `debug_lines`, which places them
/// again). The file-level lines relative to the unit's anchor are already
/// so (the unit's module was rebased before fragments were extracted).
/// `None`: the leader has no position, its fragment's lines stay as they
/// are.
#[cfg(test)]
pub fn rebase_relative_lines(module_text: &str, leader: &str) -> Result<Option<RebasedText>> {
    rebase_relative_lines_of(module_text, leader, None)
}

/// [`rebase_relative_lines`], with the path of the unit's source
/// (`ModuleDigests::unit_source`) when the fragment's compile unit may not
/// name it: a function is the unit source's when its file is that path.
pub fn rebase_relative_lines_of(
    module_text: &str,
    leader: &str,
    unit_source: Option<&str>,
) -> Result<Option<RebasedText>> {
    use crate::support::line_bases::{
        DEFINITION_LINE_BASE, DEFINITION_LINE_SPAN, MAX_INLINED_DEFINITIONS, RELATIVE_LINE_BASE,
    };
    let p = parse(module_text)?;
    let mut memos = LineMemos::default();
    if let Some(path) = unit_source {
        for (&id, body) in &p.metadata {
            let kind = body.strip_prefix("distinct ").unwrap_or(body);
            if kind.starts_with("!DISubprogram(") {
                let file = md_reference(&p, body, "file")
                    .and_then(|f| p.metadata.get(f))
                    .and_then(|f| file_path(f));
                let file = file.as_deref().map(unescape_printed);
                memos.unit_source.insert(id, file.as_deref() == Some(path));
            }
        }
    }
    let header = p
        .functions
        .iter()
        .find(|(n, _)| unescape_printed(n) == leader)
        .map(|(_, text)| text.lines().next().unwrap_or(""))
        .or_else(|| {
            p.variables
                .iter()
                .find(|(n, _)| unescape_printed(n) == leader)
                .map(|(_, text)| *text)
        });
    let Some(own) = header.and_then(|h| own_position(&p, h, &mut memos)) else {
        return Ok(None);
    };
    let node_of = |line: &str| {
        line.strip_prefix('!')
            .and_then(|r| r.split_once(" = "))
            .map(|(id, _)| id)
            .filter(|id| id.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|id| p.metadata.get_key_value(id).map(|(k, _)| *k))
    };
    // How each node's lines are held, then the inlined definitions by key.
    let mut kinds: Vec<(&str, LineKind)> = Vec::new();
    let mut owners: Vec<(&str, &str)> = Vec::new();
    for line in module_text.lines() {
        let Some(id) = node_of(line) else {
            kinds.push((line, LineKind::Absolute));
            continue;
        };
        // No anchor given: the unit's file-level lines are already so.
        let kind = line_kind(&p, id, Some(own), None, &mut memos);
        if let LineKind::Inlined(o, _) = kind {
            let key = p.metadata.get(o).and_then(|b| owner_key(b)).unwrap_or("");
            if line.contains("line: ") && !owners.iter().any(|&(_, id)| id == o) {
                owners.push((key, o));
            }
        }
        kinds.push((line, kind));
    }
    owners.sort_unstable();
    // Two of one key share an index when they are at one line (LLVM's
    // coroutine split copies the coroutine's subprogram for each part;
    // see shim/line_rebase.cpp), and cannot be told apart otherwise.
    if (owners.windows(2))
        .any(|w| w[0].0 == w[1].0 && node_line(&p, w[0].1) != node_line(&p, w[1].1))
    {
        bail!(
            "two definitions inlined into {leader} are both known as {:?}",
            owners
        );
    }
    let mut keys: Vec<&str> = owners.iter().map(|&(k, _)| k).collect();
    keys.dedup();
    let index_of = |owner: &str| {
        let key = owners
            .iter()
            .find(|&&(_, o)| o == owner)
            .map_or("", |&(k, _)| k);
        keys.iter().position(|&k| k == key).unwrap_or(0) as u64
    };
    if keys.len() as u64 > MAX_INLINED_DEFINITIONS {
        bail!(
            "{} definitions inlined into {leader}: too many for relative lines",
            keys.len()
        );
    }
    let mut out = String::with_capacity(module_text.len() + module_text.len() / 8);
    let too_far = std::cell::Cell::new(false);
    for (line, kind) in kinds {
        match kind {
            LineKind::Own(own_line) => out.push_str(&map_line_fields(line, &|n| {
                (RELATIVE_LINE_BASE + n - own_line).to_string()
            })),
            LineKind::Inlined(owner, at) => {
                let index = index_of(owner);
                let half = DEFINITION_LINE_SPAN as i64 / 2;
                let base = DEFINITION_LINE_BASE + index * DEFINITION_LINE_SPAN;
                out.push_str(&map_line_fields(line, &|n| {
                    let offset = n as i64 - at as i64;
                    if offset <= -half || offset >= half {
                        too_far.set(true);
                    }
                    (base as i64 + half + offset).to_string()
                }));
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    if too_far.get() {
        bail!("a line of a definition inlined into {leader} is too far from its own");
    }
    Ok(Some(RebasedText {
        text: out,
        inlined: (keys.into_iter())
            .map(|k| unescape_printed(k).into_owned())
            .collect(),
    }))
}

/// What `llvm::rebase_anchor_lines` does to a unit's module, done to
/// its printed text: the unit's anchor, and the text with the lines of the
/// file-level nodes of its source relative to it.
#[cfg(test)]
fn rebase_anchor_lines(module_text: &str) -> Option<(u64, String)> {
    use crate::support::line_bases::ANCHOR_LINE_BASE;
    let p = parse(module_text).ok()?;
    let unit = unit_anchor(&p)?;
    let mut memos = LineMemos::default();
    let mut out = String::new();
    for line in module_text.lines() {
        let id = line
            .strip_prefix('!')
            .and_then(|r| r.split_once(" = "))
            .and_then(|(id, _)| p.metadata.get_key_value(id).map(|(k, _)| *k));
        let kind = id.map(|id| line_kind(&p, id, None, Some(&unit), &mut memos));
        if kind == Some(LineKind::Anchor(unit.1)) {
            out.push_str(&map_line_fields(line, &|n| {
                (ANCHOR_LINE_BASE + n - unit.1).to_string()
            }));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    Some((unit.1, out))
}

/// Classifies the uses of globals on one instruction line of a body.
fn classify_line(line: &str, uses: &mut Vec<(String, Use)>) {
    let trimmed = line.trim_start();
    let inst = match trimmed.split_once(" = ") {
        Some((lhs, rhs)) if lhs.starts_with('%') => rhs,
        _ => trimmed,
    };
    let globals = |s: &str| -> Vec<(usize, String)> {
        let mut v = Vec::new();
        let mut in_str = false;
        for (i, c) in s.char_indices() {
            match c {
                '"' => in_str = !in_str,
                '@' if !in_str => {
                    if let Some((n, _)) = read_ident(&s[i + 1..]) {
                        v.push((i, n.to_string()));
                    }
                }
                _ => {}
            }
        }
        v
    };
    let word = inst.split_whitespace().next().unwrap_or("");
    let is_call =
        matches!(
            word,
            "call" | "invoke" | "callbr" | "tail" | "musttail" | "notail"
        ) && (inst.contains("call ") || inst.starts_with("invoke ") || inst.starts_with("callbr "));
    if is_call {
        let gs = globals(inst);
        // The callee: the first global immediately followed by '('.
        let callee = gs.iter().position(|(i, n)| {
            let after = i + 1 + n.len() + if inst[i + 1..].starts_with('"') { 2 } else { 0 };
            inst[after..].starts_with('(')
        });
        for (k, (_, n)) in gs.into_iter().enumerate() {
            uses.push((
                n,
                if Some(k) == callee {
                    Use::Call
                } else {
                    Use::Other
                },
            ));
        }
        return;
    }
    if word == "load" {
        for (_, n) in globals(inst) {
            uses.push((n, Use::Load));
        }
        return;
    }
    for (_, n) in globals(inst) {
        uses.push((n, Use::Other));
    }
}

/// The context digest: everything outside a definition that can change
/// any fragment's bytes. `extra` carries what is not in the IR text (CPU,
/// features, codegen settings, versions).
#[cfg(test)]
pub fn context_digest(module_text: &str, extra: &[u8]) -> Result<[u8; 32]> {
    Ok(context_of(&parse(module_text)?, extra))
}

fn context_of(p: &Parsed, extra: &[u8]) -> [u8; 32] {
    let mut c = Canonicalizer::new(p);
    let mut h = blake3::Hasher::new();
    h.update(&DIGEST_FORMAT_VERSION.to_le_bytes());
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    for l in &p.header {
        h.update(l.as_bytes());
        h.update(b"\n");
    }
    if let Some(flags) = p.module_flags {
        let mut out = String::new();
        c.canonical_into(flags, &mut out, &mut |_, _| {});
        h.update(out.as_bytes());
    }
    h.update(extra);
    *h.finalize().as_bytes()
}

/// The context digest and all definition digests of a printed module,
/// parsing the text once.
pub fn digest_module(
    module_text: &str,
    extra: &[u8],
    inlining: Inlining,
    lines: Lines,
) -> Result<ModuleDigests> {
    let p = parse(module_text)?;
    let context = context_of(&p, extra);
    // A source with lines this high keeps them absolute: they would read
    // as relative ones.
    let lines = match lines {
        Lines::Relative
            if has_line_at_or_above(&p, crate::support::line_bases::RELATIVE_LINE_THRESHOLD) =>
        {
            Lines::Absolute
        }
        l => l,
    };
    compute_parsed(&p, &context, inlining, lines)
}

/// Linkage words that make a definition local.
fn is_local(line_after_eq: &str) -> bool {
    line_after_eq.starts_with("internal ") || line_after_eq.starts_with("private ")
}

/// How the digests hold source lines of debug info.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// As they are: a definition's digest changes when it moves.
    Absolute,
    /// Lines of a definition's own file relative to the definition's own
    /// line (`line: R<difference>`), other files' lines as they are; the
    /// functions a function may inline add how they lie relative to it (see
    /// `final_digests`). A definition keeps its digest when lines are
    /// added or removed above it; its fragment is compiled with the same
    /// relative lines (`rebase_relative_lines`) and placed when composed
    /// (`debug_lines`).
    Relative,
}

/// How much of a function's callees can reach its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inlining {
    /// -O1 and above: callee bodies can be inlined and their attributes
    /// inferred, so every use of a function is an edge.
    Optimizing,
    /// -O0: clang marks every function `noinline` and only the always-inliner
    /// runs, so only `alwaysinline` callees can change a caller's code.
    AlwaysInlineOnly,
}

/// Computes initial digests, the graph and final digests of a module given
/// as LLVM's printed text.
#[cfg(test)]
pub fn compute(module_text: &str, context: &[u8; 32], inlining: Inlining) -> Result<ModuleDigests> {
    compute_parsed(&parse(module_text)?, context, inlining, Lines::Absolute)
}

/// Appends to a definition's canonical text the debug subprograms of the
/// functions it refers to that are declared with one: its fragment declares
/// them with it (for the call-site information of calls to them), so their
/// lines, names and types are part of its bytes.
fn declared_callees<'a>(c: &mut Canonicalizer<'a>, uses: &[(String, Use)], out: &mut String) {
    let p = c.p;
    let mut seen: Vec<&str> = Vec::new();
    for (name, _) in uses {
        let Some((name, id)) = p.declared.get_key_value(name) else {
            continue;
        };
        if seen.contains(&name.as_str()) {
            continue;
        }
        seen.push(name);
        let text = c.md_text(id);
        out.push_str(&format!("\ndeclared @{name} {text}"));
    }
}

/// Appends to a definition's canonical text the declaration lines of the
/// symbols it refers to that the module only declares: how a referenced
/// symbol is declared (hidden or not, weak or not) is in the fragment's
/// symbol table, and units that share the definition may declare it
/// differently (fmt's `vformat_to`, exported by one unit's macros and not
/// another's).
fn declared_symbols<'a>(
    c: &mut Canonicalizer<'a>,
    decls: &HashMap<&str, &'a str>,
    uses: &[(String, Use)],
    out: &mut String,
) {
    let mut seen: Vec<&str> = Vec::new();
    for (name, _) in uses {
        let Some((name, line)) = decls.get_key_value(name.as_str()) else {
            continue;
        };
        if seen.contains(name) {
            continue;
        }
        seen.push(name);
        out.push_str("\ndeclares ");
        c.canonical_into(line, out, &mut |_, _| {});
    }
}

fn compute_parsed<'a>(
    p: &'a Parsed<'a>,
    context: &[u8; 32],
    inlining: Inlining,
    lines: Lines,
) -> Result<ModuleDigests> {
    let mut initial = InitialDigests::new(p, context, lines);
    let anchor = initial.c.unit_anchor.as_ref().map(|(_, a)| *a);
    for (name, text) in &p.variables {
        initial.add_variable(name, text);
    }
    for (name, text) in &p.functions {
        initial.add_function(name, text);
    }
    let InitialDigests {
        mut defs,
        uses_of,
        index,
        always_inline,
        ..
    } = initial;
    let graph = DependencyGraph::of(p, &defs, &uses_of, &index, inlining, &always_inline);
    let (mut edges, mut code_edges, references) = (graph.edges, graph.code_edges, graph.references);
    // What the module's lists say of a definition is in its fragment (see
    // `extract_definitions`): a keyed structor entry (the initializer, whose
    // code the key's fragment holds, and the priority), `llvm.used` (the
    // section's SHF_GNU_RETAIN).
    for (name, mark, function) in list_marks(p) {
        let Some(&k) = index.get(&name) else { continue };
        let marked = |digest: &[u8; 32]| {
            let mut h = blake3::Hasher::new();
            h.update(digest);
            h.update(mark.as_bytes());
            *h.finalize().as_bytes()
        };
        defs[k].initial = marked(&defs[k].initial);
        defs[k].reached_as = marked(&defs[k].reached_as);
        if let Some(&f) = function.as_ref().and_then(|f| index.get(f)) {
            edges.push((k, f));
            code_edges.push((k, f));
        }
    }
    edges.sort_unstable();
    edges.dedup();
    let finals = final_digests(&defs, &edges, &code_edges);
    for (d, f) in defs.iter_mut().zip(finals) {
        d.final_digest = f;
    }
    let recursion_code_keys = recursion_code_keys(p, &defs, &edges, &references);
    let inlined_lines = if lines == Lines::Relative {
        unit_function_lines(p)
            .into_iter()
            .map(|(key, line)| (unescape_printed(&key).into_owned(), line))
            .collect()
    } else {
        std::collections::HashMap::new()
    };
    // Names and paths as the module holds them (see `unescape_printed`).
    for d in &mut defs {
        if let std::borrow::Cow::Owned(name) = unescape_printed(&d.name) {
            d.name = name;
        }
    }
    Ok(ModuleDigests {
        defs,
        edges,
        relative_lines: lines == Lines::Relative,
        unit_source: (lines == Lines::Relative)
            .then(|| unit_file(p).and_then(file_path))
            .flatten()
            .map(|path| unescape_printed(&path).into_owned()),
        anchor,
        inlined_lines,
        references,
        recursion_code_keys,
    })
}

/// The functions of each recursion of several functions (a cycle of the
/// digests' edges and references, as `call_order` groups them), each with
/// a digest of its code without metadata ([`code_without_metadata`]). The
/// optimizer meets a recursion's members in an order of their own
/// (`call_order`), and their code depends on it; ordered by final
/// digests, which hold debug info, the same source gave other code with
/// `-g` than without (sqlite3.c: the sorter's functions that free one
/// another).
fn recursion_code_keys<'a>(
    p: &'a Parsed<'a>,
    defs: &[Definition],
    edges: &[(usize, usize)],
    references: &[(usize, usize)],
) -> HashMap<usize, [u8; 32]> {
    let n = defs.len();
    let members: HashMap<&str, usize> = sccs(n, &use_graph(n, edges, references))
        .into_iter()
        .map(|c| -> Vec<usize> {
            let functions = c.into_iter().filter(|&d| defs[d].kind == DefKind::Function);
            functions.collect()
        })
        .filter(|functions| functions.len() > 1)
        .flatten()
        .map(|d| (defs[d].name.as_str(), d))
        .collect();
    if members.is_empty() {
        return HashMap::default();
    }
    let mut c = Canonicalizer::new(p);
    c.without_metadata = true;
    p.functions
        .iter()
        .filter_map(|(name, text)| {
            let &d = members.get(name.as_str())?;
            Some((d, code_without_metadata(&mut c, text)))
        })
        .collect()
}

/// A digest of a function's code: its text as in its digest, types and
/// attribute groups by content (a type's name, `%struct.anon.3`, depends
/// on what else the unit holds), but without what `-g` adds or shifts:
/// debug records, `!dbg` attachments, metadata (left as `!`: the key
/// orders, it does not identify). The same with and without `-g`, and in
/// every unit that holds the same code. `c` leaves metadata out.
fn code_without_metadata<'a>(c: &mut Canonicalizer<'a>, text: &'a str) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    let mut out = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#dbg_") || trimmed.starts_with("call void @llvm.dbg.") {
            continue;
        }
        out.clear();
        c.canonical_into(line, &mut out, &mut |_, _| {});
        h.update(
            out.replace(", !dbg !", "")
                .replace(" !dbg !", "")
                .as_bytes(),
        );
        h.update(b"\n");
    }
    *h.finalize().as_bytes()
}

/// The definitions of one unit with their initial digests (each one's own
/// canonical text), what each uses, in the order the final digests are
/// computed in: variables, then functions.
struct InitialDigests<'a, 'c> {
    p: &'a Parsed<'a>,
    c: Canonicalizer<'a>,
    context: &'c [u8; 32],
    lines: Lines,
    /// Declarations by name (external variables included), for the
    /// `declares` lines of the definitions that use them.
    decls: HashMap<&'a str, &'a str>,
    unit_file: Option<&'a str>,
    memos: LineMemos<'a>,
    defs: Vec<Definition>,
    uses_of: Vec<Vec<(String, Use)>>,
    index: HashMap<String, usize>,
    always_inline: std::collections::HashSet<usize>,
}

impl<'a, 'c> InitialDigests<'a, 'c> {
    fn new(p: &'a Parsed<'a>, context: &'c [u8; 32], lines: Lines) -> Self {
        let mut c = Canonicalizer::new(p);
        if lines == Lines::Relative {
            c.unit_anchor = unit_anchor(p);
        }
        let mut decls: HashMap<&str, &'a str> = p
            .declarations
            .iter()
            .map(|(n, l)| (n.as_str(), *l))
            .collect();
        for (name, text) in &p.variables {
            if is_external_variable(text) {
                decls.insert(name.as_str(), text);
            }
        }
        InitialDigests {
            p,
            c,
            context,
            lines,
            decls,
            unit_file: unit_file(p),
            memos: LineMemos::default(),
            defs: Vec::new(),
            uses_of: Vec::new(),
            index: HashMap::default(),
            always_inline: Default::default(),
        }
    }

    /// Sets the definition being digested; its position, if it has one.
    fn locate(&mut self, header: &str) -> Option<Position> {
        if self.lines == Lines::Absolute {
            return None;
        }
        let p = self.p;
        let own = own_position(p, header, &mut self.memos);
        self.c.set_own(own);
        let own = own?;
        let file_key = self.c.md_text(own.file);
        Some(Position {
            file: own.file.to_string(),
            file_key,
            line: own.line,
            placed_in_inliners: own
                .owner
                .is_some_and(|sp| in_unit_source(p, sp, &mut self.memos.unit_source)),
        })
    }

    /// A definition of the unit's own file: its fragment's compile unit
    /// names the file as the unit's node does (see `defined_in_unit_file`).
    fn own_file_mark(&self, first_line: &str, out: &mut String) {
        if let Some(f) = (self.unit_file).filter(|f| defined_in_unit_file(self.p, first_line, f)) {
            out.push_str("\nin the unit's file ");
            out.push_str(f);
        }
    }

    fn digest_of(&self, kind: u8, text: &str) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(self.context);
        h.update(&[kind]);
        h.update(text.as_bytes());
        *h.finalize().as_bytes()
    }

    fn push(&mut self, name: &str, definition: Definition, uses: Vec<(String, Use)>) {
        self.index.insert(name.to_string(), self.defs.len());
        self.defs.push(definition);
        self.uses_of.push(uses);
    }

    /// A global variable (declarations are not definitions: see
    /// `declared_symbols`).
    fn add_variable(&mut self, name: &str, text: &'a str) {
        if is_external_variable(text) {
            return;
        }
        let after = text.split_once(" = ").map_or("", |(_, r)| r);
        let kind = if name.starts_with("llvm.") {
            DefKind::Glue
        } else {
            DefKind::Variable
        };
        let position = self.locate(text);
        let mut out = String::new();
        let mut uses: Vec<(String, Use)> = Vec::new();
        self.c.canonical_into(text, &mut out, &mut |g, at| {
            // Position 0 is the variable's own name.
            if at > 0 {
                uses.push((g.to_string(), Use::Other));
            }
        });
        declared_callees(&mut self.c, &uses, &mut out);
        // What both digests below end with.
        let mut symbols = String::new();
        declared_symbols(&mut self.c, &self.decls, &uses, &mut symbols);
        own_comdat(self.p, name, text, &mut symbols);
        out.push_str(&symbols);
        self.own_file_mark(text, &mut out);
        let initial = self.digest_of(1, &out);
        // Without a debug record (no `-g`) there is nothing to leave out:
        // the initial digest covers what the users' would, and more.
        let reached_as = if is_local(after) || !text.contains(", !dbg !") {
            initial
        } else {
            let mut reached = String::new();
            for piece in without_dbg_attachments(text) {
                self.c.canonical_into(piece, &mut reached, &mut |_, _| {});
            }
            reached.push_str(&symbols);
            self.digest_of(1, &reached)
        };
        // `global` or `constant` ends the list of leading keywords.
        let constant = after
            .split_whitespace()
            .find(|w| *w == "global" || *w == "constant")
            == Some("constant");
        let definition = Definition {
            name: name.to_string(),
            kind,
            local: is_local(after),
            constant,
            initial,
            reached_as,
            final_digest: FragmentDigest([0; 32]),
            position,
        };
        self.push(name, definition, uses);
    }

    fn add_function(&mut self, name: &str, text: &'a str) {
        let header = text.lines().next().unwrap_or("");
        let position = self.locate(header);
        let mut out = String::new();
        self.c.canonical_into(text, &mut out, &mut |_, _| {});
        let mut uses = Vec::new();
        for line in text.lines().skip(1) {
            classify_line(line, &mut uses);
        }
        // The header's references: personality, prefix/prologue data.
        let mut header_refs = Vec::new();
        classify_line(header, &mut header_refs);
        uses.extend(
            header_refs
                .into_iter()
                .filter(|(n, _)| n != name)
                .map(|(n, _)| (n, Use::Other)),
        );
        declared_callees(&mut self.c, &uses, &mut out);
        declared_symbols(&mut self.c, &self.decls, &uses, &mut out);
        own_comdat(self.p, name, header, &mut out);
        self.own_file_mark(header, &mut out);
        let after_define = header.strip_prefix("define ").unwrap_or(header);
        let canonical_header = out.lines().next().unwrap_or("");
        if canonical_header.contains("alwaysinline") {
            self.always_inline.insert(self.defs.len());
        }
        let initial = self.digest_of(2, &out);
        let definition = Definition {
            name: name.to_string(),
            kind: DefKind::Function,
            local: is_local(after_define),
            constant: true,
            initial,
            // Inlined, its debug records come along.
            reached_as: initial,
            final_digest: FragmentDigest([0; 32]),
            position,
        };
        self.push(name, definition, uses);
    }
}

/// What the module's lists (`llvm.used`, and the structor lists' entries
/// with a key) say of a definition: (its name, what they say, the
/// initializer a structor entry names).
fn list_marks(p: &Parsed) -> Vec<(String, String, Option<String>)> {
    let mut out = Vec::new();
    for (name, text) in &p.variables {
        let Some((_, init)) = text.split_once(" = appending ") else {
            continue;
        };
        match name.as_str() {
            "llvm.used" => {
                for (i, _) in init.match_indices("ptr @") {
                    if let Some((g, _)) = read_ident(&init[i + 5..]) {
                        out.push((g.to_string(), "\nin llvm.used".to_string(), None));
                    }
                }
            }
            "llvm.global_ctors" | "llvm.global_dtors" => {
                for (i, _) in init.match_indices("{ i32 ") {
                    let entry = &init[i + 6..];
                    let entry = &entry[..entry.find('}').unwrap_or(entry.len())];
                    let mut parts = entry.split(", ptr ");
                    let priority = parts.next().unwrap_or("");
                    let function = parts.next().and_then(|f| f.strip_prefix('@'));
                    let key = parts.next().and_then(|k| k.strip_prefix('@'));
                    let (Some(function), Some(key)) = (function, key) else {
                        continue;
                    };
                    let (Some((f, _)), Some((k, _))) = (read_ident(function), read_ident(key))
                    else {
                        continue;
                    };
                    out.push((
                        k.to_string(),
                        format!("\nin {name} with priority {priority}"),
                        Some(f.to_string()),
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether a global variable's line declares it (`external`,
/// `extern_weak`) rather than defines it.
fn is_external_variable(text: &str) -> bool {
    let after = text.split_once(" = ").map_or("", |(_, r)| r);
    after.starts_with("external ") || after.starts_with("extern_weak ")
}

/// The edges between a unit's definitions, by index.
struct DependencyGraph {
    /// What decides whose code: a definition's final digest covers what it
    /// reaches along these.
    edges: Vec<(usize, usize)>,
    /// Whose code (and so whose lines) can end up in a fragment.
    code_edges: Vec<(usize, usize)>,
    /// Every reference, an edge or not.
    references: Vec<(usize, usize)>,
}

impl DependencyGraph {
    fn of(
        p: &Parsed,
        defs: &[Definition],
        uses_of: &[Vec<(String, Use)>],
        index: &HashMap<String, usize>,
        inlining: Inlining,
        always_inline: &std::collections::HashSet<usize>,
    ) -> DependencyGraph {
        // Aliases resolve to their aliasee for the graph.
        let mut alias_target: HashMap<String, String> = HashMap::default();
        for (name, text) in &p.aliases {
            if let Some(t) = text
                .rsplit_once('@')
                .and_then(|(_, r)| read_ident(r).map(|(n, _)| n.to_string()))
            {
                alias_target.insert(name.clone(), t);
            }
        }
        let mut edges: Vec<(usize, usize)> = Vec::new();
        let mut code_edges: Vec<(usize, usize)> = Vec::new();
        let mut references: Vec<(usize, usize)> = Vec::new();
        for (u, uses) in uses_of.iter().enumerate() {
            for (g, how) in uses {
                let g = alias_target.get(g).unwrap_or(g);
                let Some(&v) = index.get(g) else { continue };
                if v == u {
                    continue;
                }
                references.push((u, v));
                let (user, target) = (&defs[u], &defs[v]);
                let (dep, back) = match target.kind {
                    DefKind::Function => {
                        let dep = *how == Use::Call
                            || user.kind == DefKind::Function
                            || (user.kind == DefKind::Variable && user.constant)
                            || user.kind == DefKind::Glue;
                        let dep =
                            dep && (inlining == Inlining::Optimizing || always_inline.contains(&v));
                        (dep, target.local)
                    }
                    DefKind::Variable | DefKind::Glue => {
                        if target.local {
                            (true, *how != Use::Load)
                        } else {
                            (target.constant, false)
                        }
                    }
                };
                if dep || back {
                    edges.push((u, v));
                }
                if back {
                    edges.push((v, u));
                }
                // Whose code (and so whose lines) can end up in a fragment:
                // what it depends on (inlined), and the static functions it
                // refers to (a static one function alone uses is carried in
                // that function's fragment, inlined or not) — not what
                // depends on it (a static's callers decide its code, but
                // their lines stay theirs). A constant table of functions
                // passes its functions on.
                if dep || (target.local && target.kind == DefKind::Function) {
                    code_edges.push((u, v));
                }
            }
        }
        edges.sort_unstable();
        edges.dedup();
        references.sort_unstable();
        references.dedup();
        DependencyGraph {
            edges,
            code_edges,
            references,
        }
    }
}

/// The line of every function (subprogram definition) of the unit's
/// source, by its key (`owner_key`), for placing the lines of fragments
/// that inline it; a key two of them share is left out.
fn unit_function_lines(p: &Parsed) -> HashMap<String, u64> {
    let mut memo = HashMap::default();
    let mut lines: HashMap<String, Option<u64>> = HashMap::default();
    for (&id, body) in &p.metadata {
        let kind = body.strip_prefix("distinct ").unwrap_or(body);
        if !kind.starts_with("!DISubprogram(") || !defines_a_subprogram(body) {
            continue;
        }
        let line = node_line(p, id);
        let Some(key) = owner_key(body) else { continue };
        if line == 0 || !in_unit_source(p, id, &mut memo) {
            continue;
        }
        lines
            .entry(key.to_string())
            .and_modify(|l| {
                if *l != Some(line) {
                    *l = None;
                }
            })
            .or_insert(Some(line));
    }
    lines
        .into_iter()
        .filter_map(|(k, l)| Some((k, l?)))
        .collect()
}

/// The successors of each of `n` definitions through `edges` and
/// `references` both: the graph whose cycles the optimizer meets as one
/// (`call_order`).
pub fn use_graph(
    n: usize,
    edges: &[(usize, usize)],
    references: &[(usize, usize)],
) -> Vec<Vec<usize>> {
    let mut succ = vec![Vec::new(); n];
    for &(u, v) in edges.iter().chain(references) {
        if u < n && v < n {
            succ[u].push(v);
        }
    }
    succ
}

/// Strongly connected components (iterative Tarjan), in reverse
/// topological order (a component comes after the ones it reaches).
pub fn sccs(n: usize, succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut out = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some(&mut (v, ref mut child)) = work.last_mut() {
            if *child == 0 {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = succ[v].get(*child) {
                *child += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                loop {
                    let w = stack.pop().expect("tarjan stack");
                    on_stack[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(comp);
            }
        }
    }
    out
}

/// The definitions one component of the graph reaches, itself included.
/// Most components of a unit reach a handful of definitions (a string
/// literal reaches only itself), so a set is a sorted list of indices, and
/// a bitset over all definitions only once that is smaller: a bitset per
/// component cost `components x definitions / 8` bytes, 460 MB for a test
/// file of 60,000 string literals.
#[derive(Debug)]
pub enum ReachSet {
    Sparse(Vec<u32>),
    Dense(Vec<u64>),
}

impl ReachSet {
    /// The members in ascending order.
    pub fn members(&self) -> Box<dyn Iterator<Item = usize> + '_> {
        match self {
            ReachSet::Sparse(v) => Box::new(v.iter().map(|&m| m as usize)),
            ReachSet::Dense(words) => Box::new(words.iter().enumerate().flat_map(|(w, &word)| {
                let mut bits = word;
                std::iter::from_fn(move || {
                    (bits != 0).then(|| {
                        let b = bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        w * 64 + b
                    })
                })
            })),
        }
    }
}

/// Reachability sets per strongly connected component, and each node's
/// component.
pub fn reach_sets(n: usize, edges: &[(usize, usize)]) -> (Vec<usize>, Vec<ReachSet>) {
    let mut succ = vec![Vec::new(); n];
    for &(u, v) in edges {
        succ[u].push(v);
    }
    let comps = sccs(n, &succ);
    let words = n.div_ceil(64);
    let mut comp_of = vec![0; n];
    for (ci, c) in comps.iter().enumerate() {
        for &v in c {
            comp_of[v] = ci;
        }
    }
    let mut reach: Vec<ReachSet> = Vec::with_capacity(comps.len());
    // Components come out in reverse topological order: successors first.
    for (ci, c) in comps.iter().enumerate() {
        let mut below: Vec<usize> = c
            .iter()
            .flat_map(|&v| succ[v].iter().map(|&w| comp_of[w]))
            .filter(|&cw| cw != ci)
            .collect();
        below.sort_unstable();
        below.dedup();
        let dense_below = below
            .iter()
            .any(|&cw| matches!(reach[cw], ReachSet::Dense(_)));
        let sparse_len: usize = c.len()
            + below
                .iter()
                .map(|&cw| match &reach[cw] {
                    ReachSet::Sparse(v) => v.len(),
                    ReachSet::Dense(_) => 0,
                })
                .sum::<usize>();
        // A list of u32 is smaller than the bitset below 2 entries a word.
        let set = if dense_below || sparse_len > 2 * words {
            let mut bits = vec![0u64; words];
            let add = |bits: &mut [u64], m: usize| bits[m / 64] |= 1 << (m % 64);
            c.iter().for_each(|&v| add(&mut bits, v));
            for &cw in &below {
                match &reach[cw] {
                    ReachSet::Sparse(v) => v.iter().for_each(|&m| add(&mut bits, m as usize)),
                    ReachSet::Dense(d) => {
                        for (b, r) in bits.iter_mut().zip(d) {
                            *b |= r;
                        }
                    }
                }
            }
            ReachSet::Dense(bits)
        } else {
            let mut list: Vec<u32> = Vec::with_capacity(sparse_len);
            list.extend(c.iter().map(|&v| v as u32));
            for &cw in &below {
                if let ReachSet::Sparse(v) = &reach[cw] {
                    list.extend_from_slice(v);
                }
            }
            list.sort_unstable();
            list.dedup();
            ReachSet::Sparse(list)
        };
        reach.push(set);
    }
    (comp_of, reach)
}

/// `code_edges`: the edges along which code can move into a fragment (the
/// dependencies, without the contributions back); with relative lines,
/// where the definitions those reach lie is part of the final digest.
fn final_digests(
    defs: &[Definition],
    edges: &[(usize, usize)],
    code_edges: &[(usize, usize)],
) -> Vec<FragmentDigest> {
    let n = defs.len();
    // The graph is walked with the definitions numbered in the order of
    // their initial digests, so that a reach set's members come out in
    // that order: what each component's hash covers is its members'
    // initial digests sorted, and sorting each set again cost the sum of
    // the sets' sizes times their logarithm (a chain of 20,000 functions:
    // 17 s).
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| defs[a].reached_as.cmp(&defs[b].reached_as));
    let mut rank = vec![0; n];
    for (r, &x) in order.iter().enumerate() {
        rank[x] = r;
    }
    let ranked = |edges: &[(usize, usize)]| -> Vec<(usize, usize)> {
        edges.iter().map(|&(u, v)| (rank[u], rank[v])).collect()
    };
    let (comp_of, reach) = reach_sets(n, &ranked(edges));
    // Per component: the sorted initial digests of everything it reaches,
    // hashed as one buffer (blake3 takes long inputs many chunks at once).
    let mut comp_hash: HashMap<usize, [u8; 32]> = HashMap::default();
    let mut members: Vec<u8> = Vec::new();
    let positioned = defs.iter().any(|d| d.position.is_some());
    let (code_comp_of, code_reach) = if positioned {
        reach_sets(n, &ranked(code_edges))
    } else {
        (Vec::new(), Vec::new())
    };
    let mut layouts: HashMap<usize, Vec<FileLayout>> = HashMap::default();
    let files = layout_files(defs);
    (0..n)
        .map(|x| {
            let ch = *comp_hash.entry(comp_of[rank[x]]).or_insert_with(|| {
                members.clear();
                for m in reach[comp_of[rank[x]]].members() {
                    members.extend_from_slice(&defs[order[m]].reached_as);
                }
                *blake3::hash(&members).as_bytes()
            });
            let mut h = blake3::Hasher::new();
            h.update(&defs[x].initial);
            h.update(&ch);
            if positioned {
                let c = code_comp_of[rank[x]];
                let layout = layouts
                    .entry(c)
                    .or_insert_with(|| layout_of(defs, &order, &files, &code_reach[c]));
                hash_layout(&mut h, layout, defs[x].position.as_ref());
            }
            FragmentDigest(*h.finalize().as_bytes())
        })
        .collect()
}

/// Where the definitions a component reaches lie, one file at a time.
struct FileLayout {
    file: String,
    file_key: String,
    first_line: u64,
    /// The members' initial digests with their lines relative to
    /// `first_line`, and with their lines as they are.
    relative: [u8; 32],
    absolute: [u8; 32],
}

/// The files the unit's positioned definitions lie in, numbered once, so
/// that a component's layout groups its members by a number instead of
/// hashing a file's name for each member of each component.
struct LayoutFiles<'a> {
    /// Per definition: its file's number, where its position counts.
    file_of: Vec<Option<usize>>,
    /// Per number: the file's node and its key.
    files: Vec<(&'a str, &'a str)>,
}

/// Only functions and the local variables a fragment carries count: a
/// variable another fragment reaches is a fragment of its own, and its
/// lines (its `DIGlobalVariable`) are in that fragment alone, placed when
/// composed; the fragments that use it declare it, and what the optimizer
/// takes of it (a constant's content) has no line. A string literal that
/// the unit's own code uses first lies in the unit's file, and a header's
/// template that uses the same literal would otherwise have another digest
/// in each unit.
fn layout_files(defs: &[Definition]) -> LayoutFiles<'_> {
    let mut numbers: HashMap<&str, usize> = HashMap::default();
    let mut files = Vec::new();
    let file_of = (defs.iter())
        .map(|d| {
            if d.kind != DefKind::Function && !d.local {
                return None;
            }
            let p = d.position.as_ref().filter(|p| !p.placed_in_inliners)?;
            Some(*numbers.entry(&p.file).or_insert_with(|| {
                files.push((p.file.as_str(), p.file_key.as_str()));
                files.len() - 1
            }))
        })
        .collect();
    LayoutFiles { file_of, files }
}

/// `order`: the definition at each position `reach` counts.
fn layout_of(
    defs: &[Definition],
    order: &[usize],
    files: &LayoutFiles,
    reach: &ReachSet,
) -> Vec<FileLayout> {
    let mut by_file: HashMap<usize, Vec<(&[u8; 32], u64)>> = HashMap::default();
    for x in reach.members().map(|m| order[m]) {
        if let (Some(f), Some(p)) = (files.file_of[x], defs[x].position.as_ref()) {
            by_file
                .entry(f)
                .or_default()
                .push((&defs[x].initial, p.line));
        }
    }
    let mut bytes: Vec<u8> = Vec::new();
    let mut out: Vec<FileLayout> = by_file
        .into_iter()
        .map(|(f, mut members)| {
            // Mostly in order already: `order` follows what they are
            // reached as, their initial digests (see `layout_files`).
            members.sort_unstable();
            let first_line = members.iter().map(|m| m.1).min().unwrap_or(0);
            let mut hash_with = |line_of: &dyn Fn(u64) -> u64| {
                bytes.clear();
                for &(initial, line) in &members {
                    bytes.extend_from_slice(initial);
                    bytes.extend_from_slice(&line_of(line).to_le_bytes());
                }
                *blake3::hash(&bytes).as_bytes()
            };
            let relative = hash_with(&|line| line - first_line);
            let absolute = hash_with(&|line| line);
            let (file, file_key) = files.files[f];
            FileLayout {
                file: file.to_string(),
                file_key: file_key.to_string(),
                first_line,
                relative,
                absolute,
            }
        })
        .collect();
    out.sort_unstable_by(|a, b| a.file_key.cmp(&b.file_key).then(a.file.cmp(&b.file)));
    out
}

/// With relative lines, what a definition's fragment holds of the
/// definitions whose code can end up in it (it depends on them, directly
/// or not, and may inline them): in its own file, how they lie relative to
/// each other and to it (lines added above all of them change nothing); in
/// other files, their lines as they are.
fn hash_layout(h: &mut blake3::Hasher, layout: &[FileLayout], own: Option<&Position>) {
    for f in layout {
        match own {
            Some(p) if p.file == f.file => {
                h.update(b"relative");
                h.update(&f.relative);
                h.update(&(p.line as i64 - f.first_line as i64).to_le_bytes());
            }
            _ => {
                h.update(b"absolute");
                h.update(f.file_key.as_bytes());
                h.update(&f.absolute);
            }
        }
    }
}

/// For the measurement of precision: how many final digests an edit to
/// each definition changes (the number of definitions that reach it).
pub fn edit_impact(d: &ModuleDigests) -> Vec<usize> {
    let n = d.defs.len();
    let (comp_of, reach) = reach_sets(n, &d.edges);
    let mut impact = vec![0usize; n];
    for x in 0..n {
        for m in reach[comp_of[x]].members() {
            impact[m] += 1;
        }
    }
    impact
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names and strings read back as the module holds them: LLVM prints
    /// every byte of a UTF-8 `À` as `\XX`, and `\\` as `\5C`.
    #[test]
    fn printed_names_read_back_as_the_module_holds_them() {
        assert_eq!(unescape_printed("_Z2\\C3\\80v"), "_Z2\u{c0}v");
        assert_eq!(
            unescape_printed("/tmp/jos\\C3\\A9/a.c"),
            "/tmp/jos\u{e9}/a.c"
        );
        assert_eq!(unescape_printed("a\\5Cb\\22c"), "a\\b\"c");
        assert!(matches!(
            unescape_printed("plain"),
            std::borrow::Cow::Borrowed("plain")
        ));
        // Not an escape: kept as it is.
        assert_eq!(unescape_printed("odd\\zz"), "odd\\zz");
    }

    /// A field is read outside strings only, after `(` or a space, and a
    /// longer field ending in its name (`scopeLine` for `line`) is not it.
    #[test]
    fn fields_are_read_outside_strings() {
        let body = r#"!DISubprogram(name: "f line: 9, (line: 8", scopeLine: 4, line: 7, file: !3)"#;
        assert_eq!(md_field(body, "line"), Some("7"));
        assert_eq!(md_field(body, "scopeLine"), Some("4"));
        assert_eq!(md_field(body, "name"), Some("\"f line: 9"));
        assert_eq!(md_field(body, "file"), Some("!3"));
        assert_eq!(md_field(body, "type"), None);
        assert_eq!(md_field("!DILocation(line: 3)", "line"), Some("3"));
        let file = r#"!DIFile(filename: "a.c", directory: "/d filename: \22x")"#;
        assert_eq!(md_string_field(file, "filename"), Some("a.c"));
        assert_eq!(
            md_string_field(file, "directory"),
            Some("/d filename: \\22x")
        );
        assert_eq!(md_string_field(file, "source"), None);
        // ` name: "` anywhere comes before `(name: "`, as it always did.
        let odd = r#"!DIFile(filename: "a.c", directory: "b filename: "c")"#;
        assert_eq!(md_string_field(odd, "filename"), Some("c"));
    }

    /// A module parsed from IR text in `context`.
    fn module_of<'c>(
        context: &'c inkwell::context::Context,
        text: &str,
    ) -> inkwell::module::Module<'c> {
        context
            .create_module_from_ir(
                inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(
                    text.as_bytes(),
                    "t",
                ),
            )
            .unwrap()
    }

    fn ir_of(c_source: &str, extra: &[&str]) -> String {
        let args: Vec<&str> = ["-O2", "-Xclang", "-disable-llvm-passes"]
            .iter()
            .chain(extra)
            .copied()
            .collect();
        clang_ir(c_source, &args)
    }

    /// clang-19's IR (text) of `source` compiled with `args`.
    fn clang_ir(source: &str, args: &[&str]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("t.c");
        std::fs::write(&src, source).unwrap();
        let out = std::process::Command::new("clang-19")
            .args(["-S", "-emit-llvm", "-o", "-"])
            .args(args)
            // The same paths in every test's debug info.
            .arg(format!("-ffile-prefix-map={}=/src", dir.path().display()))
            .arg(&src)
            .output()
            .expect("clang-19");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn digests(c_source: &str) -> ModuleDigests {
        compute(&ir_of(c_source, &[]), &[0; 32], Inlining::Optimizing).unwrap()
    }

    fn fin(d: &ModuleDigests, name: &str) -> FragmentDigest {
        d.defs[d.position(name).unwrap()].final_digest
    }

    const BASE: &str = r#"
        static int counter;
        static const int table[4] = {1, 2, 3, 4};
        const int shared_table[2] = {5, 6};
        int global_value = 3;
        struct pair { int a; long b; };
        static int leaf(int x) { return x * 2; }
        int api(int x) { return leaf(x) + table[x & 3]; }
        int bump(void) { return ++counter; }
        int reads_shared(int i) { return shared_table[i]; }
        int uses_global(void) { return global_value; }
        long sum_pair(struct pair *p) { return p->a + p->b; }
        int unrelated(int y) { return y - 1; }
    "#;

    /// The nodes of a graph of `n` reachable from `start`, in order: what
    /// the digests' reach sets must hold, found the plain way.
    fn walk_from(n: usize, edges: &[(usize, usize)], start: usize) -> Vec<usize> {
        let mut seen = vec![false; n];
        let mut work = vec![start];
        seen[start] = true;
        while let Some(v) = work.pop() {
            for &(_, w) in edges.iter().filter(|e| e.0 == v) {
                if !std::mem::replace(&mut seen[w], true) {
                    work.push(w);
                }
            }
        }
        (0..n).filter(|&v| seen[v]).collect()
    }

    /// Reach sets, sparse or dense, hold what a walk of the graph from each
    /// node finds: a long chain (its upper nodes reach enough to be
    /// bitsets), cycles, and many leaves (lists).
    #[test]
    fn reach_sets_hold_what_a_walk_finds() {
        let n = 400;
        let mut edges: Vec<(usize, usize)> = (0..150).map(|i| (i, i + 1)).collect();
        edges.extend([(20, 10), (300, 301), (301, 300), (302, 300), (5, 302)]);
        edges.extend((303..399).map(|i| (i, (i * 7) % 400)));
        let (comp_of, reach) = reach_sets(n, &edges);
        let kinds = |dense: bool| {
            (reach.iter())
                .filter(|r| matches!(r, ReachSet::Dense(_)) == dense)
                .count()
        };
        assert!(kinds(true) > 0 && kinds(false) > 0, "both forms: {reach:?}");
        for start in 0..n {
            let walked = walk_from(n, &edges, start);
            let got: Vec<usize> = reach[comp_of[start]].members().collect();
            assert_eq!(got, walked, "from {start}");
        }
    }

    /// Final digests are the hash of each definition's initial digest and
    /// of the sorted initial digests of all it reaches (written out here
    /// the plain way), with positions in files as well: a definition's
    /// number in the unit, and how the graph is walked, change nothing.
    #[test]
    fn final_digests_hash_the_sorted_initials_of_the_reach() {
        let n = 300;
        let defs: Vec<Definition> = (0..n)
            .map(|i| Definition {
                name: format!("d{i}"),
                kind: DefKind::Function,
                local: false,
                constant: false,
                // Some equal initial digests, in no order.
                initial: *blake3::hash(&((i * 7919) % 280usize).to_le_bytes()).as_bytes(),
                reached_as: *blake3::hash(&((i * 7919) % 280usize).to_le_bytes()).as_bytes(),
                final_digest: FragmentDigest([0; 32]),
                position: (i % 3 == 0).then(|| Position {
                    file: format!("!{}", i % 2),
                    file_key: format!("key{}", i % 2),
                    line: (i * 13 % 97) as u64,
                    placed_in_inliners: i % 9 == 0,
                }),
            })
            .collect();
        let mut edges: Vec<(usize, usize)> = (0..120).map(|i| (i, i + 1)).collect();
        edges.extend([(40, 30), (200, 201), (201, 200), (5, 200)]);
        edges.extend((150..299).map(|i| (i, (i * 31) % n)));
        let code_edges: Vec<(usize, usize)> =
            edges.iter().copied().filter(|e| e.0 % 4 != 0).collect();
        let walk = |edges: &[(usize, usize)], start: usize| walk_from(n, edges, start);
        let got = final_digests(&defs, &edges, &code_edges);
        use std::collections::BTreeMap;
        type Member<'a> = (&'a [u8; 32], u64);
        for x in 0..n {
            let mut initials: Vec<&[u8; 32]> = walk(&edges, x)
                .into_iter()
                .map(|m| &defs[m].reached_as)
                .collect();
            initials.sort_unstable();
            let mut set = blake3::Hasher::new();
            for m in initials {
                set.update(m);
            }
            let mut h = blake3::Hasher::new();
            h.update(&defs[x].initial);
            h.update(set.finalize().as_bytes());
            // By file key, then file node: the order layouts are hashed in.
            let mut by_file: BTreeMap<(&str, &str), Vec<Member>> = BTreeMap::new();
            for d in walk(&code_edges, x).into_iter().map(|m| &defs[m]) {
                if let Some(p) = d.position.as_ref().filter(|p| !p.placed_in_inliners) {
                    (by_file.entry((&p.file_key, &p.file)).or_default()).push((&d.initial, p.line));
                }
            }
            let layout: Vec<FileLayout> = (by_file.into_iter())
                .map(|((file_key, file), mut members)| {
                    members.sort_unstable();
                    let first_line = members.iter().map(|m| m.1).min().unwrap();
                    let (mut relative, mut absolute) =
                        (blake3::Hasher::new(), blake3::Hasher::new());
                    for (initial, line) in members {
                        relative.update(initial);
                        relative.update(&(line - first_line).to_le_bytes());
                        absolute.update(initial);
                        absolute.update(&line.to_le_bytes());
                    }
                    FileLayout {
                        file: file.to_string(),
                        file_key: file_key.to_string(),
                        first_line,
                        relative: *relative.finalize().as_bytes(),
                        absolute: *absolute.finalize().as_bytes(),
                    }
                })
                .collect();
            hash_layout(&mut h, &layout, defs[x].position.as_ref());
            assert_eq!(
                got[x],
                FragmentDigest(*h.finalize().as_bytes()),
                "definition {x}"
            );
        }
    }

    #[test]
    fn a_keyed_initializer_is_in_its_variables_digest() {
        // A C++ inline variable's dynamic initializer is a constructor
        // entry keyed by the variable: its fragment holds the initializer.
        let digests_of = |init: &str| {
            let source =
                format!("int f(int);\ninline int v = f({init});\nint g() {{ return v; }}\n");
            let args = [
                "-x",
                "c++",
                "-std=c++17",
                "-O2",
                "-Xclang",
                "-disable-llvm-passes",
            ];
            compute(&clang_ir(&source, &args), &[0; 32], Inlining::Optimizing).unwrap()
        };
        let (a, b) = (digests_of("1"), digests_of("2"));
        assert_eq!(fin(&a, "v"), fin(&digests_of("1"), "v"));
        assert_ne!(fin(&a, "v"), fin(&b, "v"), "the initializer changed");
        assert!(list_marks(
            &parse(&clang_ir(
                "int f(int);\ninline int v = f(1);\n",
                &["-x", "c++", "-std=c++17"]
            ))
            .unwrap()
        )
        .iter()
        .any(|(name, mark, init)| name == "v" && mark.contains("global_ctors") && init.is_some()));
    }

    #[test]
    fn same_source_same_digests() {
        let a = digests(BASE);
        let b = digests(BASE);
        for d in &a.defs {
            assert_eq!(d.final_digest, fin(&b, &d.name), "{}", d.name);
        }
    }

    #[test]
    fn module_position_and_unrelated_edits_do_not_matter() {
        let a = digests(BASE);
        let moved = BASE.replace("int unrelated(int y) { return y - 1; }", "")
            + "int unrelated(int y) { return y - 1; }\nint added_later(void) { return 9; }\n";
        let b = digests(&moved);
        for name in [
            "api",
            "leaf",
            "bump",
            "unrelated",
            "reads_shared",
            "uses_global",
            "sum_pair",
        ] {
            assert_eq!(fin(&a, name), fin(&b, name), "{name} changed");
        }
    }

    #[test]
    fn body_edit_changes_the_function_and_its_dependents_only() {
        let a = digests(BASE);
        let b = digests(&BASE.replace("return x * 2;", "return x * 3;"));
        assert_ne!(fin(&a, "leaf"), fin(&b, "leaf"));
        assert_ne!(fin(&a, "api"), fin(&b, "api"), "the caller inlines leaf");
        // `table` changes too: api takes its address (an indexed load), and
        // a local variable's users contribute to it (GlobalOpt may rewrite
        // it from them).
        for name in [
            "bump",
            "unrelated",
            "reads_shared",
            "sum_pair",
            "shared_table",
        ] {
            assert_eq!(fin(&a, name), fin(&b, name), "{name} changed");
        }
    }

    #[test]
    fn each_field_differs() {
        let a = digests(BASE);
        let cases: &[(&str, &str, &str)] = &[
            ("int unrelated(int y)", "long unrelated(int y)", "unrelated"),
            ("return y - 1;", "return y + 1;", "unrelated"),
            (
                "int global_value = 3;",
                "int global_value = 4;",
                "global_value",
            ),
            (
                "int global_value = 3;",
                "__thread int global_value = 3;",
                "global_value",
            ),
            (
                "int global_value = 3;",
                "int global_value __attribute__((aligned(16))) = 3;",
                "global_value",
            ),
            (
                "int global_value = 3;",
                "int global_value __attribute__((section(\"s\"))) = 3;",
                "global_value",
            ),
            (
                "int global_value = 3;",
                "__attribute__((visibility(\"hidden\"))) int global_value = 3;",
                "global_value",
            ),
            (
                "int unrelated(int y)",
                "__attribute__((noinline)) int unrelated(int y)",
                "unrelated",
            ),
            (
                "int unrelated(int y)",
                "__attribute__((cold)) int unrelated(int y)",
                "unrelated",
            ),
            (
                "int unrelated(int y)",
                "static int unrelated(int y)",
                "unrelated",
            ),
            (
                "struct pair { int a; long b; };",
                "struct pair { long a; long b; };",
                "sum_pair",
            ),
        ];
        for (from, to, name) in cases {
            let src = BASE.replace(from, to);
            let src = if to.starts_with("static int unrelated") {
                src + "int keep(int y) { return unrelated(y); }\n"
            } else {
                src
            };
            let b = digests(&src);
            assert_ne!(
                fin(&a, name),
                fin(&b, name),
                "{from} -> {to} left {name} unchanged"
            );
        }
    }

    #[test]
    fn how_a_referenced_symbol_is_declared_is_in_its_users_digest() {
        let module = |decl: &str| {
            format!(
                "{decl}\n@v = external hidden global i32\n\
                 define void @f() {{\n  call void @g()\n  ret void\n}}\n\
                 define i32 @h() {{\n  %x = load i32, ptr @v\n  ret i32 %x\n}}\n\
                 define void @other() {{\n  ret void\n}}\n"
            )
        };
        let digests = |text: &str| compute(text, &[0; 32], Inlining::AlwaysInlineOnly).unwrap();
        let (a, b) = (
            digests(&module("declare hidden void @g()")),
            digests(&module("declare void @g()")),
        );
        assert_ne!(fin(&a, "f"), fin(&b, "f"));
        assert_eq!(fin(&a, "other"), fin(&b, "other"));
        let c = digests(&module("declare hidden void @g()").replace("external hidden", "external"));
        assert_ne!(fin(&a, "h"), fin(&c, "h"));
        assert_eq!(fin(&a, "f"), fin(&c, "f"));
    }

    #[test]
    fn other_comdat_groups_do_not_matter_own_group_does() {
        // f and the member of group $grp, in a unit with and without
        // other inline functions (g): their digests and the context must
        // not change, or no two C++ units would share an instance.
        let module = |others: bool, kind: &str| {
            let mut t = format!("$f = comdat {kind}\n$grp = comdat any\n");
            if others {
                t.push_str("$g = comdat any\n");
            }
            t.push_str("define linkonce_odr i32 @f() comdat {\n  ret i32 1\n}\n");
            t.push_str("define linkonce_odr i32 @m() comdat($grp) {\n  ret i32 3\n}\n");
            if others {
                t.push_str("define linkonce_odr i32 @g() comdat {\n  ret i32 2\n}\n");
            }
            t
        };
        let finals = |text: &str| {
            let d = compute(text, &[0; 32], Inlining::Optimizing).unwrap();
            (fin(&d, "f"), fin(&d, "m"))
        };
        let alone = module(false, "any");
        let with_others = module(true, "any");
        assert_eq!(finals(&alone), finals(&with_others));
        assert_eq!(
            context_digest(&alone, b"").unwrap(),
            context_digest(&with_others, b"").unwrap()
        );
        // The selection kind of its own group is part of a definition.
        let largest = module(false, "largest");
        assert_ne!(finals(&alone).0, finals(&largest).0);
        assert_eq!(finals(&alone).1, finals(&largest).1);
        let m_group = alone.replace("$grp = comdat any", "$grp = comdat largest");
        assert_ne!(finals(&alone).1, finals(&m_group).1);
    }

    #[test]
    fn context_differs_with_target_and_options() {
        let ir = ir_of(BASE, &[]);
        let a = context_digest(&ir, b"x86-64 +sse2 O2").unwrap();
        assert_ne!(a, context_digest(&ir, b"x86-64 +avx2 O2").unwrap());
        let pic = ir_of(BASE, &["-fno-pic"]);
        assert_ne!(a, context_digest(&pic, b"x86-64 +sse2 O2").unwrap());
        assert_eq!(a, context_digest(&ir, b"x86-64 +sse2 O2").unwrap());
    }

    #[test]
    fn at_o0_only_always_inline_callees_are_edges() {
        let src = r#"
            int plain(int x) { return x + 1; }
            static inline __attribute__((always_inline)) int forced(int x) { return x * 2; }
            int caller(int x) { return plain(x) + forced(x); }
        "#;
        let ir = ir_of(src, &["-O0", "-Xclang", "-disable-O0-optnone"]);
        let d = compute(&ir, &[0; 32], Inlining::AlwaysInlineOnly).unwrap();
        let at = |n: &str| d.position(n).unwrap();
        assert!(!d.edges.contains(&(at("caller"), at("plain"))));
        assert!(d.edges.contains(&(at("caller"), at("forced"))));
        let edited = ir_of(
            &src.replace("x + 1", "x + 2"),
            &["-O0", "-Xclang", "-disable-O0-optnone"],
        );
        let e = compute(&edited, &[0; 32], Inlining::AlwaysInlineOnly).unwrap();
        assert_eq!(
            fin(&d, "caller"),
            fin(&e, "caller"),
            "-O0 callers keep their code"
        );
        assert_ne!(fin(&d, "plain"), fin(&e, "plain"));
    }

    #[test]
    fn a_recursion_is_ordered_alike_with_and_without_debug_info() {
        // f and g free each other's lists (a recursion); h is alone.
        let src = r#"
            struct node { struct { struct node *next; int kind; } head; };
            void g(struct node *n);
            void f(struct node *n) {
                if (n) {
                    if (n->head.kind)
                        g(n->head.next);
                    __builtin_free(n);
                }
            }
            void g(struct node *n) {
                while (n) {
                    struct node *m = n->head.next;
                    f(m);
                    n = m;
                }
            }
            int h(int x) { return x + 1; }
        "#;
        let plain = digests(src);
        let keys = |d: &ModuleDigests| {
            let mut k: Vec<(String, [u8; 32])> = (d.recursion_code_keys.iter())
                .map(|(&i, k)| (d.defs[i].name.clone(), *k))
                .collect();
            k.sort();
            k
        };
        let names: Vec<String> = keys(&plain).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["f", "g"]);
        assert_ne!(keys(&plain)[0].1, keys(&plain)[1].1);
        // Another unit's anonymous struct before it: the recursion's type
        // is `%struct.anon.0` there, `%struct.anon` here.
        let before = "int other(void) { struct { int z; } u = {1}; return u.z; }\n";
        let other = digests(&format!("{before}{src}"));
        assert!(ir_of(&format!("{before}{src}"), &[]).contains("%struct.anon.0 = type { ptr"));
        assert_eq!(keys(&plain), keys(&other));
        for lines in [Lines::Relative, Lines::Absolute] {
            let debug = with_lines(src, lines);
            assert_ne!(
                fin(&plain, "f"),
                fin(&debug, "f"),
                "debug info is in digests"
            );
            assert_eq!(keys(&plain), keys(&debug), "{lines:?}");
            assert_eq!(
                crate::ir::call_order::optimizer_order(&plain),
                crate::ir::call_order::optimizer_order(&debug),
                "{lines:?}"
            );
        }
    }

    /// Digests of `c_source` compiled with `-g`, the files' checksums left
    /// out as the pipeline leaves them out.
    fn with_lines(c_source: &str, lines: Lines) -> ModuleDigests {
        digest_module(&with_lines_ir(c_source), &[], Inlining::Optimizing, lines).unwrap()
    }

    /// The IR of a C source with debug info, without file checksums.
    fn with_lines_ir(c_source: &str) -> String {
        let ir = ir_without_checksums(c_source, &["-g"]);
        assert!(!ir.contains("checksum"), "{ir}");
        ir
    }

    /// The IR of `source` with `flags`, its files without checksums (as
    /// the pipeline strips them).
    fn ir_without_checksums(source: &str, flags: &[&str]) -> String {
        ir_of(source, flags)
            .lines()
            .map(|l| match l.find(", checksumkind: ") {
                Some(at) => format!("{}){}\n", &l[..at], &l[l.rfind(')').unwrap() + 1..]),
                None => format!("{l}\n"),
            })
            .collect()
    }

    const DEBUG_UNIT: &str = "static int counter;\n\
        int unrelated(int y) { return y - 1; }\n\
        struct pair { int a; long b; };\n\
        static int leaf(int x) {\n  return x * 2 + counter;\n}\n\
        int api(int x) {\n  struct pair p = { leaf(x), 2 };\n  return p.a + (int)p.b;\n}\n\
        int where(void) { return __LINE__; }\n";

    #[test]
    fn relative_lines_keep_digests_when_lines_are_added_above() {
        let shifted = format!("/* three\n lines\n above */\n{DEBUG_UNIT}");
        let (a, b) = (
            with_lines(DEBUG_UNIT, Lines::Relative),
            with_lines(&shifted, Lines::Relative),
        );
        assert!(a.relative_lines);
        assert!(a.defs.iter().any(|d| d.position.is_some()));
        assert!(a.anchor.is_some() && b.anchor == a.anchor.map(|l| l + 3));
        for d in &a.defs {
            let same = d.final_digest == fin(&b, &d.name);
            // `where` returns its line: its code changed.
            assert_eq!(same, d.name != "where", "{}", d.name);
        }
        // With absolute lines every function moved.
        let (a, b) = (
            with_lines(DEBUG_UNIT, Lines::Absolute),
            with_lines(&shifted, Lines::Absolute),
        );
        assert!(!a.relative_lines);
        assert_ne!(fin(&a, "api"), fin(&b, "api"));
    }

    #[test]
    fn relative_lines_change_what_moved_against_what_it_reaches() {
        let a = with_lines(DEBUG_UNIT, Lines::Relative);
        // Lines between `leaf` and `api`: `api` may carry the static
        // `counter` (which `leaf` reads), at lines relative to its own.
        let b = with_lines(
            &DEBUG_UNIT.replace("int api(int x)", "\n\nint api(int x)"),
            Lines::Relative,
        );
        assert_ne!(fin(&a, "api"), fin(&b, "api"));
        assert_eq!(fin(&a, "unrelated"), fin(&b, "unrelated"));
        // Lines between a static function and its caller change neither:
        // the caller holds the static's code (inlined) at lines relative
        // to the static's own line, placed where it is when composed.
        let unit = "static int helper(int x) {\n  return x + 1;\n}\n\
                    int user(int y) {\n  return helper(y) * 2;\n}\n";
        let d = with_lines(unit, Lines::Relative);
        let e = with_lines(&unit.replace("int user(", "\n\nint user("), Lines::Relative);
        assert_eq!(fin(&d, "helper"), fin(&e, "helper"));
        assert_eq!(fin(&d, "user"), fin(&e, "user"));
        assert_eq!(d.inlined_lines.get("helper"), Some(&1));
        assert_eq!(e.inlined_lines.get("user"), Some(&6));
        // A line added inside the static changes both: its lines moved
        // against its own.
        let f = with_lines(
            &unit.replace("  return x + 1;", "\n  return x + 1;"),
            Lines::Relative,
        );
        assert_ne!(fin(&d, "helper"), fin(&f, "helper"));
        assert_ne!(fin(&d, "user"), fin(&f, "user"));
        // Types of the file are placed relative to the unit's anchor, not
        // to each function: a line added in one function moves no type
        // another one refers to. One added inside a struct moves only what
        // fragments hold as a stub, without lines (the glue holds it).
        let types = "struct pt {\n  int x;\n  int y;\n};\n\
                     int first(struct pt *p) {\n  return p->x;\n}\n\
                     int second(struct pt *p) {\n  return p->y;\n}\n";
        let t = with_lines(types, Lines::Relative);
        let u = with_lines(
            &types.replace("  return p->x;", "  int z = p->x;\n  return z;"),
            Lines::Relative,
        );
        assert_ne!(fin(&t, "first"), fin(&u, "first"));
        assert_eq!(fin(&t, "second"), fin(&u, "second"));
        let v = with_lines(&types.replace("  int y;", "\n  int y;"), Lines::Relative);
        assert_eq!(fin(&t, "second"), fin(&v, "second"));
    }

    #[test]
    fn the_units_file_and_directory_are_left_out() {
        // A function from a header, in units of other names or compiled in
        // another directory: the same digest; the unit's own function
        // differs (it is in the unit's file).
        let ir = with_lines_ir(
            "# 1 \"/src/h.h\"\nint from_header(int x) { return x * 3; }\n\
             # 3 \"/src/t.c\"\nint own(int y) { return from_header(y) + 1; }\n",
        );
        let cu = ir
            .lines()
            .find(|l| l.contains("!DICompileUnit("))
            .expect("a compile unit");
        let file = md_field(cu, "file").unwrap();
        let unit_file = ir
            .lines()
            .find(|l| l.starts_with(&format!("{file} = ")))
            .expect("the unit's file")
            .to_string();
        let unit = |file_line: String| {
            let text = ir.replace(&unit_file, &file_line);
            digest_module(&text, &[], Inlining::Optimizing, Lines::Relative).unwrap()
        };
        let a = unit(unit_file.clone());
        let b = unit(unit_file.replace("/src/t.c", "/src/b.c"));
        assert_eq!(fin(&a, "from_header"), fin(&b, "from_header"));
        assert_ne!(fin(&a, "own"), fin(&b, "own"));
        let elsewhere = unit(unit_file.replace("directory: \"", "directory: \"/elsewhere"));
        assert_eq!(fin(&a, "from_header"), fin(&elsewhere, "from_header"));
        assert_ne!(fin(&a, "own"), fin(&elsewhere, "own"));
    }

    #[test]
    fn where_a_string_literal_lies_is_not_in_its_users_digests() {
        // A header's function using a literal the unit's own code used
        // first: clang gives the literal the first use's line and file, in
        // the unit's file, and the literal's fragment holds that line; the
        // header function's fragment declares it. As the pipeline holds
        // them, the literals are named by content and not local.
        let header = "# 1 \"/src/h.h\"\nconst char *name(int i) { return i ? \"abc\" : \"\"; }\n";
        let alone = format!("{header}# 3 \"/src/t.c\"\nint main(void) {{ return 0; }}\n");
        let after = format!(
            "# 1 \"/src/t.c\"\nconst char *first(void) {{ return \"abc\"; }}\n{header}\
             # 3 \"/src/t.c\"\nint main(void) {{ return 0; }}\n"
        );
        let unit = |source: &str| {
            let ir = with_lines_ir(source).replace(
                " = private unnamed_addr constant",
                " = hidden unnamed_addr constant",
            );
            assert!(ir.contains("!DIGlobalVariable(scope: null, file:"), "{ir}");
            digest_module(&ir, &[], Inlining::Optimizing, Lines::Relative).unwrap()
        };
        let (a, b) = (unit(&alone), unit(&after));
        assert_eq!(fin(&a, "name"), fin(&b, "name"));
        // The literal itself lies elsewhere: its own digest differs.
        let literal = |d: &ModuleDigests| {
            (d.defs.iter())
                .find(|x| x.kind == DefKind::Variable && x.position.is_some() && !x.local)
                .map(|x| (x.name.clone(), x.final_digest))
                .expect("the literal, positioned")
        };
        assert_eq!(literal(&a).0, literal(&b).0);
        assert_ne!(literal(&a).1, literal(&b).1);
    }

    #[test]
    fn a_definition_of_the_units_own_file_says_so() {
        // The same function, in the unit whose file it is and in a unit
        // that includes that file (cJSON's tests include cJSON.c): their
        // fragments' compile units differ (named, or not), and so must
        // their digests.
        let own = with_lines_ir("int f(int x) { return x * 3; }\n");
        let cu = own
            .lines()
            .find(|l| l.contains("!DICompileUnit("))
            .expect("a compile unit")
            .to_string();
        let file = md_field(&cu, "file").unwrap().to_string();
        let file_line = own
            .lines()
            .find(|l| l.starts_with(&format!("{file} = ")))
            .expect("the unit's file");
        let other = file_line
            .replace(&format!("{file} = "), "!999 = ")
            .replace("/src/t.c", "/src/other.c");
        let included =
            own.replace(&cu, &cu.replace(&format!("file: {file}"), "file: !999")) + &other + "\n";
        for lines in [Lines::Absolute, Lines::Relative] {
            let digest = |text: &str| {
                let d = digest_module(text, &[], Inlining::Optimizing, lines).unwrap();
                fin(&d, "f")
            };
            assert_ne!(digest(&own), digest(&included), "{lines:?}");
        }
    }

    #[test]
    fn unit_wide_lists_are_left_out() {
        let cu = "distinct !DICompileUnit(language: DW_LANG_C11, file: !3, producer: \"x, globals: !9\", enums: !4, globals: !5, splitDebugInlining: false)";
        assert_eq!(
            without_fields(cu, FRAGMENT_UNIT_LEAVES_OUT).concat(),
            "distinct !DICompileUnit(language: DW_LANG_C11, producer: \"x, globals: !9\", splitDebugInlining: false)"
        );
        let last = "!DICompileUnit(language: DW_LANG_C11, file: !3, globals: !5)";
        assert_eq!(
            without_fields(last, FRAGMENT_UNIT_LEAVES_OUT).concat(),
            "!DICompileUnit(language: DW_LANG_C11)"
        );
    }

    #[test]
    fn fragments_are_rebased_on_their_own_line() {
        let src = "#line 40 \"other.h\"\n\
            static inline int twice(int v) {\n  return v * 2;\n}\n\
            #line 100 \"t.c\"\n\
            int api(int x) {\n  return twice(x) + 1;\n}\n";
        let ir = ir_of(src, &["-g"]);
        let rebased = rebase_relative_lines(&ir, "api").unwrap().unwrap();
        assert!(rebased.inlined.is_empty());
        let rebased = rebased.text;
        let base = crate::support::line_bases::RELATIVE_LINE_BASE;
        let subprogram = |text: &str, name: &str| -> String {
            text.lines()
                .find(|l| l.contains("!DISubprogram(") && l.contains(&format!("name: \"{name}\"")))
                .unwrap()
                .to_string()
        };
        assert!(subprogram(&rebased, "api").contains(&format!("line: {base},")));
        assert!(subprogram(&rebased, "api").contains(&format!("scopeLine: {base}")));
        // The header's function keeps its lines.
        assert!(subprogram(&rebased, "twice").contains("line: 40,"));
        assert!(rebased.contains(&format!("!DILocation(line: {}, ", base + 1)));
        assert_eq!(rebased.lines().count(), ir.lines().count());
        // Without debug info there is nothing to rebase.
        assert!(rebase_relative_lines(&ir_of(src, &[]), "api")
            .unwrap()
            .is_none());
    }

    /// The module `llvm::rebase_relative_lines` leaves in memory
    /// prints as the text `rebase_relative_lines` gives, parsed back.
    #[test]
    fn lines_are_rebased_in_memory_as_in_the_text() {
        let src = "#line 40 \"other.h\"\n\
            static inline int twice(int v) {\n  return v * 2;\n}\n\
            struct pair { int a;\n  int b; };\n\
            struct local;\n\
            struct chain { struct local *next;\n  int depth; };\n\
            #line 100 \"t.c\"\n\
            struct local { struct pair p;\n  struct chain c;\n  int n; };\n\
            typedef struct local local_t;\n\
            int counter = 3;\n\
            int api(int x) {\n  static int calls;\n  local_t l = { { x, 2 }, { 0, 1 }, 3 };\n\
              for (int i = 0; i < x; i++) {\n    int y = twice(i);\n    l.n += y;\n  }\n\
              if (x > 9) goto out;\n  calls++;\n out:\n  return twice(x) + l.p.a + calls + counter;\n}\n";
        for (flags, identified) in [(&["-g"][..], false), (&["-g", "-O0"][..], true)] {
            let mut ir = ir_of(src, flags);
            if identified {
                // As the pipeline has it: structs with identifiers, whose
                // members LLVM uniques by name and scope alone.
                let context = crate::llvm::test_context();
                let module = module_of(&context, &ir);
                crate::llvm::identify_debug_types(&module);
                ir = module.print_to_string().to_string();
                assert!(ir.contains("identifier: "));
            }
            for leader in ["api", "counter", "twice"] {
                let expected = {
                    let context = crate::llvm::test_context();
                    let rebased = rebase_relative_lines(&ir, leader).unwrap().unwrap();
                    assert!(rebased.inlined.is_empty(), "{leader}");
                    let text = module_of(&context, &rebased.text)
                        .print_to_string()
                        .to_string();
                    text
                };
                let context = crate::llvm::test_context();
                let module = module_of(&context, &ir);
                assert_eq!(
                    crate::llvm::rebase_relative_lines(&module, leader, None, None),
                    (crate::llvm::Rebased::Done, Vec::new())
                );
                assert!(module.verify().is_ok(), "{leader}: {:?}", module.verify());
                let got = module.print_to_string().to_string();
                assert_eq!(got, expected, "{leader} {flags:?}");
                assert_ne!(got, module_of(&context, &ir).print_to_string().to_string());
            }
        }
        // No debug info: no position, nothing changes.
        let context = crate::llvm::test_context();
        let module = module_of(&context, &ir_of(src, &[]));
        assert_eq!(
            crate::llvm::rebase_relative_lines(&module, "api", None, None),
            (crate::llvm::Rebased::NoPosition, Vec::new())
        );
    }

    /// The anchored lines: the unit's module rebased in memory prints as
    /// its text rebased by the digest's classification, and a fragment's
    /// own lines rebased after that too.
    #[test]
    fn anchored_lines_are_rebased_in_memory_as_in_the_text() {
        let src = "struct pair { int a;\n  int b; };\n\
            struct local;\n\
            struct chain { struct local *next;\n  int depth; };\n\
            struct local { struct pair p;\n  struct chain c;\n  int n; };\n\
            typedef struct local local_t;\n\
            extern int declared(local_t *);\n\
            int counter = 3;\n\
            static int twice(int v) {\n  return v * 2;\n}\n\
            int api(int x) {\n  static int calls;\n  struct inner { int q; } in = { x };\n\
              local_t l = { { x, 2 }, { 0, 1 }, 3 };\n\
              calls += declared(&l);\n  return twice(x) + l.p.a + calls + counter + in.q;\n}\n";
        let anchor_base = crate::support::line_bases::ANCHOR_LINE_BASE;
        for flags in [&["-g"][..], &["-g", "-O0"], &["-g", "-O2"]] {
            let context = crate::llvm::test_context();
            let module = module_of(&context, &ir_of(src, flags));
            crate::llvm::identify_debug_types(&module);
            let ir = module.print_to_string().to_string();
            let (anchor, text) = rebase_anchor_lines(&ir).unwrap();
            assert_eq!(anchor, 1, "{flags:?}");
            assert!(
                text.contains(&format!("line: {}", anchor_base + 3)),
                "{text}"
            );
            let text_context = crate::llvm::test_context();
            let expected = module_of(&text_context, &text)
                .print_to_string()
                .to_string();
            assert_eq!(
                crate::llvm::rebase_anchor_lines(&module, anchor, anchor_base),
                crate::llvm::Rebased::Done
            );
            assert!(module.verify().is_ok(), "{:?}", module.verify());
            let got = module.print_to_string().to_string();
            assert_eq!(got, expected, "{flags:?}");
            // The local struct belongs to `api`: not anchored.
            assert!(got.contains("name: \"inner\", scope:"), "{got}");
            assert!(!got
                .lines()
                .any(|l| l.contains("name: \"inner\"")
                    && l.contains(&format!("line: {anchor_base}"))));
            // Then a fragment's own lines, on top.
            let other = crate::llvm::test_context();
            let rebased = rebase_relative_lines(&got, "api").unwrap().unwrap();
            // The whole unit: `twice`'s lines, relative to its own.
            assert_eq!(rebased.inlined, ["twice"]);
            let expected = module_of(&other, &rebased.text)
                .print_to_string()
                .to_string();
            assert_eq!(
                crate::llvm::rebase_relative_lines(&module, "api", None, None),
                (crate::llvm::Rebased::Done, vec!["twice".to_string()])
            );
            assert_eq!(module.print_to_string().to_string(), expected, "{flags:?}");
        }
    }

    /// `ir` through `opt-19 -O2`, as the optimizer leaves a unit.
    fn optimized(ir: &str) -> String {
        use std::io::Write;
        let mut opt = std::process::Command::new("opt-19")
            .args(["-O2", "-S", "-o", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("opt-19");
        opt.stdin.take().unwrap().write_all(ir.as_bytes()).unwrap();
        let out = opt.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    }

    /// A coroutine after LLVM's coroutine split: its frame type's members
    /// point back at it (a cycle of uniqued nodes), and `count.resume`,
    /// `count.destroy` and `count.cleanup` have copies of `count`'s
    /// subprogram, one key at one line. Both rebases rebuild it (the unit
    /// went to clang), and the relative one in memory as in the text.
    #[test]
    fn a_split_coroutine_is_rebased() {
        let src = "#include <coroutine>\n\
            struct gen { struct promise_type {\n\
              int v = 0;\n\
              gen get_return_object() { return gen{std::coroutine_handle<promise_type>::from_promise(*this)}; }\n\
              std::suspend_always initial_suspend() noexcept { return {}; }\n\
              std::suspend_always final_suspend() noexcept { return {}; }\n\
              std::suspend_always yield_value(int x) noexcept { v = x; return {}; }\n\
              void return_void() noexcept {}\n\
              void unhandled_exception() {} };\n\
              std::coroutine_handle<promise_type> h; };\n\
            gen count(int to) {\n  for (int i = 0; i < to; i++) {\n    int s = i * i;\n    co_yield s;\n  }\n}\n";
        let ir = optimized(&clang_ir(
            src,
            &[
                "-x",
                "c++",
                "-std=c++20",
                "-O2",
                "-g",
                "-Xclang",
                "-disable-llvm-passes",
            ],
        ));
        assert!(ir.contains("@_Z5counti.resume"), "{ir}");
        let context = crate::llvm::test_context();
        let module = module_of(&context, &ir);
        crate::llvm::identify_debug_types(&module);
        assert_eq!(
            crate::llvm::rebase_anchor_lines(
                &module,
                1,
                crate::support::line_bases::ANCHOR_LINE_BASE
            ),
            crate::llvm::Rebased::Done
        );
        assert!(module.verify().is_ok(), "{:?}", module.verify());
        let ir = module.print_to_string().to_string();
        // The parts' copies of `count`'s subprogram are one inlined
        // definition (the ramp's own is the leader's).
        rebased_in_memory_as_in_the_text(
            &ir,
            "_Z5counti",
            &["_Z5counti", "_ZN3gen12promise_type11yield_valueEi"],
        );
    }

    /// `leader`'s relative rebase of `ir`, in the printed text and in
    /// memory: both inline `keys`, and give the same module, which
    /// verifies. The module as printed.
    fn rebased_in_memory_as_in_the_text(ir: &str, leader: &str, keys: &[&str]) -> String {
        let rebased = rebase_relative_lines(ir, leader).unwrap().unwrap();
        assert_eq!(rebased.inlined, keys);
        let context = crate::llvm::test_context();
        let expected = module_of(&context, &rebased.text)
            .print_to_string()
            .to_string();
        let module = module_of(&context, ir);
        assert_eq!(
            crate::llvm::rebase_relative_lines(&module, leader, None, None),
            (
                crate::llvm::Rebased::Done,
                keys.iter().map(|k| k.to_string()).collect::<Vec<_>>()
            )
        );
        assert!(module.verify().is_ok(), "{:?}", module.verify());
        let got = module.print_to_string().to_string();
        assert_eq!(got, expected);
        got
    }

    /// Static functions inlined into a fragment: their lines relative to
    /// their own, indexed by key, the same in memory as in the text; a
    /// header's inlined function keeps its lines.
    #[test]
    fn inlined_definitions_are_rebased_in_memory_as_in_the_text() {
        use crate::support::line_bases::{
            DEFINITION_LINE_BASE, DEFINITION_LINE_SPAN, RELATIVE_LINE_BASE,
        };
        let src = "#line 40 \"other.h\"\n\
            static inline int header(int v) {\n  return v - 7;\n}\n\
            #line 10 \"/src/t.c\"\n\
            struct pair { int a;\n  int b; };\n\
            static int twice(int v) {\n  int w = v * 2;\n\
            #line 70 \"inner.h\"\n  w += v >> 3;\n\
            #line 15 \"/src/t.c\"\n  return w + header(v);\n}\n\
            static int thrice(int v) {\n  return twice(v) * 3;\n}\n\
            int api(struct pair *p) {\n  int s = thrice(p->a);\n  return s + twice(p->b);\n}\n";
        // Inlined, as the optimizer leaves the unit.
        let ir = optimized(&ir_of(src, &["-g"]));
        assert!(!ir.contains("define internal"), "inlined and dropped: {ir}");
        let got = rebased_in_memory_as_in_the_text(&ir, "api", &["thrice", "twice"]);
        let subprogram = |name: &str| -> &str {
            got.lines()
                .find(|l| l.contains("!DISubprogram(") && l.contains(&format!("name: \"{name}\"")))
                .unwrap()
        };
        let centre = DEFINITION_LINE_BASE + DEFINITION_LINE_SPAN / 2;
        assert!(subprogram("api").contains(&format!("line: {RELATIVE_LINE_BASE},")));
        assert!(subprogram("thrice").contains(&format!("line: {centre},")));
        assert!(subprogram("twice").contains(&format!("line: {},", centre + DEFINITION_LINE_SPAN)));
        // `w`, a line below `twice`'s own.
        assert!(got.contains("name: \"w\", scope: "));
        assert!(got.lines().any(|l| l.contains("name: \"w\"")
            && l.contains(&format!("line: {},", centre + DEFINITION_LINE_SPAN + 1))));
        assert!(subprogram("header").contains("line: 40,"));
        // A line of another file inside `twice` stays as it is.
        assert!(got.contains("!DILocation(line: 70,"), "{got}");
    }

    /// A fragment extracted after others of its unit (with the types they
    /// found shared, `llvm::SharedTypes`) is the module it is when
    /// extracted alone: a static it copies reaches, by a way of its own,
    /// types the kept function reaches under a node found clean before.
    #[test]
    fn extraction_is_the_same_whatever_was_extracted_before() {
        let src = "struct node;\n\
            struct chain { struct node *next;\n  int depth; };\n\
            struct node { struct chain c;\n  int n; };\n\
            typedef struct node node_t;\n\
            static int depth(struct chain *c, struct node *n) {\n  return c->depth + n->n;\n}\n\
            int first(node_t *n) {\n  return n->n;\n}\n\
            int second(node_t *n) {\n  node_t local = *n;\n  return depth(&local.c, n);\n}\n\
            int third(struct chain *c) {\n  return depth(c, c->next);\n}\n";
        for flags in [&["-g", "-O0"][..], &["-g", "-O1"]] {
            let ir = ir_of(src, flags);
            let context = crate::llvm::test_context();
            let module = module_of(&context, &ir);
            crate::llvm::identify_debug_types(&module);
            let shared = crate::llvm::SharedTypes::new(&module);
            for name in ["first", "second", "third"] {
                // What a fragment's extraction learns spares the next one
                // work, never changes it: as extracted first.
                let fresh = crate::llvm::SharedTypes::new(&module);
                let alone = crate::llvm::extract_definitions(&module, &[name], false, Some(&fresh))
                    .print_to_string()
                    .to_string();
                let after =
                    crate::llvm::extract_definitions(&module, &[name], false, Some(&shared));
                assert!(after.verify().is_ok(), "{name}: {:?}", after.verify());
                assert_eq!(
                    after.print_to_string().to_string(),
                    alone,
                    "{name} {flags:?}"
                );
            }
        }
    }

    /// C++: a fragment's extraction is the same whatever the unit's other
    /// fragments extracted before it into the same context. Two functions
    /// that inline the same member of a class instantiated with a lambda
    /// both name the member's declaration, whose type reaches the lambda's
    /// class and the function it lies in; LLVM folds equal-named member
    /// declarations of one class (ODR uniquing), so with class declarations
    /// shared by the unit's fragments the second took the first's copies,
    /// down to a compile unit it does not list (the verifier then dropped
    /// its debug info, and the unit went to clang).
    #[test]
    fn cxx_extraction_takes_nothing_from_fragments_extracted_before() {
        let src = "void ext(void *);\n\
                   template <class F> struct Holder {\n  F f;\n  F *get() { ext(this); return &f; }\n  \
                   __attribute__((noinline)) int call() { return (*get())(); }\n  \
                   __attribute__((noinline)) int check() { return get() != nullptr; }\n};\n\
                   template <class T> __attribute__((noinline)) int make(T x) {\n  \
                   auto l = [x] { return (int)x * 3; };\n  Holder<decltype(l)> h{l};\n  \
                   return h.call() + h.check();\n}\n\
                   int use() { return make(1) + make(2L); }\n";
        // Optimized, so that `get` is inlined into both.
        let ir = clang_ir(src, &["-x", "c++", "-O1", "-g"]);
        let names: Vec<String> = ir
            .lines()
            .filter(|l| l.starts_with("define ") && l.contains("6Holder"))
            .filter_map(|l| l.split('@').nth(1)?.split('(').next().map(str::to_string))
            .collect();
        assert!(names.len() >= 4, "{names:?}");
        let extracted = |before: &[String], name: &str| {
            let context = crate::llvm::test_context();
            let module = module_of(&context, &ir);
            assert_eq!(crate::llvm::stubs_unit_types(&module), StubKind::CxxDecls);
            crate::llvm::retain_unit_types(&module);
            let shared = crate::llvm::SharedTypes::new(&module);
            for other in before {
                crate::llvm::extract_definitions(&module, &[other.as_str()], false, Some(&shared));
            }
            let f = crate::llvm::extract_definitions(&module, &[name], false, Some(&shared));
            assert!(
                f.verify().is_ok(),
                "{name} after {before:?}: {:?}",
                f.verify()
            );
            f.print_to_string().to_string()
        };
        for (i, name) in names.iter().enumerate() {
            let alone = extracted(&[], name);
            let others: Vec<String> = names.iter().filter(|n| *n != name).cloned().collect();
            assert_eq!(extracted(&others, name), alone, "{name}");
            assert_eq!(extracted(&names[..i], name), alone, "{name}");
        }
    }

    /// In a C unit, a fragment holds the structs it uses as stubs (name,
    /// size and identifier: the same type unit signature), and the unit's
    /// compile unit retains every struct its definitions reach, for the
    /// glue to hold whole; C++ types stay whole in every fragment.
    #[test]
    fn c_fragments_hold_stubs_of_the_types_the_unit_retains() {
        let src = "struct point { int x, y; };\nstruct box { struct point lo, hi; };\n\
                   enum side { LEFT, RIGHT };\n\
                   int area(struct box *b) { return (b->hi.x - b->lo.x) * (b->hi.y - b->lo.y); }\n\
                   int pick(struct point *p, enum side s) { return s == LEFT ? p->x : p->y; }\n";
        for flags in [&["-g", "-O0"][..], &["-g", "-O2"]] {
            let context = crate::llvm::test_context();
            let module = module_of(&context, &ir_of(src, flags));
            assert_eq!(crate::llvm::stubs_unit_types(&module), StubKind::CRecords);
            assert_eq!(crate::llvm::retain_unit_types(&module), 3, "{flags:?}");
            // Retained once.
            assert_eq!(crate::llvm::retain_unit_types(&module), 0, "{flags:?}");
            crate::llvm::identify_debug_types(&module);
            let unit = module.print_to_string().to_string();
            let retained = unit
                .lines()
                .find(|l| l.contains("distinct !DICompileUnit("))
                .and_then(|l| l.split("retainedTypes: ").nth(1))
                .expect("retained types");
            assert!(retained.starts_with('!'), "{retained}");
            let shared = crate::llvm::SharedTypes::new(&module);
            for name in ["area", "pick"] {
                let f = crate::llvm::extract_definitions(&module, &[name], false, Some(&shared));
                assert!(f.verify().is_ok(), "{name}: {:?}", f.verify());
                let text = f.print_to_string().to_string();
                assert!(!text.contains("DW_TAG_member"), "{name} {flags:?}: {text}");
                assert!(!text.contains("DIEnumerator"), "{name} {flags:?}: {text}");
                let stubs: Vec<&str> = text
                    .lines()
                    .filter(|l| l.contains("!DICompositeType(tag: DW_TAG_"))
                    .collect();
                assert!(!stubs.is_empty(), "{name}: {text}");
                for stub in stubs {
                    assert!(
                        stub.contains("identifier: ") && stub.contains("size: "),
                        "{stub}"
                    );
                    // The unit holds the same identifier whole.
                    let id = stub.split("identifier: ").nth(1).unwrap();
                    let id = &id[..id.find(')').unwrap_or(id.len())];
                    let whole = unit
                        .lines()
                        .find(|l| l.contains(id) && l.contains("elements: "));
                    assert!(whole.is_some(), "{id} not whole in the unit");
                }
            }
            // C++: the two structs are classes with identifiers, retained
            // (the enum stays whole).
            let mut cxx_flags = flags.to_vec();
            cxx_flags.extend(["-x", "c++"]);
            let cxx = module_of(&context, &ir_of(src, &cxx_flags));
            assert_eq!(crate::llvm::stubs_unit_types(&cxx), StubKind::CxxDecls);
            assert_eq!(crate::llvm::retain_unit_types(&cxx), 2, "{flags:?}");
        }
    }

    /// A caller's fragment declares the functions it calls with their debug
    /// subprograms (call-site information at -O1 and above): its digest
    /// changes with them, not with an unrelated line.
    #[test]
    fn callers_cover_the_subprograms_of_what_they_call() {
        let src = "struct s { int x; };\nextern void use(int);\n\
                   int f(struct s *p) {\n  use(p->x);\n  use(p->x + 1);\n  return p->x;\n}\n";
        let digests = |src: &str| {
            let ir = ir_without_checksums(src, &["-g", "-O2"]);
            assert!(ir.contains("declare !dbg !"), "{ir}");
            digest_module(&ir, &[], Inlining::Optimizing, Lines::Relative).unwrap()
        };
        let a = digests(src);
        // The declaration moved against the unit's anchor (the struct).
        let b = digests(&src.replace("extern void use", "\nextern void use"));
        assert_ne!(fin(&a, "f"), fin(&b, "f"));
        // Both moved: nothing changed for `f`.
        let c = digests(&format!("\n\n{src}"));
        assert_eq!(fin(&a, "f"), fin(&c, "f"));
    }

    /// Fragments of a C unit hold its structs as stubs, without lines (the
    /// glue holds them whole): a struct that moves against the anchor, or
    /// a member that moves in it, changes no digest of its users; a
    /// typedef, which fragments hold whole, still does; and in C++, where
    /// types stay whole, the struct's line still counts.
    #[test]
    fn lines_of_types_held_as_stubs_leave_the_digests() {
        let src = "struct first { int a; };\n\
                   struct point {\n  int x;\n  union {\n    int y;\n    float f;\n  };\n};\n\
                   typedef struct point point_t;\n\
                   int get(struct point *p) { return p->y; }\n\
                   int get_t(point_t *p) { return p->x; }\n\
                   int use_first(struct first *f) { return f->a; }\n";
        let digests = |src: &str, extra: &[&str]| {
            let mut flags = vec!["-g", "-O0"];
            flags.extend(extra);
            let ir = ir_without_checksums(src, &flags);
            digest_module(&ir, &[], Inlining::Optimizing, Lines::Relative).unwrap()
        };
        let a = digests(src, &[]);
        // The struct moves against the anchor (`first`), and so do `get`
        // and the typedef.
        let moved = src.replace("struct point {", "\nstruct point {");
        let b = digests(&moved, &[]);
        assert_eq!(fin(&a, "get"), fin(&b, "get"));
        assert_ne!(fin(&a, "get_t"), fin(&b, "get_t"));
        // A member moves within the struct's anonymous union (a type of
        // its own, reached through the stub).
        let member = src.replace("    int y;", "\n    int y;");
        let c = digests(&member, &[]);
        assert_eq!(fin(&a, "get"), fin(&c, "get"));
        // Its content still counts.
        let changed = src.replace("    int y;", "    long y;");
        assert_ne!(fin(&a, "get"), fin(&digests(&changed, &[]), "get"));
        // C++: the struct is a declaration in the fragment (name and
        // identifier): where it lies and what its members are leave the
        // digest; the code that reads a member still counts.
        let cxx = |src: &str| {
            digests(
                &src.replace("int get(", "extern \"C\" int get("),
                &["-x", "c++"],
            )
        };
        assert_eq!(fin(&cxx(src), "get"), fin(&cxx(&moved), "get"));
        assert_eq!(fin(&cxx(src), "get"), fin(&cxx(&member), "get"));
        assert_ne!(fin(&cxx(src), "get"), fin(&cxx(&changed), "get"));
        let renamed = src.replace("point", "spot");
        assert_ne!(fin(&cxx(src), "get"), fin(&cxx(&renamed), "get"));
    }

    /// A C++ template instance's digest does not follow what else its unit
    /// uses of the class (the members its debug type lists, whether it is
    /// complete): fragments declare the class, the glue defines it.
    #[test]
    fn cxx_instances_have_the_same_digest_whatever_else_the_unit_uses() {
        let header = "template <class T> struct Box {\n  T v;\n  T get() const { return v; }\n  \
                      void set(T x) { v = x; }\n  T twice() const { return v + v; }\n};\n";
        let digests = |src: &str, flags: &[&str]| {
            let mut all = vec!["-x", "c++", "-g"];
            all.extend(flags);
            let ir = ir_without_checksums(src, &all);
            digest_module(&ir, &[], Inlining::AlwaysInlineOnly, Lines::Relative).unwrap()
        };
        let get = "_ZNK3BoxIiE3getEv";
        let first = format!("{header}int f(const Box<int> &b) {{ return b.get(); }}\n");
        let second = format!(
            "{header}int g(Box<int> &b) {{ b.set(2); return b.get() + b.twice(); }}\n\
             struct Other {{ Box<long> l; }};\nlong h(Other *o) {{ return o->l.get(); }}\n"
        );
        for flags in [&["-O0"][..], &["-O0", "-fstandalone-debug"]] {
            let one = digests(&first, flags);
            assert_eq!(
                fin(&one, get),
                fin(&digests(&second, flags), get),
                "{flags:?}"
            );
            // Not blind: the instance's own code counts.
            let changed = first.replace("return v; }", "return v + 1; }");
            assert_ne!(fin(&one, get), fin(&digests(&changed, flags), get));
        }
    }

    #[test]
    fn a_dynamic_class_the_unit_homes_is_a_declaration_in_digests() {
        // `Widget`'s key function is here, so clang gives it no identifier;
        // fragments declare it by name (the shim's `homedDynamicClass`),
        // so its members are not part of `pass`'s bytes, nor its digest.
        let digests = |src: &str| {
            let ir = ir_without_checksums(src, &["-x", "c++", "-g", "-O0"]);
            assert!(ir.contains("DICompositeType(tag: DW_TAG_structure_type"));
            assert!(!ir.contains("identifier: \"_ZTSN2ns"), "{ir}");
            digest_module(&ir, &[], Inlining::AlwaysInlineOnly, Lines::Relative).unwrap()
        };
        let pass = "_Z4passPN2ns6WidgetE";
        let src = "namespace ns { struct Widget { virtual ~Widget(); int a; };\n\
                   Widget::~Widget() {} }\n\
                   void sink(ns::Widget *);\n\
                   void pass(ns::Widget *w) { sink(w); }\n";
        let one = digests(src);
        assert_eq!(
            fin(&one, pass),
            fin(&digests(&src.replace("int a;", "int a; long b;")), pass)
        );
        // Not blind: the declaration's name counts.
        let gadget = digests(&src.replace("Widget", "Gadget"));
        assert_ne!(fin(&one, pass), fin(&gadget, "_Z4passPN2ns6GadgetE"));
    }

    /// The IR with its function definitions in the reverse order.
    fn definitions_reversed(ir: &str) -> String {
        let mut out: Vec<Option<&str>> = Vec::new();
        let mut blocks: Vec<Vec<&str>> = Vec::new();
        let mut lines = ir.lines();
        while let Some(line) = lines.next() {
            if line.starts_with("define ") {
                let mut block = vec![line];
                for l in lines.by_ref() {
                    block.push(l);
                    if l == "}" {
                        break;
                    }
                }
                blocks.push(block);
                out.push(None);
            } else {
                out.push(Some(line));
            }
        }
        let mut reversed = blocks.into_iter().rev();
        let mut text = String::new();
        for line in out {
            match line {
                Some(l) => text.push_str(l),
                None => text.push_str(&reversed.next().unwrap().join("\n")),
            }
            text.push('\n');
        }
        text
    }

    /// A struct that points to itself is a cycle of metadata nodes, which
    /// `first` enters at the pointer and `second` at the struct; the
    /// digest of either must not depend on which came first, nor miss
    /// what the cycle reaches.
    #[test]
    fn digests_do_not_depend_on_the_order_of_definitions() {
        let src = "struct node { struct node *next; struct node *prev; int value; };\n\
                   int first(struct node *n) { return n->value; }\n\
                   int second(void) { struct node local = {0, 0, 3}; return local.value; }\n";
        for (flags, lines) in [
            (&["-g"][..], Lines::Relative),
            (&["-g", "-x", "c++"][..], Lines::Relative),
            (&["-g"][..], Lines::Absolute),
        ] {
            let ir = ir_without_checksums(src, flags);
            let reversed = definitions_reversed(&ir);
            assert_ne!(ir, reversed);
            let a = digest_module(&ir, &[], Inlining::Optimizing, lines).unwrap();
            let b = digest_module(&reversed, &[], Inlining::Optimizing, lines).unwrap();
            assert_eq!(a.defs.len(), b.defs.len());
            for d in &a.defs {
                let other = b.defs.iter().find(|e| e.name == d.name).unwrap();
                assert_eq!(d.final_digest, other.final_digest, "{} {flags:?}", d.name);
            }
            // Not blind: a member's name, reached through the cycle only,
            // counts (in C: C++ fragments declare the class, see
            // `cxx_declaration_text`).
            if flags.contains(&"c++") {
                continue;
            }
            let renamed = ir_without_checksums(&src.replace("*prev;", "*previous;"), flags);
            let c = digest_module(&renamed, &[], Inlining::Optimizing, lines).unwrap();
            for name in ["first", "second"] {
                let d = a.defs.iter().find(|d| d.name.contains(name)).unwrap();
                let e = c.defs.iter().find(|e| e.name == d.name).unwrap();
                assert_ne!(d.final_digest, e.final_digest, "{name} {flags:?}");
            }
        }
    }

    #[test]
    fn edges_follow_the_hazards() {
        let src = r#"
            static int hidden_state;
            static int read_only = 7;
            extern int external_mutable;
            int external_mutable = 1;
            const int external_constant[2] = {2, 3};
            static int helper(int x) { return x + 1; }
            int ext_callee(int x) { return x; }
            __attribute__((noinline)) int noinline_callee(void) { return 1; }
            int writer(void) { hidden_state = 1; return 0; }
            int reader(int i) { return hidden_state + read_only + external_mutable + external_constant[i]; }
            int caller(void) { return helper(1) + ext_callee(2) + noinline_callee(); }
            int (*address_only(void))(int) { return ext_callee; }
        "#;
        let d = digests(src);
        let at = |n: &str| d.position(n).unwrap();
        let edge = |u: &str, v: &str| d.edges.contains(&(at(u), at(v)));
        assert!(
            edge("writer", "hidden_state") && edge("hidden_state", "writer"),
            "store = contribution"
        );
        assert!(edge("reader", "hidden_state"), "load = dependency");
        assert!(edge("reader", "read_only"));
        assert!(edge("reader", "external_constant"));
        assert!(
            !edge("reader", "external_mutable"),
            "mutable external: no edge"
        );
        assert!(
            edge("caller", "helper") && edge("helper", "caller"),
            "local callee: both ways"
        );
        assert!(edge("caller", "ext_callee") && !edge("ext_callee", "caller"));
        assert!(
            edge("caller", "noinline_callee"),
            "noinline callees still infer attributes"
        );
        // A function that only hands out an address depends on it (it may be
        // called through it after inlining), but the callee does not depend
        // on it.
        assert!(!edge("ext_callee", "address_only"));
        // An edit to the writer changes the state's digest and so the
        // reader's; an edit to the reader changes neither.
        let impact = edit_impact(&d);
        assert!(impact[at("writer")] >= 3, "writer, hidden_state, reader");
        assert_eq!(impact[at("reader")], 1);
    }
}
