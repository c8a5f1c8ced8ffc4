//! Copy and metadata tests reconciled by their system calls: what the runner says it made
//! in the timed region (N creates, N closes; a copy's reads and writes and their bytes)
//! against the kernel's count of candor's own threads there (eBPF, per kind). A kind that
//! differs means the operation count behind the figure is not what the kernel saw: the
//! result is then `unverified`, and the sentence names the difference. Without eBPF the
//! kernel counts only read-like and write-like calls of the whole process
//! (the process's io counters' syscr, syscw): at least the test's own, so fewer is a mismatch too.
//! docs/witness.md, "Metadata tests", gives the rules.

use candor_model::units::{format_bytes, ByteStyle};
use candor_model::{CallCheck, CallCount, CallFacts, KindCheck};
use candor_procfs::paths::PID_IO;
use std::collections::BTreeMap;

/// The kinds of the runner's calls that a process's io counters count among syscr (read-like:
/// the read family) and syscw (write-like: the write family).
const READ_LIKE: [&str; 1] = ["read"];
const WRITE_LIKE: [&str; 1] = ["write"];

/// What a thread's /proc io counters count per call (`CallFacts::counted_by` "thread_io").
const THREAD_IO_KINDS: [&str; 2] = ["read", "write"];

/// Where the counts come from and over which operations, for the sentence: "in the
/// first 1000 of its 20000 operations (a sample: ...)" and the like; empty for the kernel's
/// count of every operation.
fn scope(c: &CallFacts) -> String {
    const WHY: &str = "while a program counts calls on the syscall tracepoint, every system \
                       call of the machine takes the kernel's slow path, about 0.3 us each";
    match c.sample {
        Some(s) if s.counting_pass == Some(true) => format!(
            " on a counting pass of its own, made before the {} timed repetition{} (which \
             make the same calls: {WHY}, so no timed repetition is counted)",
            s.repetitions.unwrap_or(1),
            if s.repetitions.unwrap_or(1) == 1 {
                ""
            } else {
                "s"
            }
        ),
        Some(s) if s.ops < s.of => format!(
            " in a sample of {} of its {} operations ({}: {WHY}, so only a sample is counted)",
            s.ops,
            s.of,
            match s.repetitions {
                Some(n) => format!("the first of {n} repetitions, which make the same calls"),
                None => "the first of each thread's pass".to_string(),
            }
        ),
        _ => String::new(),
    }
}

fn bytes(n: u64) -> String {
    format_bytes(n, ByteStyle::WITNESS)
}

/// "1000 create", "256 read (1 MiB)": a kind's calls as counted.
fn said(kind: &str, c: Option<u64>, b: Option<u64>) -> String {
    let n = c.map_or_else(|| "some".to_string(), |n| n.to_string());
    match b {
        Some(b) => format!("{n} {kind} ({})", bytes(b)),
        None => format!("{n} {kind}"),
    }
}

