//! `airlock-puller import`: loads an OCI archive carried across the air gap into this
//! site's store (registry, layout directory or Git repository) with
//! `airlock_store::mirror::import`, which verifies every bundle before it writes anything,
//! refuses to put an older version over a newer one, does nothing the second time, and
//! imports a delta archive only on top of the blobs it builds on. This module checks the
//! flags into an [`Import`] before any store is opened, shows progress, and says what was
//! written; deciding what to write is the mirror's.

use std::fmt::Write;
use std::path::PathBuf;

use airlock_bundle::Keyring;
use airlock_bundle::Limits;
use airlock_cli::progress::{Reporter, human_bytes};
use airlock_store::mirror::{self, ImportTarget, Imported};
use airlock_store::{self as store, RegistryCredentials, StoreRef};
use anyhow::{Context, bail};
use clap::Args;
use jiff::Timestamp;

use crate::config::read_keyring;
use crate::reports::failure::Failure;

#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The archive to import: oci-archive:FILE, as `airlock-publisher export` writes it.
    #[arg(long, value_name = "oci-archive:FILE")]
    pub from: String,
    /// Store to import into: oci://HOST/PREFIX, oci+http://HOST:PORT/PREFIX, oci-layout:DIR,
    /// git+file:///PATH or git+http(s)://URL[#BRANCH]. Registry logins come from
    /// $DOCKER_CONFIG/config.json.
    #[arg(long, value_name = "STORE")]
    pub to: String,
    /// The trusted keyring file (JSON, spec section 7) every bundle must verify with.
    #[arg(long, value_name = "FILE")]
    pub keyring: PathBuf,
}

/// The flags, checked.
#[derive(Debug)]
pub struct Import {
    pub archive: PathBuf,
    pub to: StoreRef,
    pub keyring: Keyring,
}

impl ImportArgs {
    pub fn check(&self) -> anyhow::Result<Import> {
        let archive = match self.from.parse::<StoreRef>().context("--from")? {
            StoreRef::OciArchive(path) => path,
            other => bail!("--from {other}: import reads an OCI archive, oci-archive:FILE"),
        };
        if !archive.is_file() {
            bail!("--from {}: no such file", self.from);
        }
        let to: StoreRef = self.to.parse().context("--to")?;
        if to == StoreRef::OciArchive(archive.clone()) {
            bail!("--to {}: the archive --from reads", to.shown());
        }
        Ok(Import { archive, to, keyring: read_keyring(&self.keyring).context("--keyring")? })
    }
}

/// Checks the flags, imports, and returns what to print.
pub async fn import(args: &ImportArgs) -> Result<String, Failure> {
    let import = args.check()?;
    let credentials = RegistryCredentials::default();
    let opened = match &import.to {
        StoreRef::Git { .. } => store::open(&import.to, &credentials).await.map(ImportTarget::Other),
        oci => store::open_oci(oci, &credentials).await.map(ImportTarget::Oci),
    };
    let target = opened.map_err(Failure::ImportTarget)?;
    let mut progress = Reporter::new();
    let imported = mirror::import(
        &import.archive,
        &target,
        &mirror::Trust { keyring: &import.keyring, now: Timestamp::now(), limits: &Limits::SPEC },
        &mut |p| progress.update(p),
    )
    .await;
    progress.finish();
    // A refusal (a bundle that does not verify, an older version) is exit 3; anything
    // else, a missing blob of a delta included, may be fixed by importing something first.
    let imported = imported.map_err(|source| Failure::Import {
        archive: import.archive.clone(),
        to: Box::new(import.to.clone()),
        source: Box::new(source),
    })?;
    Ok(summary(&import.to, &imported))
}

