//! The order the optimizer meets a unit's functions in.
//!
//! LLVM's inliner walks the call graph bottom-up, one group of mutually
//! recursive functions at a time, and the order it simplifies a group's
//! members in follows the module's order of functions: the first of them
//! the call graph's walk reaches. A group's members then leave the inliner
//! with bodies that depend on what else the unit holds and where clang put
//! it, not only on their own content and reach, which their digests cover.
//! yaml-cpp's `RegEx` holds a `std::vector<RegEx>`: its destructor, the
//! vector's and `_Destroy_aux<false>::__destroy<RegEx*>` call one another,
//! and `std::vector<RegEx>`'s copy constructor, built on them, inlined
//! `__destroy` in `regex_yaml.cpp` and not in `scanner.cpp` (clang-19 does
//! the same); taken from the repository, `scanner.cpp`'s copy made
//! `regex_yaml.cpp`'s warm object differ from its cold one.
//!
//! So the optimizer sees the functions in an order of their own: a
//! function after everything it reaches (callees first, which is the order
//! the walk visits them in anyway), and the members of a group by a digest
//! of their code without metadata (`digest::recursion_code_keys`), then
//! name. The walk then enters every group at the same member, in every
//! unit and whatever the repository holds: nothing that reaches a group
//! comes before it. And with or without `-g`: ordered by final digests,
//! which hold debug info, sqlite3.c's sorter (functions that free one
//! another) came out with other code with `-g` than without. The order
//! among groups that do not reach one another decides nothing. The
//! pipeline puts the module's order back once the optimizer is done, so
//! code is laid out in source order as before.

use super::digest::{sccs, use_graph, DefKind, ModuleDigests};

/// The unit's defined functions, callees before callers, the members of
/// a recursion by the digest of their code (then name).
pub fn optimizer_order(digests: &ModuleDigests) -> Vec<&str> {
    let key = |d: usize| {
        let code = digests.recursion_code_keys.get(&d);
        (
            code.unwrap_or(&digests.defs[d].final_digest.0),
            &digests.defs[d].name,
        )
    };
    let n = digests.defs.len();
    let succ = use_graph(n, &digests.edges, &digests.references);
    let mut out = Vec::with_capacity(n);
    // Successors first (see `sccs`).
    for mut component in sccs(n, &succ) {
        component.sort_by(|&a, &b| key(a).cmp(&key(b)));
        out.extend(
            component
                .into_iter()
                .map(|i| &digests.defs[i])
                .filter(|d| d.kind == DefKind::Function)
                .map(|d| d.name.as_str()),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::digest::Definition;
    use crate::repo::storage::FragmentDigest;

    fn def(name: &str, kind: DefKind, digest: u8) -> Definition {
        Definition {
            name: name.to_string(),
            kind,
            local: false,
            constant: false,
            initial: [0; 32],
            reached_as: [0; 32],
            final_digest: FragmentDigest([digest; 32]),
            position: None,
        }
    }

    fn digests(defs: Vec<Definition>, edges: Vec<(usize, usize)>) -> ModuleDigests {
        ModuleDigests {
            defs,
            edges,
            relative_lines: false,
            anchor: None,
            inlined_lines: Default::default(),
            unit_source: None,
            references: Vec::new(),
            recursion_code_keys: Default::default(),
        }
    }

    #[test]
    fn callees_come_first_and_a_recursion_by_digest() {
        // caller -> a <-> b -> leaf, in two module orders.
        let defs = |order: [usize; 4]| {
            let all = [
                def("caller", DefKind::Function, 9),
                def("a", DefKind::Function, 5),
                def("b", DefKind::Function, 3),
                def("leaf", DefKind::Function, 7),
            ];
            order.map(|i| all[i].clone()).to_vec()
        };
        let named =
            |d: &ModuleDigests, name: &str| d.defs.iter().position(|x| x.name == name).unwrap();
        let mut orders = Vec::new();
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [1, 0, 3, 2]] {
            let mut d = digests(defs(order), Vec::new());
            let (c, a, b, l) = (
                named(&d, "caller"),
                named(&d, "a"),
                named(&d, "b"),
                named(&d, "leaf"),
            );
            d.edges = vec![(c, a), (a, b), (b, a), (b, l)];
            orders.push(
                optimizer_order(&d)
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>(),
            );
        }
        assert_eq!(orders[0], ["leaf", "b", "a", "caller"]);
        assert!(orders.iter().all(|o| o == &orders[0]), "{orders:?}");
    }

    #[test]
    fn only_functions_are_ordered() {
        let mut d = digests(
            vec![
                def("f", DefKind::Function, 1),
                def("table", DefKind::Variable, 2),
                def("g", DefKind::Function, 3),
            ],
            Vec::new(),
        );
        // f names the table, which names g: g first.
        d.references = vec![(0, 1), (1, 2)];
        assert_eq!(optimizer_order(&d), ["g", "f"]);
    }
}
