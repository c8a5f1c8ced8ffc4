//! I/O buffers: allocated once per thread before the timed region, aligned to 4 KiB so
//! O_DIRECT accepts them, and filled (by default; see `verify::BufferPattern`) with
//! incompressible bytes so that compressing or
//! deduplicating filesystems are not flattered by zeroes.

use std::alloc::{alloc_zeroed, dealloc, Layout};

pub const ALIGN: usize = 4096;

pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
    layout: Layout,
}

// SAFETY: the buffer is plain memory owned by this value.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` bytes (rounded up to the alignment) filled from `seed`.
    pub fn new(len: usize, seed: u64) -> Option<AlignedBuf> {
        let cap = len.max(1).div_ceil(ALIGN) * ALIGN;
        let layout = Layout::from_size_align(cap, ALIGN).ok()?;
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return None;
        }
        let mut b = AlignedBuf { ptr, len, layout };
        crate::verify::buffer_pattern().fill(b.as_mut_slice(), seed);
        Some(b)
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
        // SAFETY: allocated with this layout in new().
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// Fills with xorshift64* output: incompressible, reproducible, fast.
pub fn fill_random(buf: &mut [u8], seed: u64) {
    let mut s = seed | 1;
    for chunk in buf.chunks_mut(8) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        let v = s.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_not_zero() {
        let b = AlignedBuf::new(10_000, 7).unwrap();
        assert_eq!(b.as_ptr() as usize % ALIGN, 0);
        assert_eq!(b.len(), 10_000);
        let zeros = b.as_slice().iter().filter(|&&x| x == 0).count();
        assert!(zeros < 200, "{zeros} zero bytes of 10000");
    }
}
