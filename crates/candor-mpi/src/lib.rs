//! candor across many processes over MPI, IOR's way: one candor per rank, every rank passes
//! a barrier before each timed region, each rank's clock is put on rank 0's, and rank 0
//! merges the ranks' results of each test into one (aggregate bandwidth over the ranks'
//! common span, histograms summed, the spread between ranks kept).
//!
//! The MPI library itself is behind the `mpi` feature (`enabled.rs`, rsmpi over the
//! system's OpenMPI or MPICH); without it (`disabled.rs`) `World::init` says how to get a
//! build that has it. Callers never see the feature: the launch check, the clock
//! arithmetic and the merge are plain code, tested without MPI.

pub mod clock;
mod coordinator;
pub mod launch;
pub mod merge;

#[cfg(feature = "mpi")]
mod enabled;
#[cfg(feature = "mpi")]
pub use enabled::World;

#[cfg(not(feature = "mpi"))]
mod disabled;
#[cfg(not(feature = "mpi"))]
pub use disabled::World;

pub use coordinator::{MpiCoordinator, Topology};

/// Why `--mpi` cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// This build has no MPI in it.
    NotBuilt,
    /// No MPI launcher started this process.
    NotLaunched,
    /// The MPI library refused to start.
    Init(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NotBuilt => write!(
                f,
                "--mpi needs a candor built with MPI support, and this one was built without it: rebuild with `cargo build --release --features mpi` (needs an MPI with mpicc, e.g. Debian's libopenmpi-dev, and libclang)"
            ),
            Error::NotLaunched => write!(
                f,
                "--mpi runs one candor per MPI process, and no MPI launcher started this one: run it as `mpirun -n 4 candor run --mpi ...` (or srun with PMI)"
            ),
            Error::Init(why) => write!(f, "MPI could not be initialised ({why}): check that mpirun and candor were built against the same MPI"),
        }
    }
}

impl std::error::Error for Error {}

/// Whether this build can run `--mpi` at all.
pub const BUILT_WITH_MPI: bool = cfg!(feature = "mpi");
