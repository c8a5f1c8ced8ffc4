//! Access patterns: the order in which a test visits the records of its file. Each is a
//! pure function from the operation's index to a record number, computed on the fly (no
//! table of offsets, so a 1 TiB file costs no memory) and tested to visit every record
//! exactly once per pass.

/// A bijection of [0, n) in a pseudo-random order: a 4-round Feistel network over the
/// smallest even power of two >= n, with cycle-walking to stay inside [0, n). Cheap (a few
/// multiplications per record) and reproducible from the seed.
#[derive(Clone, Copy, Debug)]
struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    fn new(n: u64, seed: u64) -> Self {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut s = seed ^ 0x9e37_79b9_7f4a_7c15;
        let mut keys = [0u64; 4];
        for k in keys.iter_mut() {
            s = splitmix(s);
            *k = s;
        }
        Permutation { n, half_bits, keys }
    }

    #[inline]
    fn round(&self, x: u64, k: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        (splitmix(x ^ k)) & mask
    }

    #[inline]
    fn encrypt(&self, v: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let mut l = v >> self.half_bits;
        let mut r = v & mask;
        for &k in &self.keys {
            let nl = r;
            r = l ^ self.round(r, k);
            l = nl;
        }
        (l << self.half_bits) | r
    }

    #[inline]
    fn at(&self, i: u64) -> u64 {
        let mut v = self.encrypt(i);
        while v >= self.n {
            v = self.encrypt(v);
        }
        v
    }
}

#[inline]
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Sequential,
    Backward,
    Random(Permutation),
    /// Stride jumps of `stride` records; when the stride shares a factor with the record
    /// count, each cycle starts one record later, so every record is still read once.
    Stride {
        stride: u64,
        cycle: u64,
    },
    SameRecord,
}

#[derive(Clone, Copy, Debug)]
pub struct Pattern {
    records: u64,
    kind: Kind,
}

impl Pattern {
    pub fn sequential(records: u64) -> Self {
        Pattern {
            records,
            kind: Kind::Sequential,
        }
    }

    pub fn backward(records: u64) -> Self {
        Pattern {
            records,
            kind: Kind::Backward,
        }
    }

    pub fn random(records: u64, seed: u64) -> Self {
        Pattern {
            records,
            kind: Kind::Random(Permutation::new(records.max(1), seed)),
        }
    }

    pub fn stride(records: u64, stride: u64) -> Self {
        let stride = if records == 0 {
            1
        } else {
            stride.max(1) % records.max(1)
        };
        let stride = if stride == 0 { 1 } else { stride };
        let g = gcd(stride, records.max(1));
        Pattern {
            records,
            kind: Kind::Stride {
                stride,
                cycle: records.max(1) / g,
            },
        }
    }

    pub fn same_record(records: u64) -> Self {
        Pattern {
            records,
            kind: Kind::SameRecord,
        }
    }

    /// How many operations one pass makes (one per record).
    pub fn len(&self) -> u64 {
        self.records
    }

    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// The record the `i`-th operation touches (0 <= i < len).
    #[inline(always)]
    pub fn at(&self, i: u64) -> u64 {
        match self.kind {
            Kind::Sequential => i,
            Kind::Backward => self.records - 1 - i,
            Kind::Random(p) => p.at(i),
            Kind::Stride { stride, cycle } => {
                let start = i / cycle;
                let k = i % cycle;
                ((start as u128 + k as u128 * stride as u128) % self.records as u128) as u64
            }
            Kind::SameRecord => 0,
        }
    }

    /// True when consecutive operations are at consecutive offsets (no seek needed).
    pub fn is_sequential(&self) -> bool {
        matches!(self.kind, Kind::Sequential)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visits(p: &Pattern) -> Vec<u64> {
        (0..p.len()).map(|i| p.at(i)).collect()
    }

    fn covers_each_once(p: &Pattern, n: u64) {
        let mut seen = vec![false; n as usize];
        for r in visits(p) {
            assert!(r < n, "record {r} outside {n}");
            assert!(!seen[r as usize], "record {r} visited twice");
            seen[r as usize] = true;
        }
        assert!(seen.iter().all(|&s| s), "a record was never visited");
    }

    #[test]
    fn sequential_and_backward() {
        assert_eq!(visits(&Pattern::sequential(4)), [0, 1, 2, 3]);
        assert_eq!(visits(&Pattern::backward(4)), [3, 2, 1, 0]);
    }

    #[test]
    fn random_covers_every_record_exactly_once() {
        for n in [1u64, 2, 3, 7, 16, 100, 1000, 4097, 65536, 100_003] {
            for seed in [1u64, 42] {
                covers_each_once(&Pattern::random(n, seed), n);
            }
        }
    }

    #[test]
    fn random_is_not_sequential_and_depends_on_seed() {
        let a = visits(&Pattern::random(1000, 1));
        let b = visits(&Pattern::random(1000, 2));
        assert_ne!(a, b);
        let in_order = a.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(in_order < 20, "{in_order} consecutive steps in 1000");
    }

    #[test]
    fn stride_jumps_and_covers() {
        // 10 records, stride 3 (coprime): 0 3 6 9 2 5 8 1 4 7
        assert_eq!(
            visits(&Pattern::stride(10, 3)),
            [0, 3, 6, 9, 2, 5, 8, 1, 4, 7]
        );
        // 12 records, stride 4: gcd 4, cycles of 3, each starting one later.
        assert_eq!(
            visits(&Pattern::stride(12, 4)),
            [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]
        );
        for (n, s) in [(256u64, 17u64), (17, 17), (1024, 64), (1, 17), (5, 17)] {
            covers_each_once(&Pattern::stride(n, s), n);
        }
    }

    #[test]
    fn same_record_stays_put() {
        assert_eq!(visits(&Pattern::same_record(3)), [0, 0, 0]);
    }
}
