//! Plain-text tables on stdout, the way kubectl prints them: upper-case headers, columns
//! padded to their widest cell, no borders. Scripts can split them on whitespace.

use std::io::Write;

use airlock_bundle::Digest;

use crate::publish::{Published, Row, Status};

/// Writes `rows` under `headers`, columns separated by at least three spaces.
pub fn write(out: &mut dyn Write, headers: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        padded.join("   ").trim_end().to_string()
    };
    writeln!(out, "{}", line(headers.to_vec()))?;
    for row in rows {
        writeln!(out, "{}", line(row.iter().map(String::as_str).collect()))?;
    }
    Ok(())
}

/// The first 12 hex digits, enough to tell bundles apart in a summary.
pub fn short(digest: &Digest) -> String {
    format!("sha256:{}", &digest.hex()[..12])
}

/// A byte count for people, shared with the puller.
pub use airlock_cli::progress::human_bytes;

/// The publish summary: one line per cluster, then every failure: a cluster's, a
/// (cluster, profile) pair's, an object of the source that could not be read.
pub fn write_summary(out: &mut dyn Write, published: &Published) -> std::io::Result<()> {
    let rows: &[Row] = &published.rows;
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let status = match &r.status {
                Status::Published => "published",
                Status::Refreshed => "refreshed",
                Status::Unchanged => "unchanged",
                Status::WouldPublish => "would publish",
                Status::Failed(_) => "failed",
            };
            vec![
                r.cluster.to_string(),
                opt(r.version.map(|v| v.to_string())),
                opt(r.digest.as_ref().map(short)),
                opt(r.objects.map(|o| o.to_string())),
                status.to_string(),
                r.warnings.len().to_string(),
            ]
        })
        .collect();
    write(out, &["CLUSTER", "VERSION", "DIGEST", "OBJECTS", "STATUS", "WARNINGS"], &cells)?;
    for r in rows {
        if let Status::Failed(why) = &r.status {
            writeln!(out, "{}: {why}", r.cluster)?;
        }
        for f in &r.failures {
            writeln!(out, "{}: {}: {}", r.cluster, f.part, f.message)?;
        }
    }
    for b in &published.broken {
        writeln!(out, "cannot read {b}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_columns_and_lists_failures() {
        let digest = Digest::of(b"x");
        let rows = vec![
            Row {
                cluster: "fleet/a".parse().unwrap(),
                version: Some(2),
                digest: Some(digest),
                objects: Some(5),
                status: Status::Published,
                warnings: vec!["w".into()],
                failures: vec![crate::render::Failure { part: "ClusterProfile.web".into(), message: "broken".into() }],
            },
            Row {
                cluster: "fleet/longer-name".parse().unwrap(),
                version: None,
                digest: None,
                objects: None,
                status: Status::Failed("conflict".into()),
                warnings: vec![],
                failures: vec![],
            },
        ];
        let broken = vec![crate::sources::Broken {
            origin: "m/p.yaml document 2".into(),
            what: crate::sources::Touches::Unknown,
            message: "bad".into(),
        }];
        let mut out = Vec::new();
        write_summary(&mut out, &Published { rows, broken, ..Default::default() }).unwrap();
        let text = String::from_utf8(out).unwrap();
        let want = format!(
            "CLUSTER             VERSION   DIGEST                OBJECTS   STATUS      WARNINGS\n\
             fleet/a             2         {}   5         published   1\n\
             fleet/longer-name   -         -                     -         failed      0\n\
             fleet/a: ClusterProfile.web: broken\n\
             fleet/longer-name: conflict\n\
             cannot read m/p.yaml document 2: bad\n",
            short(&digest)
        );
        assert_eq!(text, want);
    }
}
