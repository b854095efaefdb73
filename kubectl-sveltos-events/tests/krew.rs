//! The krew distribution: `krew/release.sh` packs the plugin binary (the test build, with
//! `--bin-dir`) into the Linux archive and renders the manifest; the manifest holds to krew's
//! validation rules, the archive holds what the manifest says, and the plugin installed the way
//! krew installs it (unpacked into a store, linked from a bin directory on PATH) is found by
//! kubectl's plugin discovery once and answers `kubectl sveltos-events version`. The other
//! platforms' archives (built by the CI matrix in krew/README.md) are stood in for by archives
//! of the same layout, so the manifest carries all five and every rule meets them.
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

/// The entries of a release archive (`.tar.gz` or `.zip`).
fn entries(archive: &Path) -> Vec<String> {
    let listing = if archive.extension().is_some_and(|e| e == "zip") {
        run(Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))",
            ])
            .arg(archive))
    } else {
        run(Command::new("tar").arg("tzf").arg(archive))
    };
    listing.lines().map(str::to_owned).collect()
}

/// An archive as the CI matrix would build it for `os`/`arch`, in `out`: a stand-in binary,
/// LICENSE and README.md (and the completion hook outside Windows).
fn stand_in_archive(out: &Path, version: &str, os: &str, arch: &str) {
    let stage = out.join(format!("stage-{os}-{arch}"));
    std::fs::create_dir_all(&stage).unwrap();
    let mut files = vec!["LICENSE", "README.md"];
    for file in &files {
        std::fs::copy(root().join(file), stage.join(file)).unwrap();
    }
    let name = format!("kubectl-sveltos_events-v{version}-{os}-{arch}");
    if os == "windows" {
        std::fs::write(stage.join("kubectl-sveltos_events.exe"), "MZ").unwrap();
        files.push("kubectl-sveltos_events.exe");
        run(Command::new("python3")
            .args(["-c", "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w') as z:\n    [z.write(f) for f in sys.argv[2:]]"])
            .arg(out.join(format!("{name}.zip")))
            .args(&files)
            .current_dir(&stage));
    } else {
        std::fs::write(stage.join("kubectl-sveltos_events"), "#!/bin/sh\n").unwrap();
        std::fs::write(stage.join("kubectl_complete-sveltos_events"), "#!/bin/sh\n").unwrap();
        files.extend(["kubectl-sveltos_events", "kubectl_complete-sveltos_events"]);
        run(Command::new("tar")
            .arg("czf")
            .arg(out.join(format!("{name}.tar.gz")))
            .args(&files)
            .current_dir(&stage));
    }
    std::fs::remove_dir_all(&stage).unwrap();
}

