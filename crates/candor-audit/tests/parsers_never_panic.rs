//! Every parser takes any text: random bytes, truncated captures, captures with lines
//! shuffled or cut. None may panic, and none may claim a negative or non-finite rate.

use candor_audit::claims::{self, bonnie, dd, fio, ior, iozone, mdtest, sysbench, unixbench};
use proptest::prelude::*;

/// Every captured output under tests/data, at any depth (iozone's are by release).
fn fixtures() -> Vec<String> {
    fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if let Ok(t) = std::fs::read_to_string(&p) {
                out.push(t);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data")),
        &mut out,
    );
    assert!(out.len() > 40, "{} fixtures", out.len());
    out
}

fn check(text: &str) {
    let argv: Vec<String> = ["dd", "if=/dev/zero", "of=/tmp/x", "bs=1M"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let argv_fstime: Vec<String> = ["fstime", "-c", "-b", "256", "-m", "500"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for c in iozone::parse(text)
        .into_iter()
        .chain(fio::parse(text))
        .chain(dd::parse(text))
        .chain(claims::parse(&argv, text, text))
        .chain(ior::read(text).claims)
        .chain(mdtest::read(text).claims)
        .chain(sysbench::read(text).claims)
        .chain(bonnie::read(text).claims)
        .chain(unixbench::read_run(text).claims)
        .chain(unixbench::read_fstime(&argv_fstime, text, text).claims)
        .chain(candor_audit::generic::read("tool", text, text).claims)
    {
        assert!(c.claimed_bps.is_finite() && c.claimed_bps >= 0.0, "{c:?}");
        assert!(c.iops.is_none_or(|x| x.is_finite() && x >= 0.0), "{c:?}");
    }
}

#[test]
fn fixtures_cut_at_every_line() {
    for f in fixtures() {
        let lines: Vec<&str> = f.lines().collect();
        for n in 0..=lines.len() {
            check(&lines[..n].join("\n"));
            check(&lines[n..].join("\n"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_text(s in "\\PC{0,400}") {
        check(&s);
    }

    #[test]
    fn fixtures_cut_anywhere(which in 0usize..64, at in 0usize..200_000, len in 0usize..4000) {
        let f = fixtures();
        if f.is_empty() {
            return Ok(());
        }
        let text = &f[which % f.len()];
        let bytes = text.as_bytes();
        let start = at % (bytes.len() + 1);
        let end = (start + len).min(bytes.len());
        check(&String::from_utf8_lossy(&bytes[start..end]));
        check(&String::from_utf8_lossy(&bytes[..start]));
    }

    #[test]
    fn fixtures_with_noise(which in 0usize..64, noise in "[ \\t0-9a-zA-Z=:,.()%/\\[\\]|\"{}-]{0,60}", line in 0usize..300) {
        let f = fixtures();
        if f.is_empty() {
            return Ok(());
        }
        let text = &f[which % f.len()];
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let at = line % (lines.len() + 1);
        lines.insert(at, noise.clone());
        check(&lines.join("\n"));
        if let Some(l) = lines.get_mut(at.saturating_sub(1)) {
            l.push_str(&noise);
        }
        check(&lines.join("\n"));
    }
}
