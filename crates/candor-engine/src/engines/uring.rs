//! io_uring: up to `--iodepth` I/Os in flight, one buffer per slot (all cut from one
//! mapping in transparent huge pages, so an O_DIRECT request is a few physically contiguous
//! segments), buffers and file registered with the ring (no per-I/O page pinning or file
//! lookup). The ring asks for SINGLE_ISSUER + DEFER_TASKRUN, then COOP_TASKRUN, then
//! nothing, keeping the first the kernel accepts.
//!
//! Submission has two modes, chosen by what the I/O did last:
//! - **To a device** (completions arrive later): the free slots are refilled and handed
//!   to the kernel [`CHUNK`] requests at a time, the last call also waiting for one
//!   completion. A request is what the device will see: with O_DIRECT a run of
//!   contiguous records of one direction, forwards or backwards, counts once, since the
//!   block layer merges it under the plug; buffered, each record counts (its work is a
//!   page cache copy, or an io-wq worker's write, that the next can follow). A whole
//!   queue in one call is plugged and reaches the device only when its last request is
//!   built, all at once. Measured on a virtio disk, 4 KiB O_DIRECT random reads at QD 32:
//!   75.0k IOPS with whole batches, 89.5k with chunks of 4 (the disk's queue time per read
//!   370-392 us against 295-299 us); fio gains alike, 83.0k with whole batches and 89.4k
//!   with 4 (docs/performance.md, "io_uring: how a queue is handed over"). Sequential
//!   O_DIRECT records stay in one call, merged into few large requests.
//! - **Inline** (every I/O of a chunk completed within the call that submitted it: page
//!   cache hits): there is no device to keep busy, so everything ready goes in one call
//!   and the chunking's extra calls are saved. A batch that leaves I/O in flight switches
//!   back.
//!
//! Latency of an I/O runs from just before the system call that submitted it to just after
//! the one that reaped it (the clock is read once per batch, not per I/O: every I/O in a
//! batch was submitted, or seen complete, at the same moment).

use super::shared::{Engine, EngineError, Fd, Job, OpenSpec, ThreadStats};
use crate::buffer::AlignedBuf;
use crate::clock::now_ns;
use io_uring::{opcode, types, IoUring};
use std::io;

/// Requests per system call while the I/O goes to a device (see the module's text).
const CHUNK: usize = 4;

#[derive(Default)]
pub struct UringEngine {
    fd: Fd,
    ring: Option<IoUring>,
    bufs: Vec<AlignedBuf>,
    /// Per slot, made in `open` (nothing is allocated in `run`): the operation index and the
    /// clock value of the system call that submitted it.
    slot_op: Vec<u64>,
    slot_t: Vec<u64>,
    /// Per slot, the file offset of its I/O (its pass's order may be gone by completion).
    slot_off: Vec<u64>,
    /// Slots ready for a new I/O, and those queued since the last system call.
    free: Vec<usize>,
    batch: Vec<usize>,
    fixed_bufs: bool,
    fixed_file: bool,
    /// O_DIRECT: records go to the block layer as they are, so contiguous ones merge.
    direct: bool,
    /// Which setup flags the kernel accepted ("single_issuer+defer_taskrun", ...).
    pub setup: &'static str,
}

fn build_ring(entries: u32) -> io::Result<(IoUring, &'static str)> {
    if let Ok(r) = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)
    {
        return Ok((r, "single_issuer+defer_taskrun"));
    }
    if let Ok(r) = IoUring::builder().setup_coop_taskrun().build(entries) {
        return Ok((r, "coop_taskrun"));
    }
    IoUring::new(entries).map(|r| (r, "plain"))
}

/// The outcome of an `io_uring_enter`. A signal (EINTR) or a completion ring with no room
/// (EBUSY) is not an error: what was not submitted stays in the submission ring for the
/// next call, and the loop reaps before it calls again.
fn entered(r: io::Result<usize>, path: &std::path::Path) -> Result<(), EngineError> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => Ok(()),
        Err(e) => Err(EngineError::new("io_uring_enter", path, None, e)),
    }
}

