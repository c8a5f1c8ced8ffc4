//! Pure statistics, no I/O: the latency histogram every I/O is recorded into, the summary
//! of repetitions (mean, standard deviation, Student-t confidence interval), streaming
//! mean/variance that merges exactly, and Welch's t-test for `candor compare`.

mod histogram;
mod summary;

pub use histogram::Histogram;
pub use summary::{student_t_quantile, summarize, welch_t_test, Welch, Welford};
