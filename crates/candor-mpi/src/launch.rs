//! Whether this process was started by an MPI launcher, decided from the environment before
//! MPI is initialised: initialising MPI in a process that no launcher started would make a
//! lone one-rank "world" (or hang looking for one), which is never what `--mpi` means.

/// The variables launchers set in each process they start, with the launcher they mean.
const RANK_VARS: &[(&str, &str)] = &[
    ("OMPI_COMM_WORLD_RANK", "Open MPI"),
    ("PMIX_RANK", "PMIx"),
    ("PMI_RANK", "PMI (MPICH/Hydra, Intel MPI, srun --mpi=pmi2)"),
    ("MV2_COMM_WORLD_RANK", "MVAPICH2"),
];

/// What the environment says about the launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The variable that showed it.
    pub variable: &'static str,
    pub launcher: &'static str,
    pub rank: Option<u32>,
}

/// Looks for a launcher's variables through `get` (the environment, or a map in tests).
pub fn detect(get: impl Fn(&str) -> Option<String>) -> Option<Launch> {
    RANK_VARS.iter().find_map(|&(var, launcher)| {
        get(var).map(|v| Launch {
            variable: var,
            launcher,
            rank: v.trim().parse().ok(),
        })
    })
}

/// `detect` on this process's environment.
pub fn detect_env() -> Option<Launch> {
    detect(|k| std::env::var(k).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn open_mpi_mpich_and_pmix_are_recognised() {
        let l = detect(env(&[("OMPI_COMM_WORLD_RANK", "3")])).unwrap();
        assert_eq!((l.launcher, l.rank), ("Open MPI", Some(3)));
        let l = detect(env(&[("PMI_RANK", "0")])).unwrap();
        assert_eq!(l.variable, "PMI_RANK");
        let l = detect(env(&[("PMIX_RANK", "x")])).unwrap();
        assert_eq!((l.variable, l.rank), ("PMIX_RANK", None));
    }

    #[test]
    fn a_plain_shell_is_not_a_launch() {
        assert_eq!(
            detect(env(&[("HOME", "/root"), ("SLURM_JOB_ID", "7")])),
            None
        );
    }
}
