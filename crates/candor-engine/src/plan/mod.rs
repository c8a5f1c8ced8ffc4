//! The plan: `candor run`'s options and the targets in, in one step, and out every test
//! point, how the runner runs them, how the witness watches and the sentences the person
//! should read about the choices made. Every option is checked here, once, and a wrong one
//! is said in one sentence with what to do (`PlanError`); nothing runs before the plan is
//! whole.
//!
//! The ready-made plans are in `presets` (one table); the sweep of sizes, threads and
//! depths in `sweep`; the options as the command line gives them in `options`.

mod checks;
pub mod options;
pub mod presets;
mod settings;
mod sweep;

pub use checks::{check_drop_caches, check_precondition, MAX_FILE_SIZE};
pub use options::RunOptions;
pub use settings::RunSettings;
pub use sweep::*;

use crate::efficiency::{parse_spec, DeviceSpec};
use crate::engines::{self, entry, EngineKind};
use crate::rundir::RunDir;
use crate::size::parse_size_list;
use crate::verify::VerifyConfig;
use crate::workload::parse_tests;
use crate::workload::Hint;
use candor_model::units::{format_bytes, ByteStyle};
use candor_model::{RunSaved, SteadySaved, TargetInfo};
use checks::{
    check_counts, check_devices, check_direct, check_free_space, check_shared_file,
    check_size_options, check_sizes, check_steady, check_verifiable, check_warmups,
};
use options::{parse_cpus, parse_duration, parse_u32_list, size_arg};
use presets::{Chosen, Preset, Shape};
use std::time::Duration;

/// Why there is no plan, in one sentence for the person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanError {
    pub kind: ErrorKind,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The options or the targets cannot make a plan: nothing ran (exit 2).
    Usage,
    /// Something failed while preparing (exit 1).
    Failed,
    /// A signal stopped the preparation (exit 128 + the signal).
    Interrupted(i32),
}

impl PlanError {
    pub fn usage(message: impl Into<String>) -> PlanError {
        PlanError {
            kind: ErrorKind::Usage,
            message: message.into(),
        }
    }

    pub fn failed(message: impl Into<String>) -> PlanError {
        PlanError {
            kind: ErrorKind::Failed,
            message: message.into(),
        }
    }
}

/// `--device-spec`: where the efficiency figures' ceilings come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Ceiling {
    None,
    /// Given on the command line.
    Given(DeviceSpec),
    /// `auto`: measured on the first target before the plan runs (`ceiling::measure`).
    Measure,
}

/// Everything `candor run` will do, checked.
#[derive(Debug)]
pub struct Plan {
    pub points: Vec<Point>,
    pub settings: RunSettings,
    /// What the person should read about the plan (printed, and kept in the result).
    pub notes: Vec<String>,
    pub preset: &'static Preset,
    pub witness: candor_witness::Config,
    /// `--duration`: pass over the plan again and again until this much time has passed.
    pub soak: Option<Duration>,
    pub ceiling: Ceiling,
    /// The options as the run understood them, for the saved result (`RunDoc::options`).
    pub record: RunSaved,
}

impl Plan {
    /// A block device is benchmarked by one candor process: refused with `--mpi`. Asked by
    /// [`Plan::new`], and by the MPI ranks before any of them claims the device (a second
    /// rank's claim would fail as "busy" and hide this sentence).
    pub fn one_process_per_device(on_device: bool, mpi: bool) -> Result<(), PlanError> {
        if on_device && mpi {
            return Err(PlanError::usage(
                "a block device is benchmarked by one candor process: drop --mpi (or give each rank a directory)",
            ));
        }
        Ok(())
    }

