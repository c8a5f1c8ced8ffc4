//! The recording of `candor audit --record`: the tracer's syscall programs (bpf/candor.bpf.c,
//! `record_call`) hand every file-I/O call of the tracked set (never candor's own) to a ring
//! buffer, which a thread of its own drains every few milliseconds into a sink. Calls the
//! kernel could not hand over (ring buffer full) are counted (`Recording::stop`'s `lost`).

/// A fork record's `nr`: `args[0]` is the child's pid.
pub const FORK: u32 = 0xFFFF;
const PATH: usize = 256;
/// `struct rec_call`'s size: 3 u64, 6 args, extra, 4 u32.
const CALL: usize = 8 * 3 + 8 * 6 + 8 + 4 * 4;

/// One recorded call as the kernel wrote it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawCall {
    /// When it began (CLOCK_MONOTONIC, ns) and how long it took.
    pub ts: u64,
    pub dur: u64,
    pub ret: i64,
    pub args: [u64; 6],
    /// stat family: the size it returned.
    pub extra: u64,
    pub tid: u32,
    pub tgid: u32,
    /// The x86_64 syscall number, or `FORK`.
    pub nr: u32,
    pub p1: String,
    pub p2: String,
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().unwrap_or_default())
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().unwrap_or_default())
}

fn c_str(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Decodes one ring buffer record; None for one of another size.
pub fn decode(b: &[u8]) -> Option<RawCall> {
    if b.len() < CALL {
        return None;
    }
    let mut args = [0u64; 6];
    for (i, a) in args.iter_mut().enumerate() {
        *a = u64_at(b, 24 + 8 * i);
    }
    let has_paths = u32_at(b, CALL - 4) != 0;
    let mut c = RawCall {
        ts: u64_at(b, 0),
        dur: u64_at(b, 8),
        ret: u64_at(b, 16) as i64,
        args,
        extra: u64_at(b, 72),
        tid: u32_at(b, 80),
        tgid: u32_at(b, 84),
        nr: u32_at(b, 88),
        ..Default::default()
    };
    if has_paths {
        if b.len() < CALL + 2 * PATH {
            return None;
        }
        c.p1 = c_str(&b[CALL..CALL + PATH]);
        c.p2 = c_str(&b[CALL + PATH..CALL + 2 * PATH]);
    }
    Some(c)
}

/// A recording under way: stop it to get the number of calls lost.
pub struct Recording {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Recording {
    /// Stops recording after a last drain of the ring buffer; returns the calls lost.
    pub fn stop(mut self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or(0)
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Drains `ring` into `sink` on a thread of its own until the recording is stopped; `lost`
/// is the kernel's count of the calls it had no room for.
#[cfg(not(candor_bpf_disabled))]
pub(crate) fn spawn(
    mut ring: aya::maps::RingBuf<aya::maps::MapData>,
    lost: aya::maps::Array<aya::maps::MapData, u64>,
    mut sink: Box<dyn FnMut(RawCall) + Send>,
) -> std::io::Result<Recording> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("candor-record".into())
        .spawn(move || {
            let mut drain = |ring: &mut aya::maps::RingBuf<aya::maps::MapData>| {
                while let Some(item) = ring.next() {
                    if let Some(c) = decode(&item) {
                        sink(c);
                    }
                }
            };
            while !flag.load(std::sync::atomic::Ordering::Acquire) {
                drain(&mut ring);
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            drain(&mut ring);
            lost.get(&0, 0).unwrap_or(0)
        })?;
    Ok(Recording {
        stop,
        thread: Some(thread),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_decodes_with_its_paths() {
        let mut b = vec![0u8; CALL + 2 * PATH];
        b[0..8].copy_from_slice(&5u64.to_ne_bytes());
        b[16..24].copy_from_slice(&(-2i64).to_ne_bytes());
        b[24..32].copy_from_slice(&(-100i64 as u64).to_ne_bytes());
        b[80..84].copy_from_slice(&7u32.to_ne_bytes());
        b[84..88].copy_from_slice(&6u32.to_ne_bytes());
        b[88..92].copy_from_slice(&257u32.to_ne_bytes());
        b[92..96].copy_from_slice(&1u32.to_ne_bytes());
        b[CALL..CALL + 4].copy_from_slice(b"a.db");
        let c = decode(&b).expect("decodes");
        assert_eq!((c.ts, c.ret, c.tid, c.tgid, c.nr), (5, -2, 7, 6, 257));
        assert_eq!(c.args[0] as i64, -100);
        assert_eq!((c.p1.as_str(), c.p2.as_str()), ("a.db", ""));
        assert!(decode(&b[..CALL]).is_none());
    }
}