impl Engine for UringEngine {
    fn open(&mut self, spec: &OpenSpec) -> Result<(), EngineError> {
        self.fd = Fd::open(spec)?;
        self.direct = spec.direct;
        let depth = spec.iodepth.max(1);
        let (ring, setup) = build_ring(depth.next_power_of_two())
            .map_err(|e| EngineError::new("io_uring_setup", &spec.path, None, e))?;
        self.setup = setup;
        self.bufs.clear();
        // One mapping in huge pages for all slots where they span 64 KiB or more, so a
        // 1 MiB O_DIRECT request is a few physically contiguous segments.
        self.bufs = spec.record_buffers(depth as usize)?;
        let iovecs: Vec<libc::iovec> = self
            .bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr() as *mut _,
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: the buffers outlive the ring's use of them (dropped after the ring).
        self.fixed_bufs = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        self.fixed_file = ring.submitter().register_files(&[self.fd.raw()]).is_ok();
        self.ring = Some(ring);
        let depth = depth as usize;
        self.slot_op = vec![0; depth];
        self.slot_t = vec![0; depth];
        self.slot_off = vec![0; depth];
        self.free = Vec::with_capacity(depth);
        self.batch = Vec::with_capacity(depth);
        Ok(())
    }

    fn run(&mut self, job: &Job, stats: &mut ThreadStats) -> Result<(), EngineError> {
        let UringEngine {
            fd,
            ring,
            bufs,
            slot_op,
            slot_t,
            slot_off,
            free,
            batch,
            fixed_bufs,
            fixed_file,
            direct,
            ..
        } = self;
        let direct = *direct;
        let Some(ring) = ring.as_mut() else {
            return Err(EngineError::not_open(&fd.path));
        };
        let (fixed_bufs, fixed_file) = (*fixed_bufs, *fixed_file);
        let path = &fd.path;
        let fd = fd.raw();
        let depth = bufs
            .len()
            .min(slot_op.len())
            .min(slot_t.len())
            .min(slot_off.len());
        let len = job.record_size as u32;
        // Time-based with nothing to do between passes (`job.passes`): at the end of a
        // pass the next one starts at once, the queue kept full, instead of draining.
        let mut pattern = job.pattern;
        let mut n = pattern.len();
        let mut pass = 0u64;
        free.clear();
        free.extend((0..depth).rev());
        batch.clear();
        let mut next: u64 = 0;
        let mut inflight = 0usize;
        let mut stopping = false;
        // --verify: the offset of a completed read waiting in each slot to be checked (it
        // is checked when the slot is reused, or after the last completion), so the
        // completion path has no verification branch at all.
        let mut unchecked: Vec<Option<u64>> = match job.verify {
            Some(_) => vec![None; depth],
            None => Vec::new(),
        };
        let (submitter, mut sq, mut cq) = ring.split();
        // Learned from the I/O itself: true while it completes inside its submitting call.
        let mut inline = false;
        // The batch being built: how many requests the device will see in it, and the
        // extent and direction of the last one.
        let mut requests = 0usize;
        let (mut run, mut run_w) = ((0u64, 0u64), false);
        let mut now = now_ns();
        loop {
            if !stopping && job.should_stop(now) {
                stopping = true;
            }
            // Refresh our view of the submission ring: the kernel consumed the last batch.
            sq.sync();
            while !stopping && free.last().is_some() {
                if next >= n {
                    match job.passes {
                        Some(p) if n > 0 => {
                            pass += 1;
                            pattern = p.pattern(pass);
                            n = pattern.len();
                            next = 0;
                        }
                        _ => break,
                    }
                }
                let Some(slot) = free.pop() else { break };
                let off = job.offset_in(&pattern, next);
                let w = job.is_write(next);
                // With O_DIRECT, a record that neither continues nor precedes the last
                // request of the batch is a new request at the device (the block layer
                // merges a record of the same direction into the plug's last request at
                // either end). Buffered, every record is its own piece of work (a page
                // cache copy, or an io-wq worker's write) and is counted alone.
                let end = off + len as u64;
                let merges = direct && !batch.is_empty() && w == run_w;
                if merges && off == run.1 {
                    run.1 = end;
                } else if merges && end == run.0 {
                    run.0 = off;
                } else {
                    if !inline && requests == CHUNK {
                        // Hand these to the device now, while the rest are built.
                        sq.sync();
                        let handed = batch.len();
                        for s in batch.drain(..) {
                            slot_t[s] = now;
                        }
                        entered(submitter.submit(), path)?;
                        now = now_ns();
                        sq.sync();
                        // With DEFER_TASKRUN a device's completions are posted only when
                        // we ask for events, so what is there now completed inline.
                        cq.sync();
                        inline = cq.len() >= handed;
                        requests = 0;
                    }
                    requests += 1;
                    run = (off, end);
                    run_w = w;
                }
                let buf = &mut bufs[slot];
                if let Some(v) = job.verify {
                    if let Some(read_at) = unchecked[slot].take() {
                        v.check(buf.as_slice(), read_at);
                    }
                    if w {
                        v.stamp(buf.as_mut_slice(), off);
                    } else {
                        unchecked[slot] = Some(off);
                    }
                }
                let ptr = buf.as_mut_ptr();
                let entry = match (w, fixed_bufs, fixed_file) {
                    (false, true, true) => {
                        opcode::ReadFixed::new(types::Fixed(0), ptr, len, slot as u16)
                            .offset(off)
                            .build()
                    }
                    (true, true, true) => {
                        opcode::WriteFixed::new(types::Fixed(0), ptr, len, slot as u16)
                            .offset(off)
                            .build()
                    }
                    (false, true, false) => {
                        opcode::ReadFixed::new(types::Fd(fd), ptr, len, slot as u16)
                            .offset(off)
                            .build()
                    }
                    (true, true, false) => {
                        opcode::WriteFixed::new(types::Fd(fd), ptr, len, slot as u16)
                            .offset(off)
                            .build()
                    }
                    (false, false, true) => opcode::Read::new(types::Fixed(0), ptr, len)
                        .offset(off)
                        .build(),
                    (true, false, true) => opcode::Write::new(types::Fixed(0), ptr, len)
                        .offset(off)
                        .build(),
                    (false, false, false) => opcode::Read::new(types::Fd(fd), ptr, len)
                        .offset(off)
                        .build(),
                    (true, false, false) => opcode::Write::new(types::Fd(fd), ptr, len)
                        .offset(off)
                        .build(),
                };
                // SAFETY: the buffer stays alive and untouched until its completion is reaped.
                if unsafe { sq.push(&entry.user_data(slot as u64)) }.is_err() {
                    free.push(slot);
                    break;
                }
                slot_op[slot] = next;
                slot_off[slot] = off;
                batch.push(slot);
                next += 1;
                inflight += 1;
            }
            if inflight == 0 {
                if !stopping && next < n {
                    // Nothing in flight yet nothing could be queued: a ring that never
                    // frees a slot would otherwise end the pass silently.
                    return Err(EngineError::new(
                        "io_uring submit",
                        path,
                        None,
                        io::Error::other("the submission ring stayed full"),
                    ));
                }
                break;
            }
            sq.sync();
            // Every I/O of this batch is submitted by the next call: they share its time.
            let submitted = batch.len();
            for s in batch.drain(..) {
                slot_t[s] = now;
            }
            requests = 0;
            entered(submitter.submit_and_wait(1), path)?;
            now = now_ns();
            if inline {
                // Still inline only if the whole batch completed within the call.
                cq.sync();
                inline = submitted > 0 && cq.len() >= submitted;
            }
            // Reap until the ring shows nothing more. The last `sync` also hands the kernel
            // our head: `CompletionQueue` keeps it locally until then, and a head left
            // behind makes the next `io_uring_enter` see the CQEs just reaped as still
            // waiting and return at once, without a completion (two calls per I/O).
            loop {
                cq.sync();
                if cq.is_empty() {
                    break;
                }
                for cqe in &mut cq {
                    let slot = cqe.user_data() as usize;
                    let res = cqe.result();
                    let op = slot_op.get(slot).copied().unwrap_or(0);
                    let w = job.is_write(op);
                    let off = slot_off.get(slot).copied().unwrap_or(0);
                    if res < 0 {
                        return Err(EngineError::new(
                            if w { "io_uring write" } else { "io_uring read" },
                            path,
                            Some(off),
                            io::Error::from_raw_os_error(-res),
                        ));
                    }
                    if (res as u32) < len {
                        return Err(EngineError::new(
                            if w { "io_uring write" } else { "io_uring read" },
                            path,
                            Some(off),
                            io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                format!("moved {res} of {len} bytes"),
                            ),
                        ));
                    }
                    stats.record_op(w, now.saturating_sub(slot_t[slot]), len as u64);
                    inflight -= 1;
                    free.push(slot);
                }
            }
        }
        // Nothing is in flight any more: the reads still waiting in their slots are done.
        if let Some(v) = job.verify {
            for (slot, read_at) in unchecked.iter_mut().enumerate() {
                if let (Some(o), Some(b)) = (read_at.take(), bufs.get(slot)) {
                    v.check(b.as_slice(), o);
                }
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), EngineError> {
        self.fd.fsync()
    }

    fn close(&mut self) -> Result<(), EngineError> {
        self.ring = None;
        self.fd.close()
    }
}
