//! mdtest's results, as its src/mdtest.c prints them: the launch line ("mdtest-4.1.0+dev was
//! launched with 2 total task(s) on 1 node(s)"), the item count ("2 tasks, 2000
//! files/directories"), then "SUMMARY rate (in ops/sec): (of N iterations)" (IOR 3.3's
//! mdtest: "SUMMARY rate: (of N iterations)", with a colon after each operation's name) and,
//! with `-P` or `-Z`, "SUMMARY time (in ms/op)": one row per operation with Max, Min, Mean
//! and Std Dev over the iterations.
//!
//! A rate is the items of the phase (every task's `-n` items) over the phase's time between
//! barriers. One claim per operation: a metadata figure (operations per second, no bytes),
//! with the operation ("create", "stat", "read", "remove", "rename") and what it works on
//! (files, directories, the tree) kept in the flags, to be checked against the calls the
//! kernel saw (creates, stats, opens and reads, unlinks, mkdir/rmdir).

use super::{figures_left, Claim, Direction, Parsed, Unread};
use std::collections::BTreeSet;

const P: &str = "mdtest";

/// Whether an output is mdtest's.
pub fn sniff(text: &str) -> bool {
    text.lines().any(|l| {
        l.starts_with("mdtest-") && l.contains(" was launched with ")
            || l.starts_with("SUMMARY rate") && text.contains("File creation")
    })
}

/// (what, operation) of an operation's name in the tables.
fn operation(name: &str) -> Option<(&'static str, &'static str)> {
    let (what, op) = name.trim().split_once(' ')?;
    let what = match what {
        "Directory" => "directories",
        "File" => "files",
        "Tree" => "tree",
        _ => return None,
    };
    let op = match op.trim() {
        "creation" => "create",
        "stat" => "stat",
        "read" => "read",
        "removal" => "remove",
        "rename" => "rename",
        _ => return None,
    };
    Some((what, op))
}

#[derive(Clone, Debug)]
struct Stat {
    name: String,
    max: f64,
    min: f64,
    mean: f64,
    sd: f64,
    line: usize,
    printed: String,
}

/// What one run printed so far: its launch line's figures, its item count and iterations,
/// and the rows of its tables.
#[derive(Default)]
struct Run {
    version: String,
    tasks: Option<u32>,
    nodes: Option<u32>,
    items: Option<u64>,
    iterations: Option<u32>,
    rates: Vec<Stat>,
    times: Vec<Stat>,
}

impl Run {
    /// The claims of the tables read so far, one per operation (its rate and its time
    /// together); the tables are then emptied for the next run.
    fn flush(&mut self, claims: &mut Vec<Claim>, unread: &mut Vec<Unread>) {
        if self.rates.is_empty() && self.times.is_empty() {
            return;
        }
        let (rates, times, version) = (&self.rates, &self.times, self.version.as_str());
        let (tasks, nodes, items, iterations) =
            (self.tasks, self.nodes, self.items, self.iterations);
        let names: Vec<String> = rates
            .iter()
            .chain(times.iter())
            .map(|s| s.name.clone())
            .fold(Vec::new(), |mut v, n| {
                if !v.contains(&n) {
                    v.push(n);
                }
                v
            });
        for name in names {
            let rate = rates.iter().find(|s| s.name == name);
            let time = times.iter().find(|s| s.name == name);
            let Some((what, op)) = operation(&name) else {
                continue;
            };
            // The claim is the mean rate; with only the time table, 1000 / mean ms per op.
            let (iops, line, printed, basis) = match (rate, time) {
                (Some(r), _) => (
                    r.mean,
                    r.line,
                    r.printed.clone(),
                    "mean over the iterations of the items over the phase's time".to_string(),
                ),
                (None, Some(t)) if t.mean > 0.0 => (
                    1000.0 / t.mean,
                    t.line,
                    t.printed.clone(),
                    "1000 / the mean milliseconds per operation".to_string(),
                ),
                (None, Some(t)) => {
                    unread.push(Unread::new(
                        P,
                        t.line,
                        &t.printed,
                        format!("{name}: mdtest printed {:.3} ms per operation, too small to give a rate", t.mean),
                    ));
                    continue;
                }
                (None, None) => continue,
            };
            let mut c = Claim {
                program: P.into(),
                test: name.to_lowercase(),
                direction: Direction::Unknown,
                threads: tasks.unwrap_or(1),
                iops: Some(iops),
                basis,
                printed,
                line,
                flags: vec![
                    "metadata".into(),
                    format!("operation {op}"),
                    format!("on {what}"),
                ],
                ..Default::default()
            };
            if let Some(r) = rate {
                c.extra.insert("max_ops_per_s".into(), r.max);
                c.extra.insert("min_ops_per_s".into(), r.min);
                c.extra.insert("mean_ops_per_s".into(), r.mean);
                c.extra.insert("stddev_ops_per_s".into(), r.sd);
            }
            if let Some(t) = time {
                c.extra.insert("max_ms_per_op".into(), t.max);
                c.extra.insert("min_ms_per_op".into(), t.min);
                c.extra.insert("mean_ms_per_op".into(), t.mean);
                c.extra.insert("stddev_ms_per_op".into(), t.sd);
            }
            if let Some(n) = items.filter(|_| what != "tree") {
                c.extra.insert("items".into(), n as f64);
            }
            if let Some(i) = iterations {
                c.extra.insert("iterations".into(), i as f64);
            }
            if let Some(n) = nodes {
                c.flags.push(format!("nodes {n}"));
            }
            if !version.is_empty() {
                c.flags.push(format!("version {version}"));
            }
            claims.push(c);
        }
        self.rates.clear();
        self.times.clear();
    }
}

