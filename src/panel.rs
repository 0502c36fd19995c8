//! Votes: turning each judge's verdict on a rubric into the panel's.
//!
//! Owns: the strict-majority rule and the quorum. Must never count an
//! abstention as a FAIL.

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
}
