//! `candor run --mpi`: one candor per MPI rank. Every rank parses the same options and
//! derives the same plan; the ranks agree before anything runs (a rank that cannot run
//! stops them all, with its reason, rank and node, exit 2); rank 0's run id names every
//! rank's run directory; the runner keeps the ranks in step through `MpiCoordinator`
//! (a barrier before each timed region, the results gathered to rank 0 and merged after
//! each test); only rank 0 saves and prints. Without the `mpi` feature, or outside a
//! launcher, `Session::start` says so in one sentence.

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

    fn node_of(&self, rank: usize) -> String {
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
    if a.reorder && a.verify {
        return Err(Failure::usage(
            "--reorder reads other ranks' files, which --verify cannot check (each rank knows only what it wrote): drop one of them",
        ));
    }
    if a.shared_file && (a.reorder || a.verify) {
        return Err(Failure::usage(
            "--shared-file cannot go with --reorder or --verify yet: each rank reads back and checks only its own segment; drop one of them",
        ));
    }
    // Every rank saves its own result there: checked before MPI starts.
    if let Some(dir) = &a.rank_output {
        crate::paths::check_output_dir("--rank-output", dir)?;
    }
    let session = Session::start()?;
    let root = session.world.rank() == 0;
    let out = super::run_with(a, Some(&session));
    // MPI_Finalize, on every rank, before the process exits.
    drop(session);
    match out {
        // Rank 0 says why; the other ranks exit with the same code and say nothing more.
        // An empty message was said already (see `agree`).
        Err(f) if !root || f.message.is_empty() => Ok(f.code),
        other => other,
    }
}

/// The other ranks of the job on this rank's node: their traffic is the job's, never
/// foreign, to this rank's witness (empty without MPI).
pub fn job_peers(s: Option<&Session>) -> Vec<u32> {
    s.map(|s| s.topo.peers_on_node(s.world.rank()))
        .unwrap_or_default()
}

/// Whether this process reports (rank 0, or the only process).
pub fn is_root(s: Option<&Session>) -> bool {
    !matches!(s, Some(s) if s.world.rank() != 0)
}

/// The run id: rank 0's, on every rank, with the rank appended so that each rank has its
/// own run directory even when the ranks share the target.
pub fn run_id(s: Option<&Session>, id: String) -> String {
    match s {
        None => id,
        Some(s) => {
            let root_id =
                String::from_utf8_lossy(&s.world.broadcast_bytes(id.into_bytes())).into_owned();
            format!("{root_id}-r{}", s.world.rank())
        }
    }
}

/// Every rank learns whether every rank got this far. Called at the same places on every
/// rank whatever happened locally, so no rank waits at a barrier for a rank that stopped.
pub fn agree<T>(s: Option<&Session>, mine: Result<T, Failure>) -> Result<T, Failure> {
    let Some(s) = s else { return mine };
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
        // Every rank is here and stops. Rank 0 says why before any rank exits: a rank that
        // exits with an error makes mpirun kill the others, possibly before rank 0 has
        // written its sentence. The sentence is then written; the failure carries none.
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

/// The merged result's sentences about the ranks (lagging ranks, node caches), for the
/// run's warnings.
pub fn warnings(r: &TestResult) -> Vec<String> {
    let Some(v) = r.ranks.as_ref() else {
        return Vec::new();
    };
    let label = format!(
        "{} ({} ranks)",
        r.test,
        v.get("ranks").and_then(|x| x.as_u64()).unwrap_or(0)
    );
    let mut out: Vec<String> = v
        .get("notes")
        .and_then(|n| n.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str())
                .map(|x| format!("{label}: {x}"))
                .collect()
        })
        .unwrap_or_default();
    if let Some(l) = v.get("lagging_ranks").and_then(|l| l.as_array()) {
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

/// A rank that stops early (signal, no space) ends the whole job: the others would wait
/// for it at the next barrier forever.
pub fn stop_all(s: Option<&Session>, code: i32) {
    if let Some(s) = s {
        if s.world.size() > 1 {
            s.world.abort(code);
        }
    }
}
