//! The repository path as plain data. From what the repository holds for
//! each planned fragment and whether the optimizer kept its definitions,
//! decide which fragments are compiled, which are stored afterwards (as
//! code, or as "the optimizer deleted it"), which come from the
//! repository, and in which order the object is assembled — with no LLVM
//! in sight, so that every case is tested alone.

use std::collections::{HashMap, HashSet};

/// What the repository holds (usable here) for a planned fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    Nothing,
    Object,
    /// "The optimizer deleted every member."
    Deletion,
}

/// One planned fragment, as the assembly sees it.
#[derive(Clone, Copy, Debug)]
pub struct FragmentView<'a> {
    pub members: &'a [String],
    pub stored: Stored,
    /// Dropped where unused (C++ inline functions, template instances).
    pub discardable: bool,
    /// Some member is still defined after optimization.
    pub present: bool,
}

/// Where a place in the object gets its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// The `n`th compiled group.
    Emitted(usize),
    /// The stored code of planned fragment `i`.
    Stored(usize),
    /// The stored code of discardable fragment `i`, if something in the
    /// object refers to it.
    StoredIfReferenced(usize),
    /// The `n`th compiled group, discardable planned fragment `i`, if
    /// something in the object refers to it: what only code the object
    /// takes from the repository (kept in the module as the optimizer's
    /// context) names is no more in the object than in a cold compile,
    /// where that code was optimized and the definition deleted.
    EmittedIfReferenced(usize, usize),
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Assembly {
    /// Groups to compile: members, and whether it is the glue.
    pub to_emit: Vec<(Vec<String>, bool)>,
    /// The object's parts, in order.
    pub slots: Vec<Slot>,
    /// Planned fragments to store once compiled: (fragment, compiled group).
    pub store_after: Vec<(usize, usize)>,
    /// Planned fragments the optimizer deleted: stored as deletions.
    pub deleted: Vec<usize>,
}

/// Plans the compile and the object. `glue` (the unit's module-level
/// pieces) comes first: it is the only part with a file symbol, which
/// names the source for everything after it, as in clang's object.
/// `unplanned` are groups that exist only after optimization (optimizer
/// helpers); the ones whose members were planned are skipped.
pub fn plan(
    glue: Option<Vec<String>>,
    fragments: &[FragmentView],
    unplanned: Vec<Vec<String>>,
) -> Assembly {
    let mut a = Assembly::default();
    let emit = |a: &mut Assembly, members: Vec<String>, is_glue: bool| {
        a.slots.push(Slot::Emitted(a.to_emit.len()));
        a.to_emit.push((members, is_glue));
    };
    if let Some(glue) = glue {
        emit(&mut a, glue, true);
    }
    for (i, f) in fragments.iter().enumerate() {
        match f.stored {
            Stored::Object if f.discardable => a.slots.push(Slot::StoredIfReferenced(i)),
            Stored::Object => a.slots.push(Slot::Stored(i)),
            // Deleted when stored, needed now (or never stored): compile
            // it, and store the code.
            Stored::Deletion | Stored::Nothing if f.present => {
                a.store_after.push((i, a.to_emit.len()));
                if f.discardable {
                    a.slots.push(Slot::EmittedIfReferenced(a.to_emit.len(), i));
                    a.to_emit.push((f.members.to_vec(), false));
                } else {
                    emit(&mut a, f.members.to_vec(), false);
                }
            }
            Stored::Deletion => {}
            Stored::Nothing => a.deleted.push(i),
        }
    }
    let planned: HashSet<&str> = fragments
        .iter()
        .flat_map(|f| f.members.iter().map(String::as_str))
        .collect();
    for members in unplanned {
        if !members.iter().any(|m| planned.contains(m.as_str())) {
            emit(&mut a, members, false);
        }
    }
    a
}

/// Where each part of the object comes from, in order, given which
/// discardable fragments something in the object refers to (stored or
/// compiled now).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Emitted(usize),
    Stored(usize),
}

pub fn parts(slots: &[Slot], referenced: &[bool]) -> Vec<Part> {
    slots
        .iter()
        .filter_map(|s| match *s {
            Slot::Emitted(e) => Some(Part::Emitted(e)),
            Slot::Stored(i) => Some(Part::Stored(i)),
            Slot::StoredIfReferenced(i) if referenced.get(i) == Some(&true) => {
                Some(Part::Stored(i))
            }
            Slot::StoredIfReferenced(_) => None,
            Slot::EmittedIfReferenced(e, i) if referenced.get(i) == Some(&true) => {
                Some(Part::Emitted(e))
            }
            Slot::EmittedIfReferenced(..) => None,
        })
        .collect()
}

