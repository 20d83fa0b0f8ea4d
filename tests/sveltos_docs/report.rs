//! The mismatch table: every difference the suite found, feature by feature, so one run
//! shows the whole gap between the publisher and the examples instead of the first
//! assertion that failed. The same difference seen reading files and reading the live
//! management cluster is one row with source `dir+live`.

use std::collections::BTreeMap;
use std::fmt::Write;

/// Where a difference was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// `publish --from-dir`.
    Dir,
    /// `publish --kubeconfig`, the management apiserver holding the same objects.
    Live,
    /// The puller's apply of one bundle to the managed apiserver.
    Apply,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Dir => "dir",
            Source::Live => "live",
            Source::Apply => "apply",
        }
    }
}

/// One difference between what Sveltos deploys and what Airlock made of it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mismatch {
    /// The feature directory, `*` for the whole run or cluster.
    pub feature: String,
    pub cluster: String,
    pub what: String,
    pub expected: String,
    pub actual: String,
}

/// The mismatches of one run, by source.
#[derive(Default)]
pub struct Report {
    rows: BTreeMap<Mismatch, Vec<Source>>,
}

impl Report {
    pub fn add(&mut self, source: Source, m: Mismatch) {
        let sources = self.rows.entry(m).or_default();
        if !sources.contains(&source) {
            sources.push(source);
        }
    }

    pub fn extend(&mut self, source: Source, ms: impl IntoIterator<Item = Mismatch>) {
        for m in ms {
            self.add(source, m);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// A Markdown table, feature order (the directories are numbered), then cluster.
    pub fn table(&self) -> String {
        let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        let mut out = String::from("| feature | cluster | source | what | expected | actual |\n|---|---|---|---|---|---|\n");
        for (m, sources) in &self.rows {
            let mut sources = sources.clone();
            sources.sort();
            let source = sources.iter().map(|s| s.name()).collect::<Vec<_>>().join("+");
            let _ = writeln!(
                out,
                "| {} | {} | {source} | {} | {} | {} |",
                cell(&m.feature),
                cell(&m.cluster),
                cell(&m.what),
                cell(&m.expected),
                cell(&m.actual)
            );
        }
        out
    }

    /// How many rows each feature has, for a summary line per feature.
    pub fn per_feature(&self) -> BTreeMap<&str, usize> {
        let mut out = BTreeMap::new();
        for m in self.rows.keys() {
            *out.entry(m.feature.as_str()).or_default() += 1;
        }
        out
    }
}