    /// The plan for `o` on targets described by `infos`, whose run directories are `dirs`
    /// (where the O_DIRECT probe is made), for the run `run_id` (which `--verify` keys
    /// its records on).
    pub fn new(
        o: &RunOptions,
        run_id: &str,
        infos: &[TargetInfo],
        dirs: &[RunDir],
    ) -> Result<Plan, PlanError> {
        let witness = witness_config(o)?;
        let soak = o
            .duration
            .as_deref()
            .map(|d| parse_duration(d).map_err(|e| PlanError::usage(format!("--duration: {e}"))))
            .transpose()?;
        if soak.is_some() && o.mpi {
            return Err(PlanError::usage(
                "--duration is not available with --mpi: repeat the MPI job instead",
            ));
        }
        if o.verify && (o.shared_file || o.reorder) {
            return Err(PlanError::usage(
                "--verify follows the records each process writes in its own files, and with --shared-file or --reorder ranks read what others wrote: drop one of them",
            ));
        }
        let ceiling = match o.device_spec.as_deref() {
            None => Ceiling::None,
            Some("auto") => Ceiling::Measure,
            Some(t) => Ceiling::Given(parse_spec(t).map_err(PlanError::usage)?),
        };
        let steady = check_steady(o)?;
        let ramp = o
            .ramp
            .as_deref()
            .map(|d| parse_duration(d).map_err(|e| PlanError::usage(format!("--ramp: {e}"))))
            .transpose()?;
        let runtime = match steady {
            // Every round is a time-based repetition of the round's length.
            Some(c) => Some(Duration::from_nanos(c.round_ns)),
            None => o
                .runtime
                .as_deref()
                .map(parse_duration)
                .transpose()
                .map_err(|e| PlanError::usage(format!("--runtime: {e}")))?,
        };
        let threads = o
            .threads
            .as_deref()
            .map(|t| parse_u32_list(t, "threads", 4096))
            .transpose()?
            .unwrap_or_else(|| vec![1]);
        let iodepths = o
            .iodepth
            .as_deref()
            .map(|t| parse_u32_list(t, "iodepth", 4096))
            .transpose()?
            .unwrap_or_else(|| vec![1]);
        check_counts(o)?;
        check_size_options(o)?;

        let preset = if o.shapes_nothing() {
            presets::chosen(Chosen::NoPlanOptions)
        } else {
            match o.preset.as_deref() {
                Some(name) => presets::by_name(name)?,
                None => presets::chosen(Chosen::PlanOptions),
            }
        };
        let mut notes = Vec::new();
        let on_device = dirs.iter().any(|d| d.device().is_some());
        Plan::one_process_per_device(on_device, o.mpi)?;
        if on_device && o.verify {
            return Err(PlanError::usage(
                "--verify keeps its records per file, not per slice of a block device: drop --verify or benchmark a directory on a filesystem",
            ));
        }
        // A raw device goes around the page cache unless --buffered says otherwise: what
        // the person means by benchmarking a device (fio users set direct=1 for it).
        let mut direct = o.direct || (on_device && !o.buffered);
        let mut runtime_ns = runtime.map(|d| d.as_nanos() as u64);
        let mut time_based = o.time_based;
        let mut fsync_in_timing = !o.no_fsync_in_timing;
        let mut keep_cache = o.keep_cache;
        let free = infos
            .iter()
            .zip(dirs)
            .map(|(i, d)| d.device().map_or(i.free_bytes, |d| d.room()))
            .filter(|&f| f > 0)
            .min()
            .unwrap_or(0);
        let (mut points, repeat_default) = match &preset.shape {
            Shape::Fixed(f) => {
                let size = f.file_size(free);
                let refused: Vec<String> = dirs
                    .iter()
                    .zip(infos)
                    .filter_map(|(d, i)| {
                        engines::direct_supported(d)
                            .err()
                            .map(|e| format!("{} ({}): {e}", i.path, i.fs_type))
                    })
                    .collect();
                if refused.is_empty() {
                    direct = !o.buffered;
                } else {
                    notes.push(format!(
                        "O_DIRECT is refused on {}: running buffered with each file's cache dropped before reads instead",
                        refused.join(", ")
                    ));
                }
                if runtime_ns.is_none() {
                    runtime_ns = Some(f.runtime_ns);
                    notes.push(format!(
                        "the default run caps each repetition at {} s: tests that cannot cover the {} file in that time measure the part they reached (give --runtime to change it)",
                        f.runtime_ns / 1_000_000_000,
                        format_bytes(size, ByteStyle::LABEL)
                    ));
                }
                (f.points(size)?, f.repeat)
            }
            Shape::Sweep(s) => {
                let most_threads = threads.iter().copied().max().unwrap_or(1) as u64;
                let fit = presets::DEFAULT_FIT.saturating_mul(most_threads);
                let sized = !(o.auto || s.auto) && o.file_size.is_none();
                let file_size = s
                    .fallback
                    .file_size
                    .unwrap_or_else(|| presets::file_size_to_fit(fit, free));
                let points = sweep_points(o, s, file_size, &threads, &iodepths)?;
                let has_files = points.iter().any(|p| p.file_size > 0);
                if sized && has_files && runtime_ns.is_none() && steady.is_none() {
                    if let Some(cap) = s.fallback.cap_ns {
                        runtime_ns = Some(cap);
                        notes.push(format!(
                            "without --file-size the files are the default run's {} and, as in the default run, each repetition is capped at {} s: tests that cannot cover the file in that time measure the part they reached (give --file-size or --runtime to change it)",
                            format_bytes(file_size, ByteStyle::LABEL),
                            cap / 1_000_000_000
                        ));
                    }
                }
                // Engines, depths and O_DIRECT are record tests' settings: copy and the
                // metadata tests have none of them to keep.
                let records = points.iter().any(|p| p.spec.is_records());
                if preset.chosen == Chosen::PlanOptions && !(o.auto || s.auto) && records {
                    if let Some(n) = not_kept(o, direct) {
                        notes.push(n);
                    }
                }
                let repeat = if o.auto || s.auto {
                    1
                } else {
                    s.fallback.repeat
                };
                (points, repeat)
            }
            Shape::Pairs(p) => {
                runtime_ns = runtime_ns.or(Some(p.runtime_ns));
                time_based = true;
                fsync_in_timing &= !p.no_flush;
                keep_cache |= p.keep_cache;
                notes.push(p.note.to_string());
                (p.points()?, p.repeat)
            }
        };

        if direct {
            check_direct(&points, infos, dirs)?;
            if points.iter().any(|p| !p.engine.opens_direct(true)) {
                notes.push("the stdio and mmap tests go through the page cache by nature: they ran without O_DIRECT".to_string());
            }
        }
        check_sizes(&points)?;
        check_free_space(&points, infos, dirs, &mut notes)?;
        check_devices(&points, dirs)?;
        if o.drop_caches {
            check_drop_caches()?;
        }
        check_warmups(o, &points, infos)?;

        let settings = RunSettings {
            direct,
            osync: o.osync,
            fsync_in_timing,
            close_in_timing: o.close_in_timing,
            keep_cache,
            drop_caches: o.drop_caches,
            repeat: if steady.is_some() {
                1
            } else {
                o.repeat.unwrap_or(repeat_default)
            },
            stride: o.stride,
            mix_read_pct: o.mix_read_pct,
            stonewall: o.stonewall,
            runtime_ns,
            time_based: time_based || steady.is_some(),
            cpus: parse_cpus(o.cpus.as_deref(), &engines::allowed_cpus())?,
            seed: o.seed,
            meta_files: o.files,
            verify: o.verify.then(|| VerifyConfig::new(run_id, o.seed)),
            buffer_pattern: o.buffer_pattern,
            fadvise: match (o.fadvise, preset.fadvise) {
                (Hint::Auto, Some(f)) => Hint::Given(f),
                (h, _) => h,
            },
            ramp_ns: ramp.map(|d| d.as_nanos() as u64),
            steady,
            precondition: o.precondition,
            given: candor_model::advice::Given {
                no_fsync_in_timing: o.no_fsync_in_timing,
                preset: (preset.chosen == Chosen::ByName).then(|| preset.name.to_string()),
                steady_state: steady.is_some(),
                // Each test narrows it (runner), and the witness asks the test's own file
                // (host::takes_direct): nothing is created or written to learn it.
                direct_accepted: true,
                // Only a sweep's files are sized by --file-size.
                file_size_accepted: matches!(preset.shape, Shape::Sweep(_)),
                fadvise_accepted: true,
                buffer_pattern: o.buffer_pattern.name(),
                repeat: if steady.is_some() {
                    1
                } else {
                    o.repeat.unwrap_or(repeat_default)
                },
            },
        };
        for p in &mut points {
            p.settle(&settings);
        }
        if o.verify {
            check_verifiable(&points)?;
        }
        if o.shared_file {
            check_shared_file(&points)?;
        }
        let mut plan = Plan {
            points,
            settings,
            notes,
            preset,
            witness,
            soak,
            ceiling,
            record: RunSaved::default(),
        };
        plan.record = record(o, &plan);
        plan.record.device_offset = dirs.iter().find_map(|d| d.device()).map(|d| d.offset());
        Ok(plan)
    }

