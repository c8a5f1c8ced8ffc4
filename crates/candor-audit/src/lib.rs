//! `candor audit -- CMD`: runs someone else's benchmark under observation, rebuilds what it
//! did from the kernel's point of view, reads what it claimed, and puts the two side by side.
//!
//! - [`claims`]: pure parsers of iozone, fio and dd output into [`Claim`]s.

pub mod claims;

pub use claims::{Claim, Direction};
pub mod phase;
pub mod procfs;

pub use phase::{Observed, Phase, PhaseSource, ProcessRecord};
pub mod disk;
pub mod reconcile;

pub use reconcile::{reconcile, Row};
