//! Completion as users meet it: real bash with kubectl's own completion script completing
//! `kubectl sveltos-events <TAB>` through `kubectl_complete-sveltos_events` (kubectl 1.26+),
//! with subcommands, flags, a flag's fixed values and names read from the cluster.
#![allow(clippy::unwrap_used)] // test code

use e2e as common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory with the plugin and its completion executable, as krew's bin directory holds
/// them.
fn bin_dir(work: &Path) -> PathBuf {
    let bin = work.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let plugin = bin.join("kubectl-sveltos_events");
    let _ = std::fs::remove_file(&plugin);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kubectl-sveltos_events"), &plugin).unwrap();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../krew/kubectl_complete-sveltos_events");
    let completer = bin.join("kubectl_complete-sveltos_events");
    let _ = std::fs::remove_file(&completer);
    std::os::unix::fs::symlink(script, &completer).unwrap();
    bin
}

/// The bash-completion package's entry point.
const BASH_COMPLETION: &str = "/usr/share/bash-completion/bash_completion";

/// What bash offers for `line` (completing its last word) after sourcing bash-completion and
/// kubectl's completion, as kubectl's documentation sets bash up, with `$KUBECONFIG` set to
/// `kubeconfig`.
fn bash_complete(bin: &Path, kubeconfig: &Path, line: &str) -> Vec<String> {
    assert!(
        Path::new(BASH_COMPLETION).exists(),
        "{BASH_COMPLETION} is missing: install Debian's bash-completion (.ci/run does)"
    );
    let kubectl = Command::new("sh")
        .args(["-c", "command -v kubectl"])
        .output()
        .unwrap();
    let kubectl = String::from_utf8(kubectl.stdout).unwrap();
    let kubectl_dir = Path::new(kubectl.trim()).parent().unwrap().to_owned();
    let script = format!(
        "source /usr/share/bash-completion/bash_completion\n\
         source <(kubectl completion bash)\n\
         COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}\n\
         read -ra COMP_WORDS <<< \"$COMP_LINE\"\n\
         [[ \"$COMP_LINE\" == *' ' ]] && COMP_WORDS+=('')\n\
         COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))\n\
         __start_kubectl\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .env(
            "PATH",
            format!("{}:{}:/usr/bin:/bin", bin.display(), kubectl_dir.display()),
        )
        .env("KUBECONFIG", kubeconfig)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn bash_completes_kubectl_sveltos_events_with_commands_flags_and_cluster_names() {
    let sandbox = common::start(1);
    let dir = &sandbox.dir;
    let bin = bin_dir(dir);
    let kubeconfig = dir.join("mgmt.kubeconfig");
    let offered = |line: &str| bash_complete(&bin, &kubeconfig, line);

    assert_eq!(offered("kubectl sveltos-events ins"), ["install"]);
    let commands = offered("kubectl sveltos-events ");
    for command in [
        "install",
        "check",
        "explain",
        "trace",
        "tui",
        "register",
        "completion",
    ] {
        assert!(commands.contains(&command.to_owned()), "{commands:?}");
    }
    assert_eq!(offered("kubectl sveltos-events register cl"), ["cluster"]);
    assert_eq!(
        offered("kubectl sveltos-events register cluster --agent-mode "),
        ["hub", "spoke"]
    );
    assert!(offered("kubectl sveltos-events uninstall --c").contains(&"--crds".to_owned()));
    assert_eq!(offered("kubectl sveltos-events tui --context mg"), ["mgmt"]);
    // Names from the cluster the command line names.
    assert_eq!(
        offered("kubectl sveltos-events explain networkpolicy/x --cluster default/clu"),
        ["default/cluster-1"]
    );
    let namespaces = offered("kubectl sveltos-events trace service/x -n kube-");
    assert!(
        namespaces.contains(&"kube-system".to_owned()),
        "{namespaces:?}"
    );
    assert_eq!(
        offered("kubectl sveltos-events deregister cluster --name "),
        ["cluster-1"]
    );
    // register wants a new name: nothing to offer, not the registered ones.
    assert!(offered("kubectl sveltos-events register cluster --name ").is_empty());

    // KIND/NAME: the kind first, then the names of its objects where the line says.
    for file in ["eventsource.yaml", "configmap.yaml", "eventtrigger.yaml"] {
        common::apply_example(dir, "mgmt", "network-policy", file);
    }
    common::apply_example(dir, "cluster-1", "network-policy", "managed/service.yaml");
    let profile = common::eventually("a generated ClusterProfile", || {
        common::profiles_of(dir, "service-network-policy")
            .first()
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
    });
    assert_eq!(
        offered("kubectl sveltos-events explain event"),
        ["eventreport/", "eventsource/", "eventtrigger/"]
    );
    assert_eq!(
        offered("kubectl sveltos-events trace eventtrigger/"),
        ["eventtrigger/service-network-policy"]
    );
    assert_eq!(
        offered("kubectl sveltos-events show usage con"),
        ["configmap/"]
    );
    assert_eq!(
        offered("kubectl sveltos-events show usage -n default configmap/net"),
        ["configmap/network-policy"]
    );
    assert_eq!(
        offered("kubectl sveltos-events show addons --profile "),
        std::slice::from_ref(&profile)
    );
    // In a managed cluster, reached through its registration.
    let kinds = offered("kubectl sveltos-events trace --cluster default/cluster-1 netw");
    assert!(kinds.contains(&"networkpolicy/".to_owned()), "{kinds:?}");
    assert_eq!(
        offered("kubectl sveltos-events trace --cluster default/cluster-1 -n default service/my"),
        ["service/my-service"]
    );
    assert_eq!(
        offered("kubectl sveltos-events trace --cluster default/cluster-1 -n=default service/my"),
        ["service/my-service"]
    );
    // The kubeconfig the command line names, not $KUBECONFIG.
    let nowhere = dir.join("no-such-kubeconfig");
    let line = format!(
        "kubectl sveltos-events explain --kubeconfig {} clusterprofile/",
        kubeconfig.display()
    );
    assert_eq!(
        bash_complete(&bin, &nowhere, &line),
        [format!("clusterprofile/{profile}")]
    );
    assert!(
        bash_complete(
            &bin,
            &nowhere,
            "kubectl sveltos-events explain clusterprofile/"
        )
        .is_empty()
    );
}

#[test]
fn completion_scripts_for_the_binary_itself() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = Command::new(env!("CARGO_BIN_EXE_kubectl-sveltos_events"))
            .args(["completion", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(
            script.contains("kubectl-sveltos_events"),
            "{shell}: {script}"
        );
    }
}
