//! Recent stored values kept in process: answers, renders, check verdicts
//! and the prompts known to be stored, so a hot lookup (the reward service
//! asked about the same output again) costs no round trip to the store.
//!
//! Owns: what is kept and how much (a byte budget per kind, the oldest
//! dropped first). Must never keep a value the store does not hold as it
//! is: only values read back from the store are kept (what this process
//! wrote may have lost to another writer's first answer), and only kinds
//! that never change once stored (every key names its content: a call, a
//! file's hash and the view and check versions).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Values of one kind, at most `budget` bytes of them.
pub(super) struct Recent<V> {
    inner: Mutex<Kept<V>>,
    budget: usize,
}

struct Kept<V> {
    values: HashMap<String, (V, usize)>,
    order: VecDeque<String>,
    bytes: usize,
}

impl<V: Clone> Recent<V> {
    pub(super) fn new(budget: usize) -> Recent<V> {
        let kept = Kept { values: HashMap::new(), order: VecDeque::new(), bytes: 0 };
        Recent { inner: Mutex::new(kept), budget }
    }

    pub(super) fn get(&self, key: &str) -> Option<V> {
        let kept = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        kept.values.get(key).map(|(v, _)| v.clone())
    }

    /// Keeps `value` (of about `size` bytes), dropping the oldest kept
    /// values until the budget holds; a value larger than the budget is
    /// not kept.
    pub(super) fn keep(&self, key: &str, value: V, size: usize) {
        let size = size + key.len();
        if size > self.budget {
            return;
        }
        let mut kept = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if kept.values.contains_key(key) {
            return;
        }
        while kept.bytes + size > self.budget {
            let Some(oldest) = kept.order.pop_front() else { break };
            if let Some((_, n)) = kept.values.remove(&oldest) {
                kept.bytes -= n;
            }
        }
        kept.values.insert(key.to_string(), (value, size));
        kept.order.push_back(key.to_string());
        kept.bytes += size;
    }

    /// Bytes kept now.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_values_go_first_and_the_budget_holds() {
        let r: Recent<u32> = Recent::new(30);
        r.keep("a", 1, 9);
        r.keep("b", 2, 9);
        r.keep("c", 3, 9);
        assert_eq!((r.get("a"), r.get("c")), (Some(1), Some(3)));
        r.keep("d", 4, 9);
        assert_eq!(r.get("a"), None, "the oldest went");
        assert_eq!((r.get("b"), r.get("d")), (Some(2), Some(4)));
        assert!(r.bytes() <= 30, "{}", r.bytes());
        r.keep("huge", 5, 100);
        assert_eq!(r.get("huge"), None, "larger than the budget: not kept");
        r.keep("b", 9, 9);
        assert_eq!(r.get("b"), Some(2), "a kept value never changes");
    }
}
