//! Data verification (`--verify`) and the buffer contents (`--buffer-pattern`).
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

use crate::buffer::AlignedBuf;
use crate::engines::{full_pio, EngineError, Fd, OpenSpec};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

pub const HEADER: usize = 64;
pub const MAGIC: u64 = u64::from_le_bytes(*b"CANDORv1");
/// How many earlier generations a torn payload is compared against.
const TORN_LOOKBACK: u64 = 16;

// ---- buffer contents ----

/// What candor's buffers are filled with (`--buffer-pattern`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BufferPattern {
    /// Pseudo-random bytes: incompressible (the default).
    #[default]
    Random,
    /// All zeroes: flatters compressing and deduplicating filesystems (to show by how much).
    Zero,
    /// The given percentage of each 4 KiB block is zero, the rest random: compresses to
    /// about (100 - N)% of its size.
    Compressible(u8),
}

impl BufferPattern {
    /// `random`, `zero` or `compressible=N%` (N from 0 to 100, the `%` optional).
    pub fn parse(text: &str) -> Result<BufferPattern, String> {
        let t = text.trim().to_ascii_lowercase();
        match t.as_str() {
            "random" => return Ok(BufferPattern::Random),
            "zero" | "zeroes" | "zeros" => return Ok(BufferPattern::Zero),
            _ => {}
        }
        let bad = || {
            format!("'{text}' is not a buffer pattern: choose random, zero or compressible=N% (N from 0 to 100)")
        };
        let n = t.strip_prefix("compressible=").ok_or_else(bad)?;
        let n = n.strip_suffix('%').unwrap_or(n).trim();
        let v: u8 = n.parse().map_err(|_| bad())?;
        if v > 100 {
            return Err(bad());
        }
        Ok(BufferPattern::Compressible(v))
    }

    pub fn name(self) -> String {
        match self {
            BufferPattern::Random => "random".into(),
            BufferPattern::Zero => "zero".into(),
            BufferPattern::Compressible(n) => format!("compressible={n}%"),
        }
    }

    /// Fills `buf` reproducibly from `seed`.
    pub fn fill(self, buf: &mut [u8], seed: u64) {
        match self {
            BufferPattern::Random => crate::buffer::fill_random(buf, seed),
            BufferPattern::Zero => buf.fill(0),
            BufferPattern::Compressible(pct) => {
                crate::buffer::fill_random(buf, seed);
                let zeros = 4096 * pct as usize / 100;
                for block in buf.chunks_mut(4096) {
                    let z = zeros.min(block.len());
                    block[..z].fill(0);
                }
            }
        }
    }

    fn code(self) -> u32 {
        match self {
            BufferPattern::Random => 0,
            BufferPattern::Zero => 1,
            BufferPattern::Compressible(n) => 2 + n as u32,
        }
    }

    fn from_code(c: u32) -> BufferPattern {
        match c {
            0 => BufferPattern::Random,
            1 => BufferPattern::Zero,
            n => BufferPattern::Compressible((n - 2).min(100) as u8),
        }
    }
}

static PATTERN: AtomicU32 = AtomicU32::new(0);

/// Sets the pattern every buffer allocated from now on is filled with (once, before the
/// run: buffers are filled when made, never in the timed region).
pub fn set_buffer_pattern(p: BufferPattern) {
    PATTERN.store(p.code(), Ordering::SeqCst);
}

pub fn buffer_pattern() -> BufferPattern {
    BufferPattern::from_code(PATTERN.load(Ordering::Relaxed))
}

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

/// The kinds of bad record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadKind {
    Corruption,
    Misdirected,
    Stale,
    Torn,
}

