//! Who runs `candor run`'s pipeline: the only process, or one rank of an MPI job. The
//! pipeline asks its role at each step where the two differ (agreeing on a refusal, the run
//! id, who reports, how the plan is run, how an early stop ends the job), so that it reads
//! the same for both.

use super::mpi::Session;
use super::Bar;
use crate::exit::Failure;
use candor_engine::plan::{Plan, RunOptions};
use candor_engine::runner::{self, StopReason, Target};
use candor_model::{MpiInfo, RunDoc, TestResult};

/// The only process, or one rank of an MPI job (`--mpi`).
#[derive(Clone, Copy)]
pub enum Role<'a> {
    Single,
    Rank(&'a Session),
}

/// What a run keeps besides its results: where its clock started, and over MPI with
/// `--rank-output` this rank's own results before the merge.
#[derive(Default)]
pub struct Kept {
    pub t0_ns: Option<u64>,
    own: Option<Vec<TestResult>>,
}

impl Role<'_> {
    /// Whether this process reports: saves, prints and tells (rank 0, or the only process).
    pub fn reports(&self) -> bool {
        match self {
            Role::Single => true,
            Role::Rank(s) => s.world.rank() == 0,
        }
    }

    /// Stale run directories of killed runs are removed only by a single process: a run
    /// directory made on another node cannot be told from a stale one.
    pub fn cleans_stale(&self) -> bool {
        matches!(self, Role::Single)
    }

    /// Every rank learns whether every rank got this far. Called at the same places on
    /// every rank whatever happened locally, so no rank waits at a barrier for a rank that
    /// stopped. A single process has no one to agree with.
    pub fn agree<T>(&self, mine: Result<T, Failure>) -> Result<T, Failure> {
        let Role::Rank(s) = self else { return mine };
        let word = match &mine {
            Ok(_) => String::new(),
            Err(f) => format!("{}\t{}", f.code, f.message),
        };
        let all = s.world.all_gather_bytes(word.as_bytes());
        for (rank, w) in all.iter().enumerate() {
            if w.is_empty() {
                continue;
            }
            let text = String::from_utf8_lossy(w);
            let (code, message) = text.split_once('\t').unwrap_or(("2", &text));
            let message = if rank == 0 {
                message.to_string()
            } else {
                format!("rank {rank} on {}: {message}", s.node_of(rank))
            };
            // Every rank is here and stops. Rank 0 says why before any rank exits: a rank
            // that exits with an error makes mpirun kill the others, possibly before rank 0
            // has written its sentence. The sentence is then written; the failure carries
            // none.
            if s.world.rank() == 0 {
                eprintln!("candor: {message}");
            }
            s.world.barrier();
            return Err(Failure {
                code: code.parse().unwrap_or(crate::exit::USAGE),
                message: String::new(),
            });
        }
        mine
    }

    /// The run id: over MPI rank 0's, on every rank, with the rank appended so that each
    /// rank has its own run directory even when the ranks share the target.
    pub fn run_id(&self, id: String) -> String {
        match self {
            Role::Single => id,
            Role::Rank(s) => {
                let root_id =
                    String::from_utf8_lossy(&s.world.broadcast_bytes(id.into_bytes())).into_owned();
                format!("{root_id}-r{}", s.world.rank())
            }
        }
    }

    /// The other ranks of the job on this rank's node: their traffic is the job's, never
    /// foreign, to this rank's witness (none for a single process).
    pub fn job_peers(&self) -> Vec<u32> {
        match self {
            Role::Single => Vec::new(),
            Role::Rank(s) => s.topo.peers_on_node(s.world.rank()),
        }
    }

    /// The result's `mpi`: the ranks, nodes and how they share files.
    pub fn mpi_info(&self, o: &RunOptions) -> Option<MpiInfo> {
        match self {
            Role::Single => None,
            Role::Rank(s) => Some(s.info(o.reorder, o.shared_file)),
        }
    }

    /// Runs the plan: once, or pass after pass until `--duration` is up; over MPI in step
    /// with the other ranks.
    pub fn execute(
        &self,
        targets: &mut [Target],
        plan: &Plan,
        progress: &mut Bar,
        o: &RunOptions,
        kept: &mut Kept,
        sink: &mut dyn FnMut(Vec<TestResult>),
    ) -> Option<StopReason> {
        // A rank runs the plan once, in step with the other ranks; the only process runs it
        // again until `--duration` is up.
        let mut rank = match self {
            Role::Single => None,
            Role::Rank(s) => {
                let mut coord = s.coordinator(o.reorder, o.shared_file);
                if o.rank_output.is_some() {
                    coord = coord.keep_own();
                }
                Some(coord)
            }
        };
        let mut clock = runner::ClockKeeper::default();
        let t0 = std::time::Instant::now();
        loop {
            let coord: &mut dyn runner::Coordinator = match rank.as_mut() {
                Some(c) => c,
                None => &mut clock,
            };
            let stop = runner::run_coordinated(
                targets,
                &plan.points,
                &plan.settings,
                progress,
                sink,
                coord,
            );
            if let Some(c) = rank.as_mut() {
                kept.t0_ns = Some(c.run_t0_ns());
                kept.own = c.take_own();
                return stop;
            }
            kept.t0_ns = clock.t0_ns;
            match plan.soak {
                Some(d) if stop.is_none() && t0.elapsed() < d => progress.next_round(),
                _ => return stop,
            }
        }
    }

    /// `--rank-output DIR`: this rank's own result, saved by every rank.
    pub fn save_own(&self, o: &RunOptions, doc: &RunDoc, kept: Kept) {
        if let (Role::Rank(s), Some(dir), Some(own)) = (self, &o.rank_output, kept.own) {
            if let Err(e) = s.save_own(dir, doc, own) {
                eprintln!("candor: {e}");
            }
        }
    }

    /// A rank that stops early (signal, no space) ends the whole job: the others would
    /// wait for it at the next barrier forever.
    pub fn stopped(&self, stop: &Option<StopReason>, code: i32) {
        if let (Role::Rank(s), Some(_)) = (self, stop) {
            if s.world.size() > 1 {
                s.world.abort(code);
            }
        }
    }
}
