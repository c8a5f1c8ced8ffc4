//! Advice that fits: every remedy candor prints (the witness's explanations, the run's
//! warnings, the reports' notes) is made of the suggestions of one table, each with the
//! condition it needs in the options a test ran with. A suggestion that names an option the
//! run already used, or one candor would refuse with the options given, is never printed
//! (docs/witness.md, "Advice").

use crate::Fadvise;
use serde::{Deserialize, Serialize};

/// What the run was given beyond what the facts already hold (O_DIRECT, O_SYNC, the flush
/// in the timing, the access hint): kept in the facts (`Facts::given`) so that advice
/// written from them, now or when a result is judged again, fits the run.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(default)]
pub struct Given {
    /// `--no-fsync-in-timing` was on the command line (not a preset's choice).
    pub no_fsync_in_timing: bool,
    /// The preset named with `--preset`.
    pub preset: Option<String>,
    /// `--steady-state`: it refuses `--runtime`, `--repeat` and `--duration`.
    pub steady_state: bool,
    /// `--direct` would open this test's files with O_DIRECT (a record test on an engine
    /// that opens O_DIRECT, on a filesystem that takes it).
    pub direct_accepted: bool,
    /// `--file-size` shapes this test (a preset of fixed points decides it otherwise).
    pub file_size_accepted: bool,
    /// `--fadvise` changes this test's access hint (record tests).
    pub fadvise_accepted: bool,
    /// `--buffer-pattern` in force ("zero", "random", "compressible=50%").
    pub buffer_pattern: String,
    /// Repetitions per test (`--repeat`, or the preset's).
    pub repeat: u32,
}

/// The options in force for one test: what advice is checked against.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InForce {
    pub direct: bool,
    /// The writes are written through (O_SYNC, or a filesystem mounted `sync`).
    pub osync: bool,
    pub flush_in_timing: bool,
    pub fadvise: Fadvise,
    pub given: Given,
}

/// One suggestion of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suggestion {
    /// Go around the page cache.
    Direct,
    /// A file the page cache cannot hold (the RAM's size is in the text).
    LargeFile,
    /// Time the flush after the writes.
    IncludeFlush,
    /// Tell the kernel the access is random.
    FadviseRandom,
    /// A loop device: direct I/O to its file.
    LoopDirectIo,
    /// A loop device over a file in memory.
    LoopOnDisk,
    /// A cache test: a file the cache holds, read once before.
    CacheSmallFile,
    /// A cut repetition: a longer runtime.
    RaiseRuntime,
    /// A cut steady-state round: longer rounds.
    LongerRounds,
    /// Noisy repetitions: more of them.
    MoreRepetitions,
    /// Noisy repetitions, or a disturbed device: a quiet machine.
    QuietMachine,
    /// Compressible buffers on a filesystem that compresses them.
    RandomBuffers,
    /// A filesystem mounted with `discard` discarding inside the timed region.
    MountWithoutDiscard,
}

/// Every suggestion, for the table test.
pub const SUGGESTIONS: &[Suggestion] = &[
    Suggestion::Direct,
    Suggestion::LargeFile,
    Suggestion::IncludeFlush,
    Suggestion::FadviseRandom,
    Suggestion::LoopDirectIo,
    Suggestion::LoopOnDisk,
    Suggestion::CacheSmallFile,
    Suggestion::RaiseRuntime,
    Suggestion::LongerRounds,
    Suggestion::MoreRepetitions,
    Suggestion::QuietMachine,
    Suggestion::RandomBuffers,
    Suggestion::MountWithoutDiscard,
];

/// The "file larger than 3x RAM" size, RAM rounded up to a whole GiB first.
pub fn three_ram(ram: u64) -> String {
    let gib = ram.div_ceil(1 << 30).max(1);
    format!("{} GiB", 3 * gib)
}

impl Suggestion {
    /// Whether the suggestion fits the options in force: it names no option already used
    /// and none candor would refuse with them.
    pub fn fits(self, o: &InForce) -> bool {
        let g = &o.given;
        match self {
            // Already O_DIRECT, or a test --direct does not change.
            Suggestion::Direct => !o.direct && g.direct_accepted,
            Suggestion::LargeFile => g.file_size_accepted,
            // Only a flag the command line gave can be left out, and only writes that can
            // wait in the page cache have anything to flush (not O_SYNC, not a `sync` mount).
            Suggestion::IncludeFlush => !o.flush_in_timing && g.no_fsync_in_timing && !o.osync,
            Suggestion::FadviseRandom => o.fadvise != Fadvise::Random && g.fadvise_accepted,
            Suggestion::LoopDirectIo | Suggestion::LoopOnDisk | Suggestion::CacheSmallFile => true,
            // Not candor's options: the machine's.
            Suggestion::QuietMachine | Suggestion::MountWithoutDiscard => true,
            // --steady-state refuses --runtime; its rounds have their own length.
            Suggestion::RaiseRuntime => !g.steady_state,
            Suggestion::LongerRounds => g.steady_state,
            // --steady-state refuses --repeat; five or more is what is asked.
            Suggestion::MoreRepetitions => !g.steady_state && g.repeat < 5,
            // The pattern must be known, and not random already.
            Suggestion::RandomBuffers => {
                !g.buffer_pattern.is_empty() && g.buffer_pattern != "random"
            }
        }
    }

