//! The ways the witness can observe, behind one interface. The procfs counters are always
//! sampled (they are cheap and give memory, vmstat, pressure and the timeline); a
//! [`Source`] adds what only it can see. The procfs source adds nothing; the eBPF source
//! (src/bpf.rs) adds an exact split of the device's bytes between candor and other
//! processes, and per-syscall and per-request figures. Whatever the source, the figures
//! and the verdict are derived by the same rules (`facts::apply`).

use candor_model::Facts;
use std::path::PathBuf;

/// A way of observing the kernel for the whole run.
pub trait Source: Send + Sync {
    /// The value of `witness.source` ("procfs", "bpf").
    fn name(&self) -> &'static str;
    /// Starts observing one repetition (called just after the begin sample, so the
    /// witness's own reading of /proc is not counted as the test's system calls). `calls`:
    /// the test's operations are system calls the runner counts (copy, metadata), which a
    /// source that can count them per kind counts over the timed region
    /// (`facts.calls.counted`). `reads`: the test may read (false for one that only
    /// writes, whose pages added to the cache a source may leave uncounted).
    fn start(&self, files: &[PathBuf], calls: bool, reads: bool) -> Box<dyn Probe>;
    /// Whether counting the calls attaches a program for the repetition (eBPF without
    /// --trace-syscalls): a cost every system call pays while it is attached, which the
    /// runner limits to a sample of the operations (`Watch::calls_sampled`).
    fn counts_calls_by_attaching(&self) -> bool {
        false
    }
}

/// The observation of one repetition by a source.
pub trait Probe: Send {
    /// The timed region has ended (called right before the timed-end sample).
    fn timed_end(&mut self) {}
    /// The sample of operations whose calls are counted has ended (`Watch::calls_sampled`):
    /// the count is read.
    fn calls_end(&mut self) {}
    /// After `calls_end`: the counting is let go.
    fn calls_release(&mut self) {}
    /// The runner has flushed; the last procfs sample comes right after this call.
    fn before_last(&mut self) {}
    /// The repetition is over and the procfs facts are gathered: a source may replace the
    /// estimated attribution (`facts.exact`) and add the figures only it has (`syscalls`,
    /// `block`, `cache_misses`, `extra`) to the witness, before the verdict is derived.
    fn finish(&mut self, _facts: &mut Facts, _witness: &mut candor_model::Witness) {}
}

/// The unprivileged source: everything it knows is in the procfs samples.
pub struct Procfs;

struct NoProbe;
impl Probe for NoProbe {}

impl Source for Procfs {
    fn name(&self) -> &'static str {
        "procfs"
    }
    fn start(&self, _files: &[PathBuf], _calls: bool, _reads: bool) -> Box<dyn Probe> {
        Box::new(NoProbe)
    }
}