    /// The default run: `candor run` with no option that shapes the plan.
    pub fn default_run(&self) -> bool {
        self.preset.chosen == Chosen::NoPlanOptions
    }
}

fn witness_config(o: &RunOptions) -> Result<candor_witness::Config, PlanError> {
    use candor_witness::Mode;
    if o.trace_syscalls && matches!(o.witness, Mode::Procfs | Mode::Off) {
        return Err(PlanError::usage(format!(
            "--trace-syscalls needs the eBPF witness, not --witness {}: use --witness bpf or auto",
            o.witness.name()
        )));
    }
    Ok(candor_witness::Config {
        mode: o.witness,
        interval: parse_duration(&o.witness_interval)
            .map_err(|e| PlanError::usage(format!("--witness-interval: {e}")))?,
        trace_syscalls: o.trace_syscalls,
        job: Vec::new(),
    })
}

/// The default run's settings that a plan of options does not keep (see
/// `presets::Fallback`), in one line with the options that would keep them; None when the
/// options already say them.
fn not_kept(o: &RunOptions, direct: bool) -> Option<String> {
    let mut differ: Vec<(&str, &str, &str)> = Vec::new();
    if o.engine.is_none() && o.iodepth.is_none() {
        differ.push((
            "psync at depth 1",
            "io_uring at depths 1 and 8 or 32",
            "--engine io_uring --iodepth 1,32",
        ));
    }
    if !direct {
        differ.push(("buffered", "O_DIRECT", "--direct"));
    }
    if differ.is_empty() {
        return None;
    }
    let join = |i: usize| {
        differ
            .iter()
            .map(|d| [d.0, d.1, d.2][i])
            .collect::<Vec<_>>()
            .join(if i == 2 { " " } else { " and " })
    };
    Some(format!(
        "this plan runs {}, where the default run uses {} (add {} for those): a plan of options runs the engine and depths it is given, through the page cache unless --direct says otherwise, as iozone does",
        join(0),
        join(1),
        join(2)
    ))
}

