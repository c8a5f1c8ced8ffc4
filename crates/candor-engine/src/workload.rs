//! The test catalog: every test candor runs, what it does to the file, which interface it
//! forces, and what it is meant to measure. One table; the runner and the planner read it.

use crate::pattern::Pattern;
pub use crate::special::MetaOp;
use crate::special::{self, Special};

pub use crate::engines::Direction;

/// The interface a test names, if any (fwrite, pwritev...); `Any` uses `--engine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interface {
    Any,
    Stdio,
    Psync,
    Vector,
    Mmap,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileState {
    /// The test creates the file anew (O_CREAT|O_EXCL), as iozone's first write.
    Fresh,
    /// The test needs the whole file to exist already.
    Existing,
}

#[derive(Clone, Copy, Debug)]
pub struct TestSpec {
    pub name: &'static str,
    /// iozone's -i group the test belongs to.
    pub iozone_group: u8,
    pub direction: Direction,
    pub pattern: PatternKind,
    pub interface: Interface,
    pub file: FileState,
    /// A "re" test: reads what the previous test just read, so it is meant to hit the cache.
    pub cached: bool,
    /// Copy and metadata workloads, which are not records on one file (`None` for the
    /// tests that move records through an engine).
    pub special: Option<&'static dyn Special>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatternKind {
    Sequential,
    Backward,
    Random,
    Stride,
    /// One record rewritten again and again (iozone's record rewrite).
    SameRecord,
}

/// `--fadvise`: the access hint the tests' files get.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hint {
    /// What each test means (see [`Hint::for_pattern`]).
    #[default]
    Auto,
    Given(candor_model::Fadvise),
}

impl Hint {
    pub fn parse(text: &str) -> Result<Hint, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Hint::Auto),
            t => t.parse().map(Hint::Given).map_err(|_| {
                format!("'{text}' is not an access hint: choose auto, none, random or sequential")
            }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Hint::Auto => "auto",
            Hint::Given(f) => f.as_str(),
        }
    }

    /// The hint a test of `pattern` gets. Auto tells the kernel what the test means, as
    /// fio does by default: random for random tests (no readahead and no read-around, so
    /// every read asks the device for what it reads), sequential for sequential ones. The
    /// stride, backward and same-record tests (iozone's) get none: they measure how the
    /// kernel's own readahead copes with those patterns.
    pub fn for_pattern(self, pattern: PatternKind) -> candor_model::Fadvise {
        use candor_model::Fadvise;
        match self {
            Hint::Given(f) => f,
            Hint::Auto => match pattern {
                PatternKind::Random => Fadvise::Random,
                PatternKind::Sequential => Fadvise::Sequential,
                PatternKind::Backward | PatternKind::Stride | PatternKind::SameRecord => {
                    Fadvise::None
                }
            },
        }
    }
}

impl PatternKind {
    /// The pattern as the result model names it.
    pub fn access(self) -> candor_model::Access {
        match self {
            PatternKind::Sequential => candor_model::Access::Sequential,
            PatternKind::Backward => candor_model::Access::Backward,
            PatternKind::Random => candor_model::Access::Random,
            PatternKind::Stride => candor_model::Access::Stride,
            PatternKind::SameRecord => candor_model::Access::SameRecord,
        }
    }

    pub fn build(self, records: u64, stride: u64, seed: u64) -> Pattern {
        match self {
            PatternKind::Sequential => Pattern::sequential(records),
            PatternKind::Backward => Pattern::backward(records),
            PatternKind::Random => Pattern::random(records, seed),
            PatternKind::Stride => Pattern::stride(records, stride),
            PatternKind::SameRecord => Pattern::same_record(records),
        }
    }
}

