//! A map whose values are computed once per key, however many threads ask at the same
//! time: 10,000 clusters rendering one chart with one set of values start one helm, and
//! the others wait for its answer instead of starting their own.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, OnceLock};

#[derive(Debug)]
pub struct OnceMap<K, V> {
    map: Mutex<HashMap<K, Arc<OnceLock<V>>>>,
}

impl<K, V> Default for OnceMap<K, V> {
    fn default() -> Self {
        OnceMap { map: Mutex::new(HashMap::new()) }
    }
}

impl<K: Eq + Hash, V: Clone> OnceMap<K, V> {
    /// The value of `key`, computed by `make` if no thread has computed it yet. The lock on
    /// the map is not held while `make` runs, so other keys proceed in parallel.
    pub fn get_or_init(&self, key: K, make: impl FnOnce() -> V) -> V {
        let cell = Arc::clone(self.map.lock().expect("not poisoned").entry(key).or_default());
        cell.get_or_init(make).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn computes_each_key_once_across_threads() {
        let map: OnceMap<u32, u32> = OnceMap::default();
        let calls = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for key in 0..4 {
                        let v = map.get_or_init(key, || {
                            calls.fetch_add(1, Ordering::Relaxed);
                            std::thread::sleep(std::time::Duration::from_millis(5));
                            key * 10
                        });
                        assert_eq!(v, key * 10);
                    }
                });
            }
        });
        assert_eq!(calls.load(Ordering::Relaxed), 4);
    }
}