/// How many definitions were compiled, and which were pruned. Each definition counts once: compiled
/// (in a compiled group), pruned (its stored code or stored deletion
/// stands), or neither (deleted by the optimizer now) — so the two never
/// add up to more than the definitions. A local definition in no fragment
/// of its own (`attached`: name -> the one function that uses it) counts
/// as its user does.
pub fn count<'a>(
    definitions: &HashSet<&'a str>,
    compiled_members: &[&str],
    fragments: &[FragmentView],
    attached: &HashMap<String, String>,
) -> (u64, Vec<&'a str>) {
    let compiled: HashSet<&str> = compiled_members
        .iter()
        .copied()
        .filter(|m| definitions.contains(m))
        .collect();
    let pruned: HashSet<&'a str> = fragments
        .iter()
        .filter(|f| f.stored != Stored::Nothing)
        .flat_map(|f| f.members.iter().map(String::as_str))
        .filter_map(|m| definitions.get(m).copied())
        .filter(|m| !compiled.contains(m))
        .collect();
    let mut n_compiled = compiled.len() as u64;
    let mut pruned_names: Vec<&'a str> = pruned.iter().copied().collect();
    for &d in definitions {
        if compiled.contains(d) || pruned.contains(d) {
            continue;
        }
        // Its user, or its user's user (a chain of helpers), up to a
        // fragment member.
        let mut owner = d;
        for _ in 0..64 {
            match attached.get(owner) {
                Some(user) => owner = user.as_str(),
                None => break,
            }
            if compiled.contains(owner) {
                n_compiled += 1;
                break;
            }
            if pruned.contains(owner) {
                pruned_names.push(d);
                break;
            }
        }
    }
    pruned_names.sort_unstable();
    (n_compiled, pruned_names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn discardables_compiled_now_are_kept_only_where_referenced() {
        let m: Vec<Vec<String>> = ["aliased", "literal", "new_inline"]
            .iter()
            .map(|n| names(&[n]))
            .collect();
        let view = |i: usize, stored, discardable| FragmentView {
            members: &m[i],
            stored,
            discardable,
            present: true,
        };
        // A stored function that stays defined (for its alias), and two
        // discardable definitions compiled now: a literal only its body
        // names (deleted when the function was compiled) and a new one.
        let fragments = [
            view(0, Stored::Object, false),
            view(1, Stored::Deletion, true),
            view(2, Stored::Nothing, true),
        ];
        let a = plan(None, &fragments, Vec::new());
        assert_eq!(
            a.slots,
            vec![
                Slot::Stored(0),
                Slot::EmittedIfReferenced(0, 1),
                Slot::EmittedIfReferenced(1, 2),
            ]
        );
        // Both are stored once compiled, whether the object holds them.
        assert_eq!(a.store_after, vec![(1, 0), (2, 1)]);
        assert_eq!(
            parts(&a.slots, &[false, false, true]),
            vec![Part::Stored(0), Part::Emitted(1)]
        );
        assert_eq!(
            parts(&a.slots, &[false, true, true]),
            vec![Part::Stored(0), Part::Emitted(0), Part::Emitted(1)]
        );
    }

    #[test]
    fn every_case_has_its_place() {
        let m: Vec<Vec<String>> = ["obj", "inl", "del_now", "del_gone", "new", "gone"]
            .iter()
            .map(|n| names(&[n]))
            .collect();
        let view = |i: usize, stored, discardable, present| FragmentView {
            members: &m[i],
            stored,
            discardable,
            present,
        };
        let fragments = [
            view(0, Stored::Object, false, false),
            view(1, Stored::Object, true, false),
            view(2, Stored::Deletion, false, true),
            view(3, Stored::Deletion, false, false),
            view(4, Stored::Nothing, false, true),
            view(5, Stored::Nothing, false, false),
        ];
        let a = plan(
            Some(names(&["glue"])),
            &fragments,
            vec![names(&["switch.table.x"]), names(&["new"])],
        );
        assert_eq!(
            a.slots,
            vec![
                Slot::Emitted(0),
                Slot::Stored(0),
                Slot::StoredIfReferenced(1),
                Slot::Emitted(1),
                Slot::Emitted(2),
                Slot::Emitted(3),
            ]
        );
        assert_eq!(a.to_emit[0], (names(&["glue"]), true));
        assert_eq!(a.to_emit[1].0, names(&["del_now"]));
        assert_eq!(a.to_emit[3].0, names(&["switch.table.x"]));
        assert_eq!(a.store_after, vec![(2, 1), (4, 2)]);
        assert_eq!(a.deleted, vec![5]);
        assert_eq!(
            parts(&a.slots, &[false, false, false, false, false, false]),
            vec![
                Part::Emitted(0),
                Part::Stored(0),
                Part::Emitted(1),
                Part::Emitted(2),
                Part::Emitted(3)
            ]
        );
        assert!(parts(&a.slots, &[false, true]).contains(&Part::Stored(1)));

        let defs: HashSet<&str> = ["obj", "inl", "del_now", "del_gone", "new", "gone"]
            .into_iter()
            .collect();
        let none = HashMap::new();
        let (compiled, pruned) = count(
            &defs,
            &["del_now", "new", "switch.table.x"],
            &fragments,
            &none,
        );
        assert_eq!(
            (compiled, pruned.len()),
            (2, 3),
            "del_now is compiled, not pruned"
        );
        assert!(compiled as usize + pruned.len() <= defs.len());
        // Helpers local to one user count as their user does, through a
        // chain of them; one whose user is in no fragment counts as neither.
        let defs: HashSet<&str> = defs
            .into_iter()
            .chain(["helper", "helper_of_helper", "of_obj", "orphan"])
            .collect();
        let attached: HashMap<String, String> = [
            ("helper", "new"),
            ("helper_of_helper", "helper"),
            ("of_obj", "obj"),
            ("orphan", "nowhere"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let (compiled, pruned) = count(
            &defs,
            &["del_now", "new", "switch.table.x"],
            &fragments,
            &attached,
        );
        assert_eq!((compiled, pruned.len()), (4, 4));
        assert!(pruned.contains(&"of_obj"), "a helper counts as its user");
    }
}