/// Reads an mdtest output (one run, or several one after another).
pub fn read(text: &str) -> Parsed {
    let lines: Vec<&str> = text.lines().collect();
    let mut used: BTreeSet<usize> = BTreeSet::new();
    let mut unread = Vec::new();
    let mut claims = Vec::new();
    let mut run = Run::default();
    let mut table: Option<bool> = None; // Some(true): rates, Some(false): times.
    let mut figures = vec![false; lines.len() + 1];
    for (i, raw) in lines.iter().enumerate() {
        let n = i + 1;
        let l = raw.trim();
        if let Some(rest) = l.strip_prefix("mdtest-") {
            if let Some((v, launch)) = rest.split_once(" was launched with ") {
                run.flush(&mut claims, &mut unread);
                run.version = v.to_string();
                let mut w = launch.split_whitespace();
                run.tasks = w.next().and_then(|x| x.parse().ok());
                run.nodes = launch
                    .split(" on ")
                    .nth(1)
                    .and_then(|x| x.split_whitespace().next())
                    .and_then(|x| x.parse().ok());
                used.insert(n);
                continue;
            }
        }
        if let Some((t, rest)) = l.split_once(" tasks, ") {
            if let (Ok(_), Some(c)) = (
                t.trim().parse::<u32>(),
                rest.split_whitespace().next().and_then(|x| x.parse().ok()),
            ) {
                run.items = Some(c);
                used.insert(n);
                continue;
            }
        }
        if l.starts_with("SUMMARY rate") || l.starts_with("SUMMARY time") {
            table = Some(l.starts_with("SUMMARY rate"));
            run.iterations = l
                .split_once("(of ")
                .and_then(|(_, x)| x.split_whitespace().next())
                .and_then(|x| x.parse().ok());
            used.insert(n);
            continue;
        }
        if l.is_empty() || l.starts_with("-- finished") || l.starts_with("-- started") {
            if l.starts_with("-- finished") {
                used.insert(n);
            }
            if !l.starts_with("-- started") {
                table = None;
            }
            continue;
        }
        let Some(is_rate) = table else {
            continue;
        };
        figures[n] = true;
        if l.starts_with("Operation") || l.starts_with("---------") {
            used.insert(n);
            continue;
        }
        // "Directory creation          19280.832      17489.858      18385.345       1266.410"
        // (3.3: "Directory creation        :      13172.680 ...").
        let (name, nums) = match l.find(|c: char| c.is_ascii_digit()) {
            Some(at) => (&l[..at], &l[at..]),
            None => (l, ""),
        };
        let name = name.trim().trim_end_matches(':').trim().to_string();
        let v: Vec<f64> = nums
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if v.len() == 4 && nums.split_whitespace().count() == 4 && operation(&name).is_some() {
            let s = Stat {
                name,
                max: v[0],
                min: v[1],
                mean: v[2],
                sd: v[3],
                line: n,
                printed: l.to_string(),
            };
            if is_rate {
                run.rates.push(s);
            } else {
                run.times.push(s);
            }
            used.insert(n);
        } else {
            used.insert(n);
            unread.push(Unread::new(
                P,
                n,
                l,
                if operation(&name).is_none() {
                    format!("an operation candor does not know ({name:?})")
                } else {
                    "a row without its four figures (max, min, mean, std dev)".to_string()
                },
            ));
        }
    }
    run.flush(&mut claims, &mut unread);
    unread.extend(figures_left(P, &lines, &|n| figures[n], &used));
    Parsed { claims, unread }.sane()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> String {
        let p = format!("{}/tests/data/mdtest/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    fn one(name: &str) -> Parsed {
        let r = read(&data(name));
        assert!(r.unread.is_empty(), "{name}: {:?}", r.unread);
        r
    }

    fn has(c: &Claim, f: &str) -> bool {
        c.flags.iter().any(|x| x == f)
    }

    #[test]
    fn ten_operations_over_two_iterations() {
        let r = one("4.1.0dev-np2-n1000-i2.txt");
        let names: Vec<&str> = r.claims.iter().map(|c| c.test.as_str()).collect();
        assert_eq!(
            names,
            [
                "directory creation",
                "directory stat",
                "directory rename",
                "directory removal",
                "file creation",
                "file stat",
                "file read",
                "file removal",
                "tree creation",
                "tree removal"
            ]
        );
        let c = &r.claims[4];
        assert_eq!(c.iops, Some(4934.305));
        assert_eq!(c.extra["max_ops_per_s"], 5195.375);
        assert_eq!(c.extra["min_ops_per_s"], 4673.236);
        assert_eq!(c.extra["stddev_ops_per_s"], 369.208);
        assert_eq!(c.extra["items"], 2000.0);
        assert_eq!(c.extra["iterations"], 2.0);
        assert_eq!(c.threads, 2);
        assert!(has(c, "metadata") && has(c, "operation create") && has(c, "on files"));
        assert!(has(c, "nodes 1") && has(c, "version 4.1.0+dev"));
        assert_eq!(c.claimed_bps, 0.0);
        assert_eq!(c.line, 18);
        assert_eq!(r.claims[2].iops, Some(56438.846));
        assert!(has(&r.claims[2], "operation rename"));
        assert_eq!(r.claims[9].extra["max_ops_per_s"], 536.219);
        assert!(!r.claims[9].extra.contains_key("items"));
    }

    #[test]
    fn releases_3_3_and_4_0() {
        let r = one("3.3.0-np2-n1000-i2.txt");
        assert_eq!(r.claims.len(), 9);
        assert_eq!(r.claims[0].iops, Some(12187.563));
        assert_eq!(r.claims[0].extra["max_ops_per_s"], 13172.680);
        assert_eq!(r.claims[8].extra["stddev_ops_per_s"], 11.438);
        assert!(has(&r.claims[0], "version 3.3.0"));
        let r = one("4.0.0-np2-n1000-i2.txt");
        assert_eq!(r.claims.len(), 10);
        assert!(r.claims.iter().all(|c| c.iops.is_some_and(|v| v > 0.0)));
    }

    #[test]
    fn rate_and_time_tables() {
        let r = one("4.1.0dev-np2-F-P.txt");
        assert_eq!(r.claims.len(), 6);
        let c = &r.claims[0];
        assert_eq!(c.test, "file creation");
        assert_eq!(c.iops, Some(4248.360));
        assert_eq!(c.extra["mean_ms_per_op"], 0.235);
        assert_eq!(c.extra["items"], 1000.0);
        assert_eq!(r.claims[3].extra["mean_ms_per_op"], 0.002);
    }

    #[test]
    fn time_table_only() {
        let r = read(&data("4.1.0dev-np2-F-Z.txt"));
        // Stat, read and tree creation printed 0.000 ms/op: no rate to check.
        assert_eq!(r.unread.len(), 3, "{:?}", r.unread);
        assert!(r.unread.iter().all(|u| u.why.contains("too small")));
        let names: Vec<&str> = r.claims.iter().map(|c| c.test.as_str()).collect();
        assert_eq!(names, ["file creation", "file removal", "tree removal"]);
        assert!((r.claims[0].iops.unwrap_or(0.0) - 1000.0 / 0.226).abs() < 1e-9);
    }

    #[test]
    fn tree_and_file_with_data() {
        let r = one("4.1.0dev-np1-tree.txt");
        assert!(r.claims.len() >= 8);
        assert_eq!(r.claims[0].threads, 1);
        assert_eq!(r.claims[0].extra["items"], 1989.0);
        let f = one("4.1.0dev-np2-F-w4096-u.txt");
        assert!(f.claims.iter().any(|c| c.test == "file read"));
    }

    #[test]
    fn an_unknown_operation_is_named() {
        let t = data("4.1.0dev-np2-F-P.txt").replace(
            "   File stat                 1934642.066",
            "   File chmod                1934642.066",
        );
        let r = read(&t);
        assert_eq!(r.unread.len(), 1, "{:?}", r.unread);
        assert!(r.unread[0].why.contains("File chmod"));
        // File stat still has its time table row: its rate is 1000 / 0.001 ms.
        assert_eq!(r.claims.len(), 6);
        let stat = r.claims.iter().find(|c| c.test == "file stat");
        assert!(stat.is_some_and(|c| c.basis.contains("milliseconds") && c.iops == Some(1e6)));
    }
}
