//! Data verification (`--verify`).
//!
//! With verification on, every record candor writes starts with a 64-byte header and
//! carries a payload derived from it:
//!
//! | bytes  | field                                                   |
//! |--------|---------------------------------------------------------|
//! | 0..8   | magic `CANDORv1`                                        |
//! | 8..16  | run (a hash of the run's id and seed)                   |
//! | 16..20 | file index (the thread's file)                          |
//! | 20..24 | record size                                             |
//! | 24..32 | offset of the record in its file                        |
//! | 32..40 | generation: 1 for the first write of the record, +1 each rewrite |
//! | 40..48 | checksum of bytes 0..40                                 |
//! | 48..64 | zero                                                    |
//!
//! The payload (bytes 64..) is the buffer pattern XOR a 64-bit key computed from the
//! header's fields, so each record's payload is unique to its place and generation. A read
//! test checks every record it reads: the header against what candor last wrote there
//! (which it tracks per record, since randwrite cut by `--runtime`, randmix and recrewrite
//! leave records at different generations), then the payload against the key, word by word.
//! That tells apart:
//! - **misdirected**: a valid header for another offset (or file) of this run;
//! - **stale**: a valid, whole record of an earlier generation (a lost write), or zeroes
//!   where candor wrote (a write that never reached the file);
//! - **torn**: a valid header whose payload is partly of another generation of the same
//!   record (part of a write landed, part did not);
//! - **corruption**: anything else (bad magic or checksum, payload bytes of no generation).
//!
//! The record is the unit, so a file set is rewritten when the record size changes (the
//! runner does that with `--verify`).

pub use crate::buffer::BufferPattern;
use candor_model::{BadKinds, VerifyOutcome};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

pub const HEADER: usize = 64;
pub const MAGIC: u64 = u64::from_le_bytes(*b"CANDORv1");
/// How many earlier generations a torn payload is compared against.
const TORN_LOOKBACK: u64 = 16;

// ---- records ----

/// What a run's verification is keyed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyConfig {
    /// A hash of the run's id: a record of another run is not taken for this run's.
    pub run: u64,
    pub seed: u64,
}

impl VerifyConfig {
    pub fn new(run_id: &str, seed: u64) -> VerifyConfig {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for b in run_id.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        VerifyConfig {
            run: mix(h ^ seed),
            seed,
        }
    }
}

