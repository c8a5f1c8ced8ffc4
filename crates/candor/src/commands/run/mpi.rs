//! `candor run --mpi`: one candor per MPI rank. Every rank parses the same options and
//! derives the same plan; the ranks agree before anything runs (a rank that cannot run
//! stops them all, with its reason, rank and node, exit 2); rank 0's run id names every
//! rank's run directory; the runner keeps the ranks in step through `MpiCoordinator`
//! (a barrier before each timed region, the results gathered to rank 0 and merged after
//! each test); only rank 0 saves and prints. Without the `mpi` feature, or outside a
//! launcher, `Session::start` says so in one sentence.

use super::role::Role;
use crate::exit::{CmdResult, Failure};
use candor_model::{MpiInfo, TestResult};
use candor_mpi::{Topology, World};

pub struct Session {
    pub world: World,
    pub topo: Topology,
}

impl Session {
    fn start() -> Result<Session, Failure> {
        let world = World::init().map_err(|e| Failure::usage(e.to_string()))?;
        let skew = candor_mpi::clock::skew_from_env(world.rank()).map_err(Failure::usage)?;
        let topo = Topology::learn(&world, candor_engine::clock::now_ns, skew);
        Ok(Session { world, topo })
    }

    pub fn coordinator(&self, reorder: bool, shared: bool) -> candor_mpi::MpiCoordinator<'_> {
        candor_mpi::MpiCoordinator::new(&self.world, &self.topo, reorder, shared)
    }

    pub fn info(&self, reorder: bool, shared: bool) -> MpiInfo {
        self.topo.info(shared, reorder)
    }

    /// `--rank-output DIR`: this rank's own result (its results before the merge, with
    /// the run's header and clock) as DIR/rank-N.json, for `candor merge`.
    pub fn save_own(
        &self,
        dir: &std::path::Path,
        doc: &candor_model::RunDoc,
        own: Vec<TestResult>,
    ) -> Result<(), String> {
        let mut mine = doc.clone();
        mine.results = own;
        mine.mpi = None;
        mine.host.hostname = self.node_of(self.world.rank() as usize);
        let path = dir.join(format!("rank-{}.json", self.world.rank()));
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let text = serde_json::to_string_pretty(&mine)
            .map_err(|e| format!("cannot serialize rank {}'s result: {e}", self.world.rank()))?;
        crate::output::save_atomic(&path, &(text + "\n")).map_err(|e| {
            format!(
                "cannot write {}: {e}; choose a writable --rank-output",
                path.display()
            )
        })?;
        eprintln!("wrote {}", path.display());
        Ok(())
    }

    pub(super) fn node_of(&self, rank: usize) -> String {
        self.topo
            .rank_nodes
            .get(rank)
            .and_then(|&n| self.topo.node_names.get(n as usize))
            .cloned()
            .unwrap_or_default()
    }
}

/// Runs `candor run` as one rank of an MPI job.
pub fn run(a: super::Args) -> CmdResult {
    let o = &a.options;
    if o.reorder && o.verify {
        return Err(Failure::usage(
            "--reorder reads other ranks' files, which --verify cannot check (each rank knows only what it wrote): drop one of them",
        ));
    }
    if o.shared_file && (o.reorder || o.verify) {
        return Err(Failure::usage(
            "--shared-file cannot go with --reorder or --verify yet: each rank reads back and checks only its own segment; drop one of them",
        ));
    }
    // Every rank saves its own result there: checked before MPI starts.
    if let Some(dir) = &o.rank_output {
        crate::paths::check_output_dir("--rank-output", dir)?;
    }
    let session = Session::start()?;
    let root = session.world.rank() == 0;
    let out = super::run_with(a, Role::Rank(&session));
    // MPI_Finalize, on every rank, before the process exits.
    drop(session);
    match out {
        // Rank 0 says why; the other ranks exit with the same code and say nothing more.
        // An empty message was said already (see `agree`).
        Err(f) if !root || f.message.is_empty() => Ok(f.code),
        other => other,
    }
}

/// The merged result's sentences about the ranks (lagging ranks, node caches), for the
/// run's warnings.
pub fn warnings(r: &TestResult) -> Vec<String> {
    let Some(v) = r.ranks.as_ref() else {
        return Vec::new();
    };
    let label = format!("{} ({} ranks)", r.test, v.ranks);
    let mut out: Vec<String> = v.notes.iter().map(|x| format!("{label}: {x}")).collect();
    {
        let l = &v.lagging_ranks;
        if !l.is_empty() {
            let ranks: Vec<String> = l.iter().map(|x| x.to_string()).collect();
            out.push(format!(
                "{label}: rank(s) {} lagged (below {:.0}% of the median rank's throughput): look at their nodes' load and links",
                ranks.join(", "),
                candor_mpi::merge::LAG_SHARE * 100.0
            ));
        }
    }
    out
}
