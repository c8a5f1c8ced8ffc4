//! The runner's `Coordinator` over MPI: a barrier before every timed region, and after
//! every point the ranks' results gathered to rank 0 and merged there (`merge`).

use crate::clock::Offset;
use crate::merge::{merge, RankPart};
use crate::World;
use candor_engine::runner::Coordinator;
use candor_model::{MpiInfo, TestResult};
use candor_procfs::Pid;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Where every rank runs and how its clock relates to rank 0's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Topology {
    pub node_names: Vec<String>,
    /// Per rank: index into `node_names`.
    pub rank_nodes: Vec<u32>,
    pub offsets: Vec<Offset>,
    pub library: String,
    /// Per rank: its process id on its node.
    pub pids: Vec<u32>,
    /// This rank's clock as the job sees it runs this far ahead of the node's own
    /// (`clock::SKEW_VAR`, for tests; 0 otherwise).
    pub skew_ns: i64,
}

/// Node names in order of first appearance, and each rank's node.
pub fn nodes_from_names(names: &[String]) -> (Vec<String>, Vec<u32>) {
    let mut nodes: Vec<String> = Vec::new();
    let mut of_rank = Vec::with_capacity(names.len());
    for n in names {
        let i = match nodes.iter().position(|m| m == n) {
            Some(i) => i,
            None => {
                nodes.push(n.clone());
                nodes.len() - 1
            }
        };
        of_rank.push(i as u32);
    }
    (nodes, of_rank)
}

/// Per rank: whether it reads the very clock rank 0 reads (on rank 0's node, with the same
/// test skew).
fn shares_rank0_clock(rank_nodes: &[u32], skews: &[i64]) -> Vec<bool> {
    let home = (rank_nodes.first(), skews.first());
    rank_nodes
        .iter()
        .enumerate()
        .map(|(r, n)| (Some(n), skews.get(r)) == home)
        .collect()
}

/// Exchanges kept per rank to estimate its clock offset (the shortest round trip wins).
const CLOCK_ROUNDS: usize = 32;