macro_rules! spec {
    ($name:literal, $g:literal, $dir:ident, $pat:ident, $if:ident, $file:ident, $cached:literal) => {
        TestSpec {
            name: $name,
            iozone_group: $g,
            direction: Direction::$dir,
            pattern: PatternKind::$pat,
            interface: Interface::$if,
            file: FileState::$file,
            cached: $cached,
            special: None,
        }
    };
    ($name:literal, $dir:ident, $special:expr) => {
        TestSpec {
            name: $name,
            iozone_group: NO_GROUP,
            direction: Direction::$dir,
            pattern: PatternKind::Sequential,
            interface: Interface::Any,
            file: FileState::Existing,
            cached: false,
            special: Some($special),
        }
    };
}

/// The group of tests that iozone's -i numbers do not name.
pub const NO_GROUP: u8 = 255;

/// Every test, in iozone's order (which is also the order they run in).
pub const TESTS: &[TestSpec] = &[
    spec!("write", 0, Write, Sequential, Any, Fresh, false),
    spec!("rewrite", 0, Write, Sequential, Any, Existing, false),
    spec!("read", 1, Read, Sequential, Any, Existing, false),
    spec!("reread", 1, Read, Sequential, Any, Existing, true),
    spec!("randread", 2, Read, Random, Any, Existing, false),
    spec!("randwrite", 2, Write, Random, Any, Existing, false),
    spec!("bkwdread", 3, Read, Backward, Any, Existing, false),
    spec!("recrewrite", 4, Write, SameRecord, Any, Existing, false),
    spec!("strideread", 5, Read, Stride, Any, Existing, false),
    spec!("fwrite", 6, Write, Sequential, Stdio, Fresh, false),
    spec!("frewrite", 6, Write, Sequential, Stdio, Existing, false),
    spec!("fread", 7, Read, Sequential, Stdio, Existing, false),
    spec!("freread", 7, Read, Sequential, Stdio, Existing, true),
    spec!("randmix", 8, Mixed, Random, Any, Existing, false),
    spec!("pwrite", 9, Write, Sequential, Psync, Fresh, false),
    spec!("repwrite", 9, Write, Sequential, Psync, Existing, false),
    spec!("pread", 10, Read, Sequential, Psync, Existing, false),
    spec!("repread", 10, Read, Sequential, Psync, Existing, true),
    spec!("pwritev", 11, Write, Sequential, Vector, Fresh, false),
    spec!("repwritev", 11, Write, Sequential, Vector, Existing, false),
    spec!("preadv", 12, Read, Sequential, Vector, Existing, false),
    spec!("repreadv", 12, Read, Sequential, Vector, Existing, true),
    spec!("mmapwrite", 13, Write, Sequential, Mmap, Fresh, false),
    spec!("mmapread", 13, Read, Sequential, Mmap, Existing, false),
    spec!("copy", Write, &special::COPY),
    spec!("create", Write, &special::CREATE),
    spec!("stat", Read, &special::STAT),
    spec!("open", Read, &special::OPEN),
    spec!("readdir", Read, &special::READDIR),
    spec!("unlink", Write, &special::UNLINK),
    spec!("mkdir", Write, &special::MKDIR),
    spec!("rmdir", Write, &special::RMDIR),
];

impl TestSpec {
    /// Whether the test moves records of one file per thread through an engine (and so
    /// can use O_DIRECT, `--verify`, stonewalling, shared files and reading elsewhere).
    /// The one place that tells the record tests from copy and metadata.
    pub fn is_records(&self) -> bool {
        self.special.is_none()
    }

    pub fn is_copy(&self) -> bool {
        self.special.is_some_and(|s| s.is_copy())
    }

    pub fn is_meta(&self) -> bool {
        self.special.is_some_and(|s| !s.is_copy())
    }

    /// Which way its headline figure's data goes, as results store it: a record test's
    /// direction, both ways for copy, none for the metadata tests (they move no data).
    pub fn data_direction(&self) -> Option<Direction> {
        if self.is_records() {
            Some(self.direction)
        } else if self.is_copy() {
            Some(Direction::Mixed)
        } else {
            None
        }
    }

