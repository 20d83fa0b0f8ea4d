//! The soak test's world: a seeded random walk over a fleet's desired configuration.
//! [`Fleet`] holds which objects each profile carries and which profiles each cluster is
//! labelled into; [`Fleet::mutate`] makes one random change; [`Fleet::write`] writes the
//! whole management set (SveltosClusters, ClusterProfiles, the ConfigMaps holding the
//! manifests) for `airlock-publisher publish --from-dir`; [`Fleet::desired`] says what
//! each cluster must then hold. It runs no process and knows no API server.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Clusters in the fleet, each filling its own namespace of the managed apiserver.
pub const CLUSTERS: usize = 3;
/// ClusterProfiles; an object lives in exactly one of them.
pub const PROFILES: usize = 4;
/// Objects are added up to about this many, so cycles stay small and fast.
const TARGET_OBJECTS: usize = 12;

/// xorshift64*: tiny, deterministic, good enough to choose test mutations; a seed
/// replays the same walk.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform enough in `0..n` for n far below 2^32.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() >> 32) as usize % n
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    ConfigMap,
    Secret,
}

/// One object of the configuration: its profile, kind and current content.
#[derive(Debug, Clone)]
struct Object {
    profile: usize,
    kind: Kind,
    value: String,
}

/// What one cluster must hold: (kind, namespace, name) → the `v` data value.
pub type Desired = BTreeMap<(Kind, String, String), String>;

pub struct Fleet {
    /// Unique per test run: management namespace, profile and namespace prefix.
    pub run: String,
    objects: BTreeMap<String, Object>,
    /// `member[cluster][profile]`: the cluster carries the profile's selector label.
    member: [[bool; PROFILES]; CLUSTERS],
    next_object: usize,
}

impl Fleet {
    /// Every cluster starts in profile 0 and in one more profile of its own.
    pub fn new(run: &str) -> Fleet {
        let mut member = [[false; PROFILES]; CLUSTERS];
        for (c, row) in member.iter_mut().enumerate() {
            row[0] = true;
            row[1 + c % (PROFILES - 1)] = true;
        }
        Fleet { run: run.to_string(), objects: BTreeMap::new(), member, next_object: 0 }
    }

    pub fn cluster_name(c: usize) -> String {
        format!("c{c}")
    }

    /// The namespace cluster `c`'s objects go to.
    pub fn namespace(&self, c: usize) -> String {
        format!("{}-{}", self.run, Fleet::cluster_name(c))
    }

    /// One random change; its description, for the failure message.
    pub fn mutate(&mut self, rng: &mut Rng, cycle: usize) -> String {
        let names: Vec<String> = self.objects.keys().cloned().collect();
        let pick = |rng: &mut Rng| names[rng.below(names.len())].clone();
        let value = format!("v{cycle}-{}", rng.below(1000));
        // Grow towards TARGET_OBJECTS, then hover around it.
        let roll = if names.is_empty() { 0 } else { rng.below(if names.len() < TARGET_OBJECTS { 6 } else { 5 }) };
        match roll {
            0 | 5 => {
                let name = format!("o{}", self.next_object);
                self.next_object += 1;
                let (profile, kind) = (rng.below(PROFILES), if rng.below(3) == 0 { Kind::Secret } else { Kind::ConfigMap });
                self.objects.insert(name.clone(), Object { profile, kind, value: value.clone() });
                format!("add {kind:?} {name} to p{profile} = {value}")
            }
            1 => {
                let name = pick(rng);
                let object = self.objects.get_mut(&name).expect("picked from the keys");
                object.value = value.clone();
                format!("change {name} = {value}")
            }
            2 => {
                let name = pick(rng);
                let object = self.objects.get_mut(&name).expect("picked from the keys");
                object.profile = (object.profile + 1 + rng.below(PROFILES - 1)) % PROFILES;
                format!("move {name} to p{}", object.profile)
            }
            3 => {
                let name = pick(rng);
                self.objects.remove(&name);
                format!("remove {name}")
            }
            _ => {
                let (c, p) = (rng.below(CLUSTERS), rng.below(PROFILES));
                self.member[c][p] = !self.member[c][p];
                format!("c{c} {} p{p}", if self.member[c][p] { "enters" } else { "leaves" })
            }
        }
    }

