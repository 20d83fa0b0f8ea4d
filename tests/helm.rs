//! Chart rendering with the real helm binaries (v3.17.2 and v4.1.4, from hack/helm.sh)
//! against the test charts of `shared/charts`, served by a chart repository inside the test
//! process: object lists, rendered objects and hook order held to what helm itself printed
//! and what a real `helm install` did on a 1.20.2 API server (`shared/charts/traces`).

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use airlock_bundle::vocabulary::{
    APP_VERSION_ANNOTATION, CHART_LABEL, CHART_VERSION_ANNOTATION, RELEASE_LABEL, RELEASE_NAMESPACE_LABEL, REPOSITORY_ANNOTATION,
};
use airlock_e2e::chart_repo::{ChartRepo, charts_dir, helm_paths};
use airlock_publisher::render::helm::{
    Access, Capabilities, ChartRef, Helm, HookEvent, Manifest, Release, ReleaseRequest, Renderer, RendererSettings, TemplateOptions,
};
use serde_json::{Value, json};

/// One reference rendering of `shared/charts`.
struct Case {
    /// The base name of its files in `objects/` and `rendered/`.
    name: &'static str,
    chart: &'static str,
    version: &'static str,
    release: &'static str,
    namespace: &'static str,
    values: fn() -> Value,
}

const CASES: &[Case] = &[
    Case {
        name: "kube-state-metrics",
        chart: "kube-state-metrics",
        version: "4.0.2",
        release: "ksm",
        namespace: "ksm",
        values: || json!({}),
    },
    Case {
        name: "ingress-nginx",
        chart: "ingress-nginx",
        version: "4.0.13",
        release: "ingress-nginx",
        namespace: "ingress-nginx",
        values: || json!({}),
    },
    Case {
        name: "cert-manager",
        chart: "cert-manager",
        version: "v1.7.3",
        release: "cert-manager",
        namespace: "cert-manager",
        values: || json!({}),
    },
    Case {
        name: "cert-manager.installCRDs",
        chart: "cert-manager",
        version: "v1.7.3",
        release: "cert-manager",
        namespace: "cert-manager",
        values: || json!({"installCRDs": true}),
    },
    Case {
        name: "kube-prometheus-stack.include-crds",
        chart: "kube-prometheus-stack",
        version: "23.3.2",
        release: "kps",
        namespace: "monitoring",
        values: || json!({}),
    },
];

fn chart(repo: &ChartRepo, name: &str, version: &str) -> ChartRef {
    ChartRef::new("ClusterProfile/test", &repo.url, "airlock-test", &format!("airlock-test/{name}"), version, Access::default())
        .expect("a valid entry")
}

fn request(chart: ChartRef, case: &Case) -> ReleaseRequest {
    ReleaseRequest {
        chart,
        release: case.release.into(),
        namespace: case.namespace.into(),
        values: (case.values)(),
        capabilities: Capabilities { kube_version: Some("v1.20.2".into()), api_versions: vec![] },
        options: TemplateOptions::default(),
    }
}

fn renderer(path: &Path, cache: Option<&Path>) -> Renderer {
    let helm = Helm::at(path).expect("helm runs");
    Renderer::new(helm, &RendererSettings { cache_dir: cache.map(Path::to_path_buf), check_determinism: true, ..Default::default() })
        .expect("renderer")
}

/// Every object of a release in `helm template` order: crds, the manifest, hooks.
fn all(release: &Release) -> Vec<&Manifest> {
    release.crds.iter().chain(&release.objects).chain(release.hooks.iter().map(|h| &h.manifest)).collect()
}

/// `objs.py list`'s line for an object.
fn line(object: &Value) -> String {
    let md = &object["metadata"];
    let namespace = md["namespace"].as_str().unwrap_or("-");
    let mut s = format!(
        "{}/{namespace}/{}  ({})",
        object["kind"].as_str().unwrap(),
        md["name"].as_str().unwrap(),
        object["apiVersion"].as_str().unwrap()
    );
    let annotations = &md["annotations"];
    if let Some(hook) = annotations["helm.sh/hook"].as_str() {
        let weight: i64 = annotations["helm.sh/hook-weight"].as_str().map_or(0, |w| w.trim().parse().unwrap());
        let policy = annotations["helm.sh/hook-delete-policy"].as_str().unwrap_or("(none: Helm defaults to before-hook-creation)");
        s += &format!("  hook={hook} weight={weight} delete-policy={policy}");
    }
    s
}