/// The workspace's version, as release.sh reads it.
fn workspace_version() -> String {
    let cargo = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let table = cargo.split("[workspace.package]").nth(1).unwrap();
    let line = table.lines().find(|l| l.starts_with("version")).unwrap();
    line.split('"').nth(1).unwrap().to_owned()
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
    std::fs::create_dir_all(&out).unwrap();
    for (os, arch) in [
        ("linux", "arm64"),
        ("darwin", "amd64"),
        ("darwin", "arm64"),
        ("windows", "amd64"),
    ] {
        stand_in_archive(&out, &workspace_version(), os, arch);
    }
    run(Command::new(root().join("krew/release.sh"))
        .arg("--bin-dir")
        .arg(&built)
        .arg("--out")
        .arg(&out));

    let text = std::fs::read_to_string(out.join("sveltos-events.yaml")).unwrap();
    let manifest: Value = serde_saphyr::from_str(&text).unwrap();
    let problems = validate(&manifest, "sveltos-events");
    assert!(problems.is_empty(), "{problems:?}\n{text}");
    // One platform per target, each archive holding its bin and the files the manifest copies.
    let platforms = manifest["spec"]["platforms"].as_array().unwrap();
    let mut selectors: Vec<String> = platforms
        .iter()
        .map(|p| {
            let labels = &p["selector"]["matchLabels"];
            format!(
                "{}/{}",
                labels["os"].as_str().unwrap(),
                labels["arch"].as_str().unwrap()
            )
        })
        .collect();
    selectors.sort();
    assert_eq!(
        selectors,
        [
            "darwin/amd64",
            "darwin/arm64",
            "linux/amd64",
            "linux/arm64",
            "windows/amd64"
        ]
    );
    for platform in platforms {
        let uri = platform["uri"].as_str().unwrap();
        let archive = out.join(uri.rsplit('/').next().unwrap());
        let held = entries(&archive);
        for file in platform["files"].as_array().unwrap() {
            let from = file["from"].as_str().unwrap();
            assert!(
                held.iter().any(|e| e == from),
                "{from} not in {uri}: {held:?}"
            );
        }
    }
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
        .find(|p| {
            p["selector"]["matchLabels"] == serde_json::json!({"os": "linux", "arch": "amd64"})
        })
        .unwrap()
        .clone();
    let uri = linux["uri"].as_str().unwrap();
    let archive = out.join(uri.rsplit('/').next().unwrap());
    let sha = run(Command::new("sha256sum").arg(&archive));
    assert!(sha.starts_with(linux["sha256"].as_str().unwrap()), "{sha}");
    let held = entries(&archive);
    let bin = linux["bin"].as_str().unwrap();
    for wanted in [
        bin,
        "kubectl_complete-sveltos_events",
        "LICENSE",
        "README.md",
    ] {
        assert!(held.iter().any(|e| e == wanted), "{wanted} not in {held:?}");
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

/// Each rule refuses the manifest that breaks it (so the test above cannot pass by accepting
/// anything).
#[test]
fn the_manifest_rules_refuse_what_krew_refuses() {
    let good: Value = serde_json::json!({
        "apiVersion": "krew.googlecontainertools.github.com/v1alpha2",
        "kind": "Plugin",
        "metadata": {"name": "sveltos-events"},
        "spec": {
            "version": "v0.1.0",
            "shortDescription": "Deploy add-ons to clusters when events happen in them",
            "platforms": [
                {
                    "selector": {"matchLabels": {"os": "linux", "arch": "amd64"}},
                    "uri": "https://example.org/a.tar.gz",
                    "sha256": "0".repeat(64),
                    "bin": "kubectl-sveltos_events",
                    "files": [{"from": "kubectl-sveltos_events", "to": "."}]
                },
                {
                    "selector": {"matchLabels": {"os": "windows", "arch": "amd64"}},
                    "uri": "https://example.org/a.zip",
                    "sha256": "a".repeat(64),
                    "bin": "kubectl-sveltos_events.exe",
                    "files": [{"from": "kubectl-sveltos_events.exe", "to": "."}]
                }
            ]
        }
    });
    assert!(validate(&good, "sveltos-events").is_empty());
    assert_eq!(validate(&good, "other"), ["name equals the file name"]);
    let broken = |pointer: &str, value: Value, rule: &str| {
        let mut manifest = good.clone();
        *manifest.pointer_mut(pointer).unwrap() = value;
        assert_eq!(validate(&manifest, "sveltos-events"), [rule], "{pointer}");
    };
    broken("/apiVersion", "krew/v1".into(), "apiVersion");
    broken("/kind", "Plugins".into(), "kind");
    broken(
        "/spec/version",
        "0.1".into(),
        "version is vMAJOR.MINOR.PATCH",
    );
    broken(
        "/spec/platforms/0/uri",
        "http://example.org/a.tar.gz".into(),
        "https uri",
    );
    broken(
        "/spec/platforms/0/sha256",
        "A".repeat(64).into(),
        "sha256 of 64 lowercase hex characters",
    );
    broken(
        "/spec/platforms/0/sha256",
        "a".repeat(63).into(),
        "sha256 of 64 lowercase hex characters",
    );
    broken(
        "/spec/platforms/1/selector/matchLabels/os",
        "linux".into(),
        "no duplicate selectors",
    );
    broken(
        "/spec/platforms/0/selector",
        serde_json::json!({}),
        "a selector",
    );
    broken(
        "/spec/platforms/1/files/0/from",
        "LICENSE".into(),
        "files copy bin",
    );
    let mut manifest = good.clone();
    manifest["spec"]["platforms"][1]["bin"] = "kubectl-sveltos_events".into();
    manifest["spec"]["platforms"][1]["files"][0]["from"] = "kubectl-sveltos_events".into();
    assert_eq!(
        validate(&manifest, "sveltos-events"),
        ["windows bin ends in .exe"]
    );
}
