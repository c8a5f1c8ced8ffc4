//! Clock offsets between ranks. Each node has its own monotonic clock (counted from its own
//! boot), so a rank's timestamps mean nothing on rank 0 until shifted by the difference of
//! the two clocks. That difference is estimated the way NTP and Cristian's algorithm do:
//! the rank reads its clock (`sent`), asks rank 0 for its clock (`remote`), reads its clock
//! again (`received`); if the two legs of the exchange took equally long, rank 0 read its
//! clock at the midpoint, so `offset = (sent + received) / 2 - remote`, wrong by at most
//! half the round trip. Of several exchanges the one with the shortest round trip is kept:
//! it bounds the error most tightly.

/// One exchange, every value in ns on the clock named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exchange {
    /// The rank's clock when it asked.
    pub sent: u64,
    /// Rank 0's clock when it answered.
    pub remote: u64,
    /// The rank's clock when the answer came.
    pub received: u64,
}

/// The estimate: this rank's clock minus rank 0's, and its uncertainty (half the round trip).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offset {
    pub offset_ns: i64,
    pub uncertainty_ns: u64,
}

/// The estimate from the exchange with the shortest round trip (`None` if there is none).
pub fn estimate(exchanges: &[Exchange]) -> Option<Offset> {
    exchanges
        .iter()
        .filter(|e| e.received >= e.sent)
        .min_by_key(|e| e.received - e.sent)
        .map(|e| {
            let mid = e.sent as i128 + (e.received - e.sent) as i128 / 2;
            Offset {
                offset_ns: (mid - e.remote as i128) as i64,
                uncertainty_ns: (e.received - e.sent).div_ceil(2),
            }
        })
}

/// A rank's time on rank 0's clock.
pub fn to_rank0(local_ns: u64, offset_ns: i64) -> i128 {
    local_ns as i128 - offset_ns as i128
}

/// The variable that skews ranks' clocks, so that the estimate can be checked on one
/// machine, where every rank reads the same clock: `RANK:NS[,RANK:NS...]` makes rank RANK's
/// clock, as the job sees it (the clock exchange and the start of its run, from which its
/// repetitions' times count), run NS ns ahead of its node's (behind when negative). A
/// skewed rank no longer shares rank 0's clock, so its offset is estimated, not taken as 0.
pub const SKEW_VAR: &str = "CANDOR_MPI_CLOCK_SKEW_NS";

/// This rank's skew from a `SKEW_VAR` value (0 when it names another rank).
pub fn parse_skew(value: &str, rank: u32) -> Result<i64, String> {
    let mut mine = 0;
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let parsed = entry.split_once(':').and_then(|(r, ns)| {
            Some((
                r.trim().parse::<u32>().ok()?,
                ns.trim().parse::<i64>().ok()?,
            ))
        });
        let Some((r, ns)) = parsed else {
            return Err(format!(
                "{SKEW_VAR}={value}: '{entry}' is not RANK:NS (e.g. 1:5000000000): fix or unset it"
            ));
        };
        if r == rank {
            mine = ns;
        }
    }
    Ok(mine)
}

/// This rank's skew from the environment (0 when `SKEW_VAR` is unset).
pub fn skew_from_env(rank: u32) -> Result<i64, String> {
    match std::env::var(SKEW_VAR) {
        Ok(v) => parse_skew(&v, rank),
        Err(std::env::VarError::NotPresent) => Ok(0),
        Err(e) => Err(format!("{SKEW_VAR}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_round_trip_wins_and_bounds_the_error() {
        // The rank's clock runs 1_000_000 ns ahead of rank 0's.
        let ahead = 1_000_000u64;
        let ex = [
            // Slow and lopsided: the answer took 900 ns, the question 100.
            Exchange {
                sent: ahead + 10_000,
                remote: 10_100,
                received: ahead + 11_000,
            },
            // Fast and even.
            Exchange {
                sent: ahead + 20_000,
                remote: 20_050,
                received: ahead + 20_100,
            },
        ];
        let o = estimate(&ex).unwrap();
        assert_eq!(o.offset_ns, ahead as i64);
        assert_eq!(o.uncertainty_ns, 50);
        // The slow exchange alone is off by 400 ns, within its 500 ns bound.
        let slow = estimate(&ex[..1]).unwrap();
        assert_eq!(slow.offset_ns, ahead as i64 + 400);
        assert!((slow.offset_ns - ahead as i64).unsigned_abs() <= slow.uncertainty_ns);
    }

    /// A tiny deterministic generator (the test must not depend on a crate or on chance).
    fn lcg(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *state >> 33
    }

    #[test]
    fn skewed_clocks_are_recovered_within_the_bound_whatever_the_delays() {
        // Two clocks driven by one true time: rank 0's, and the rank's, `skew` ahead.
        // Each exchange's legs take random, lopsided times; rank 0 answers after a random
        // pause. The estimate must be within its own bound of the true skew every time, and
        // the bound must be half the shortest round trip.
        let mut seed = 0x5eed;
        for skew in [
            0i64,
            1,
            -1,
            37_000,
            -4_950_000,
            5_000_000_000,
            -3_000_000_000,
            86_400_000_000_000,
        ] {
            let mut t: u64 = 1_000_000_000_000; // true time, ns
            let rank = |t: u64| (t as i64 + skew) as u64;
            let mut ex = Vec::new();
            let mut shortest = u64::MAX;
            for _ in 0..32 {
                t += lcg(&mut seed) % 10_000;
                let sent = rank(t);
                t += 1 + lcg(&mut seed) % 50_000; // the question on its way
                let remote = t;
                t += lcg(&mut seed) % 2_000; // rank 0 answers
                t += 1 + lcg(&mut seed) % 50_000; // the answer on its way
                let received = rank(t);
                shortest = shortest.min(received - sent);
                ex.push(Exchange {
                    sent,
                    remote,
                    received,
                });
            }
            let o = estimate(&ex).unwrap();
            assert_eq!(o.uncertainty_ns, shortest.div_ceil(2), "skew {skew}");
            let error = (o.offset_ns - skew).unsigned_abs();
            assert!(
                error <= o.uncertainty_ns,
                "skew {skew}: estimated {} (off by {error} ns, bound {})",
                o.offset_ns,
                o.uncertainty_ns
            );
            // A time read on the rank, put on rank 0's clock, is off by no more.
            let local = rank(t);
            assert!(
                (to_rank0(local, o.offset_ns) - t as i128).unsigned_abs()
                    <= o.uncertainty_ns as u128
            );
        }
    }

    #[test]
    fn the_skew_variable_names_ranks() {
        assert_eq!(
            parse_skew("1:5000000000,2:-3000000000", 1),
            Ok(5_000_000_000)
        );
        assert_eq!(
            parse_skew("1:5000000000, 2:-3000000000", 2),
            Ok(-3_000_000_000)
        );
        assert_eq!(parse_skew("1:5", 0), Ok(0));
        assert_eq!(parse_skew("", 0), Ok(0));
        for bad in ["1", "x:5", "1:5s", "1:5,2"] {
            let e = parse_skew(bad, 0).unwrap_err();
            assert!(e.contains(SKEW_VAR) && e.contains("RANK:NS"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_clock_behind_rank_0_gives_a_negative_offset() {
        let o = estimate(&[Exchange {
            sent: 100,
            remote: 5_150,
            received: 300,
        }])
        .unwrap();
        assert_eq!(o.offset_ns, -4_950);
        assert_eq!(to_rank0(1_000, o.offset_ns), 5_950);
        assert_eq!(estimate(&[]), None);
    }
}