/// The points of a sweep preset, shaped by the options; `file_size` when `--file-size`
/// is not given.
fn sweep_points(
    o: &RunOptions,
    preset: &presets::Sweep,
    file_size: u64,
    threads: &[u32],
    iodepths: &[u32],
) -> Result<Vec<Point>, PlanError> {
    let auto = o.auto || preset.auto;
    let tests =
        parse_tests(o.tests.as_deref().unwrap_or(preset.tests)).map_err(PlanError::usage)?;
    let engine = match o.engine {
        Some(e) => e,
        None if iodepths.iter().any(|&d| d > 1) => EngineKind::IoUring,
        None => EngineKind::Psync,
    };
    if iodepths.iter().any(|&d| d > 1) && !entry(engine).queues {
        return Err(PlanError::usage(format!(
            "--iodepth above 1 needs a queueing engine, and {} is synchronous: add --engine io_uring",
            engine.name()
        )));
    }
    let size_list = |v: &Option<String>, what: &str| {
        v.as_deref()
            .map(|t| parse_size_list(t).map_err(|e| PlanError::usage(format!("--{what}: {e}"))))
            .transpose()
    };
    let given_files = size_list(&o.file_size, "file-size")?;
    let given_records = size_list(&o.record_size, "record-size")?;
    let (files, records) = if auto {
        let lo_f = size_arg(&o.min_file_size, "min-file-size")?.unwrap_or(AUTO_MIN_FILE);
        let hi_f = size_arg(&o.max_file_size, "max-file-size")?.unwrap_or(AUTO_MAX_FILE);
        let lo_r = size_arg(&o.min_record_size, "min-record-size")?.unwrap_or(AUTO_MIN_RECORD);
        let hi_r = size_arg(&o.max_record_size, "max-record-size")?.unwrap_or(AUTO_MAX_RECORD);
        if lo_f > hi_f || lo_r > hi_r {
            return Err(PlanError::usage(
                "the --min size is above the --max size: swap them",
            ));
        }
        (
            given_files.unwrap_or_else(|| powers_of_two(lo_f, hi_f)),
            given_records
                .clone()
                .unwrap_or_else(|| powers_of_two(lo_r, hi_r)),
        )
    } else {
        let f = given_files.unwrap_or_else(|| vec![file_size]);
        let smallest = f.iter().copied().min().unwrap_or(file_size);
        let r = given_records.clone().unwrap_or_else(|| {
            let mut r = vec![preset.fallback.sequential_record.min(smallest)];
            let random = preset.fallback.random_record.min(smallest);
            if !r.contains(&random) {
                r.push(random);
            }
            r
        });
        (f, r)
    };
    if files.is_empty() || records.is_empty() {
        return Err(PlanError::usage(
            "the size range is empty: widen --min/--max sizes",
        ));
    }
    let largest_file = files.iter().copied().max().unwrap_or(0);
    // A sweep keeps only the records that fit its files, as iozone -a does.
    let records: Vec<u64> = if auto && given_records.is_none() {
        records.into_iter().filter(|&r| r <= largest_file).collect()
    } else {
        records
    };
    if let Some(&r) = records.iter().find(|&&r| r > largest_file) {
        return Err(PlanError::usage(format!(
            "record size {} is larger than the file size {}: a record must fit in the file; use a smaller --record-size or a larger --file-size",
            format_bytes(r, ByteStyle::LABEL),
            format_bytes(largest_file, ByteStyle::LABEL)
        )));
    }
    if let Some(&r) = records.iter().find(|&&r| r > u32::MAX as u64 / 2) {
        return Err(PlanError::usage(format!(
            "--record-size {} is above 1G, the largest record candor supports: use a smaller --record-size",
            format_bytes(r, ByteStyle::LABEL)
        )));
    }
    // UnixBench's file copy buffers unless record sizes were given.
    let copy_records: Vec<u64> = match &given_records {
        Some(_) => records.clone(),
        None => vec![256, 1024, 4096],
    };
    let mut points = build(&Sweep {
        tests: &tests,
        file_sizes: &files,
        record_sizes: &records,
        threads,
        iodepths,
        engine,
        auto,
        copy_record_sizes: &copy_records,
    });
    if !auto && given_records.is_none() {
        // Each record test in its kind's record size (at most the smallest file).
        let smallest = files.iter().copied().min().unwrap_or(0);
        points.retain(|p| {
            !p.spec.is_records()
                || p.record_size == preset.fallback.record_for(p.spec).min(smallest)
        });
    }
    if points.is_empty() {
        return Err(PlanError::usage(
            "no test fits: every record size is larger than every file size",
        ));
    }
    Ok(points)
}

