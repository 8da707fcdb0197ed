//! The composed object's `.eh_frame`: one CIE where the fragments repeat
//! it. Each fragment is compiled alone, so each brings its own CIE (the
//! common information its FDEs point to); concatenated, a unit of a
//! thousand functions carried a thousand copies of the same 20–30 bytes
//! (leveldb's `libleveldb.a`: `.eh_frame` 1.52x clang's, 7% of its `size`).
//! Linkers merge identical CIEs in programs; objects and static libraries
//! keep what they are given. Composing keeps the first of each set of
//! identical CIEs — same bytes, same relocations — and points the FDEs of
//! the others to it, as clang's object has it.

use rustc_hash::FxHashMap as HashMap;

use super::elf::{u32_at, Content, OutRela, OutSection, SymRef};

/// One record of the section: where it starts, its length (with the
/// length field), and for an FDE where its CIE starts.
struct Record {
    start: usize,
    len: usize,
    cie: Option<usize>,
}

fn records(data: &[u8]) -> Option<Vec<Record>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < data.len() {
        let len = u32_at(data, at as u64)?;
        // A terminator or a 64-bit record: left as it is.
        if len == 0 || len == u32::MAX {
            return None;
        }
        let total = 4usize.checked_add(len as usize)?;
        if at.checked_add(total)? > data.len() || len < 4 {
            return None;
        }
        let id = u32_at(data, at as u64 + 4)?;
        let cie = match id {
            0 => None,
            back => Some((at + 4).checked_sub(back as usize)?),
        };
        out.push(Record {
            start: at,
            len: total,
            cie,
        });
        at += total;
    }
    Some(out)
}

/// Shares identical CIEs in `section` (an `.eh_frame` of concatenated
/// fragments). Leaves the section as it is when anything in it is not
/// the plain sequence of records this expects.
pub(super) fn share_cies(section: &mut OutSection) {
    let Content::Data(data) = &section.content else {
        return;
    };
    let Some(records) = records(data) else {
        return;
    };
    let starts: HashMap<usize, usize> = records
        .iter()
        .enumerate()
        .map(|(i, r)| (r.start, i))
        .collect();
    // Relocations by the record they patch.
    let mut relas_of: Vec<Vec<usize>> = vec![Vec::new(); records.len()];
    for (k, r) in section.relas.iter().enumerate() {
        let i = match records.partition_point(|rec| rec.start as u64 <= r.offset) {
            0 => return,
            n => n - 1,
        };
        if r.offset >= (records[i].start + records[i].len) as u64 {
            return;
        }
        relas_of[i].push(k);
    }
    // The first CIE of each kind, and what every CIE maps to.
    type CieKey = (Vec<u8>, Vec<(u64, Option<SymRef>, u32, i64)>);
    let mut first: HashMap<CieKey, usize> = HashMap::default();
    let mut canonical: Vec<usize> = (0..records.len()).collect();
    for (i, rec) in records.iter().enumerate() {
        if rec.cie.is_some() {
            continue;
        }
        let relocated = relas_of[i]
            .iter()
            .map(|&k| {
                let r = &section.relas[k];
                (r.offset - rec.start as u64, r.sym, r.r_type, r.addend)
            })
            .collect();
        let key = (data[rec.start..rec.start + rec.len].to_vec(), relocated);
        canonical[i] = *first.entry(key).or_insert(i);
    }
    if first.len() == records.iter().filter(|r| r.cie.is_none()).count() {
        return;
    }
    // Every FDE's CIE must be a record of this section.
    let mut cie_of = vec![None; records.len()];
    for (i, rec) in records.iter().enumerate() {
        if let Some(c) = rec.cie {
            match starts.get(&c) {
                Some(&ci) if records[ci].cie.is_none() => cie_of[i] = Some(canonical[ci]),
                _ => return,
            }
        }
    }
    let mut out: Vec<u8> = Vec::with_capacity(data.len());
    let mut relas: Vec<OutRela> = Vec::with_capacity(section.relas.len());
    let mut new_start: Vec<Option<usize>> = vec![None; records.len()];
    for (i, rec) in records.iter().enumerate() {
        let kept = rec.cie.is_some() || canonical[i] == i;
        if !kept {
            continue;
        }
        let at = out.len();
        new_start[i] = Some(at);
        out.extend_from_slice(&data[rec.start..rec.start + rec.len]);
        if let Some(ci) = cie_of[i] {
            let Some(cie_at) = new_start[ci] else {
                return;
            };
            let Ok(pointer) = u32::try_from(at + 4 - cie_at) else {
                return;
            };
            out[at + 4..at + 8].copy_from_slice(&pointer.to_le_bytes());
        }
        for &k in &relas_of[i] {
            let r = &section.relas[k];
            relas.push(OutRela {
                offset: r.offset - rec.start as u64 + at as u64,
                sym: r.sym,
                r_type: r.r_type,
                addend: r.addend,
            });
        }
    }
    section.content = Content::Data(out);
    section.relas = relas;
}