impl Topology {
    /// Learns the topology; collective: every rank calls it. `skew_ns` (0 but in tests, see
    /// `clock::SKEW_VAR`) shifts this rank's clock as the job sees it.
    pub fn learn(world: &World, now: fn() -> u64, skew_ns: i64) -> Topology {
        let names: Vec<String> = world
            .all_gather_bytes(world.processor_name().as_bytes())
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect();
        let (node_names, rank_nodes) = nodes_from_names(&names);
        let pids: Vec<u32> = world
            .all_gather_bytes(&std::process::id().to_le_bytes())
            .iter()
            .map(|b| {
                b.get(..4)
                    .map_or(0, |x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
            })
            .collect();
        let skews: Vec<i64> = world
            .all_gather_bytes(&skew_ns.to_le_bytes())
            .iter()
            .map(|b| {
                b.get(..8)
                    .map_or(0, |x| i64::from_le_bytes(x.try_into().unwrap()))
            })
            .collect();
        let skewed = move || now().wrapping_add_signed(skew_ns);
        let mut offsets = world.clock_offsets(&skewed, CLOCK_ROUNDS);
        // Ranks that read the very same clock as rank 0 (its node's, unskewed alike): their
        // offset is zero exactly, not the estimate's few microseconds of noise.
        for (o, same) in offsets
            .iter_mut()
            .zip(shares_rank0_clock(&rank_nodes, &skews))
        {
            if same {
                *o = Offset::default();
            }
        }
        Topology {
            node_names,
            rank_nodes,
            offsets,
            library: world.library(),
            pids,
            skew_ns,
        }
    }

    /// The process ids of the other ranks on `rank`'s node: the job's processes there,
    /// whose traffic the witness counts as the job's, never foreign. A pid is kept only
    /// when this machine has a process by that id running the same program (a node name
    /// shared by two machines, or ranks in separate PID namespaces, cannot name a stranger).
    pub fn peers_on_node(&self, rank: u32) -> Vec<u32> {
        let kernel = candor_procfs::Kernel::system();
        let own = kernel.pid_exe(Pid::Me).ok();
        self.same_node(rank)
            .into_iter()
            .filter(|pid| own.is_some() && kernel.pid_exe(Pid::Id(*pid)).ok() == own)
            .collect()
    }

    /// The pids of the ranks on `rank`'s node but `rank` itself, as the ranks reported them.
    fn same_node(&self, rank: u32) -> Vec<u32> {
        let node = self.rank_nodes.get(rank as usize).copied();
        self.rank_nodes
            .iter()
            .zip(&self.pids)
            .enumerate()
            .filter(|&(r, (&n, _))| r as u32 != rank && Some(n) == node)
            .map(|(_, (_, &pid))| pid)
            .collect()
    }

    /// The run's MPI record.
    pub fn info(&self, shared_file: bool, reorder: bool) -> MpiInfo {
        let mut per_node = vec![0u32; self.node_names.len()];
        for &n in &self.rank_nodes {
            if let Some(c) = per_node.get_mut(n as usize) {
                *c += 1;
            }
        }
        MpiInfo {
            ranks: self.rank_nodes.len() as u32,
            nodes: self.node_names.len() as u32,
            ranks_per_node: per_node,
            node_names: self.node_names.clone(),
            shared_file,
            reorder,
            library: self.library.clone(),
            rank_nodes: self.rank_nodes.clone(),
            clock_offsets_ns: self.offsets.iter().map(|o| o.offset_ns).collect(),
            clock_uncertainty_ns: self.offsets.iter().map(|o| o.uncertainty_ns).collect(),
        }
    }
}

/// What a rank sends rank 0 after each point.
#[derive(Serialize, Deserialize, Default)]
#[serde(default)]
struct Payload {
    t0_ns: u64,
    results: Vec<TestResult>,
}

/// The rank whose files `rank` reads back with `--reorder`: IOR's `-C`, shifted by the
/// number of ranks on the reader's node, so that with ranks placed node by node the data
/// comes from another node; when that shift wraps to the rank itself (one node), by one.
pub fn reorder_partner(rank: u32, topo: &Topology) -> u32 {
    let size = topo.rank_nodes.len().max(1) as u32;
    let node = topo.rank_nodes.get(rank as usize).copied();
    let per_node = topo.rank_nodes.iter().filter(|&&n| Some(n) == node).count() as u32;
    // All ranks on one node (per_node == size): the shift would wrap to the rank itself.
    let shift = if per_node == 0 || per_node >= size {
        1
    } else {
        per_node
    };
    (rank + shift) % size
}

/// `own`'s counterpart in `partner`'s run directory: each rank's files are
/// `TARGET/.candor-<id>-r<rank>/<name>`, so the partner's are beside them.
pub fn partner_path(own: &Path, rank: u32, partner: u32) -> Option<PathBuf> {
    let dir = own.parent()?;
    let name = own.file_name()?;
    let dir_name = dir.file_name()?.to_str()?;
    let base = dir_name.strip_suffix(&format!("-r{rank}"))?;
    Some(dir.parent()?.join(format!("{base}-r{partner}")).join(name))
}

pub struct MpiCoordinator<'w> {
    world: &'w World,
    topo: &'w Topology,
    t0_ns: u64,
    reorder: bool,
    shared_file: bool,
    /// This rank's own results, before the merge, when asked to keep them (`keep_own`).
    own: Option<Vec<TestResult>>,
}

impl<'w> MpiCoordinator<'w> {
    /// Keeps this rank's own results as they were before the merge (`--rank-output`).
    pub fn keep_own(mut self) -> Self {
        self.own = Some(Vec::new());
        self
    }

    /// Where this rank's run clock started.
    pub fn run_t0_ns(&self) -> u64 {
        self.t0_ns
    }

    /// This rank's own results, when kept.
    pub fn take_own(&mut self) -> Option<Vec<TestResult>> {
        self.own.take()
    }

    /// `reorder`: device-meant reads read the partner rank's files (`reorder_partner`).
    /// `shared_file`: every rank works on its segment of rank 0's files.
    pub fn new(world: &'w World, topo: &'w Topology, reorder: bool, shared_file: bool) -> Self {
        MpiCoordinator {
            world,
            topo,
            t0_ns: 0,
            reorder,
            shared_file,
            own: None,
        }
    }
}