/// Checks a test's calls; None for a test whose calls the runner did not give.
pub fn check(c: &CallFacts) -> Option<CallCheck> {
    if c.expected.is_empty() {
        return None;
    }
    let mut out = CallCheck::default();
    let Some(counted) = c.counted.as_ref() else {
        return Some(not_counted(c));
    };
    // A sample that held every operation is no sample.
    out.sample = c.sample.filter(|s| s.ops < s.of);
    out.counted_by = c.counted_by.clone();
    let thread_io = c.counted_by.as_deref() == Some("thread_io");
    let mut wrong = Vec::new();
    let mut right = Vec::new();
    let mut unjudged = Vec::new();
    for (kind, want) in &c.expected {
        if thread_io && !THREAD_IO_KINDS.contains(&kind.as_str()) {
            // Not a read or a write: the threads' counters do not count it.
            unjudged.push(kind.clone());
            out.kinds.insert(
                kind.clone(),
                KindCheck {
                    expected: want.calls,
                    expected_bytes: want.bytes,
                    ..Default::default()
                },
            );
            continue;
        }
        let got = counted.get(kind).copied().unwrap_or(CallCount {
            calls: Some(0),
            bytes: want.bytes.map(|_| 0),
            errors: 0,
        });
        let calls_ok = match (want.calls, got.calls) {
            (Some(w), Some(g)) => w == g,
            (None, _) => true,
            (Some(_), None) => false,
        };
        let bytes_ok = match (want.bytes, got.bytes) {
            (Some(w), Some(g)) => w == g,
            (None, _) => true,
            (Some(_), None) => false,
        };
        if !calls_ok {
            wrong.push(format!(
                "{} {kind} calls for the runner's {}",
                got.calls.unwrap_or(0),
                want.calls.unwrap_or(0)
            ));
        }
        if !bytes_ok {
            wrong.push(format!(
                "{kind} calls returning {} for the runner's {}",
                bytes(got.bytes.unwrap_or(0)),
                bytes(want.bytes.unwrap_or(0))
            ));
        }
        if calls_ok && bytes_ok {
            right.push(said(kind, got.calls, want.bytes.and(got.bytes)));
        }
        out.kinds.insert(
            kind.clone(),
            KindCheck {
                expected: want.calls,
                counted: got.calls,
                expected_bytes: want.bytes,
                counted_bytes: want.bytes.and(got.bytes),
                errors: got.errors,
                matches: Some(calls_ok && bytes_ok),
            },
        );
    }
    let scope = scope(c);
    if thread_io {
        let rest = if unjudged.is_empty() {
            String::new()
        } else {
            format!(
                "; its {} calls are not counted there (no tracepoint was attached)",
                unjudged.join(", ")
            )
        };
        if wrong.is_empty() {
            out.verdict = "match".into();
            out.sentence = format!(
                "The kernel's own counters of each thread (/proc io: syscr, syscw, rchar, wchar) counted the reads and writes the runner made{scope}, exactly: {}{rest}.",
                right.join(", ")
            );
        } else {
            out.verdict = "mismatch".into();
            out.sentence = format!(
                "The kernel's own counters of each thread (/proc io) saw {}{scope}: the operations behind this figure are not the ones the kernel counted.",
                wrong.join("; ")
            );
        }
        return Some(out);
    }
    if wrong.is_empty() {
        out.verdict = "match".into();
        out.sentence = format!(
            "The kernel counted the system calls the runner made{scope}, exactly: {}.",
            right.join(", ")
        );
    } else {
        out.verdict = "mismatch".into();
        out.sentence = format!(
            "The kernel saw {}{scope}: the operations behind this figure are not the ones the kernel counted.",
            wrong.join("; ")
        );
    }
    Some(out)
}

