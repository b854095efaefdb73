//! The krew distribution: `krew/release.sh` packs the plugin binary (the test build, with
//! `--bin-dir`) into the Linux archive and renders the manifest; the manifest holds to krew's
//! validation rules, the archive holds what the manifest says, and the plugin installed the way
//! krew installs it (unpacked into a store, linked from a bin directory on PATH) is found by
//! kubectl's plugin discovery once and answers `kubectl sveltos-events version`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code

use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(command: &mut Command) -> String {
    let out = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{command:?}: {text}");
    text
}

/// krew's rules for a plugin manifest (its `validation` package), for the file `name.yaml`.
fn validate(manifest: &Value, name: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut check = |ok: bool, what: &str| {
        if !ok {
            problems.push(what.to_owned());
        }
    };
    check(
        manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2",
        "apiVersion",
    );
    check(manifest["kind"] == "Plugin", "kind");
    check(
        manifest["metadata"]["name"] == name,
        "name equals the file name",
    );
    let spec = &manifest["spec"];
    let version = spec["version"].as_str().unwrap_or_default();
    let semver = version.strip_prefix('v').is_some_and(|v| {
        v.split('.').count() == 3 && v.split('.').all(|p| p.parse::<u32>().is_ok())
    });
    check(semver, "version is vMAJOR.MINOR.PATCH");
    check(
        spec["shortDescription"]
            .as_str()
            .is_some_and(|d| !d.is_empty() && d.len() <= 60),
        "shortDescription",
    );
    let platforms = spec["platforms"].as_array().cloned().unwrap_or_default();
    check(!platforms.is_empty(), "at least one platform");
    let mut selectors = HashSet::new();
    for platform in &platforms {
        let labels = &platform["selector"]["matchLabels"];
        check(
            labels["os"].is_string() && labels["arch"].is_string(),
            "a selector",
        );
        check(
            selectors.insert(labels.to_string()),
            "no duplicate selectors",
        );
        let sha = platform["sha256"].as_str().unwrap_or_default();
        check(
            sha.len() == 64
                && sha
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
            "sha256 of 64 lowercase hex characters",
        );
        check(
            platform["uri"]
                .as_str()
                .is_some_and(|u| u.starts_with("https://")),
            "https uri",
        );
        let bin = platform["bin"].as_str().unwrap_or_default();
        check(!bin.is_empty(), "bin");
        if labels["os"] == "windows" {
            check(bin.ends_with(".exe"), "windows bin ends in .exe");
        }
        let copied = platform["files"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|f| f["from"] == bin);
        check(copied, "files copy bin");
    }
    problems
}

#[test]
fn the_release_archive_and_manifest_install_as_krew_installs_them() {
    let work = std::env::temp_dir().join(format!("krew-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let out = work.join("dist");
    // The test build, stripped as the release profile strips it (packing 400 MB of debug
    // information would take a minute).
    let built = work.join("built");
    std::fs::create_dir_all(&built).unwrap();
    let plugin = built.join("kubectl-sveltos_events");
    std::fs::copy(env!("CARGO_BIN_EXE_kubectl-sveltos_events"), &plugin).unwrap();
    run(Command::new("strip").arg(&plugin));
    run(Command::new(root().join("krew/release.sh"))
        .arg("--bin-dir")
        .arg(&built)
        .arg("--out")
        .arg(&out));

    let text = std::fs::read_to_string(out.join("sveltos-events.yaml")).unwrap();
    let manifest: Value = serde_saphyr::from_str(&text).unwrap();
    let problems = validate(&manifest, "sveltos-events");
    assert!(problems.is_empty(), "{problems:?}\n{text}");
    let version = run(Command::new(&plugin).args(["version", "--client"]));
    let spec_version = manifest["spec"]["version"].as_str().unwrap();
    assert!(
        version.contains(spec_version),
        "{version} vs {spec_version}"
    );

    // The Linux archive: its sha256 is the manifest's, and it holds bin and the licence.
    let linux = manifest["spec"]["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["selector"]["matchLabels"]["os"] == "linux")
        .unwrap()
        .clone();
    let uri = linux["uri"].as_str().unwrap();
    let archive = out.join(uri.rsplit('/').next().unwrap());
    let sha = run(Command::new("sha256sum").arg(&archive));
    assert!(sha.starts_with(linux["sha256"].as_str().unwrap()), "{sha}");
    let listing = run(Command::new("tar").arg("tzf").arg(&archive));
    let entries: Vec<&str> = listing.lines().collect();
    let bin = linux["bin"].as_str().unwrap();
    for wanted in [
        bin,
        "kubectl_complete-sveltos_events",
        "LICENSE",
        "README.md",
    ] {
        assert!(entries.contains(&wanted), "{wanted} not in {entries:?}");
    }

    // Installed as krew does: unpacked into its store, the bin linked from krew's bin dir.
    let store = work.join("krew/store/sveltos-events").join(spec_version);
    std::fs::create_dir_all(&store).unwrap();
    run(Command::new("tar")
        .arg("xzf")
        .arg(&archive)
        .arg("-C")
        .arg(&store));
    let bin_dir = work.join("krew/bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let link = bin_dir.join("kubectl-sveltos_events");
    std::os::unix::fs::symlink(store.join(bin), &link).unwrap();
    let kubectl = run(Command::new("sh").args(["-c", "command -v kubectl"]));
    let kubectl_dir = Path::new(kubectl.trim()).parent().unwrap().to_owned();
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        bin_dir.display(),
        kubectl_dir.display()
    );
    let listed = run(Command::new("kubectl")
        .args(["plugin", "list"])
        .env("PATH", &path)
        .env("HOME", &work));
    let found = listed.matches("kubectl-sveltos_events").count();
    assert_eq!(found, 1, "{listed}");
    let answer = run(Command::new("kubectl")
        .args(["sveltos-events", "version", "--client"])
        .env("PATH", &path)
        .env("HOME", &work));
    assert!(answer.contains(spec_version), "{answer}");
    let _ = std::fs::remove_dir_all(&work);
}
