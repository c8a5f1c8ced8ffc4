//! Ready-made plans, all in one table: a preset is one entry here. `--preset NAME` picks a
//! named one; the default run (no option that shapes the plan), a plan made of the options
//! alone and `--device-spec auto`'s ceiling measurement are presets too, chosen by the
//! situation instead of by name.

use super::{PlanError, Point};
use crate::engines::EngineKind;
use crate::workload;
use candor_model::Fadvise;

/// How a preset comes to be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chosen {
    /// `--preset NAME`.
    ByName,
    /// No option shapes the plan (`candor run` alone).
    NoPlanOptions,
    /// Options shape the plan and no preset is named.
    PlanOptions,
    /// `--device-spec auto`: measured before the plan, on the first target.
    DeviceSpecAuto,
}

#[derive(Debug)]
pub enum Shape {
    /// A sweep the options shape; these are its defaults for what they leave out.
    Sweep(Sweep),
    /// Fixed points on one file per target sized to its free space, on io_uring with
    /// O_DIRECT.
    Fixed(Fixed),
    /// Points that each name their file and record size, run the way another benchmark
    /// runs them (its timing, its flushing, its cache).
    Pairs(Pairs),
}

#[derive(Debug)]
pub struct Pairs {
    /// (test, file size, record size), in the order they run.
    pub points: &'static [(&'static str, u64, u64)],
    /// Each repetition runs this long (time-based: the test starts its file over at its end)
    /// unless `--runtime` says otherwise.
    pub runtime_ns: u64,
    /// No flush inside the timing (`--no-fsync-in-timing`).
    pub no_flush: bool,
    /// The page cache left as the preparation leaves it (`--keep-cache`).
    pub keep_cache: bool,
    pub repeat: u32,
    /// Said in the run's notes.
    pub note: &'static str,
}

#[derive(Debug)]
pub struct Sweep {
    /// `--tests` when not given.
    pub tests: &'static str,
    /// iozone -a's sweep of file and record sizes (also with `--auto`).
    pub auto: bool,
    /// Without a sweep: `--file-size`, `--record-size`, `--repeat` and `--runtime` when
    /// not given.
    pub fallback: Fallback,
}

/// What a plan of options uses for the options it was not given (without `--auto`, whose
/// sweep gives the sizes and runs each point once). The options preset's row is the rule
/// "options not given keep the default run's values" (README, docs/methodology.md):
///
/// | not given     | value                                                     | as the default run |
/// |---------------|-----------------------------------------------------------|--------------------|
/// | --file-size   | the largest power of two from 16 MiB to 1 GiB of which 8 per thread fit the free space | yes |
/// | --record-size | 1 MiB for sequential tests, 4 KiB for random ones (at most the file) | yes     |
/// | --repeat      | 3 (1 with --auto or --steady-state)                       | yes                |
/// | --runtime     | 2 s per repetition when the file size was not given       | yes                |
/// | --engine, --iodepth | psync at depth 1 (io_uring when a depth above 1 is given) | no: said in one line |
/// | --direct      | buffered                                                  | no: said in the same line |
///
/// A plan of options runs one engine at the depths it is given and goes through the page
/// cache unless `--direct` says otherwise, as iozone does; the run says which of the
/// default run's settings it does not keep and the options that would.
#[derive(Debug)]
pub struct Fallback {
    /// `--file-size`: None sizes the file to the free space as the default run does.
    pub file_size: Option<u64>,
    /// `--record-size`: for the sequential tests (and every other non-random one).
    pub sequential_record: u64,
    /// `--record-size`: for the random tests (randread, randwrite, randmix).
    pub random_record: u64,
    /// `--repeat`.
    pub repeat: u32,
    /// `--runtime` when the file was sized to the free space.
    pub cap_ns: Option<u64>,
}

/// The default run's file: 8 of it fit in the free space (see [`file_size_to_fit`]).
pub const DEFAULT_FIT: u64 = 8;
/// The default run's repetitions and cap per repetition.
pub const DEFAULT_REPEAT: u32 = 3;
pub const DEFAULT_CAP_NS: u64 = 2_000_000_000;

#[derive(Debug)]
pub struct Fixed {
    /// (test, record size, queue depth), in the order they run.
    pub points: &'static [(&'static str, u64, u32)],
    /// The file is the largest power of two from 16 MiB to 1 GiB of which `fit` copies
    /// fit in the target's free space.
    pub fit: u64,
    pub repeat: u32,
    /// Each repetition's cap on its I/O time.
    pub runtime_ns: u64,
}

#[derive(Debug)]
pub struct Preset {
    pub name: &'static str,
    pub about: &'static str,
    pub chosen: Chosen,
    pub shape: Shape,
    /// The text format printed when `--format` is not given.
    pub format: Option<&'static str>,
    /// The access hint `--fadvise auto` gives under this preset; None: what each test
    /// means (workload.rs, `Hint::for_pattern`).
    pub fadvise: Option<Fadvise>,
}