/// Without a per-kind count: what the process's io counters' syscr and syscw can still say.
fn not_counted(c: &CallFacts) -> CallCheck {
    let reason = c
        .not_counted
        .clone()
        .unwrap_or_else(|| "the eBPF witness was not in use".into());
    let mut kinds: BTreeMap<String, KindCheck> = c
        .expected
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                KindCheck {
                    expected: v.calls,
                    expected_bytes: v.bytes,
                    ..Default::default()
                },
            )
        })
        .collect();
    let sum = |names: &[&str]| -> Option<u64> {
        let mut n = 0;
        let mut any = false;
        for k in names {
            if let Some(v) = c.expected.get(*k) {
                n += v.calls?;
                any = true;
            }
        }
        any.then_some(n)
    };
    let mut short = Vec::new();
    let mut seen = Vec::new();
    for (names, counter, what) in [
        (&READ_LIKE[..], c.syscr, "read-like"),
        (&WRITE_LIKE[..], c.syscw, "write-like"),
    ] {
        let (Some(want), Some(got)) = (sum(names), counter) else {
            continue;
        };
        seen.push(format!("{got} {what} calls for the runner's {want}"));
        if got < want {
            short.push(format!(
                "only {got} {what} calls of the whole process for the runner's {want}"
            ));
            for k in names {
                if let Some(k) = kinds.get_mut(*k) {
                    k.matches = Some(false);
                }
            }
        }
    }
    let mut out = CallCheck {
        kinds: std::mem::take(&mut kinds),
        reason: Some(reason.clone()),
        ..Default::default()
    };
    if !short.is_empty() {
        out.verdict = "mismatch".into();
        out.sentence = format!(
            "The kernel saw {} ({PID_IO}): the operations behind this figure are not the ones the kernel counted.",
            short.join("; ")
        );
        return out;
    }
    out.verdict = "not_counted".into();
    out.sentence = if seen.is_empty() {
        format!("The test's system calls could not be counted by the kernel: {reason}.")
    } else {
        format!(
            "The test's system calls could not be counted per kind ({reason}); {PID_IO} counted {} (the whole process, the witness's own reads included), no fewer than the runner made.",
            seen.join(" and ")
        )
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(n: u64) -> CallCount {
        CallCount {
            calls: Some(n),
            bytes: None,
            errors: 0,
        }
    }

    fn with_bytes(n: u64, b: u64) -> CallCount {
        CallCount {
            calls: Some(n),
            bytes: Some(b),
            errors: 0,
        }
    }

    fn facts(expected: &[(&str, CallCount)], counted: Option<&[(&str, CallCount)]>) -> CallFacts {
        let map = |v: &[(&str, CallCount)]| v.iter().map(|(k, c)| (k.to_string(), *c)).collect();
        CallFacts {
            expected: map(expected),
            counted: counted.map(map),
            ..Default::default()
        }
    }

    #[test]
    fn unlinks_the_kernel_did_not_see_are_named() {
        let c = facts(
            &[("unlink", calls(1000))],
            Some(&[("unlink", calls(998)), ("close", calls(3))]),
        );
        let k = check(&c).expect("a check");
        assert_eq!(k.verdict, "mismatch");
        assert!(
            k.sentence
                .contains("998 unlink calls for the runner's 1000"),
            "{}",
            k.sentence
        );
        assert_eq!(k.kinds["unlink"].matches, Some(false));
        // The same count is a match; kinds the runner did not name are not judged.
        let c = facts(
            &[("unlink", calls(1000))],
            Some(&[("unlink", calls(1000)), ("close", calls(3))]),
        );
        let k = check(&c).expect("a check");
        assert_eq!(k.verdict, "match", "{}", k.sentence);
        assert!(k.sentence.contains("1000 unlink"), "{}", k.sentence);
        assert!(!k.kinds.contains_key("close"));
    }

    /// A runner that claims more than it did (a wrong expected count) is caught, in either
    /// direction, and so is a kind the kernel never saw.
    #[test]
    fn a_wrong_expected_count_is_caught() {
        let kernel = [("create", calls(1000)), ("close", calls(1000))];
        for (want, ok) in [(1000, true), (1001, false), (999, false)] {
            let c = facts(
                &[("create", calls(want)), ("close", calls(1000))],
                Some(&kernel),
            );
            let k = check(&c).expect("a check");
            assert_eq!(k.verdict == "match", ok, "{want}: {}", k.sentence);
        }
        let c = facts(&[("mkdir", calls(10))], Some(&kernel));
        let k = check(&c).expect("a check");
        assert!(
            k.sentence.contains("0 mkdir calls for the runner's 10"),
            "{}",
            k.sentence
        );
    }

    #[test]
    fn copies_are_checked_by_calls_and_bytes() {
        let c = facts(
            &[
                ("read", with_bytes(256, 1 << 20)),
                ("write", with_bytes(256, 1 << 20)),
            ],
            Some(&[
                ("read", with_bytes(256, 1 << 20)),
                ("write", with_bytes(256, (1 << 20) - 4096)),
            ]),
        );
        let k = check(&c).expect("a check");
        assert_eq!(k.verdict, "mismatch");
        assert!(
            k.sentence.contains("write calls returning"),
            "{}",
            k.sentence
        );
        assert_eq!(k.kinds["read"].matches, Some(true));
        assert_eq!(k.kinds["write"].counted_bytes, Some((1 << 20) - 4096));
        // getdents64: the C library decides how many calls; only its bytes are checked.
        let c = facts(
            &[(
                "getdents64",
                CallCount {
                    calls: None,
                    bytes: Some(32_048),
                    errors: 0,
                },
            )],
            Some(&[("getdents64", with_bytes(2, 32_048))]),
        );
        assert_eq!(check(&c).expect("a check").verdict, "match");
    }

    /// Counted on a sample: the sentence says of how many operations and why, and a
    /// runner that claims more calls than the kernel saw in the sample is still caught.
    #[test]
    fn a_sample_is_said_and_still_judged() {
        let mut c = facts(&[("stat", calls(1000))], Some(&[("stat", calls(1000))]));
        c.sample = Some(candor_model::CallSample {
            ops: 1000,
            of: 20_000,
            repetitions: None,
            counting_pass: None,
        });
        c.counted_by = Some("ebpf".into());
        let k = check(&c).expect("a check");
        assert_eq!(k.verdict, "match", "{}", k.sentence);
        assert!(
            k.sentence.starts_with(
                "The kernel counted the system calls the runner made in a sample of 1000 of its 20000 operations (the first of each thread's pass"
            ),
            "{}",
            k.sentence
        );
        assert!(
            k.sentence.ends_with("exactly: 1000 stat."),
            "{}",
            k.sentence
        );
        assert_eq!(k.sample, c.sample);
        c.expected.insert("stat".into(), calls(1001));
        let k = check(&c).expect("a check");
        assert_eq!(k.verdict, "mismatch", "{}", k.sentence);
        assert!(
            k.sentence
                .starts_with("The kernel saw 1000 stat calls for the runner's 1001 in a sample of 1000 of its 20000 operations"),
            "{}",
            k.sentence
        );
    }

    /// A copy counted by its threads' own counters: reads and writes judged, call for call
    /// and byte for byte; the other kinds named as not counted, never as a mismatch.
    #[test]
    fn thread_counters_judge_reads_and_writes_only() {
        let mut c = facts(
            &[
                ("read", with_bytes(256, 1 << 20)),
                ("write", with_bytes(256, 1 << 20)),
                ("openat", calls(2)),
                ("fsync", calls(1)),
            ],
            Some(&[
                ("read", with_bytes(256, 1 << 20)),
                ("write", with_bytes(256, 1 << 20)),
            ]),
        );
        c.counted_by = Some("thread_io".into());
        let k = check(&c).expect("a check");
        assert_eq!(k.verdict, "match", "{}", k.sentence);
        assert_eq!(
            k.sentence,
            "The kernel's own counters of each thread (/proc io: syscr, syscw, rchar, wchar) \
             counted the reads and writes the runner made, exactly: 256 read (1.0 MiB), 256 \
             write (1.0 MiB); its fsync, openat calls are not counted there (no tracepoint was \
             attached)."
        );
        assert_eq!(k.kinds["openat"].matches, None);
        assert_eq!(k.kinds["openat"].expected, Some(2));
        assert_eq!(k.counted_by.as_deref(), Some("thread_io"));
        // A runner that claims one read more than its threads made.
        c.expected.insert("read".into(), with_bytes(257, 1 << 20));
        let k = check(&c).expect("a check");
        assert_eq!(k.verdict, "mismatch", "{}", k.sentence);
        assert!(
            k.sentence
                .contains("saw 256 read calls for the runner's 257"),
            "{}",
            k.sentence
        );
        assert_eq!(k.kinds["read"].matches, Some(false));
    }

    #[test]
    fn without_ebpf_the_check_is_not_made_but_a_shortfall_is_seen() {
        let mut c = facts(
            &[
                ("read", with_bytes(256, 1 << 20)),
                ("write", with_bytes(256, 1 << 20)),
            ],
            None,
        );
        c.not_counted = Some("the eBPF witness was not in use (procfs)".into());
        c.syscr = Some(300);
        c.syscw = Some(256);
        let k = check(&c).expect("a check");
        assert_eq!(k.verdict, "not_counted");
        assert!(
            k.sentence.contains("could not be counted per kind"),
            "{}",
            k.sentence
        );
        assert!(k
            .sentence
            .contains("300 read-like calls for the runner's 256"));
        c.syscw = Some(200);
        let k = check(&c).expect("a check");
        assert_eq!(k.verdict, "mismatch", "{}", k.sentence);
        assert!(
            k.sentence.contains("only 200 write-like calls"),
            "{}",
            k.sentence
        );
        // A metadata test: nothing /proc counts.
        let mut c = facts(&[("unlink", calls(1000))], None);
        c.not_counted = Some("no eBPF".into());
        let k = check(&c).expect("a check");
        assert_eq!(k.verdict, "not_counted");
        assert_eq!(
            k.sentence,
            "The test's system calls could not be counted by the kernel: no eBPF."
        );
        assert!(check(&CallFacts::default()).is_none());
    }
}