    /// The words of the suggestion, lower case, without a full stop; `ram` for the size of
    /// a file the page cache cannot hold.
    pub fn words(self, ram: u64) -> String {
        match self {
            Suggestion::Direct => "use --direct".into(),
            Suggestion::LargeFile => format!("a file larger than 3x RAM ({} here)", three_ram(ram)),
            Suggestion::IncludeFlush => {
                "include the flush in the timing (leave out --no-fsync-in-timing)".into()
            }
            Suggestion::FadviseRandom => "tell the kernel the access is random (--fadvise random, what fio does by default)".into(),
            Suggestion::LoopDirectIo => "give the loop device direct I/O to its file (losetup --direct-io=on; candor lab does)".into(),
            Suggestion::LoopOnDisk => "put the loop device's file on a disk and give it direct I/O (losetup --direct-io=on; candor lab does)".into(),
            Suggestion::CacheSmallFile => "to measure the page cache, use a file well under the free memory and read it once before".into(),
            Suggestion::RaiseRuntime => "raise --runtime to cover the whole file".into(),
            Suggestion::LongerRounds => "give longer rounds (--steady-state=round=...) to cover the whole file".into(),
            Suggestion::MoreRepetitions => "use --repeat 5 or more".into(),
            Suggestion::QuietMachine => "use a machine with nothing else running".into(),
            Suggestion::RandomBuffers => "use --buffer-pattern random to measure the device".into(),
            Suggestion::MountWithoutDiscard => "mount without discard (and trim with fstrim between runs) to measure the writes alone".into(),
        }
    }
}

/// The sentence of a remedy: the suggestions of `alternatives` that fit, joined with "or"
/// ("Use --direct, or a file larger than 3x RAM (72 GiB here)."); None when none fits.
pub fn remedy(alternatives: &[Suggestion], o: &InForce, ram: u64) -> Option<String> {
    clause(alternatives, o, ram).map(|c| capitalize(&c) + ".")
}

/// The same remedy as a clause (lower case, no full stop), to follow a colon.
pub fn clause(alternatives: &[Suggestion], o: &InForce, ram: u64) -> Option<String> {
    let fit: Vec<Suggestion> = alternatives.iter().copied().filter(|s| s.fits(o)).collect();
    let first = *fit.first()?;
    let mut s = String::new();
    for (i, x) in fit.iter().enumerate() {
        let w = x.words(ram);
        if i == 0 {
            // Said alone, a file is something to use.
            if *x == Suggestion::LargeFile {
                s.push_str("use ");
            }
            s.push_str(&w);
            continue;
        }
        // "Use --direct, or a file larger than ...".
        s.push_str(if first == Suggestion::Direct {
            ", or "
        } else {
            " or "
        });
        s.push_str(&w);
    }
    Some(s)
}

/// The suggestions of `alternatives` that fit, said with "and" ("use --repeat 5 or more,
/// and a machine with nothing else running"); for notes that carry them after a colon.
pub fn all_of(parts: &[Suggestion], o: &InForce, ram: u64) -> Option<String> {
    let words: Vec<String> = parts
        .iter()
        .filter(|s| s.fits(o))
        .map(|s| s.words(ram))
        .collect();
    (!words.is_empty()).then(|| words.join(", and "))
}