/// Rank 0's merge of the gathered payloads: one merged result per target.
fn merge_payloads(topo: &Topology, mine: &[TestResult], raw: &[Vec<u8>]) -> Vec<TestResult> {
    let payloads: Vec<Result<Payload, String>> = raw
        .iter()
        .map(|b| serde_json::from_slice::<Payload>(b).map_err(|e| e.to_string()))
        .collect();
    (0..mine.len())
        .map(|ti| {
            let mut parts = Vec::with_capacity(payloads.len());
            for (rank, p) in payloads.iter().enumerate() {
                let result = match p {
                    Ok(p) => p.results.get(ti).cloned().unwrap_or_else(|| TestResult {
                        status: candor_model::Status::Failed,
                        error: Some("this rank sent no result for the test".into()),
                        ..mine[ti].clone()
                    }),
                    Err(e) => TestResult {
                        status: candor_model::Status::Failed,
                        error: Some(format!("this rank's result could not be read: {e}")),
                        ..mine[ti].clone()
                    },
                };
                parts.push(RankPart {
                    rank: rank as u32,
                    node: topo.rank_nodes.get(rank).copied().unwrap_or(0),
                    t0_ns: p.as_ref().map(|p| p.t0_ns).unwrap_or(0),
                    offset_ns: topo.offsets.get(rank).map(|o| o.offset_ns).unwrap_or(0),
                    result,
                });
            }
            merge(&parts, &topo.node_names)
        })
        .collect()
}