/// The preset table.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "default",
        about: "the quick, honest disk check: sequential 1 MiB and random 4 KiB, each at depth \
                1 and a deep queue, O_DIRECT where the filesystem takes it",
        chosen: Chosen::NoPlanOptions,
        shape: Shape::Fixed(Fixed {
            points: &[
                ("write", 1 << 20, 1),
                ("write", 1 << 20, 8),
                ("read", 1 << 20, 1),
                ("read", 1 << 20, 8),
                ("randread", 4 << 10, 1),
                ("randread", 4 << 10, 32),
                ("randwrite", 4 << 10, 1),
                ("randwrite", 4 << 10, 32),
            ],
            fit: DEFAULT_FIT,
            repeat: DEFAULT_REPEAT,
            runtime_ns: DEFAULT_CAP_NS,
        }),
        format: None,
        fadvise: None,
    },
    Preset {
        name: "options",
        about: "what the options say: iozone's write, read and random tests, with the default \
                run's file size, record sizes, repetitions and cap unless they say otherwise",
        chosen: Chosen::PlanOptions,
        shape: Shape::Sweep(Sweep {
            tests: "0,1,2",
            auto: false,
            fallback: Fallback {
                file_size: None,
                sequential_record: 1 << 20,
                random_record: 4 << 10,
                repeat: DEFAULT_REPEAT,
                cap_ns: Some(DEFAULT_CAP_NS),
            },
        }),
        format: None,
        fadvise: None,
    },
    Preset {
        name: "iozone",
        about: "iozone -a's sweep of all its tests",
        chosen: Chosen::ByName,
        shape: Shape::Sweep(Sweep {
            tests: "0,1,2,3,4,5,6,7,9,10,11,12",
            auto: true,
            fallback: Fallback {
                file_size: Some(64 << 20),
                sequential_record: 1 << 20,
                random_record: 1 << 20,
                repeat: 1,
                cap_ns: None,
            },
        }),
        format: Some("iozone"),
        // iozone gives the kernel no hint: its random tests include the read-around the
        // kernel does for them, which the witness names.
        fadvise: Some(Fadvise::None),
    },
    Preset {
        name: "unixbench-copy",
        about: "UnixBench's File Copy tests as its fstime runs them: 256, 1024 and 4096-byte \
                buffers on 500, 2000 and 8000 KiB files, copied over and over for 30 s, \
                nothing flushed, the source file in the page cache",
        chosen: Chosen::ByName,
        shape: Shape::Pairs(Pairs {
            points: &[
                ("copy", 1024 * 2000, 1024),
                ("copy", 1024 * 500, 256),
                ("copy", 1024 * 8000, 4096),
            ],
            runtime_ns: 30_000_000_000,
            no_flush: true,
            keep_cache: true,
            repeat: 1,
            note: "UnixBench's File Copy as fstime runs it (Run's fstime, fsbuffer and fsdisk): \
                   each buffer size on its file size, the file copied over and over for the \
                   run time with both files rewound at the end, no flush inside the timing and \
                   the source file left in the page cache by its preparation. Its figures are \
                   the page cache's speed, which the witness says",
        }),
        format: None,
        fadvise: Some(Fadvise::None),
    },
    Preset {
        name: "ceiling",
        about: "the device's ceiling for --device-spec auto: large sequential reads and writes \
                at depth 16, 4 KiB random at depth 64, 3 s each",
        chosen: Chosen::DeviceSpecAuto,
        shape: Shape::Fixed(Fixed {
            points: &[
                ("write", 1 << 20, 16),
                ("read", 1 << 20, 16),
                ("randread", 4 << 10, 64),
                ("randwrite", 4 << 10, 64),
            ],
            fit: 4,
            repeat: 1,
            runtime_ns: 3_000_000_000,
        }),
        format: None,
        fadvise: None,
    },
];

/// The largest power of two from 16 MiB to 1 GiB of which `fit` copies fit in `free` bytes
/// (free space unknown: 0, the smallest).
pub fn file_size_to_fit(fit: u64, free: u64) -> u64 {
    let mut size: u64 = 1 << 30;
    while size > 16 << 20 && size.saturating_mul(fit) > free {
        size /= 2;
    }
    size
}

impl Fallback {
    /// The record size a test gets when `--record-size` is not given.
    pub fn record_for(&self, spec: &workload::TestSpec) -> u64 {
        match spec.pattern {
            workload::PatternKind::Random => self.random_record,
            _ => self.sequential_record,
        }
    }
}

/// The preset `--preset NAME` names.
pub fn by_name(name: &str) -> Result<&'static Preset, PlanError> {
    PRESETS
        .iter()
        .find(|p| p.chosen == Chosen::ByName && p.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = PRESETS
                .iter()
                .filter(|p| p.chosen == Chosen::ByName)
                .map(|p| p.name)
                .collect();
            PlanError::usage(format!(
                "'{name}' is not a preset: the presets are {}",
                names.join(", ")
            ))
        })
}