/// Pads the section's last record (with `DW_CFA_nop`s, its length
/// adjusted) to a multiple of `align` and gives the section that
/// alignment, as LLVM ends `.eh_frame`: the fragments' records are
/// composed at 4-byte boundaries. Leaves a section it cannot read as
/// records as it is.
pub(super) fn pad_to_alignment(section: &mut OutSection, align: u64) {
    let Content::Data(data) = &mut section.content else {
        return;
    };
    let Some(last) = records(data).and_then(|r| r.last().map(|r| r.start)) else {
        return;
    };
    let padded = (data.len() as u64).next_multiple_of(align) as usize;
    let Ok(len) = u32::try_from(padded - last - 4) else {
        return;
    };
    data.resize(padded, 0);
    data[last..last + 4].copy_from_slice(&len.to_le_bytes());
    section.align = section.align.max(align);
}

/// How many `DW_CFA_nop`s end the instructions of the FDE that starts at
/// `start` in `section` (the `.eh_frame` of a 64-bit little-endian
/// object). They are padding: LLVM pads every record to 4 bytes but the
/// section's last one to 8, so a function's record carries more of them
/// when the function happened to be emitted last — what a carved fragment
/// must not depend on. `None` when the record cannot be read.
pub(super) fn trailing_nops(section: &[u8], start: u64) -> Option<u64> {
    use gimli::{BaseAddresses, CallFrameInstruction, EhFrame, EhFrameOffset, UnwindSection};
    let mut eh_frame = EhFrame::new(section, gimli::LittleEndian);
    eh_frame.set_address_size(8);
    // Pointers are read relative to a section at 0: only their size
    // matters here, and the relocations are not applied.
    let bases = BaseAddresses::default().set_eh_frame(0);
    let fde = eh_frame
        .fde_from_offset(
            &bases,
            EhFrameOffset(usize::try_from(start).ok()?),
            |section, bases, cie| section.cie_from_offset(bases, cie),
        )
        .ok()?;
    let mut nops = 0;
    let mut instructions = fde.instructions(&eh_frame, &bases);
    while let Some(instruction) = instructions.next().ok()? {
        nops = match instruction {
            CallFrameInstruction::Nop => nops + 1,
            _ => 0,
        };
    }
    Some(nops)
}

#[cfg(test)]
mod tests {
    use super::super::combine::combine;
    use super::super::combine::tests::{compile, succeed};
    use std::process::Command;

    fn cies(object: &std::path::Path) -> usize {
        let out = succeed_stdout(Command::new("readelf").arg("-wf").arg(object));
        out.lines().filter(|l| l.contains(" CIE")).count()
    }

    fn succeed_stdout(cmd: &mut Command) -> String {
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn fragments_share_one_cie_and_exceptions_still_unwind() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // Three objects, each with a CIE of its own: the two that catch
        // with a personality routine (each defining the COMDAT group of
        // `DW.ref.__gxx_personality_v0`, kept once), the other without.
        let thrower = compile(
            d,
            "thrower.cc",
            "__attribute__((noinline)) int thrower(int x) {\n\
               if (x > 2) throw 42; return x * 2; }\n",
            &[],
        );
        let plain = compile(
            d,
            "plain.cc",
            "int thrower(int);\n\
             __attribute__((noinline)) int plain(int x) {\n\
               try { return thrower(x) - x * 2 + x + 1; } catch (int) { return x + 1; } }\n",
            &[],
        );
        let catcher = compile(
            d,
            "catcher.cc",
            "#include <cstdio>\n\
             int thrower(int); int plain(int);\n\
             int main() { int n = 0;\n\
               for (int i = 0; i < 5; i++) {\n\
                 try { n += thrower(plain(i)); } catch (int e) { n += 100; }\n\
               }\n\
               std::printf(\"%d\\n\", n); return 0; }\n",
            &[],
        );
        let mut separate = 0;
        for (name, o) in [("t.o", &thrower), ("p.o", &plain), ("c.o", &catcher)] {
            std::fs::write(d.join(name), o).unwrap();
            separate += cies(&d.join(name));
        }
        let combined = combine(&[&thrower, &plain, &catcher], &[], &[]).expect("combined");
        let path = d.join("all.o");
        std::fs::write(&path, &combined).unwrap();
        let shared = cies(&path);
        assert_eq!(separate, 3);
        assert_eq!(shared, 2);
        // No warning from the reader, and the program unwinds through it.
        let dump = Command::new("llvm-dwarfdump-19")
            .args(["--eh-frame", "--verify"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            dump.status.success(),
            "{}",
            String::from_utf8_lossy(&dump.stdout)
        );
        let exe = d.join("prog");
        succeed(Command::new("clang++-19").arg("-o").arg(&exe).arg(&path));
        // i = 0, 1: 2 + 4; i = 2..4: plain(i) > 2 throws: 300.
        assert_eq!(succeed_stdout(&mut Command::new(&exe)), "306\n");
    }
}
