//! The fixture management set applied to the management apiserver of `hack/services.sh`
//! (with the Sveltos CRDs of `hack/crds/`), in a namespace of its own.

use std::process::Command;

use super::{Fixture, install_crds};
use crate::locks::AirlockCrds;

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";

pub fn kubeconfig() -> String {
    crate::service_env(MANAGEMENT)
}

/// kubectl against the management apiserver; its stdout, or a panic with its stderr.
pub fn kubectl(args: &[&str]) -> String {
    let out = Command::new(crate::service_env("AIRLOCK_KUBECTL"))
        .arg("--kubeconfig")
        .arg(kubeconfig())
        .args(args)
        .output()
        .expect("kubectl runs");
    assert!(out.status.success(), "kubectl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("kubectl prints UTF-8")
}

/// The fixture applied to the management cluster; removed again on drop.
pub struct Applied(pub Fixture, AirlockCrds);

impl Applied {
    pub fn new(test: &str) -> Applied {
        let crds = install_crds();
        let fx = Fixture::new(test);
        kubectl(&["create", "namespace", &fx.run]);
        kubectl(&["apply", "--server-side", "-f", fx.path()]);
        Applied(fx, crds)
    }
}

impl Drop for Applied {
    fn drop(&mut self) {
        let run = &self.0.run;
        let profiles: Vec<String> = ["base", "north", "south", "secret", "canary"].iter().map(|p| format!("{run}-{p}")).collect();
        let mut args = vec!["delete", "clusterprofiles.config.projectsveltos.io", "--ignore-not-found"];
        args.extend(profiles.iter().map(String::as_str));
        let _ = std::panic::catch_unwind(|| kubectl(&args));
        let _ = std::panic::catch_unwind(|| kubectl(&["delete", "namespace", run, "--wait=false"]));
    }
}
