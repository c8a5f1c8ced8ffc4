//! The few MPI calls candor needs, through rsmpi: init (funneled: only the main thread
//! calls MPI, I/O threads never do), rank and size, barrier, gather and all-gather of byte
//! strings (results travel as JSON), broadcast, point-to-point for the clock exchange,
//! the processor name, abort. Finalize happens when the `World` is dropped.

use crate::clock::{estimate, Exchange, Offset};
use crate::Error;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Threading;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub struct World {
    comm: SimpleCommunicator,
    // Dropped last: finalizes MPI.
    _universe: Universe,
}

fn displacements(counts: &[i32]) -> Vec<i32> {
    counts
        .iter()
        .scan(0i32, |acc, &c| {
            let d = *acc;
            *acc = acc.saturating_add(c);
            Some(d)
        })
        .collect()
}

fn split(buf: &[u8], counts: &[i32]) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(counts.len());
    let mut at = 0usize;
    for &c in counts {
        let end = (at + c.max(0) as usize).min(buf.len());
        out.push(buf[at..end].to_vec());
        at = end;
    }
    out
}

fn len_i32(b: &[u8]) -> i32 {
    // Results of one test are kilobytes; MPI counts are i32.
    i32::try_from(b.len()).unwrap_or(i32::MAX)
}

impl World {
    /// Starts MPI, after checking that a launcher started this process.
    pub fn init() -> Result<World, Error> {
        if crate::launch::detect_env().is_none() {
            return Err(Error::NotLaunched);
        }
        let (universe, _level) = mpi::initialize_with_threading(Threading::Funneled)
            .ok_or_else(|| Error::Init("MPI was already initialised".into()))?;
        let comm = universe.world();
        Ok(World {
            comm,
            _universe: universe,
        })
    }

    pub fn rank(&self) -> u32 {
        self.comm.rank().max(0) as u32
    }

    pub fn size(&self) -> u32 {
        self.comm.size().max(1) as u32
    }

    pub fn barrier(&self) {
        self.comm.barrier();
    }