impl BadKind {
    pub fn name(self) -> &'static str {
        match self {
            BadKind::Corruption => "corruption",
            BadKind::Misdirected => "misdirected",
            BadKind::Stale => "stale",
            BadKind::Torn => "torn",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
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
    pub fn to_json(&self, record_size: u64) -> serde_json::Value {
        let kind = |k: BadKind| self.kinds[k.index()];
        serde_json::json!({
            "record_size": record_size,
            "header_bytes": HEADER,
            "records_written": self.written,
            "records_checked": self.checked,
            "bad_records": self.bad,
            "first_bad_offset": self.first_bad.map(|f| f.1),
            "first_bad_file": self.first_bad.map(|f| f.0),
            "first_bad_kind": self.first_bad.map(|f| f.2.name()),
            "kinds": {
                "corruption": kind(BadKind::Corruption),
                "misdirected": kind(BadKind::Misdirected),
                "stale": kind(BadKind::Stale),
                "torn": kind(BadKind::Torn),
            },
        })
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
        .filter(|k| self.kinds[k.index()] > 0)
        .map(|k| format!("{} {}", self.kinds[k.index()], k.name()))
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
    gens: Vec<AtomicU32>,
    written: AtomicU64,
    checked: AtomicU64,
    bad: AtomicU64,
    kinds: [AtomicU64; 4],
    first_bad: Mutex<Option<(u32, u64, BadKind)>>,
}

impl FileVerify {
    /// For a file of `file_size` bytes in records of `record_size` (at least `HEADER`).
    pub fn new(cfg: VerifyConfig, file: u32, file_size: u64, record_size: usize) -> FileVerify {
        let records = file_size / record_size.max(1) as u64;
        let mut base = vec![0u8; record_size.saturating_sub(HEADER)];
        buffer_pattern().fill(&mut base, mix(cfg.seed ^ 0x5eed));
        FileVerify {
            cfg,
            file,
            record_size,
            base,
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
            self.kinds[kind.index()].fetch_add(1, Ordering::Relaxed);
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

    /// Writes a whole new file of verified records, generation 1 each (untimed
    /// preparation for tests that read or rewrite an existing file).
    pub fn fill_file(&self, path: &Path, file_size: u64) -> Result<(), EngineError> {
        let _ = std::fs::remove_file(path);
        self.forget();
        let spec = OpenSpec {
            path: path.to_path_buf(),
            create: true,
            write: true,
            direct: false,
            osync: false,
            file_size,
            record_size: self.record_size,
            iodepth: 1,
            seed: self.cfg.seed,
        };
        let fd = Fd::open(&spec)?;
        let rs = self.record_size.max(1);
        let per_chunk = ((1usize << 20) / rs).max(1);
        let records = file_size / rs as u64;
        let oom = || {
            EngineError::new(
                "allocate",
                path,
                None,
                io::Error::from(io::ErrorKind::OutOfMemory),
            )
        };
        let mut rec = 0u64;
        while rec < records {
            let k = (per_chunk as u64).min(records - rec) as usize;
            let mut buf = AlignedBuf::new(k * rs, 0).ok_or_else(oom)?;
            for (j, r) in buf.as_mut_slice().chunks_exact_mut(rs).enumerate() {
                self.stamp(r, (rec + j as u64) * rs as u64);
            }
            full_pio(fd.raw(), &mut buf, rec * rs as u64, true, path)?;
            rec += k as u64;
            if crate::signals::stop_requested().is_some() {
                break;
            }
        }
        // Preparation writes are not part of any test's count.
        self.written.store(0, Ordering::Relaxed);
        fd.fsync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fv(rs: usize) -> FileVerify {
        FileVerify::new(VerifyConfig::new("run-1", 7), 0, 64 * rs as u64, rs)
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
        let other = FileVerify::new(VerifyConfig::new("run-1", 7), 1, 64 * 4096, 4096);
        let mut c = vec![0u8; 4096];
        other.stamp(&mut c, 0);
        assert_eq!(v.classify(&c, 0, 1), Some(BadKind::Misdirected));
        // Another run's record at the same place is not taken for ours.
        let foreign = FileVerify::new(VerifyConfig::new("run-2", 7), 0, 64 * 4096, 4096);
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
            let v = FileVerify::new(VerifyConfig::new("cost", 1), 0, (records * rs) as u64, rs);
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

    #[test]
    fn buffer_patterns_parse_and_fill() {
        assert_eq!(BufferPattern::parse("zero"), Ok(BufferPattern::Zero));
        assert_eq!(BufferPattern::parse("Random"), Ok(BufferPattern::Random));
        assert_eq!(
            BufferPattern::parse("compressible=50%"),
            Ok(BufferPattern::Compressible(50))
        );
        assert_eq!(
            BufferPattern::parse("compressible=25"),
            Ok(BufferPattern::Compressible(25))
        );
        for bad in [
            "compressible=101%",
            "compressible=",
            "ones",
            "",
            "compressible=-1",
        ] {
            let e = BufferPattern::parse(bad).unwrap_err();
            assert!(e.contains("choose random, zero"), "{bad}: {e}");
        }
        let mut b = vec![1u8; 8192];
        BufferPattern::Compressible(50).fill(&mut b, 3);
        assert!(b[..2048].iter().all(|&x| x == 0));
        assert!(b[2048..4096].iter().filter(|&&x| x == 0).count() < 64);
        BufferPattern::Zero.fill(&mut b, 3);
        assert!(b.iter().all(|&x| x == 0));
        for p in [
            BufferPattern::Random,
            BufferPattern::Zero,
            BufferPattern::Compressible(0),
            BufferPattern::Compressible(100),
        ] {
            assert_eq!(BufferPattern::from_code(p.code()), p);
            assert_eq!(BufferPattern::parse(&p.name()), Ok(p));
        }
    }

    #[test]
    fn a_filled_file_reads_back_clean_and_a_damaged_one_does_not() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let v = fv(4096);
        v.fill_file(&p, 64 * 4096).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        let mut buf = vec![0u8; 4096];
        for r in 0..64u64 {
            f.read_exact_at(&mut buf, r * 4096).unwrap();
            assert_eq!(v.check(&buf, r * 4096), None, "record {r}");
        }
        // Record 3 copied over record 7; a byte of record 10 flipped.
        f.read_exact_at(&mut buf, 3 * 4096).unwrap();
        f.write_all_at(&buf, 7 * 4096).unwrap();
        f.read_exact_at(&mut buf, 10 * 4096).unwrap();
        buf[2000] ^= 0xff;
        f.write_all_at(&buf, 10 * 4096).unwrap();
        let mut found = Vec::new();
        for r in 0..64u64 {
            f.read_exact_at(&mut buf, r * 4096).unwrap();
            if let Some(k) = v.check(&buf, r * 4096) {
                found.push((r, k));
            }
        }
        assert_eq!(
            found,
            [(7, BadKind::Misdirected), (10, BadKind::Corruption)]
        );
        let t = v.take();
        assert_eq!((t.checked, t.bad), (128, 2));
        assert_eq!(t.first_bad, Some((0, 7 * 4096, BadKind::Misdirected)));
        assert!(t
            .describe(&|i| format!("t{i}.dat"))
            .unwrap()
            .contains("2 of 128 records"));
    }
}
