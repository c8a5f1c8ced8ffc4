//! The witness sources (`--witness` of `candor run` and `candor audit`) and the one choice
//! between eBPF and the /proc counters that both commands make.

/// How the kernel is observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WitnessSource {
    /// eBPF when it loads (root), the /proc counters otherwise.
    Auto,
    Procfs,
    Bpf,
    /// Not observed at all (`candor run` only).
    Off,
}

/// What [`WitnessSource::choose`] settled on.
#[derive(Debug)]
pub enum Chosen<T> {
    /// `Off`: nothing observes.
    Off,
    /// The eBPF source, loaded.
    Bpf(T),
    /// The /proc counters, as asked.
    Procfs,
    /// eBPF did not load (why); `asked` when eBPF was asked for by name rather than by
    /// `Auto`. The caller falls back to the /proc counters or refuses.
    NoBpf { why: String, asked: bool },
}

impl WitnessSource {
    /// Every source by the name `--witness` takes.
    pub const ALL: &'static [(&'static str, WitnessSource)] = &[
        ("auto", WitnessSource::Auto),
        ("procfs", WitnessSource::Procfs),
        ("bpf", WitnessSource::Bpf),
        ("off", WitnessSource::Off),
    ];

    /// `candor run --witness NAME`.
    pub fn parse(name: &str) -> Result<WitnessSource, String> {
        Self::named(name).ok_or_else(|| {
            format!("'{name}' is not a witness source: choose auto, procfs, bpf or off")
        })
    }

    /// The source called `name`, if any.
    pub fn named(name: &str) -> Option<WitnessSource> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map(|(n, _)| *n)
            .unwrap_or("auto")
    }

    /// The eBPF-or-procfs choice: `load` is tried for `Auto` and `Bpf` only.
    pub fn choose<T>(self, load: impl FnOnce() -> Result<T, String>) -> Chosen<T> {
        match self {
            WitnessSource::Off => Chosen::Off,
            WitnessSource::Procfs => Chosen::Procfs,
            WitnessSource::Auto | WitnessSource::Bpf => match load() {
                Ok(t) => Chosen::Bpf(t),
                Err(why) => Chosen::NoBpf {
                    why,
                    asked: self == WitnessSource::Bpf,
                },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_refuse_others() {
        for (n, s) in WitnessSource::ALL {
            assert_eq!(WitnessSource::parse(n), Ok(*s));
            assert_eq!(s.name(), *n);
        }
        assert_eq!(
            WitnessSource::parse("ebpf").unwrap_err(),
            "'ebpf' is not a witness source: choose auto, procfs, bpf or off"
        );
    }

    #[test]
    fn the_choice() {
        let fails = || Err::<u8, _>("no BTF".to_string());
        assert!(matches!(WitnessSource::Off.choose(|| Ok(1)), Chosen::Off));
        assert!(matches!(
            WitnessSource::Procfs.choose(|| Ok(1)),
            Chosen::Procfs
        ));
        assert!(matches!(
            WitnessSource::Auto.choose(|| Ok(1)),
            Chosen::Bpf(1)
        ));
        assert!(matches!(
            WitnessSource::Bpf.choose(|| Ok(1)),
            Chosen::Bpf(1)
        ));
        assert!(matches!(
            WitnessSource::Auto.choose(fails),
            Chosen::NoBpf { asked: false, ref why } if why == "no BTF"
        ));
        assert!(matches!(
            WitnessSource::Bpf.choose(fails),
            Chosen::NoBpf { asked: true, .. }
        ));
    }
}