impl Coordinator for MpiCoordinator<'_> {
    fn started(&mut self, run_t0_ns: u64) {
        self.t0_ns = run_t0_ns;
    }

    fn before_timed(&mut self) {
        self.world.barrier();
    }

    fn spans_processes(&self) -> bool {
        true
    }

    fn stonewall(&mut self, stop: &AtomicBool) -> bool {
        self.world.first_done(stop)
    }

    fn shared_segment(&self, own: &[PathBuf]) -> Option<(u64, Vec<PathBuf>)> {
        if !self.shared_file {
            return None;
        }
        let me = self.world.rank();
        let files = own
            .iter()
            .map(|p| {
                if me == 0 {
                    Some(p.clone())
                } else {
                    partner_path(p, me, 0)
                }
            })
            .collect::<Option<Vec<PathBuf>>>()?;
        Some((me as u64, files))
    }

    fn files_ready(&mut self) {
        self.world.barrier();
    }

    fn read_elsewhere(&mut self, own: &[PathBuf]) -> Option<Vec<PathBuf>> {
        if !self.reorder {
            return None;
        }
        // The partner must have finished preparing its files before this rank opens them.
        self.world.barrier();
        let me = self.world.rank();
        let partner = reorder_partner(me, self.topo);
        if own.is_empty() || partner == me {
            return None;
        }
        own.iter().map(|p| partner_path(p, me, partner)).collect()
    }

    fn point_done(&mut self, results: Vec<TestResult>) -> Option<Vec<TestResult>> {
        if let Some(own) = self.own.as_mut() {
            own.extend(results.iter().cloned());
        }
        let payload = Payload {
            t0_ns: self.t0_ns.wrapping_add_signed(self.topo.skew_ns),
            results,
        };
        let bytes = serde_json::to_vec(&payload).unwrap_or_default();
        let raw = self.world.gather_bytes(&bytes)?;
        Some(merge_payloads(self.topo, &payload.results, &raw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_numbered_in_order_of_first_appearance() {
        let names: Vec<String> = ["b", "a", "b", "c", "a"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (nodes, of_rank) = nodes_from_names(&names);
        assert_eq!(nodes, ["b", "a", "c"]);
        assert_eq!(of_rank, [0, 1, 0, 2, 1]);
        let topo = Topology {
            node_names: nodes,
            rank_nodes: of_rank,
            offsets: vec![Offset::default(); 5],
            library: String::new(),
            pids: vec![11, 12, 13, 14, 15],
            skew_ns: 0,
        };
        let info = topo.info(false, true);
        assert_eq!((info.ranks, info.nodes), (5, 3));
        assert_eq!(info.ranks_per_node, [2, 2, 1]);
        // Rank 0's node is also rank 2's; rank 3 is alone on its node.
        assert_eq!(topo.same_node(0), [13]);
        assert_eq!(topo.same_node(4), [12]);
        assert!(topo.same_node(3).is_empty());
        // Pids that are not this program's processes here are not the job's.
        assert!(topo.peers_on_node(0).is_empty());
        let me = Topology {
            pids: vec![0, 1, std::process::id(), 1, 1],
            ..topo.clone()
        };
        assert_eq!(me.peers_on_node(0), [std::process::id()]);
    }

    fn topo(rank_nodes: &[u32]) -> Topology {
        Topology {
            node_names: Vec::new(),
            rank_nodes: rank_nodes.to_vec(),
            offsets: vec![Offset::default(); rank_nodes.len()],
            library: String::new(),
            pids: Vec::new(),
            skew_ns: 0,
        }
    }

    #[test]
    fn only_ranks_reading_rank_0s_very_clock_get_offset_zero() {
        // Ranks 0-2 on node 0, rank 3 on node 1; rank 2's clock skewed for a test.
        let got = shares_rank0_clock(&[0, 0, 0, 1], &[0, 0, 5_000_000_000, 0]);
        assert_eq!(got, [true, true, false, false]);
        // Rank 0 skewed: only a rank skewed alike on its node shares its clock.
        let got = shares_rank0_clock(&[0, 0, 0], &[7, 0, 7]);
        assert_eq!(got, [true, false, true]);
    }

    #[test]
    fn reorder_reads_from_the_next_node_or_the_next_rank_on_one_node() {
        // Two nodes of two ranks, placed node by node: rank r reads rank r + 2's files.
        let t = topo(&[0, 0, 1, 1]);
        let got: Vec<u32> = (0..4).map(|r| reorder_partner(r, &t)).collect();
        assert_eq!(got, [2, 3, 0, 1]);
        for r in 0..4 {
            let p = reorder_partner(r, &t) as usize;
            assert_ne!(t.rank_nodes[r as usize], t.rank_nodes[p], "another node");
        }
        // One node: the next rank (its files, though on the same node's cache).
        let one = topo(&[0, 0, 0, 0]);
        let got: Vec<u32> = (0..4).map(|r| reorder_partner(r, &one)).collect();
        assert_eq!(got, [1, 2, 3, 0]);
        // Every file is read by exactly one rank.
        let mut seen = got.clone();
        seen.sort_unstable();
        assert_eq!(seen, [0, 1, 2, 3]);
    }

    #[test]
    fn the_partner_path_is_beside_this_rank_run_directory() {
        let own = Path::new("/mnt/x/.candor-19a2-77-r3/t1.dat");
        assert_eq!(
            partner_path(own, 3, 0).unwrap(),
            Path::new("/mnt/x/.candor-19a2-77-r0/t1.dat")
        );
        assert_eq!(partner_path(own, 2, 0), None, "not this rank's directory");
    }

    #[test]
    fn an_unreadable_rank_payload_fails_the_test_with_its_reason() {
        let topo = Topology {
            node_names: vec!["n".into()],
            rank_nodes: vec![0, 0],
            offsets: vec![Offset::default(); 2],
            library: String::new(),
            pids: Vec::new(),
            skew_ns: 0,
        };
        let mine = vec![TestResult {
            test: "write".into(),
            status: candor_model::Status::Ok,
            ..Default::default()
        }];
        let good = serde_json::to_vec(&Payload {
            t0_ns: 1,
            results: mine.clone(),
        })
        .unwrap();
        let merged = merge_payloads(&topo, &mine, &[good, b"{not json".to_vec()]);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].status, candor_model::Status::Failed);
        assert!(merged[0]
            .error
            .as_deref()
            .unwrap()
            .starts_with("rank 1 on n: this rank's result could not be read"));
    }
}
