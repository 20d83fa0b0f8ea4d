//! Progress of a long transfer (`export`, `import`): a bar on stderr when it is a terminal,
//! else plain log lines, one per cluster when there are few and one per tenth of the way
//! otherwise, so a CI log shows the run is alive without a line per cluster of a large
//! fleet. It only shows progress; the summary at the end is the command's business.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use airlock_store::mirror::Progress;

/// Up to this many clusters, every one gets its own line.
const FEW: usize = 10;

pub enum Reporter {
    /// Made on the first update, when the total is known.
    Bar(Option<ProgressBar>),
    Lines {
        printed: usize,
    },
}

impl Reporter {
    /// A bar when stderr is a terminal, plain lines otherwise.
    pub fn new() -> Reporter {
        if std::io::stderr().is_terminal() { Reporter::Bar(None) } else { Reporter::Lines { printed: 0 } }
    }

    pub fn update(&mut self, p: Progress<'_>) {
        match self {
            Reporter::Bar(bar) => {
                let bar = bar.get_or_insert_with(|| {
                    let style = ProgressStyle::with_template("{bar:40} {pos}/{len} clusters, {msg} ({elapsed})").expect("a valid template");
                    ProgressBar::new(p.total as u64).with_style(style)
                });
                // Import counts clusters only; a byte count of zero would say nothing.
                let message = if p.bytes == 0 { p.cluster.to_string() } else { format!("{} new, {}", human_bytes(p.bytes), p.cluster) };
                bar.set_message(message);
                bar.set_position(p.done as u64);
            }
            Reporter::Lines { printed } => {
                if should_print(*printed, p.done, p.total) {
                    *printed = p.done;
                    tracing::info!(cluster = %p.cluster, new_bytes = p.bytes, "{}/{} clusters", p.done, p.total);
                }
            }
        }
    }

    /// Removes the bar, so the summary starts on a clean line.
    pub fn finish(&self) {
        if let Reporter::Bar(Some(bar)) = self {
            bar.finish_and_clear();
        }
    }
}

impl Default for Reporter {
    fn default() -> Reporter {
        Reporter::new()
    }
}

/// Whether `done` of `total` deserves a line after one was printed at `printed`.
fn should_print(printed: usize, done: usize, total: usize) -> bool {
    total <= FEW || done == total || done * 10 / total > printed * 10 / total
}

/// A byte count for people: `512 B`, `1.5 KiB`, `12.3 MiB`, `1.2 GiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(total: usize) -> Vec<usize> {
        let mut printed = 0;
        (1..=total)
            .filter(|&done| {
                let print = should_print(printed, done, total);
                if print {
                    printed = done;
                }
                print
            })
            .collect()
    }

    #[test]
    fn every_cluster_when_few_every_tenth_when_many() {
        assert_eq!(lines(3), [1, 2, 3]);
        assert_eq!(lines(10).len(), 10);
        assert_eq!(lines(100), [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
        let many = lines(1234);
        assert_eq!((many.len(), many.last()), (10, Some(&1234)), "{many:?}");
        assert_eq!(lines(15).len(), 10, "a line at each new tenth, and the last");
    }

    #[test]
    fn byte_counts_read_like_ls_h() {
        let cases = [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (5 << 20, "5.0 MiB"), (3 << 30, "3.0 GiB"), (5 << 40, "5120.0 GiB")];
        for (n, want) in cases {
            assert_eq!(human_bytes(n), want);
        }
    }
}
