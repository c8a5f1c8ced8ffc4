//! I/O buffers: allocated once per thread before the timed region, aligned to 4 KiB so
//! O_DIRECT accepts them, and filled with the run's `BufferPattern` (by default
//! incompressible bytes, so that compressing or deduplicating filesystems are not flattered
//! by zeroes). The pattern travels in each `OpenSpec`; nothing here reads global state.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::Arc;

pub const ALIGN: usize = 4096;

/// A transparent huge page on x86-64 and arm64 (4 KiB base pages).
const HUGE: usize = 2 << 20;

pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
    owner: Owner,
}

/// Where a buffer's memory comes from, and so how it goes back.
enum Owner {
    Heap(Layout),
    /// A slice of a mapping shared with the other buffers cut from it.
    Map(#[allow(dead_code)] Arc<Mapping>),
}

/// An anonymous mapping, unmapped when its last buffer is dropped.
struct Mapping {
    base: *mut libc::c_void,
    size: usize,
}

// SAFETY: plain memory, only reached through the buffers that own a share of it.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: mapped with this base and size in `AlignedBuf::in_huge_pages`.
        unsafe { libc::munmap(self.base, self.size) };
    }
}

// SAFETY: the buffer is plain memory owned by this value.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` bytes (rounded up to the alignment) filled with `pattern` from `seed`.
    pub fn new(len: usize, seed: u64, pattern: BufferPattern) -> Option<AlignedBuf> {
        let cap = len.max(1).div_ceil(ALIGN) * ALIGN;
        let layout = Layout::from_size_align(cap, ALIGN).ok()?;
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return None;
        }
        let mut b = AlignedBuf {
            ptr,
            len,
            owner: Owner::Heap(layout),
        };
        pattern.fill(b.as_mut_slice(), seed);
        Some(b)
    }

    /// `n` buffers of `len` bytes, the `k`th filled from `seed + k`, cut one after another
    /// from one mapping aligned to 2 MiB and asked for in transparent huge pages
    /// (`MADV_HUGEPAGE`; `madvise` mode is enough). A buffer of up to 2 MiB then lies in
    /// physically contiguous memory where the kernel grants the huge pages: an O_DIRECT
    /// request made from it is a few scatter-gather segments instead of one per 4 KiB
    /// page, which is what a virtio disk without indirect descriptors has room for in its
    /// queue. Where huge pages are refused the buffers are ordinary pages, as `new` gives.
    pub fn in_huge_pages(
        n: usize,
        len: usize,
        seed: u64,
        pattern: BufferPattern,
    ) -> Option<Vec<AlignedBuf>> {
        let cap = len.max(1).div_ceil(ALIGN) * ALIGN;
        let used = cap.checked_mul(n.max(1))?.div_ceil(HUGE) * HUGE;
        let size = used.checked_add(HUGE)?;
        // SAFETY: a new private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let map = Arc::new(Mapping { base, size });
        let start = (base as usize).div_ceil(HUGE) * HUGE;
        // SAFETY: [start, start + used) lies inside the mapping. Refused or not, the
        // memory is usable.
        unsafe { libc::madvise(start as *mut libc::c_void, used, libc::MADV_HUGEPAGE) };
        let mut out = Vec::with_capacity(n);
        for k in 0..n {
            let mut b = AlignedBuf {
                ptr: (start + k * cap) as *mut u8,
                len,
                owner: Owner::Map(Arc::clone(&map)),
            };
            pattern.fill(b.as_mut_slice(), seed.wrapping_add(k as u64));
            out.push(b);
        }
        Some(out)
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes for the life of self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusivity.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if let Owner::Heap(layout) = self.owner {
            // SAFETY: allocated with this layout in new().
            unsafe { dealloc(self.ptr, layout) }
        }
    }
}

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
            BufferPattern::Random => fill_random(buf, seed),
            BufferPattern::Zero => buf.fill(0),
            BufferPattern::Compressible(pct) => {
                fill_random(buf, seed);
                let zeros = 4096 * pct as usize / 100;
                for block in buf.chunks_mut(4096) {
                    let z = zeros.min(block.len());
                    block[..z].fill(0);
                }
            }
        }
    }
}

/// Fills with xorshift64* output: incompressible, reproducible, fast. Every seed gives its
/// own bytes: the seed is mixed (SplitMix64's finaliser, a bijection) into the generator's
/// state, which must not be zero. (Setting the low bit instead, as this once did, gave
/// seeds 2 and 3 the very same bytes.)
pub fn fill_random(buf: &mut [u8], seed: u64) {
    let mut s = mix(seed);
    if s == 0 {
        s = 0x9e37_79b9_7f4a_7c15;
    }
    for chunk in buf.chunks_mut(8) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        let v = s.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

/// SplitMix64's output function: a bijection of u64 that spreads every bit of `x`.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_fills_its_own_bytes() {
        let fill = |seed| {
            let mut b = vec![0u8; 4096];
            fill_random(&mut b, seed);
            b
        };
        // Neighbouring seeds, the low bit alone, zero and the largest.
        let seeds = [0, 1, 2, 3, 206229700, 206229701, u64::MAX - 1, u64::MAX];
        for (i, &a) in seeds.iter().enumerate() {
            assert_eq!(fill(a), fill(a), "seed {a} is reproducible");
            for &b in &seeds[i + 1..] {
                assert_ne!(fill(a), fill(b), "seeds {a} and {b}");
            }
        }
    }

    #[test]
    fn aligned_and_not_zero() {
        let b = AlignedBuf::new(10_000, 7, BufferPattern::Random).unwrap();
        assert_eq!(b.as_ptr() as usize % ALIGN, 0);
        assert_eq!(b.len(), 10_000);
        let zeros = b.as_slice().iter().filter(|&&x| x == 0).count();
        assert!(zeros < 200, "{zeros} zero bytes of 10000");
    }

    #[test]
    fn buffers_in_huge_pages_are_aligned_apart_and_filled() {
        let bufs = AlignedBuf::in_huge_pages(3, 10_000, 7, BufferPattern::Random).unwrap();
        assert_eq!(bufs.len(), 3);
        assert_eq!(bufs[0].as_ptr() as usize % HUGE, 0);
        for (k, b) in bufs.iter().enumerate() {
            assert_eq!(b.len(), 10_000);
            assert_eq!(b.as_ptr() as usize % ALIGN, 0);
            let own = AlignedBuf::new(10_000, 7 + k as u64, BufferPattern::Random).unwrap();
            assert_eq!(
                b.as_slice(),
                own.as_slice(),
                "buffer {k} filled from seed + {k}"
            );
        }
        // No two overlap.
        assert!(bufs[1].as_ptr() as usize >= bufs[0].as_ptr() as usize + 10_000);
        assert!(bufs[2].as_ptr() as usize >= bufs[1].as_ptr() as usize + 10_000);
        // The mapping outlives the first buffers dropped.
        let last = bufs.into_iter().last().unwrap();
        assert_eq!(last.as_slice().len(), 10_000);
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
            assert_eq!(BufferPattern::parse(&p.name()), Ok(p));
        }
    }
}
