//! Votes: turning each judge's verdict on a rubric into the panel's.
//!
//! Owns: the strict-majority rule and the quorum, and when votes still to
//! come can no longer change a verdict (vote mode "decided"). Must never
//! count an abstention as a FAIL, nor settle what a later vote could
//! change.

use crate::verdict::Verdict;

/// The panel's decision on one rubric from its judges' votes (`None` = the
/// judge abstained). PASS iff n_pass × 2 > n_valid; ties FAIL; fewer valid
/// votes than `quorum` gives no verdict.
pub(crate) fn decide(votes: &[Option<Verdict>], quorum: usize) -> Option<Verdict> {
    let valid = votes.iter().flatten().count();
    if valid == 0 || valid < quorum {
        return None;
    }
    let pass = votes.iter().flatten().filter(|v| **v == Verdict::Pass).count();
    Some(if pass * 2 > valid { Verdict::Pass } else { Verdict::Fail })
}

/// Whether a rubric's outcome (a verdict, or none below the quorum) is
/// the same whatever the `remaining` judges answer, given `votes` so far.
pub(crate) fn settled(votes: &[Option<Verdict>], remaining: usize, quorum: usize) -> bool {
    let outcome = |extra_pass: usize, extra_fail: usize| {
        let mut all: Vec<Option<Verdict>> = votes.to_vec();
        all.extend(std::iter::repeat_n(Some(Verdict::Pass), extra_pass));
        all.extend(std::iter::repeat_n(Some(Verdict::Fail), extra_fail));
        decide(&all, quorum)
    };
    let now = outcome(0, 0);
    (0..=remaining).all(|p| (0..=remaining - p).all(|f| outcome(p, f) == now))
}

/// How many judges are asked first: the fewest whose agreement could
/// settle a rubric.
pub(crate) fn first_wave(judges: usize, quorum: usize) -> usize {
    (judges / 2 + 1).max(quorum).min(judges)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::{Fail, Pass};

    #[test]
    fn strict_majority_of_valid_votes() {
        assert_eq!(decide(&[Some(Pass), Some(Pass), Some(Fail)], 2), Some(Pass));
        assert_eq!(decide(&[Some(Pass), Some(Fail), Some(Fail)], 2), Some(Fail));
        // One abstention: 1 PASS of 2 valid is a tie, and ties FAIL.
        assert_eq!(decide(&[Some(Pass), None, Some(Fail)], 2), Some(Fail));
        assert_eq!(decide(&[Some(Pass), None, Some(Pass)], 2), Some(Pass));
        // Below quorum: no verdict, not a FAIL.
        assert_eq!(decide(&[Some(Pass), None, None], 2), None);
        assert_eq!(decide(&[None, None, None], 1), None);
        assert_eq!(decide(&[Some(Pass), None, None], 1), Some(Pass));
    }

    /// Brute force over every answer the remaining judges could give.
    #[test]
    fn a_rubric_is_settled_only_when_no_later_vote_can_change_it() {
        // Three judges, quorum 2: two agreeing votes decide.
        assert_eq!(first_wave(3, 2), 2);
        assert!(settled(&[Some(Pass), Some(Pass)], 1, 2));
        assert!(settled(&[Some(Fail), Some(Fail)], 1, 2));
        assert!(!settled(&[Some(Pass), Some(Fail)], 1, 2));
        // An abstention does not close a rubric: 1 PASS could still tie.
        assert!(!settled(&[Some(Pass), None], 1, 2));
        // Quorum 3 of 3: nothing is settled before every vote is in.
        assert_eq!(first_wave(3, 3), 3);
        assert!(!settled(&[Some(Pass), Some(Pass)], 1, 3));
        // Five judges, quorum 2: three agreeing decide; two do not.
        assert_eq!(first_wave(5, 2), 3);
        assert!(settled(&[Some(Fail), Some(Fail), Some(Fail)], 2, 2));
        assert!(!settled(&[Some(Pass), Some(Pass), Some(Fail)], 2, 2));
        // Nobody left: whatever the votes say is settled.
        assert!(settled(&[None, None], 0, 2));
        assert_eq!(first_wave(1, 1), 1);
    }

    /// The settled outcome is the one every completion gives, so voting
    /// in `decided` mode gives `all` mode's verdicts (exhaustively, for
    /// panels of up to five judges).
    #[test]
    fn settled_outcomes_equal_every_completion() {
        let choices = [Some(Pass), Some(Fail), None];
        for n in 1..=5usize {
            for quorum in 1..=n {
                let total = 3usize.pow(n as u32);
                for code in 0..total {
                    let all: Vec<Option<Verdict>> =
                        (0..n).map(|i| choices[(code / 3usize.pow(i as u32)) % 3]).collect();
                    let full = decide(&all, quorum);
                    for k in 0..=n {
                        if settled(&all[..k], n - k, quorum) {
                            assert_eq!(decide(&all[..k], quorum), full, "{all:?} after {k}");
                        }
                    }
                }
            }
        }
    }
}
