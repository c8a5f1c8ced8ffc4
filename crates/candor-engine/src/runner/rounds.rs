//! `--steady-state` on one target: each round's figures (the application's throughput and
//! the device's, from the round's witness), the window of repetitions the result keeps,
//! and the judgement after every round (the criteria are `crate::steady`'s).

use super::RepMeasure;
use crate::steady::{self, Criteria, Judgement};
use crate::workload::Direction;
use candor_model::{SteadyRound, SteadyState};

pub(super) struct Rounds {
    criteria: Criteria,
    rounds: Vec<SteadyRound>,
    judged: Option<Judgement>,
}

impl Rounds {
    pub(super) fn new(criteria: Criteria) -> Rounds {
        Rounds {
            criteria,
            rounds: Vec::new(),
            judged: None,
        }
    }

    /// The window was steady: no more rounds on this target.
    pub(super) fn done(&self) -> bool {
        self.judged.as_ref().is_some_and(|j| j.steady)
    }

    /// Takes a round: its figures, its repetition into `window` (which keeps the last
    /// `window` rounds, the ones the result's figures are made of), and the judgement.
    pub(super) fn add(
        &mut self,
        m: RepMeasure,
        direction: Direction,
        window: &mut Vec<RepMeasure>,
    ) -> SteadyRound {
        let (reads, writes) = (direction.reads(), direction.writes());
        let seconds = m.rep.seconds;
        let round = SteadyRound {
            round: self.rounds.len() as u32 + 1,
            app_bps: if seconds > 0.0 {
                m.rep.bytes as f64 / seconds
            } else {
                0.0
            },
            device_bps: m
                .witness
                .as_ref()
                .and_then(|w| steady::device_bps(w, reads, writes, seconds)),
            seconds,
            started_s: m.rep.started_s,
        };
        self.rounds.push(round.clone());
        window.push(m);
        let keep = self.criteria.window as usize;
        if window.len() > keep {
            window.drain(..window.len() - keep);
        }
        self.judged = steady::judge(&self.rounds, &self.criteria);
        round
    }

    /// The saved verdict.
    pub(super) fn conclude(self) -> SteadyState {
        steady::conclude(self.rounds, self.judged, &self.criteria)
    }
}