/// The preset a situation chooses (one entry each in the table).
pub fn chosen(how: Chosen) -> &'static Preset {
    PRESETS
        .iter()
        .find(|p| p.chosen == how)
        .unwrap_or(&PRESETS[0])
}

/// The text format a run prints by default: its named preset's, else the table.
pub fn default_format(preset: Option<&str>) -> &'static str {
    preset
        .and_then(|n| by_name(n).ok())
        .and_then(|p| p.format)
        .unwrap_or("table")
}

/// One thread's point of a preset's own list: the test by name (a name missing from the
/// catalog is candor's own error), its sizes, depth and engine.
fn point(
    test: &str,
    file_size: u64,
    record_size: u64,
    iodepth: u32,
    engine: EngineKind,
) -> Result<Point, PlanError> {
    let spec = workload::find(test)
        .ok_or_else(|| PlanError::failed(format!("internal: test {test} missing")))?;
    Ok(Point::new(spec, file_size, record_size, 1, iodepth, engine))
}

impl Pairs {
    /// The points, one thread each, on the synchronous engine (copy reads and writes by
    /// itself).
    pub fn points(&self) -> Result<Vec<Point>, PlanError> {
        self.points
            .iter()
            .map(|&(test, file_size, record_size)| {
                point(test, file_size, record_size, 1, EngineKind::Sync)
            })
            .collect()
    }
}

impl Fixed {
    /// The file size for a target with `free` bytes free.
    pub fn file_size(&self, free: u64) -> u64 {
        file_size_to_fit(self.fit, free)
    }

    /// The points, on files of `file_size`.
    pub fn points(&self, file_size: u64) -> Result<Vec<Point>, PlanError> {
        self.points
            .iter()
            .map(|&(test, record_size, iodepth)| {
                point(test, file_size, record_size, iodepth, EngineKind::IoUring)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixed_preset_names_real_tests() {
        for p in PRESETS {
            if let Shape::Fixed(f) = &p.shape {
                assert_eq!(
                    f.points(1 << 20).unwrap().len(),
                    f.points.len(),
                    "{}",
                    p.name
                );
            }
            if let Shape::Sweep(s) = &p.shape {
                assert!(workload::parse_tests(s.tests).is_ok(), "{}", p.name);
            }
            if let Shape::Pairs(s) = &p.shape {
                assert_eq!(s.points().unwrap().len(), s.points.len(), "{}", p.name);
            }
        }
    }

    #[test]
    fn each_situation_has_one_preset() {
        for how in [
            Chosen::NoPlanOptions,
            Chosen::PlanOptions,
            Chosen::DeviceSpecAuto,
        ] {
            assert_eq!(PRESETS.iter().filter(|p| p.chosen == how).count(), 1);
            assert_eq!(chosen(how).chosen, how);
        }
    }

    #[test]
    fn names_and_formats() {
        assert_eq!(by_name("iozone").unwrap().name, "iozone");
        let e = by_name("fio").unwrap_err();
        assert_eq!(
            e.message,
            "'fio' is not a preset: the presets are iozone, unixbench-copy"
        );
        assert!(by_name("default").is_err(), "chosen by the situation only");
        assert_eq!(default_format(Some("iozone")), "iozone");
        assert_eq!(default_format(None), "table");
    }

    #[test]
    fn unixbench_copy_is_fstimes_three_tests() {
        let Shape::Pairs(p) = &by_name("unixbench-copy").unwrap().shape else {
            panic!("unixbench-copy names its points");
        };
        // Run's fstime, fsbuffer and fsdisk: -b 1024 -m 2000, -b 256 -m 500, -b 4096 -m 8000
        // (max_blocks KiB files), -t 30, and fstime calls no fsync.
        let got: Vec<(&str, u64, u64)> = p
            .points()
            .unwrap()
            .iter()
            .map(|x| (x.spec.name, x.file_size, x.record_size))
            .collect();
        assert_eq!(
            got,
            [
                ("copy", 2_048_000, 1024),
                ("copy", 512_000, 256),
                ("copy", 8_192_000, 4096)
            ]
        );
        assert_eq!(p.runtime_ns, 30_000_000_000);
        assert!(p.no_flush && p.keep_cache);
    }

    #[test]
    fn fixed_files_fit_the_free_space() {
        let Shape::Fixed(f) = &chosen(Chosen::NoPlanOptions).shape else {
            panic!("the default run is fixed points");
        };
        assert_eq!(f.file_size(u64::MAX), 1 << 30);
        assert_eq!(f.file_size(8 << 30), 1 << 30);
        assert_eq!(f.file_size(1 << 30), 128 << 20);
        assert_eq!(f.file_size(1), 16 << 20, "never below 16 MiB");
    }
}