fn read_reference(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if path.extension().is_some_and(|e| e == "gz") {
        let mut text = String::new();
        flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut text).expect("gunzip");
        text
    } else {
        String::from_utf8(bytes).expect("UTF-8")
    }
}

/// The object as helm printed it: without the labels the renderer adds.
fn unlabelled(object: &Value) -> Value {
    let mut object = object.clone();
    let labels = object["metadata"]["labels"].as_object_mut().expect("labelled");
    for key in [RELEASE_LABEL, RELEASE_NAMESPACE_LABEL, CHART_LABEL] {
        labels.remove(key);
    }
    if labels.is_empty() {
        object["metadata"].as_object_mut().unwrap().remove("labels");
    }
    let annotations = object["metadata"]["annotations"].as_object_mut().expect("annotated with the chart");
    assert!(annotations.contains_key(CHART_VERSION_ANNOTATION), "the chart's version on every object: {annotations:?}");
    for key in [CHART_VERSION_ANNOTATION, REPOSITORY_ANNOTATION, APP_VERSION_ANNOTATION] {
        annotations.remove(key);
    }
    if annotations.is_empty() {
        object["metadata"].as_object_mut().unwrap().remove("annotations");
    }
    object
}

fn parse_stream(text: &str) -> Vec<Value> {
    let options = serde_saphyr::options! { legacy_octal_numbers: true };
    let docs: Vec<Value> = serde_saphyr::from_multiple_with_options(text, options).expect("the reference parses");
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

#[test]
fn renders_each_chart_as_helm_template_does() {
    let charts = charts_dir();
    let repo = ChartRepo::serve(&charts, None);
    for helm in helm_paths() {
        let renderer = renderer(&helm, None);
        let major = renderer.helm().version().major;
        for case in CASES {
            let chart = chart(&repo, case.chart, case.version);
            renderer.fetch(&chart).expect("fetches");
            let (before, started) = (renderer.helm().invocations(), Instant::now());
            let rendered = renderer.render(&request(chart, case)).expect("renders");
            let renders = renderer.helm().invocations() - before;
            eprintln!("helm v{major} {}: rendered {renders} time(s) in {:?}", case.name, started.elapsed());
            // Only kube-prometheus-stack names a random function (grafana's admin password):
            // the determinism check renders it again; the others render once.
            assert_eq!(renders, if case.chart == "kube-prometheus-stack" { 2 } else { 1 }, "{}: helm template runs", case.name);
            assert!(!rendered.nondeterministic, "{}: two renders differ", case.name);
            let helm4_order = charts.join(format!("objects/{}.helm4-order.txt", case.name));
            let list = if major == 4 && helm4_order.exists() { helm4_order } else { charts.join(format!("objects/{}.txt", case.name)) };
            let want: Vec<String> = read_reference(&list).lines().map(str::to_string).collect();
            let got: Vec<String> = all(&rendered.release).iter().map(|m| line(&m.object)).collect();
            assert_eq!(got, want, "helm v{major} {}: object list differs from {}", case.name, list.display());

            let rendered_dir = charts.join("rendered");
            let file = ["yaml", "yaml.gz"]
                .iter()
                .map(|e| rendered_dir.join(format!("{}.{e}", case.name)))
                .find(|p| p.exists())
                .expect("a rendering");
            let mut want = parse_stream(&read_reference(&file));
            // A chart's `annotations:` left empty (null, or `{}`) holds the chart's
            // annotations in the release, which `unlabelled` takes out again.
            for object in &mut want {
                let empty = |a: &Value| a.is_null() || a.as_object().is_some_and(|m| m.is_empty());
                if object["metadata"].get("annotations").is_some_and(empty) {
                    object["metadata"].as_object_mut().unwrap().remove("annotations");
                }
            }
            let mut got: Vec<Value> = all(&rendered.release).iter().map(|m| unlabelled(&m.object)).collect();
            if major == 4 {
                // helm v4 places the webhook configurations elsewhere in its install order.
                let key = |v: &Value| serde_json::to_string(v).unwrap();
                want.sort_by_key(key);
                got.sort_by_key(key);
            }
            assert!(got == want, "helm v{major} {}: objects differ from {}", case.name, file.display());
        }
    }
}

/// The hook groups of a `helm install` trace: runs of hook objects ADDED between plain
/// objects, and the hooks DELETED after each.
fn trace_groups(trace: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut groups: Vec<(Vec<String>, Vec<String>)> = vec![];
    let mut in_group = false;
    for l in trace.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<&str> = l.split_whitespace().collect();
        let (event, object, hook) = (fields[1], fields[2].to_string(), l.contains("[hook"));
        match (event, hook) {
            ("ADDED", true) if !in_group => {
                groups.push((vec![object], vec![]));
                in_group = true;
            }
            ("ADDED", true) => groups.last_mut().unwrap().0.push(object),
            ("DELETED", true) => groups.last_mut().unwrap().1.push(object),
            ("ADDED", false) => in_group = false,
            _ => {}
        }
    }
    groups
}