    /// MPI_Get_processor_name: the node this rank runs on.
    pub fn processor_name(&self) -> String {
        mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into())
    }

    /// The MPI library's own description, first line.
    pub fn library(&self) -> String {
        mpi::environment::library_version()
            .ok()
            .and_then(|v| {
                v.lines().next().map(|l| {
                    l.trim_matches(|c: char| c == '\0' || c == ',' || c.is_whitespace())
                        .to_string()
                })
            })
            .unwrap_or_default()
    }

    /// Every rank's bytes, on every rank, in rank order.
    pub fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let n = self.size() as usize;
        let mut counts = vec![0i32; n];
        self.comm.all_gather_into(&len_i32(mine), &mut counts[..]);
        let displs = displacements(&counts);
        let total: usize = counts.iter().map(|&c| c.max(0) as usize).sum();
        // One spare byte: an empty receive buffer and an empty send buffer would both be
        // Rust's dangling pointer, and MPI refuses a send buffer equal to the receive one.
        let mut buf = vec![0u8; total + 1];
        {
            let mut part = PartitionMut::new(&mut buf[..total], &counts[..], &displs[..]);
            self.comm.all_gather_varcount_into(mine, &mut part);
        }
        split(&buf, &counts)
    }

    /// Every rank's bytes on rank 0 (in rank order); `None` on the other ranks.
    pub fn gather_bytes(&self, mine: &[u8]) -> Option<Vec<Vec<u8>>> {
        let root = self.comm.process_at_rank(0);
        let len = len_i32(mine);
        if self.comm.rank() == 0 {
            let mut counts = vec![0i32; self.size() as usize];
            root.gather_into_root(&len, &mut counts[..]);
            let displs = displacements(&counts);
            let total: usize = counts.iter().map(|&c| c.max(0) as usize).sum();
            let mut buf = vec![0u8; total + 1];
            {
                let mut part = PartitionMut::new(&mut buf[..total], &counts[..], &displs[..]);
                root.gather_varcount_into_root(mine, &mut part);
            }
            Some(split(&buf, &counts))
        } else {
            root.gather_into(&len);
            root.gather_varcount_into(mine);
            None
        }
    }

    /// Rank 0's `data` on every rank.
    pub fn broadcast_bytes(&self, data: Vec<u8>) -> Vec<u8> {
        let root = self.comm.process_at_rank(0);
        let mut len = data.len() as u64;
        root.broadcast_into(&mut len);
        let mut buf = if self.comm.rank() == 0 {
            data
        } else {
            vec![0u8; len as usize]
        };
        root.broadcast_into(&mut buf[..]);
        buf
    }

    /// Each rank's clock offset against rank 0 (see `clock`), on every rank. Rank 0 answers
    /// the ranks one after another, `rounds` exchanges each.
    pub fn clock_offsets(&self, now: &dyn Fn() -> u64, rounds: usize) -> Vec<Offset> {
        let me = self.comm.rank();
        let mine = if me == 0 {
            for r in 1..self.comm.size() {
                let p = self.comm.process_at_rank(r);
                for _ in 0..rounds {
                    let (_ask, _status) = p.receive::<u64>();
                    p.send(&now());
                }
            }
            Offset::default()
        } else {
            let root = self.comm.process_at_rank(0);
            let mut ex = Vec::with_capacity(rounds);
            for _ in 0..rounds {
                let sent = now();
                root.send(&sent);
                let (remote, _status) = root.receive::<u64>();
                let received = now();
                ex.push(Exchange {
                    sent,
                    remote,
                    received,
                });
            }
            estimate(&ex).unwrap_or_default()
        };
        let mut all = vec![0i64; 2 * self.size() as usize];
        self.comm.all_gather_into(
            &[mine.offset_ns, mine.uncertainty_ns as i64][..],
            &mut all[..],
        );
        all.chunks(2)
            .map(|c| Offset {
                offset_ns: c[0],
                uncertainty_ns: c[1].max(0) as u64,
            })
            .collect()
    }

    /// First-done across ranks, for one repetition: when `stop` is set here (this rank's
    /// first thread finished, or failed) this rank tells every other rank; when another
    /// rank's word comes first, `stop` is set here. Every rank sends exactly one word to
    /// every other rank and receives exactly one from each before returning, so nothing is
    /// left in flight for the next repetition. Only the main thread calls MPI (the I/O
    /// threads only read `stop`). Returns true when another rank finished first.
    pub fn first_done(&self, stop: &AtomicBool) -> bool {
        const TAG: i32 = 0x5707;
        // How often the main thread looks: the reaction time of the stonewall. Sleeping
        // keeps the poll off the CPUs the I/O threads use.
        const POLL: Duration = Duration::from_micros(200);
        let me = self.comm.rank();
        let n = self.comm.size();
        let word = 1u8;
        let mut heard = 0;
        let mut stopped_by_other = false;
        mpi::request::scope(|scope| {
            let mut sends = Vec::new();
            loop {
                while self
                    .comm
                    .any_process()
                    .immediate_probe_with_tag(TAG)
                    .is_some()
                {
                    let (_w, _status) = self.comm.any_process().receive_with_tag::<u8>(TAG);
                    heard += 1;
                    if sends.is_empty() && !stop.load(Ordering::SeqCst) {
                        stopped_by_other = true;
                    }
                    stop.store(true, Ordering::SeqCst);
                }
                if sends.is_empty() && stop.load(Ordering::SeqCst) {
                    for r in (0..n).filter(|&r| r != me) {
                        sends.push(
                            self.comm
                                .process_at_rank(r)
                                .immediate_send_with_tag(scope, &word, TAG),
                        );
                    }
                    if sends.is_empty() {
                        break; // a single rank
                    }
                }
                if !sends.is_empty() && heard >= n - 1 {
                    break;
                }
                std::thread::sleep(POLL);
            }
            for s in sends {
                s.wait();
            }
        });
        stopped_by_other
    }

    /// Ends every rank of the job (when one rank cannot go on, the others would wait for
    /// it at the next barrier forever).
    pub fn abort(&self, code: i32) -> ! {
        self.comm.abort(code)
    }
}
