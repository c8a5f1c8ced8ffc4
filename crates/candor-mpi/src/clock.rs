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