fn key(object: &Value) -> String {
    let md = &object["metadata"];
    format!("{}/{}/{}", object["kind"].as_str().unwrap(), md["namespace"].as_str().unwrap_or("-"), md["name"].as_str().unwrap())
}

#[test]
fn orders_hooks_as_helm_install_ran_them() {
    let charts = charts_dir();
    let repo = ChartRepo::serve(&charts, None);
    // (case, trace, the events its hook groups belong to, in order)
    let traced = [
        (&CASES[1], "ingress-nginx.helm3.install.txt", vec![HookEvent::PreInstall, HookEvent::PostInstall]),
        (&CASES[3], "cert-manager.helm3.install.txt", vec![HookEvent::PostInstall]),
        (&CASES[4], "kube-prometheus-stack.helm3.install.txt", vec![HookEvent::PreInstall, HookEvent::PostInstall]),
    ];
    for helm in helm_paths() {
        let renderer = renderer(&helm, None);
        for (case, trace, events) in &traced {
            let rendered = renderer.render(&request(chart(&repo, case.chart, case.version), case)).expect("renders");
            let groups = trace_groups(&read_reference(&charts.join("traces").join(trace)));
            assert_eq!(groups.len(), events.len(), "{trace}");
            for ((created, deleted), event) in groups.iter().zip(events) {
                let hooks = rendered.release.hooks_for(*event);
                let order: Vec<String> = hooks.iter().map(|h| key(&h.manifest.object)).collect();
                assert_eq!(&order, created, "{trace}: {event} hooks run in another order");
                let succeeded: Vec<String> = hooks
                    .iter()
                    .rev()
                    .filter(|h| h.spec.effective_delete_policies().contains(&airlock_publisher::render::helm::DeletePolicy::HookSucceeded))
                    .map(|h| key(&h.manifest.object))
                    .collect();
                assert_eq!(&succeeded, deleted, "{trace}: {event} hooks are deleted in another order");
            }
        }
    }
}

#[test]
fn a_values_change_renders_anew_and_equal_inputs_do_not() {
    let repo = ChartRepo::serve(&charts_dir(), None);
    let cache = tempfile::tempdir().expect("tempdir");
    for helm in helm_paths() {
        let renderer = renderer(&helm, Some(cache.path()));
        let case = &CASES[0];
        let base = request(chart(&repo, case.chart, case.version), case);
        let first = renderer.render(&base).expect("renders");
        let mut three = base.clone();
        three.values = json!({"replicas": 3});
        let changed = renderer.render(&three).expect("renders");
        assert_ne!(first.inputs, changed.inputs);
        let replicas =
            |r: &Release| r.objects.iter().find(|m| m.object["kind"] == "Deployment").unwrap().object["spec"]["replicas"].clone();
        assert_eq!((replicas(&first.release), replicas(&changed.release)), (json!(1), json!(3)));

        // The same inputs again, in this publish: no helm runs, not even a fetch.
        let before = renderer.helm().invocations();
        let started = Instant::now();
        for _ in 0..1000 {
            renderer.render(&base).expect("renders");
        }
        eprintln!("helm v{}: 1000 memory-memo hits in {:?}", renderer.helm().version().major, started.elapsed());
        assert_eq!(renderer.helm().invocations(), before, "a memo hit ran helm");

        // A later publish with the same cache: the disk memo answers, helm still idle.
        let later = self::renderer(&helm, Some(cache.path()));
        let before = later.helm().invocations();
        let started = Instant::now();
        let again = later.render(&base).expect("renders");
        eprintln!("helm v{}: disk-memo hit in {:?}", later.helm().version().major, started.elapsed());
        assert_eq!(later.helm().invocations(), before, "a disk memo hit ran helm");
        assert!(again.remembered);
        assert_eq!(again.release, first.release);
    }
}