#[inline(always)]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[inline(always)]
fn get(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

#[inline(always)]
fn put(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// The kinds of bad record (the result's words).
pub use candor_model::BadKind;

/// A kind's place in `Tally::kinds`.
fn index(k: BadKind) -> usize {
    k as usize
}

/// What verification found, summed over files and repetitions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    pub written: u64,
    pub checked: u64,
    pub bad: u64,
    /// The first bad record seen: (file index, offset, kind).
    pub first_bad: Option<(u32, u64, BadKind)>,
    /// Bad records per kind, in `BadKind` order.
    pub kinds: [u64; 4],
}

impl Tally {
    pub fn merge(&mut self, o: &Tally) {
        self.written += o.written;
        self.checked += o.checked;
        self.bad += o.bad;
        if self.first_bad.is_none() {
            self.first_bad = o.first_bad;
        }
        for (a, b) in self.kinds.iter_mut().zip(o.kinds) {
            *a += b;
        }
    }

    /// The result's `verify` block.
    pub fn outcome(&self, record_size: u64) -> VerifyOutcome {
        let kind = |k: BadKind| self.kinds[index(k)];
        VerifyOutcome {
            bad_records: self.bad,
            first_bad_file: self.first_bad.map(|f| f.0),
            first_bad_kind: self.first_bad.map(|f| f.2),
            first_bad_offset: self.first_bad.map(|f| f.1),
            header_bytes: HEADER as u64,
            kinds: BadKinds {
                corruption: kind(BadKind::Corruption),
                misdirected: kind(BadKind::Misdirected),
                stale: kind(BadKind::Stale),
                torn: kind(BadKind::Torn),
            },
            record_size,
            records_checked: self.checked,
            records_written: self.written,
        }
    }

    /// One sentence for a test that read bad records.
    pub fn describe(&self, file_names: &dyn Fn(u32) -> String) -> Option<String> {
        let (file, off, kind) = self.first_bad?;
        let kinds: Vec<String> = [
            BadKind::Corruption,
            BadKind::Misdirected,
            BadKind::Stale,
            BadKind::Torn,
        ]
        .iter()
        .filter(|k| self.kinds[index(**k)] > 0)
        .map(|k| format!("{} {}", self.kinds[index(*k)], k.name()))
        .collect();
        Some(format!(
            "data verification failed: {} of {} records read back wrong ({}); the first at offset {} of {} ({})",
            self.bad,
            self.checked,
            kinds.join(", "),
            off,
            file_names(file),
            kind.name()
        ))
    }
}

/// One file's verification state: the generation candor last wrote to each record, and
/// what was found. Shared by reference with the thread that does the file's I/O (atomics,
/// relaxed: one thread uses a file at a time).
pub struct FileVerify {
    cfg: VerifyConfig,
    file: u32,
    record_size: usize,
    /// The payload before its key (the buffer pattern).
    base: Vec<u8>,
    pattern: BufferPattern,
    gens: Vec<AtomicU32>,
    written: AtomicU64,
    checked: AtomicU64,
    bad: AtomicU64,
    kinds: [AtomicU64; 4],
    first_bad: Mutex<Option<(u32, u64, BadKind)>>,
}

impl FileVerify {
    /// For a file of `file_size` bytes in records of `record_size` (at least `HEADER`),
    /// payloads derived from `pattern`.
    pub fn new(
        cfg: VerifyConfig,
        file: u32,
        file_size: u64,
        record_size: usize,
        pattern: BufferPattern,
    ) -> FileVerify {
        let records = file_size / record_size.max(1) as u64;
        let mut base = vec![0u8; record_size.saturating_sub(HEADER)];
        pattern.fill(&mut base, mix(cfg.seed ^ 0x5eed));
        FileVerify {
            cfg,
            file,
            record_size,
            base,
            pattern,
            gens: (0..records).map(|_| AtomicU32::new(0)).collect(),
            written: AtomicU64::new(0),
            checked: AtomicU64::new(0),
            bad: AtomicU64::new(0),
            kinds: Default::default(),
            first_bad: Mutex::new(None),
        }
    }

    pub fn record_size(&self) -> usize {
        self.record_size
    }

    /// The pattern the payloads are derived from.
    pub fn pattern(&self) -> BufferPattern {
        self.pattern
    }

    /// The file was just written anew by the untimed preparation, every record at
    /// generation 1: those writes are not part of any test's count.
    pub fn prepared(&self) {
        self.written.store(0, Ordering::Relaxed);
    }

    /// The file was removed: no record holds candor's data any more.
    pub fn forget(&self) {
        for g in &self.gens {
            g.store(0, Ordering::Relaxed);
        }
    }

    #[inline(always)]
    fn key(&self, file: u32, off: u64, gen: u64) -> u64 {
        mix(self.cfg.run ^ mix(((file as u64) << 40) ^ gen) ^ off.wrapping_mul(0x9e37_79b9))
    }

    fn checksum(head: &[u8]) -> u64 {
        let mut h = 0x243f_6a88_85a3_08d3u64;
        for at in (0..40).step_by(8) {
            h = mix(h ^ get(head, at));
        }
        h
    }

    /// Makes `buf` the next generation of the record at `off` (just before it is written).
    #[inline]
    pub fn stamp(&self, buf: &mut [u8], off: u64) {
        let rec = (off / self.record_size as u64) as usize;
        let gen = match self.gens.get(rec) {
            Some(g) => g.fetch_add(1, Ordering::Relaxed) as u64 + 1,
            None => 1,
        };
        self.written.fetch_add(1, Ordering::Relaxed);
        self.stamp_as(buf, self.file, off, gen);
    }

    /// Writes the record image of (file, off, gen) into `buf` (no bookkeeping).
    pub fn stamp_as(&self, buf: &mut [u8], file: u32, off: u64, gen: u64) {
        if buf.len() < HEADER {
            return;
        }
        put(buf, 0, MAGIC);
        put(buf, 8, self.cfg.run);
        buf[16..20].copy_from_slice(&file.to_le_bytes());
        buf[20..24].copy_from_slice(&(self.record_size as u32).to_le_bytes());
        put(buf, 24, off);
        put(buf, 32, gen);
        let sum = Self::checksum(&buf[..HEADER]);
        put(buf, 40, sum);
        buf[48..HEADER].fill(0);
        let key = self.key(file, off, gen).to_le_bytes();
        let payload = &mut buf[HEADER..];
        let n = payload.len().min(self.base.len());
        let mut words = payload[..n].chunks_exact_mut(8);
        let mut base = self.base[..n].chunks_exact(8);
        for (w, b) in (&mut words).zip(&mut base) {
            let v = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
                ^ u64::from_le_bytes(key);
            w.copy_from_slice(&v.to_le_bytes());
        }
        for (i, (w, b)) in words
            .into_remainder()
            .iter_mut()
            .zip(base.remainder())
            .enumerate()
        {
            *w = b ^ key[i];
        }
    }

    /// Whether the payload is entirely that of key `key`; else how many words differ.
    fn payload_mismatches(&self, buf: &[u8], key: u64) -> usize {
        let payload = &buf[HEADER..];
        let n = payload.len().min(self.base.len());
        let kb = key.to_le_bytes();
        let mut bad = 0usize;
        let mut words = payload[..n].chunks_exact(8);
        let mut base = self.base[..n].chunks_exact(8);
        for (w, b) in (&mut words).zip(&mut base) {
            let got = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
            let want = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) ^ key;
            bad += (got != want) as usize;
        }
        for (i, (w, b)) in words.remainder().iter().zip(base.remainder()).enumerate() {
            bad += (*w != b ^ kb[i]) as usize;
        }
        bad
    }

    /// Whether every payload word is of key `a` or of key `b`, and some are of `b`.
    fn payload_of_two(&self, buf: &[u8], a: u64, b: u64) -> bool {
        let payload = &buf[HEADER..];
        let n = payload.len().min(self.base.len());
        let mut words = payload[..n].chunks_exact(8);
        let mut base = self.base[..n].chunks_exact(8);
        let mut of_b = 0usize;
        for (w, s) in (&mut words).zip(&mut base) {
            let x = get(w, 0) ^ get(s, 0);
            if x == b {
                of_b += 1;
            } else if x != a {
                return false;
            }
        }
        let rest: Vec<u8> = words
            .remainder()
            .iter()
            .zip(base.remainder())
            .map(|(w, s)| w ^ s)
            .collect();
        let of = |k: u64| rest.iter().zip(k.to_le_bytes()).all(|(x, y)| *x == y);
        if !of(a) {
            if !of(b) {
                return false;
            }
            of_b += 1;
        }
        of_b > 0
    }

    /// Checks the record read at `off` into `buf`; returns what is wrong with it.
    #[inline]
    pub fn check(&self, buf: &[u8], off: u64) -> Option<BadKind> {
        self.checked.fetch_add(1, Ordering::Relaxed);
        let rec = (off / self.record_size as u64) as usize;
        let expected = self
            .gens
            .get(rec)
            .map(|g| g.load(Ordering::Relaxed) as u64)
            .unwrap_or(0);
        let verdict = self.classify(buf, off, expected);
        if let Some(kind) = verdict {
            self.bad.fetch_add(1, Ordering::Relaxed);
            self.kinds[index(kind)].fetch_add(1, Ordering::Relaxed);
            if let Ok(mut f) = self.first_bad.lock() {
                if f.is_none() {
                    *f = Some((self.file, off, kind));
                }
            }
        }
        verdict
    }

    /// The pure part of `check`.
    pub fn classify(&self, buf: &[u8], off: u64, expected: u64) -> Option<BadKind> {
        if buf.len() < HEADER || buf.len() != self.record_size {
            return Some(BadKind::Corruption);
        }
        if expected == 0 {
            // Candor never wrote this record: nothing to hold it to.
            return None;
        }
        if get(buf, 0) != MAGIC
            || get(buf, 40) != Self::checksum(&buf[..HEADER])
            || buf[48..HEADER].iter().any(|&b| b != 0)
        {
            if buf.iter().all(|&b| b == 0) {
                return Some(BadKind::Stale); // the write never reached the file
            }
            // A torn write whose first sector did not land keeps an older header whose
            // checksum still holds, so only an unreadable header gets here.
            return Some(BadKind::Corruption);
        }
        let run = get(buf, 8);
        let mut fb = [0u8; 4];
        fb.copy_from_slice(&buf[16..20]);
        let file = u32::from_le_bytes(fb);
        fb.copy_from_slice(&buf[20..24]);
        let rs = u32::from_le_bytes(fb) as usize;
        let h_off = get(buf, 24);
        let h_gen = get(buf, 32);
        if run != self.cfg.run || rs != self.record_size {
            return Some(BadKind::Corruption);
        }
        if h_off != off || file != self.file {
            // A record of this run, in the wrong place.
            return Some(BadKind::Misdirected);
        }
        let own = self.key(file, off, h_gen);
        if self.payload_mismatches(buf, own) == 0 {
            return match h_gen.cmp(&expected) {
                std::cmp::Ordering::Equal => None,
                std::cmp::Ordering::Less => Some(BadKind::Stale),
                std::cmp::Ordering::Greater => Some(BadKind::Corruption),
            };
        }
        // Partly another generation of the same record: a torn write.
        let lo = expected.saturating_sub(TORN_LOOKBACK).max(1);
        for g in lo..=expected + 1 {
            if g != h_gen && self.payload_of_two(buf, own, self.key(file, off, g)) {
                return Some(BadKind::Torn);
            }
        }
        Some(BadKind::Corruption)
    }

    /// Takes what was found so far (and starts counting again).
    pub fn take(&self) -> Tally {
        let mut kinds = [0u64; 4];
        for (k, a) in kinds.iter_mut().zip(&self.kinds) {
            *k = a.swap(0, Ordering::Relaxed);
        }
        Tally {
            written: self.written.swap(0, Ordering::Relaxed),
            checked: self.checked.swap(0, Ordering::Relaxed),
            bad: self.bad.swap(0, Ordering::Relaxed),
            first_bad: self.first_bad.lock().ok().and_then(|mut f| f.take()),
            kinds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fv(rs: usize) -> FileVerify {
        FileVerify::new(
            VerifyConfig::new("run-1", 7),
            0,
            64 * rs as u64,
            rs,
            BufferPattern::Random,
        )
    }

    fn written(v: &FileVerify, off: u64) -> Vec<u8> {
        let mut b = vec![0u8; v.record_size];
        v.stamp(&mut b, off);
        b
    }

    #[test]
    fn a_good_record_passes_and_generations_advance() {
        let v = fv(4096);
        let b1 = written(&v, 8192);
        assert_eq!(v.check(&b1, 8192), Some(BadKind::Stale).filter(|_| false));
        let b2 = written(&v, 8192);
        assert_ne!(b1, b2, "each generation's record differs");
        assert_eq!(v.check(&b2, 8192), None);
        // The first generation read back after the second was written: a lost write.
        assert_eq!(v.check(&b1, 8192), Some(BadKind::Stale));
        let t = v.take();
        assert_eq!((t.written, t.checked, t.bad), (2, 3, 1));
        assert_eq!(t.first_bad, Some((0, 8192, BadKind::Stale)));
    }

    #[test]
    fn a_flipped_bit_is_corruption_anywhere() {
        let v = fv(4096);
        let b = written(&v, 0);
        for at in [0usize, 9, 30, 45, 50, 64, 100, 4095] {
            let mut c = b.clone();
            c[at] ^= 0x10;
            let got = v.classify(&c, 0, 1);
            assert!(
                matches!(got, Some(BadKind::Corruption)),
                "byte {at}: {got:?}"
            );
        }
    }

    #[test]
    fn a_record_in_the_wrong_place_is_misdirected() {
        let v = fv(4096);
        let b = written(&v, 4096 * 5);
        written(&v, 4096 * 9);
        assert_eq!(v.classify(&b, 4096 * 9, 1), Some(BadKind::Misdirected));
        // Another file's record of the same run.
        let other = FileVerify::new(
            VerifyConfig::new("run-1", 7),
            1,
            64 * 4096,
            4096,
            BufferPattern::Random,
        );
        let mut c = vec![0u8; 4096];
        other.stamp(&mut c, 0);
        assert_eq!(v.classify(&c, 0, 1), Some(BadKind::Misdirected));
        // Another run's record at the same place is not taken for ours.
        let foreign = FileVerify::new(
            VerifyConfig::new("run-2", 7),
            0,
            64 * 4096,
            4096,
            BufferPattern::Random,
        );
        let mut d = vec![0u8; 4096];
        foreign.stamp(&mut d, 0);
        assert_eq!(v.classify(&d, 0, 1), Some(BadKind::Corruption));
    }

    #[test]
    fn half_old_half_new_is_torn_either_way() {
        let v = fv(16384);
        let old = written(&v, 0);
        let new = written(&v, 0);
        // New header and first half, old second half.
        let mut t = new.clone();
        t[8192..].copy_from_slice(&old[8192..]);
        assert_eq!(v.classify(&t, 0, 2), Some(BadKind::Torn));
        // Old first sector (header), new rest.
        let mut u = old.clone();
        u[512..].copy_from_slice(&new[512..]);
        assert_eq!(v.classify(&u, 0, 2), Some(BadKind::Torn));
        // A record that never landed: zeroes.
        assert_eq!(v.classify(&vec![0u8; 16384], 0, 2), Some(BadKind::Stale));
    }

    #[test]
    fn odd_record_sizes_and_patterns_round_trip() {
        for rs in [64usize, 100, 513, 4096, 65536 + 3] {
            let v = fv(rs);
            let b = written(&v, rs as u64 * 3);
            assert_eq!(v.classify(&b, rs as u64 * 3, 1), None, "{rs}");
            let mut c = b.clone();
            let last = c.len() - 1;
            c[last] ^= 1;
            if rs > HEADER {
                assert_eq!(v.classify(&c, rs as u64 * 3, 1), Some(BadKind::Corruption));
            }
        }
    }

    /// The CPU cost of verification alone, in memory (docs/reliability.md quotes it):
    /// `cargo test --release -p candor-engine --lib verify::tests::cost -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn cost() {
        for rs in [4096usize, 65536, 1 << 20] {
            let records = (256usize << 20) / rs;
            let v = FileVerify::new(
                VerifyConfig::new("cost", 1),
                0,
                (records * rs) as u64,
                rs,
                BufferPattern::Random,
            );
            let mut buf = vec![0u8; rs];
            let t = std::time::Instant::now();
            for r in 0..records {
                v.stamp(&mut buf, (r * rs) as u64);
            }
            let stamp = t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            let mut bad = 0;
            for r in 0..records {
                v.stamp_as(&mut buf, 0, (r * rs) as u64, 1);
                bad += v.check(&buf, (r * rs) as u64).is_some() as usize;
            }
            let both = t.elapsed().as_secs_f64();
            assert_eq!(bad, 0);
            let gb = (records * rs) as f64 / 1e9;
            println!(
                "record {rs}: stamp {:.1} GB/s, check {:.1} GB/s",
                gb / stamp,
                gb / (both - stamp).max(1e-9)
            );
        }
    }
}