    /// How it walks its file, as results store it (record tests only).
    pub fn access(&self) -> Option<candor_model::Access> {
        self.is_records().then(|| self.pattern.access())
    }
}

pub fn find(name: &str) -> Option<&'static TestSpec> {
    TESTS.iter().find(|t| t.name == name)
}

/// Parses `--tests`: names, or iozone's numbers 0..12 meaning their groups. Keeps the
/// catalog order, so "read,write" still writes first (a read needs the file).
pub fn parse_tests(list: &str) -> Result<Vec<&'static TestSpec>, String> {
    let mut chosen: Vec<&'static TestSpec> = Vec::new();
    for raw in list.split(',') {
        let item = raw.trim().to_ascii_lowercase();
        if item.is_empty() {
            return Err(format!(
                "'{list}' has an empty test name: separate names with single commas"
            ));
        }
        if let Ok(n) = item.parse::<u8>() {
            if n > 12 {
                return Err(format!(
                    "there is no iozone test {n}: iozone's numbers go from 0 to 12"
                ));
            }
            chosen.extend(TESTS.iter().filter(|t| t.iozone_group == n));
            continue;
        }
        match find(&item) {
            Some(t) => chosen.push(t),
            None => {
                let names: Vec<&str> = TESTS.iter().map(|t| t.name).collect();
                return Err(format!(
                    "'{item}' is not a test: choose from {} (or iozone's numbers 0-12)",
                    names.join(", ")
                ));
            }
        }
    }
    let mut ordered: Vec<&'static TestSpec> = TESTS
        .iter()
        .filter(|t| chosen.iter().any(|c| c.name == t.name))
        .collect();
    ordered.dedup_by_key(|t| t.name);
    Ok(ordered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iozone_numbers_mean_their_groups() {
        let names =
            |l: &str| -> Vec<&str> { parse_tests(l).unwrap().iter().map(|t| t.name).collect() };
        assert_eq!(names("0"), ["write", "rewrite"]);
        assert_eq!(names("1,0"), ["write", "rewrite", "read", "reread"]);
        assert_eq!(names("2"), ["randread", "randwrite"]);
        assert_eq!(names("8"), ["randmix"]);
        assert_eq!(names("12"), ["preadv", "repreadv"]);
        assert_eq!(names("unlink,create,copy"), ["copy", "create", "unlink"]);
        assert_eq!(names("read,write,read"), ["write", "read"]);
    }

    #[test]
    fn unknown_tests_are_named() {
        assert!(parse_tests("13").unwrap_err().contains("0 to 12"));
        assert!(parse_tests("wrte")
            .unwrap_err()
            .contains("'wrte' is not a test"));
        assert!(parse_tests("read,,write").is_err());
    }

    #[test]
    fn every_group_0_to_12_has_tests() {
        for g in 0..=12u8 {
            assert!(TESTS.iter().any(|t| t.iozone_group == g), "group {g}");
        }
    }
}

#[cfg(test)]
mod hint_tests {
    use super::*;
    use candor_model::Fadvise;

    #[test]
    fn auto_means_what_the_test_means() {
        assert_eq!(Hint::Auto.for_pattern(PatternKind::Random), Fadvise::Random);
        assert_eq!(
            Hint::Auto.for_pattern(PatternKind::Sequential),
            Fadvise::Sequential
        );
        assert_eq!(Hint::Auto.for_pattern(PatternKind::Stride), Fadvise::None);
        let none = Hint::parse("none").unwrap();
        assert_eq!(none.for_pattern(PatternKind::Random), Fadvise::None);
        assert_eq!(
            Hint::parse(" Random ").unwrap(),
            Hint::Given(Fadvise::Random)
        );
        assert_eq!(Hint::parse("auto").unwrap().name(), "auto");
        assert_eq!(
            Hint::parse("willneed").unwrap_err(),
            "'willneed' is not an access hint: choose auto, none, random or sequential"
        );
    }
}
