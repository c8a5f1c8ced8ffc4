//! The sweep: sizes, threads and depths in, an ordered list of test points out. Order follows iozone: for each
//! file size, each record size, (each thread count, each depth,) every test in catalog
//! order — so a read always follows the write that made its file.

use super::settings::RunSettings;
use crate::engines::{entry, EngineKind};
use crate::workload::{Direction, Interface, TestSpec};
use candor_model::{Fadvise, Intent};

/// One point of the plan; it runs on every target. Besides its shape it carries its
/// effective settings, decided once by the plan ([`Point::settle`]): the runner, the
/// preparation and the result read them as they are.
#[derive(Clone, Debug)]
pub struct Point {
    pub spec: &'static TestSpec,
    pub file_size: u64,
    pub record_size: u64,
    pub threads: u32,
    pub iodepth: u32,
    pub engine: EngineKind,
    /// Whether its files are opened with O_DIRECT.
    pub direct: bool,
    /// The access hint its files get (posix_fadvise).
    pub fadvise: Fadvise,
    /// What it means to measure: the device, or the page cache.
    pub intent: Intent,
}

impl Point {
    /// A point of this shape, not yet settled: buffered, no hint, meant for the device.
    pub fn new(
        spec: &'static TestSpec,
        file_size: u64,
        record_size: u64,
        threads: u32,
        iodepth: u32,
        engine: EngineKind,
    ) -> Point {
        Point {
            spec,
            file_size,
            record_size,
            threads,
            iodepth,
            engine,
            direct: false,
            fadvise: Fadvise::None,
            intent: Intent::Device,
        }
    }

    /// Whether O_DIRECT can apply to this point at all: a record test on an engine that
    /// can open with it (the engine table says which).
    pub fn can_direct(&self) -> bool {
        self.spec.is_records() && self.engine.opens_direct(true)
    }

    /// Decides the point's effective settings from the run's: O_DIRECT where it was asked
    /// and the engine opens with it, the hint the test means (none for copy and metadata
    /// tests), and whether it measures the device (writes always; reads unless the test
    /// re-reads or `--keep-cache` keeps the cache).
    pub fn settle(&mut self, s: &RunSettings) {
        self.direct = self.spec.is_records() && self.engine.opens_direct(s.direct);
        self.fadvise = if self.spec.special.is_none() {
            s.fadvise.for_pattern(self.spec.pattern)
        } else {
            Fadvise::None
        };
        self.intent = if self.spec.direction == Direction::Write {
            Intent::Device
        } else if self.spec.cached || s.keep_cache {
            Intent::Cache
        } else {
            Intent::Device
        };
    }
}

/// iozone -a's ranges.
pub const AUTO_MIN_FILE: u64 = 64 << 10;
pub const AUTO_MAX_FILE: u64 = 512 << 20;
pub const AUTO_MIN_RECORD: u64 = 4 << 10;
pub const AUTO_MAX_RECORD: u64 = 16 << 20;
/// iozone -a stops using records below 64 KiB for files above 32 MiB.
pub const AUTO_SMALL_RECORD_LIMIT: u64 = 32 << 20;

/// Powers of two from `lo` to `hi` inclusive (both rounded to powers of two).
pub fn powers_of_two(lo: u64, hi: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut x = lo.max(1).next_power_of_two();
    while x <= hi {
        v.push(x);
        match x.checked_mul(2) {
            Some(n) => x = n,
            None => break,
        }
    }
    v
}

/// The engine a test uses: the interface it names, else the one chosen; a queueing engine
/// only when it was chosen (or a depth > 1 asks for one).
pub fn engine_for(spec: &TestSpec, chosen: EngineKind) -> EngineKind {
    match spec.interface {
        Interface::Stdio => EngineKind::Stdio,
        Interface::Psync => EngineKind::Psync,
        Interface::Vector => EngineKind::Vector,
        Interface::Mmap => EngineKind::Mmap,
        Interface::Any => chosen,
    }
}

pub struct Sweep<'a> {
    pub tests: &'a [&'static TestSpec],
    pub file_sizes: &'a [u64],
    pub record_sizes: &'a [u64],
    pub threads: &'a [u32],
    pub iodepths: &'a [u32],
    pub engine: EngineKind,
    /// iozone -a's rule for large files.
    pub auto: bool,
    /// Buffer sizes for the copy test (UnixBench's 256, 1024, 4096 by default).
    pub copy_record_sizes: &'a [u64],
}