/// What a suggestion's words ask for that the options in force refute: an option
/// already used, or one candor refuses with them. Read from the words alone, so the
/// table's conditions are checked against an account of their own. Tests use it on
/// whole sentences: a note must not ask for what the run refutes.
pub fn conflict(words: &str, o: &InForce) -> Option<&'static str> {
    let g = &o.given;
    if words.contains("--direct") && !words.contains("losetup --direct-io") {
        if o.direct {
            return Some("--direct already used");
        }
        if !g.direct_accepted {
            return Some("--direct does not change this test");
        }
    }
    if words.contains("leave out --no-fsync-in-timing") && !g.no_fsync_in_timing {
        return Some("--no-fsync-in-timing was not given");
    }
    if words.contains("include the flush") && o.osync {
        return Some("the writes are written through: there is nothing to flush");
    }
    if words.contains("--runtime") && g.steady_state {
        return Some("--steady-state refuses --runtime");
    }
    if words.contains("--steady-state") && !g.steady_state {
        return Some("--steady-state was not given");
    }
    if words.contains("--repeat") && (g.steady_state || g.repeat >= 5) {
        return Some("--repeat refused or already used");
    }
    if words.contains("--fadvise random") && (o.fadvise == Fadvise::Random || !g.fadvise_accepted) {
        return Some("--fadvise random already in force or refused");
    }
    if words.contains("--buffer-pattern random")
        && (g.buffer_pattern == "random" || g.buffer_pattern.is_empty())
    {
        return Some("--buffer-pattern random already in force");
    }
    if words.contains("3x RAM") && !g.file_size_accepted {
        return Some("--file-size does not shape this test");
    }
    None
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every combination of the options advice depends on.
    fn option_sets() -> Vec<InForce> {
        let mut out = Vec::new();
        for bits in 0u32..(1 << 10) {
            let b = |i: u32| bits & (1 << i) != 0;
            let flush_in_timing = b(2);
            let given = Given {
                // The flag can only have been given when the flush is out of the timing.
                no_fsync_in_timing: b(3) && !flush_in_timing,
                preset: b(4).then(|| "unixbench-copy".to_string()),
                steady_state: b(5),
                direct_accepted: b(6),
                file_size_accepted: b(7),
                fadvise_accepted: b(8),
                buffer_pattern: match (b(9), b(0)) {
                    (true, _) => "random",
                    (false, true) => "zero",
                    (false, false) => "",
                }
                .into(),
                repeat: if b(5) {
                    1
                } else if b(1) {
                    5
                } else {
                    3
                },
            };
            for fadvise in [Fadvise::None, Fadvise::Random] {
                out.push(InForce {
                    direct: b(0),
                    osync: b(1),
                    flush_in_timing,
                    fadvise,
                    given: given.clone(),
                });
            }
        }
        out
    }

    #[test]
    fn no_suggestion_that_fits_conflicts_with_the_options_given() {
        let sets = option_sets();
        for s in SUGGESTIONS {
            let mut printed = 0;
            for o in &sets {
                if !s.fits(o) {
                    continue;
                }
                printed += 1;
                let w = s.words(24 << 30);
                assert_eq!(conflict(&w, o), None, "{s:?} '{w}' with {o:?}");
            }
            assert!(printed > 0, "{s:?} fits no option set");
        }
    }

    #[test]
    fn remedies_keep_only_what_fits() {
        let mut o = InForce {
            given: Given {
                no_fsync_in_timing: true,
                direct_accepted: true,
                file_size_accepted: true,
                ..Given::default()
            },
            ..InForce::default()
        };
        let ram = 24 << 30;
        use Suggestion::*;
        assert_eq!(
            remedy(&[Direct, LargeFile], &o, ram).unwrap(),
            "Use --direct, or a file larger than 3x RAM (72 GiB here)."
        );
        assert_eq!(
            remedy(&[IncludeFlush, Direct], &o, ram).unwrap(),
            "Include the flush in the timing (leave out --no-fsync-in-timing) or use --direct."
        );
        // O_DIRECT already: only the file.
        o.direct = true;
        assert_eq!(
            remedy(&[Direct, LargeFile], &o, ram).unwrap(),
            "Use a file larger than 3x RAM (72 GiB here)."
        );
        o.direct = false;
        // A preset left the flush out, and copy takes no O_DIRECT: nothing to suggest.
        o.given = Given {
            preset: Some("unixbench-copy".into()),
            ..Given::default()
        };
        assert_eq!(remedy(&[IncludeFlush, Direct], &o, ram), None);
        // The flush already timed: only --direct.
        o.flush_in_timing = true;
        o.given = Given {
            direct_accepted: true,
            ..Given::default()
        };
        assert_eq!(
            remedy(&[IncludeFlush, Direct], &o, ram).unwrap(),
            "Use --direct."
        );
        // Written through (O_SYNC, a sync mount): nothing waits in the page cache to flush.
        o.osync = true;
        o.given = Given {
            no_fsync_in_timing: true,
            direct_accepted: true,
            ..Given::default()
        };
        o.flush_in_timing = false;
        assert_eq!(
            remedy(&[IncludeFlush, Direct], &o, ram).unwrap(),
            "Use --direct."
        );
        o.osync = false;
        // --steady-state: longer rounds, never --runtime.
        o.given = Given {
            steady_state: true,
            ..Given::default()
        };
        assert_eq!(
            remedy(&[RaiseRuntime, LongerRounds], &o, ram).unwrap(),
            "Give longer rounds (--steady-state=round=...) to cover the whole file."
        );
    }
}
