//! Where a composed object's constructor and destructor tables go: after
//! every other section, in the order the unit's code generator would have
//! written them.
//!
//! A C++ inline variable's or a template's static member's dynamic
//! initializer is a constructor entry keyed by the variable: its
//! `.init_array` section sits in the variable's COMDAT group, one section
//! per key, while the entries without a key share one section. The linker
//! runs a unit's entries in the order of those sections in its object, and
//! C++17 orders the initializers of inline variables defined one after
//! another (`inline int b = a + 1;`) by it. clang's object has them at its
//! end, in the order of `llvm.global_ctors` (`llvm::structor_order`); a
//! composed object has them where their fragments came — the glue's
//! shared section first, the keyed ones in fragment order — so they are
//! moved, each section by its rank in that order. The composer is told
//! the order as one [`table_entry`] per table.

use rustc_hash::FxHashMap as HashMap;

use super::elf::{Content, Member, OutSection, OutSym, SHT_FINI_ARRAY, SHT_INIT_ARRAY};

/// How the composer is told of one table: the name of its section (as
/// LLVM's code generator names an ELF structor section of that priority)
/// and its key, `""` for the table of the entries without one.
pub fn table_entry(destructor: bool, priority: u64, key: &str) -> String {
    let table = if destructor {
        ".fini_array"
    } else {
        ".init_array"
    };
    match priority {
        65535 => format!("{table} {key}"),
        p => format!("{table}.{p} {key}"),
    }
}

/// Whether composing in another order than `entries` (each a
/// [`table_entry`]) can change what the program does: a table name with a
/// keyed entry and another entry. (The linker sorts tables of different
/// priorities itself, and one shared table keeps its entries' order.)
pub fn order_matters(entries: &[String]) -> bool {
    let mut seen: HashMap<&str, (usize, bool)> = HashMap::default();
    for e in entries {
        let (table, key) = e.split_once(' ').unwrap_or((e, ""));
        let (count, keyed) = seen.entry(table).or_default();
        *count += 1;
        *keyed |= !key.is_empty();
    }
    seen.values().any(|&(count, keyed)| count > 1 && keyed)
}

/// What a table section of the part is told by: its [`table_entry`].
pub(super) fn entry_of(section_name: &[u8], key: &[u8]) -> Vec<u8> {
    [section_name, b" ", key].concat()
}

/// Whether a section is a constructor or destructor table.
pub(super) fn is_structor_table(sh_type: u32) -> bool {
    matches!(sh_type, SHT_INIT_ARRAY | SHT_FINI_ARRAY)
}

/// Moves the structor tables (`rank`: output section → its rank, lower
/// first) after every other section, by rank and then where they were,
/// and renumbers what names a section: symbols and group members.
pub(super) fn place_structors_last(
    sections: &mut Vec<OutSection>,
    locals: &mut [OutSym],
    globals: &mut [OutSym],
    rank: &HashMap<usize, usize>,
) {
    let tables = |o: usize| is_structor_table(sections[o].sh_type);
    let mut order: Vec<usize> = (0..sections.len()).filter(|&o| !tables(o)).collect();
    let mut moved: Vec<usize> = (0..sections.len()).filter(|&o| tables(o)).collect();
    moved.sort_by_key(|o| (rank.get(o).copied().unwrap_or(usize::MAX), *o));
    order.extend(moved);
    if order.iter().enumerate().all(|(new, &old)| new == old) {
        return;
    }
    let mut new_index = vec![0; sections.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    let mut taken: Vec<Option<OutSection>> =
        std::mem::take(sections).into_iter().map(Some).collect();
    sections.extend(order.iter().filter_map(|&old| taken[old].take()));
    for s in locals.iter_mut().chain(globals.iter_mut()) {
        if let Some(o) = s.section.as_mut() {
            *o = new_index[*o];
        }
    }
    for s in sections.iter_mut() {
        if let Content::Group { members, .. } = &mut s.content {
            for m in members {
                match m {
                    Member::Section(o) | Member::RelaOf(o) => *o = new_index[*o],
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_matters_only_between_entries_of_one_table() {
        let entries = |list: &[(bool, u64, &str)]| -> Vec<String> {
            (list.iter())
                .map(|&(d, p, k)| table_entry(d, p, k))
                .collect()
        };
        assert_eq!(table_entry(false, 65535, "a"), ".init_array a");
        assert_eq!(table_entry(true, 200, ""), ".fini_array.200 ");
        assert!(order_matters(&entries(&[
            (false, 65535, "a"),
            (false, 65535, "b")
        ])));
        assert!(order_matters(&entries(&[
            (false, 65535, "a"),
            (false, 65535, "")
        ])));
        assert!(!order_matters(&entries(&[
            (false, 65535, "a"),
            (false, 200, "")
        ])));
        assert!(!order_matters(&entries(&[
            (false, 65535, "a"),
            (true, 65535, "b")
        ])));
        assert!(!order_matters(&entries(&[(false, 65535, "")])));
        assert!(!order_matters(&[]));
    }
}