    /// Clusters that match no profile at all: their bundle is empty.
    pub fn unmatched(&self) -> usize {
        self.member.iter().filter(|row| !row.contains(&true)).count()
    }

    /// What cluster `c` must hold once its bundle is applied.
    pub fn desired(&self, c: usize) -> Desired {
        let (ns, cluster) = (self.namespace(c), Fleet::cluster_name(c));
        self.objects
            .iter()
            .filter(|(_, o)| self.member[c][o.profile])
            .map(|(name, o)| ((o.kind, ns.clone(), name.clone()), format!("{}-{cluster}", o.value)))
            .collect()
    }

    /// Rewrites the management set in `dir`: clusters, profiles and manifests.
    pub fn write(&self, dir: &Path) {
        let run = &self.run;
        let mut clusters = String::new();
        for (c, row) in self.member.iter().enumerate() {
            let mut labels = format!("soak.airlock.dev/run: {run}");
            for p in (0..PROFILES).filter(|&p| row[p]) {
                write!(labels, ", soak.airlock.dev/p{p}: in").expect("writing to a String");
            }
            let name = Fleet::cluster_name(c);
            writeln!(
                clusters,
                "---\napiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\nmetadata:\n  name: {name}\n  \
                 namespace: {run}\n  labels: {{{labels}}}\n  annotations: {{airlock.dev/plaintext-secrets: allow}}\n\
                 spec: {{pullMode: true}}"
            )
            .expect("writing to a String");
        }
        let mut profiles = String::new();
        let mut manifests = String::new();
        for p in 0..PROFILES {
            writeln!(
                profiles,
                "---\napiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata:\n  name: {run}-p{p}\n\
                 spec:\n  clusterSelector:\n    matchLabels: {{soak.airlock.dev/run: {run}, soak.airlock.dev/p{p}: in}}\n  \
                 policyRefs:\n    - {{kind: ConfigMap, namespace: {run}, name: p{p}-manifests}}"
            )
            .expect("writing to a String");
            let data: String = self.objects.iter().filter(|(_, o)| o.profile == p).map(|(name, o)| self.manifest(name, o)).collect();
            let data = if data.is_empty() { " {}\n".to_string() } else { format!("\n{data}") };
            write!(
                manifests,
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p{p}-manifests\n  namespace: {run}\n  \
                 annotations: {{projectsveltos.io/template: ok}}\ndata:{data}"
            )
            .expect("writing to a String");
        }
        for (file, text) in [("clusters.yaml", clusters), ("profiles.yaml", profiles), ("manifests.yaml", manifests)] {
            std::fs::write(dir.join(file), text).unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()));
        }
    }

    /// One object as a data key of its profile's ConfigMap: a template, so every cluster
    /// renders it into its own namespace with its own name in the value.
    fn manifest(&self, name: &str, object: &Object) -> String {
        let (run, value) = (&self.run, &object.value);
        let namespace = format!("{run}-{{{{ .Cluster.metadata.name }}}}");
        let body = match object.kind {
            Kind::ConfigMap => format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  \
                 v: \"{value}-{{{{ .Cluster.metadata.name }}}}\"\n"
            ),
            Kind::Secret => format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\ntype: Opaque\n\
                 data:\n  v: {{{{ printf \"{value}-%s\" .Cluster.metadata.name | b64enc }}}}\n"
            ),
        };
        let indented: String = body.lines().map(|l| format!("    {l}\n")).collect();
        format!("  {name}.yaml: |\n{indented}")
    }
}