pub fn build(s: &Sweep) -> Vec<Point> {
    let mut out = build_records(s);
    // Copy: one point per file size, buffer size and thread count.
    if let Some(&copy) = s.tests.iter().find(|t| t.is_copy()) {
        for &fs in s.file_sizes {
            for &rs in s.copy_record_sizes.iter().filter(|&&r| r <= fs) {
                for &th in s.threads {
                    out.push(Point::new(copy, fs, rs, th, 1, EngineKind::Sync));
                }
            }
        }
    }
    // Metadata: once per thread count, in catalog order; sizes do not apply.
    for &th in s.threads {
        for &spec in s.tests.iter().filter(|t| t.is_meta()) {
            out.push(Point::new(spec, 0, 0, th, 1, EngineKind::Sync));
        }
    }
    out
}

fn build_records(s: &Sweep) -> Vec<Point> {
    let mut out = Vec::new();
    for &fs in s.file_sizes {
        for &rs in s.record_sizes {
            if rs > fs {
                continue;
            }
            if s.auto && fs > AUTO_SMALL_RECORD_LIMIT && rs < (64 << 10) {
                continue;
            }
            for &th in s.threads {
                for &qd in s.iodepths {
                    for &spec in s.tests.iter().filter(|t| t.is_records()) {
                        let engine = engine_for(spec, s.engine);
                        // A depth sweep only means something to a queueing engine: other
                        // engines run once, at depth 1.
                        let qd_eff = if entry(engine).queues { qd } else { 1 };
                        let dup = out.iter().any(|p: &Point| {
                            p.spec.name == spec.name
                                && p.file_size == fs
                                && p.record_size == rs
                                && p.threads == th
                                && p.iodepth == qd_eff
                        });
                        if dup {
                            continue;
                        }
                        out.push(Point::new(spec, fs, rs, th, qd_eff, engine));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::parse_tests;

    #[test]
    fn powers() {
        assert_eq!(
            powers_of_two(64 << 10, 512 << 10),
            vec![64 << 10, 128 << 10, 256 << 10, 512 << 10]
        );
        assert_eq!(powers_of_two(3, 8), vec![4, 8]);
    }

    #[test]
    fn auto_sweep_follows_iozone() {
        let tests = parse_tests("0").unwrap();
        let files = powers_of_two(AUTO_MIN_FILE, AUTO_MAX_FILE);
        let recs = powers_of_two(AUTO_MIN_RECORD, AUTO_MAX_RECORD);
        let p = build(&Sweep {
            tests: &tests,
            file_sizes: &files,
            record_sizes: &recs,
            threads: &[1],
            iodepths: &[1],
            engine: EngineKind::Psync,
            auto: true,
            copy_record_sizes: &[],
        });
        assert!(p.iter().all(|x| x.record_size <= x.file_size));
        assert!(!p
            .iter()
            .any(|x| x.file_size > (32 << 20) && x.record_size < (64 << 10)));
        // 64 KiB file: records 4K..64K = 5 points x 2 tests.
        assert_eq!(p.iter().filter(|x| x.file_size == 64 << 10).count(), 10);
        // write always comes before rewrite at the same sizes.
        assert_eq!(p[0].spec.name, "write");
        assert_eq!(p[1].spec.name, "rewrite");
    }

    #[test]
    fn copy_and_metadata_points() {
        let tests = parse_tests("write,copy,create,stat").unwrap();
        let p = build(&Sweep {
            tests: &tests,
            file_sizes: &[1 << 20],
            record_sizes: &[65536],
            threads: &[1, 2],
            iodepths: &[1],
            engine: EngineKind::Psync,
            auto: false,
            copy_record_sizes: &[256, 1024, 4096],
        });
        let names: Vec<(&str, u64, u32)> = p
            .iter()
            .map(|x| (x.spec.name, x.record_size, x.threads))
            .collect();
        assert_eq!(
            names,
            vec![
                ("write", 65536, 1),
                ("write", 65536, 2),
                ("copy", 256, 1),
                ("copy", 256, 2),
                ("copy", 1024, 1),
                ("copy", 1024, 2),
                ("copy", 4096, 1),
                ("copy", 4096, 2),
                ("create", 0, 1),
                ("stat", 0, 1),
                ("create", 0, 2),
                ("stat", 0, 2)
            ]
        );
    }

    #[test]
    fn interfaces_force_their_engine_and_depth_is_for_queues_only() {
        let tests = parse_tests("fwrite,write").unwrap();
        let p = build(&Sweep {
            tests: &tests,
            file_sizes: &[1 << 20],
            record_sizes: &[4096],
            threads: &[1],
            iodepths: &[1, 8],
            engine: EngineKind::IoUring,
            auto: false,
            copy_record_sizes: &[],
        });
        let names: Vec<(&str, &str, u32)> = p
            .iter()
            .map(|x| (x.spec.name, x.engine.name(), x.iodepth))
            .collect();
        assert_eq!(
            names,
            vec![
                ("write", "io_uring", 1),
                ("fwrite", "stdio", 1),
                ("write", "io_uring", 8)
            ]
        );
    }
}