/// One line per cluster, then the totals.
fn summary(to: &StoreRef, imported: &[Imported]) -> String {
    let mut out = String::new();
    let (mut written, mut present) = (0, 0);
    for i in imported {
        let _ = match i {
            Imported::Written { cluster, version, bytes } => {
                written += 1;
                // A Git store is written as commits; only OCI stores count the bytes.
                let size = if *bytes > 0 { format!(" ({})", human_bytes(*bytes)) } else { String::new() };
                writeln!(out, "{cluster}: version {version} written{size}")
            }
            Imported::AlreadyPresent { cluster, version } => {
                present += 1;
                writeln!(out, "{cluster}: version {version} already present")
            }
        };
    }
    let _ = writeln!(out, "imported into {}: {written} written, {present} already present", to.shown());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_bundle::testkit::Fixture;

    /// A directory with a keyring and a file named like an archive, and flags whose `DIR`
    /// stands for it.
    fn site() -> (tempfile::TempDir, impl Fn(&str, &str) -> ImportArgs) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keyring.json"), Fixture::new(1).keyring.to_json()).unwrap();
        std::fs::write(dir.path().join("update.tar"), b"not read before the import").unwrap();
        let root = dir.path().to_path_buf();
        let args = move |from: &str, to: &str| ImportArgs {
            from: from.replace("DIR", &root.display().to_string()),
            to: to.replace("DIR", &root.display().to_string()),
            keyring: root.join("keyring.json"),
        };
        (dir, args)
    }

    #[test]
    fn checks_an_archive_into_each_kind_of_store() {
        let (dir, args) = site();
        for to in ["oci+http://127.0.0.1:5000/site", "oci-layout:DIR/layout", "git+file://DIR/repo.git#main"] {
            let import = args("oci-archive:DIR/update.tar", to).check().unwrap();
            assert_eq!(import.archive, dir.path().join("update.tar"));
            assert_eq!(import.to.to_string(), to.replace("DIR", &dir.path().display().to_string()));
            assert_eq!(import.keyring, Fixture::new(1).keyring);
        }
    }

    #[test]
    fn rejects_bad_flags_naming_the_flag() {
        let (dir, args) = site();
        let cases = [
            ("oci-layout:DIR/layout", "oci-layout:DIR/other", "--from oci-layout:"),
            ("DIR/update.tar", "oci-layout:DIR/other", "--from"),
            ("oci-archive:DIR/missing.tar", "oci-layout:DIR/other", "missing.tar: no such file"),
            ("oci-archive:DIR/update.tar", "s3://bucket", "--to"),
            ("oci-archive:DIR/update.tar", "oci-archive:DIR/update.tar", "the archive --from reads"),
        ];
        for (from, to, want) in cases {
            let err = format!("{:#}", args(from, to).check().unwrap_err());
            assert!(err.contains(want), "{from} -> {to}: {err}");
        }
        let mut bad_keyring = args("oci-archive:DIR/update.tar", "oci-layout:DIR/l");
        bad_keyring.keyring = dir.path().join("update.tar");
        let err = format!("{:#}", bad_keyring.check().unwrap_err());
        assert!(err.contains("--keyring") && err.contains("update.tar"), "{err}");
    }

    #[test]
    fn summary_names_each_cluster_and_counts() {
        let to: StoreRef = "oci-layout:/srv/site".parse().unwrap();
        let (a, b) = ("fleet/a".parse().unwrap(), "fleet/b".parse().unwrap());
        let text =
            summary(&to, &[Imported::Written { cluster: a, version: 3, bytes: 2048 }, Imported::AlreadyPresent { cluster: b, version: 2 }]);
        assert_eq!(
            text,
            "fleet/a: version 3 written (2.0 KiB)\nfleet/b: version 2 already present\n\
             imported into oci-layout:/srv/site: 1 written, 1 already present\n"
        );
    }

    #[tokio::test]
    async fn a_damaged_archive_is_an_error_and_writes_nothing() {
        let (dir, args) = site();
        let err = import(&args("oci-archive:DIR/update.tar", "oci-layout:DIR/layout")).await.unwrap_err();
        assert_eq!(err.exit_code(), airlock_cli::exit::ERROR, "{err:?}");
        assert!(err.to_string().contains("update.tar"), "{err:?}");
        assert!(!dir.path().join("layout").join("index.json").exists(), "nothing written");
    }
}