/// The options as the run understood them (the output's format is added by the caller).
fn record(o: &RunOptions, p: &Plan) -> RunSaved {
    let s = &p.settings;
    RunSaved {
        buffer_pattern: o.buffer_pattern.name(),
        close_in_timing: s.close_in_timing,
        cpus: s.cpus.clone(),
        default_run: p.default_run(),
        device_offset: None,
        device_spec: None,
        direct: s.direct,
        drop_caches: s.drop_caches,
        duration: o.duration.clone(),
        fadvise: s.fadvise.name().into(),
        format: None,
        fsync_in_timing: s.fsync_in_timing,
        keep_cache: s.keep_cache,
        mix_read_pct: s.mix_read_pct,
        osync: s.osync,
        precondition_passes: s.precondition,
        ramp_s: s.ramp_ns.map(|r| r as f64 / 1e9),
        repeat: s.repeat,
        runtime_s: s.runtime_ns.map(|n| n as f64 / 1e9),
        seed: s.seed,
        steady_state: s.steady.as_ref().map(|c| SteadySaved {
            max_rounds: c.max_rounds,
            range: c.range,
            round_s: c.round_ns as f64 / 1e9,
            slope: c.slope,
            window: c.window,
        }),
        stonewall: s.stonewall,
        stride: s.stride,
        time_based: s.time_based,
        trace_syscalls: o.trace_syscalls,
        verify: o.verify,
        witness: o.witness.name().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp_dir(tag: &str) -> (std::path::PathBuf, RunDir) {
        let base = std::env::temp_dir().join(format!("candor-plan-{tag}-{}", std::process::id()));
        let _ = std::fs::create_dir(&base);
        let d = RunDir::create(&base, "t").expect("run dir in the temporary directory");
        (base, d)
    }

    fn info(free: u64) -> TargetInfo {
        TargetInfo {
            path: "/t".into(),
            free_bytes: free,
            ..Default::default()
        }
    }

    #[test]
    fn options_alone_make_a_psync_sweep_of_iozones_first_groups() {
        let (base, d) = tmp_dir("sweep");
        let o = RunOptions {
            file_size: Some("1m".into()),
            ..RunOptions::default()
        };
        let p = Plan::new(&o, "t", &[info(0)], &[d]).unwrap();
        let names: Vec<&str> = p.points.iter().map(|x| x.spec.name).collect();
        assert_eq!(
            names.join(","),
            "write,rewrite,read,reread,randread,randwrite"
        );
        assert!(p.points.iter().all(|x| x.engine == EngineKind::Psync));
        // The default run's record sizes by kind, capped at the 1 MiB file.
        let records: Vec<u64> = p.points.iter().map(|x| x.record_size).collect();
        assert_eq!(
            records,
            [1 << 20, 1 << 20, 1 << 20, 1 << 20, 4 << 10, 4 << 10]
        );
        assert!(!p.default_run());
        assert_eq!(p.settings.repeat, 3);
        assert_eq!(
            p.settings.runtime_ns, None,
            "a given file size is not capped"
        );
        assert!(!p.record.default_run);
        assert_eq!(p.record.buffer_pattern, "random");
        let _ = std::fs::remove_dir_all(base);
    }

    #[test]
    fn the_default_run_is_its_preset_capped_at_two_seconds() {
        let (base, d) = tmp_dir("default");
        let p = Plan::new(&RunOptions::default(), "t", &[info(1 << 30)], &[d]).unwrap();
        assert!(p.default_run());
        assert_eq!(p.points.len(), 8);
        assert!(p.points.iter().all(|x| x.file_size == 128 << 20));
        assert_eq!(p.settings.repeat, 3);
        assert_eq!(p.settings.runtime_ns, Some(2_000_000_000));
        assert!(p
            .notes
            .iter()
            .any(|n| n.contains("caps each repetition at 2 s")));
        let _ = std::fs::remove_dir_all(base);
    }

    #[test]
    fn metadata_tests_are_not_told_of_engines_and_o_direct_they_do_not_use() {
        let (base, d) = tmp_dir("meta-kept");
        let o = RunOptions {
            tests: Some("create,stat".into()),
            ..RunOptions::default()
        };
        let p = Plan::new(&o, "t", &[info(1 << 30)], &[d]).unwrap();
        assert!(p.points.iter().all(|x| !x.spec.is_records()));
        assert!(
            !p.notes.iter().any(|n| n.contains("the default run uses")),
            "{:?}",
            p.notes
        );
        let _ = std::fs::remove_dir_all(base);
    }

    #[test]
    fn options_keep_the_default_runs_file_record_repetitions_and_cap() {
        // The README's SNIA example without the device: random writes in 4 KiB records.
        let (base, d) = tmp_dir("kept");
        let o = RunOptions {
            tests: Some("write,randwrite".into()),
            ..RunOptions::default()
        };
        let p = Plan::new(&o, "t", &[info(1 << 30)], &[d]).unwrap();
        let got: Vec<(&str, u64, u64, u32)> = p
            .points
            .iter()
            .map(|x| (x.spec.name, x.file_size, x.record_size, x.iodepth))
            .collect();
        assert_eq!(
            got,
            [
                ("write", 128 << 20, 1 << 20, 1),
                ("randwrite", 128 << 20, 4 << 10, 1)
            ]
        );
        assert_eq!(p.settings.repeat, 3);
        assert_eq!(p.settings.runtime_ns, Some(2_000_000_000));
        assert_eq!(p.record.repeat, 3);
        assert_eq!(p.record.runtime_s, Some(2.0));
        let said: Vec<&String> = p
            .notes
            .iter()
            .filter(|n| n.contains("the default run"))
            .collect();
        assert_eq!(said.len(), 2, "{:?}", p.notes);
        assert!(said
            .iter()
            .any(|n| n.contains("each repetition is capped at 2 s")));
        assert!(said.iter().any(|n| n.starts_with(
            "this plan runs psync at depth 1 and buffered, where the default run uses io_uring at depths 1 and 8 or 32 and O_DIRECT (add --engine io_uring --iodepth 1,32 --direct for those)"
        )), "{said:?}");
        let _ = std::fs::remove_dir_all(base);

        // The README's io_uring example without --direct: the file is the default run's.
        let (base, d) = tmp_dir("kept-uring");
        let o = RunOptions {
            tests: Some("randread".into()),
            engine: Some(EngineKind::IoUring),
            iodepth: Some("1,4,16,32".into()),
            record_size: Some("4k".into()),
            threads: Some("2".into()),
            ..RunOptions::default()
        };
        let p = Plan::new(&o, "t", &[info(1 << 30)], &[d]).unwrap();
        assert_eq!(p.points.len(), 4);
        // Two threads: each thread's file is half of what one thread gets.
        assert!(
            p.points.iter().all(|x| x.file_size == 64 << 20),
            "{:?}",
            p.points
        );
        assert!(!p.notes.iter().any(|n| n.contains("psync at depth 1")));
        let _ = std::fs::remove_dir_all(base);

        // A sweep keeps iozone's single repetition; a given repetition count is kept.
        let (base, d) = tmp_dir("kept-auto");
        let o = RunOptions {
            auto: true,
            max_file_size: Some("256k".into()),
            tests: Some("write".into()),
            ..RunOptions::default()
        };
        let p = Plan::new(&o, "t", &[info(1 << 30)], &[d]).unwrap();
        assert_eq!((p.settings.repeat, p.settings.runtime_ns), (1, None));
        let _ = std::fs::remove_dir_all(base);

        // Metadata tests have no file to size: no cap, nothing said of one.
        let (base, d) = tmp_dir("kept-meta");
        let o = RunOptions {
            tests: Some("create,stat".into()),
            ..RunOptions::default()
        };
        let p = Plan::new(&o, "t", &[info(1 << 30)], &[d]).unwrap();
        assert_eq!((p.settings.repeat, p.settings.runtime_ns), (3, None));
        assert!(
            !p.notes.iter().any(|n| n.contains("capped")),
            "{:?}",
            p.notes
        );
        let _ = std::fs::remove_dir_all(base);
    }

    #[test]
    fn steady_state_runs_time_based_rounds_and_is_recorded() {
        let (base, d) = tmp_dir("steady");
        let o = RunOptions {
            tests: Some("randwrite".into()),
            file_size: Some("1m".into()),
            steady_state: Some("round=2s,max=7".into()),
            ramp: Some("500ms".into()),
            ..RunOptions::default()
        };
        let p = Plan::new(&o, "t", &[info(1 << 30)], &[d]).unwrap();
        let s = &p.settings;
        assert_eq!(s.steady.map(|c| (c.max_rounds, c.window)), Some((7, 5)));
        assert_eq!(
            (s.runtime_ns, s.time_based, s.repeat),
            (Some(2_000_000_000), true, 1)
        );
        assert_eq!(s.ramp_ns, Some(500_000_000));
        assert_eq!(p.record.steady_state.as_ref().map(|c| c.round_s), Some(2.0));
        assert_eq!(p.record.ramp_s, Some(0.5));
        assert_eq!(p.record.precondition_passes, None);
        let _ = std::fs::remove_dir_all(base);
    }

    #[test]
    fn bad_combinations_are_one_sentence_each() {
        let (base, d) = tmp_dir("bad");
        let dirs = [d];
        let cases: &[(RunOptions, &str)] = &[
            (
                RunOptions {
                    time_based: true,
                    ..RunOptions::default()
                },
                "--time-based needs --runtime",
            ),
            (
                RunOptions {
                    iodepth: Some("8".into()),
                    engine: Some(EngineKind::Psync),
                    ..RunOptions::default()
                },
                "needs a queueing engine",
            ),
            (
                RunOptions {
                    preset: Some("fio".into()),
                    ..RunOptions::default()
                },
                "not a preset",
            ),
            (
                RunOptions {
                    trace_syscalls: true,
                    witness: candor_witness::Mode::Procfs,
                    ..RunOptions::default()
                },
                "--trace-syscalls needs the eBPF witness, not --witness procfs",
            ),
            (
                RunOptions {
                    verify: true,
                    tests: Some("copy".into()),
                    file_size: Some("64k".into()),
                    ..RunOptions::default()
                },
                "copy is not one",
            ),
            (
                RunOptions {
                    file_size: Some("1t".into()),
                    threads: Some("64".into()),
                    ..RunOptions::default()
                },
                "free but the plan needs",
            ),
            (
                RunOptions {
                    steady_state: Some(String::new()),
                    runtime: Some("1s".into()),
                    ..RunOptions::default()
                },
                "drop --runtime and give the rounds with --steady-state=round=",
            ),
            (
                RunOptions {
                    precondition: Some(2),
                    file_size: Some("64k".into()),
                    ..RunOptions::default()
                },
                "/t is on a filesystem with no block device under it",
            ),
            (
                RunOptions {
                    precondition: Some(0),
                    file_size: Some("64k".into()),
                    ..RunOptions::default()
                },
                "--precondition=0 is out of range",
            ),
            (
                RunOptions {
                    ramp: Some("1s".into()),
                    mpi: true,
                    file_size: Some("64k".into()),
                    ..RunOptions::default()
                },
                "--ramp is not available with --mpi",
            ),
        ];
        for (o, needle) in cases {
            let e = Plan::new(o, "t", &[info(1 << 30)], &dirs).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Usage);
            assert!(e.message.contains(needle), "{needle}: {}", e.message);
            assert_eq!(e.message.lines().count(), 1);
        }
        let _ = std::fs::remove_dir_all(base);
    }
}
