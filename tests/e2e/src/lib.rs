//! Helpers of the end-to-end tests: the sandbox binary with its controllers, kubectl against
//! its clusters, the plugin and the controllers as processes, and waiting for a condition.
//! Shared by the suites here and the plugin's own end-to-end tests.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failure is a test failure

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a helper waits for a condition before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A binary of the workspace as cargo built it for this test run (next to the test
/// executable's `deps` folder), e.g. `kubectl-sveltos_events` or `sveltos-events-manager`.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join(name);
    assert!(
        path.exists(),
        "{} is not built: the workspace's test run (`cargo nextest run --workspace`) builds it",
        path.display()
    );
    path
}

/// The plugin binary.
pub fn plugin_binary() -> PathBuf {
    binary("kubectl-sveltos_events")
}

/// The sandbox process; killed when dropped.
pub struct Sandbox {
    child: Child,
    /// Where the kubeconfigs are.
    pub dir: PathBuf,
}

impl Sandbox {
    /// The sandbox process's id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            // The logs and kubeconfigs of a failed test are what tells why.
            eprintln!("the sandbox's folder is kept: {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The sandbox with `clusters` managed clusters, the agent and the manager, all registered.
pub fn start(clusters: usize) -> Sandbox {
    start_with(clusters, &[])
}

/// The API servers alone: no CRDs, no registered clusters, no controllers.
pub fn start_bare(clusters: usize) -> Sandbox {
    start_with(clusters, &["--no-controllers"])
}

fn start_with(clusters: usize, flags: &[&str]) -> Sandbox {
    // One folder per sandbox: tests run as threads of one process share its id.
    static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let nth = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "sbx-e2e-{}-{nth}-{clusters}{}",
        std::process::id(),
        flags.concat()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let child = Command::new(plugin_binary())
        .args(["sandbox", "--dir"])
        .arg(&dir)
        .args(["--clusters", &clusters.to_string(), "--ephemeral"])
        .args(flags)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sandbox = Sandbox { child, dir };
    let start = Instant::now();
    while !sandbox.dir.join("READY").exists() {
        assert!(start.elapsed() < TIMEOUT, "READY never appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    sandbox
}

/// `kubectl` against the sandbox's `cluster`, which must succeed; its standard output.
pub fn kubectl(dir: &Path, cluster: &str, args: &[&str]) -> String {
    try_kubectl(dir, cluster, args)
        .unwrap_or_else(|stderr| panic!("kubectl {args:?} failed: {stderr}"))
}

/// `kubectl` against the sandbox's `cluster`: its standard output, or its standard error when
/// it failed.
pub fn try_kubectl(dir: &Path, cluster: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(dir.join(format!("{cluster}.kubeconfig")))
        .args(args)
        .output()
        .expect("kubectl is installed");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// A kubeconfig of the sandbox's `cluster` signed in as ServiceAccount `namespace/account`,
/// with a token from the TokenRequest API (`kubectl create token`), written beside the
/// cluster's own as `<cluster>-<account>.kubeconfig`; its path.
pub fn account_kubeconfig(dir: &Path, cluster: &str, namespace: &str, account: &str) -> PathBuf {
    let token = kubectl(
        dir,
        cluster,
        &[
            "-n",
            namespace,
            "create",
            "token",
            account,
            "--duration=24h",
        ],
    );
    let admin = std::fs::read_to_string(dir.join(format!("{cluster}.kubeconfig"))).unwrap();
    let own = admin.replace("token: sandbox\n", &format!("token: {}\n", token.trim()));
    assert_ne!(
        own, admin,
        "the sandbox's kubeconfig holds no `token: sandbox`"
    );
    let path = dir.join(format!("{cluster}-{account}.kubeconfig"));
    std::fs::write(&path, own).unwrap();
    path
}

/// The items of a `kubectl get ... -o json` in `cluster`.
pub fn items(dir: &Path, cluster: &str, args: &[&str]) -> Vec<Value> {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let list: Value = serde_json::from_str(&kubectl(dir, cluster, &all)).unwrap();
    list["items"].as_array().cloned().unwrap_or_default()
}

/// `f`'s first answer, asked every 100 ms until [`TIMEOUT`].
pub fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = f() {
            return value;
        }
        assert!(start.elapsed() < TIMEOUT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The path of a file (or, with `""`, the folder) of an example scenario.
pub fn example(scenario: &str, path: &str) -> String {
    repo_root()
        .join("examples")
        .join(scenario)
        .join(path)
        .display()
        .to_string()
}

/// `kubectl apply -f` of a file (or, with `""`, the top folder) of an example, in `cluster`.
pub fn apply_example(dir: &Path, cluster: &str, scenario: &str, path: &str) {
    kubectl(dir, cluster, &["apply", "-f", &example(scenario, path)]);
}

/// The cross-cluster example's load balancer in `cluster` gets its address (its status, as a
/// cloud controller would write it): only then is it an event.
pub fn give_load_balancer_an_address(dir: &Path, cluster: &str) {
    kubectl(
        dir,
        cluster,
        &[
            "patch",
            "service",
            "my-lb-service",
            "-n",
            "test",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"loadBalancer":{"ingress":[{"ip":"34.172.32.172"}]}}}"#,
        ],
    );
}

/// The ClusterProfiles EventTrigger `trigger` generated.
pub fn profiles_of(dir: &Path, trigger: &str) -> Vec<Value> {
    let selector = format!("eventtrigger.lib.projectsveltos.io/eventtriggername={trigger}");
    items(dir, "mgmt", &["get", "clusterprofiles", "-l", &selector])
}

/// What a run of the plugin printed, and its exit code.
pub struct Run {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Asserts the run succeeded (exit 0, else both outputs are shown); returns `self`.
    pub fn ok(self) -> Self {
        assert_eq!(self.code, 0, "{}{}", self.stdout, self.stderr);
        self
    }

    /// Asserts the command could not run (exit 2) and said `sentence` on stderr; returns
    /// `self`.
    pub fn fails_saying(self, sentence: &str) -> Self {
        assert_eq!(self.code, 2, "{}{}", self.stdout, self.stderr);
        assert!(self.stderr.contains(sentence), "{}", self.stderr);
        self
    }
}

/// Runs the plugin with `args`, `$KUBECONFIG` pointing at the sandbox's `mgmt` cluster.
pub fn plugin(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(plugin_binary())
        .args(args)
        .env("KUBECONFIG", dir.join("mgmt.kubeconfig"))
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `install` of the controllers (image `sveltos-events:test`, 30 s to wait) with `extra`,
/// which must succeed.
pub fn install(dir: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "install",
        "--image",
        "sveltos-events:test",
        "--timeout",
        "30s",
    ];
    args.extend(extra);
    plugin(dir, &args).ok()
}

/// A copy of `cluster`'s kubeconfig pointing at a port nobody listens on.
pub fn dead_kubeconfig(dir: &Path, cluster: &str) -> PathBuf {
    let kubeconfig = std::fs::read_to_string(dir.join(format!("{cluster}.kubeconfig"))).unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let start = kubeconfig.find("https://127.0.0.1:").unwrap();
    let end = start + kubeconfig[start..].find('\n').unwrap();
    let dead = format!(
        "{}https://127.0.0.1:{port}{}",
        &kubeconfig[..start],
        &kubeconfig[end..]
    );
    let path = dir.join(format!("{cluster}-dead.kubeconfig"));
    std::fs::write(&path, dead).unwrap();
    path
}

/// `deregister cluster default/cluster-1`, removing what register made there too.
pub fn deregister_cluster_1(dir: &Path) -> Run {
    let managed = dir.join("cluster-1.kubeconfig");
    plugin(
        dir,
        &[
            "deregister",
            "cluster",
            "-n",
            "default",
            "--name",
            "cluster-1",
            "--cluster-kubeconfig",
            managed.to_str().unwrap(),
        ],
    )
}

/// `register cluster default/cluster-1` with the sandbox's kubeconfig of cluster-1 and `extra`.
pub fn register_cluster_1(dir: &Path, extra: &[&str]) -> Run {
    register_cluster_1_as(dir, "cluster-1", extra)
}

/// `register cluster default/cluster-1` with the kubeconfig of the sandbox's `cluster`.
pub fn register_cluster_1_as(dir: &Path, cluster: &str, extra: &[&str]) -> Run {
    register_cluster_as(dir, "cluster-1", cluster, extra)
}

/// `register cluster default/<name>` with the kubeconfig of the sandbox's `cluster` and
/// `extra`.
pub fn register_cluster_as(dir: &Path, name: &str, cluster: &str, extra: &[&str]) -> Run {
    let managed = dir.join(format!("{cluster}.kubeconfig"));
    let mut args = vec!["register", "cluster", "-n", "default", "--name", name];
    args.extend(["--cluster-kubeconfig", managed.to_str().unwrap()]);
    args.extend(extra);
    plugin(dir, &args)
}

/// The SveltosCluster default/cluster-1 in the management cluster.
pub fn sveltos_cluster_1(dir: &Path) -> Value {
    let json = kubectl(
        dir,
        "mgmt",
        &[
            "-n",
            "default",
            "get",
            "sveltoscluster",
            "cluster-1",
            "-o",
            "json",
        ],
    );
    serde_json::from_str(&json).unwrap()
}

/// A controller process; killed when dropped (as the kubelet stops a deleted Deployment's pod).
pub struct Process(Child);

impl Process {
    /// The process id.
    pub fn id(&self) -> u32 {
        self.0.id()
    }

    /// How the process ended, if it has.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.0.try_wait().unwrap()
    }

    /// Kills the process with SIGKILL (`kill -9`: no shutdown, no Lease released) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The log filter of the controllers these tests start: `E2E_RUST_LOG` when set (e.g.
/// `sveltos_events_controller::deployer=debug` to see each deployer pass), else `info`.
fn log_filter() -> String {
    std::env::var("E2E_RUST_LOG").unwrap_or_else(|_| "info".into())
}

/// Starts the binary of Deployment `projectsveltos/name` in `cluster` as its pod would run:
/// its command, its args (each listening address moved to a free loopback port), its env (the
/// namespace from the downward API), as its ServiceAccount; logs in `<cluster>-<name>.log`.
pub fn start_controller(dir: &Path, cluster: &str, name: &str) -> Process {
    start_replica(dir, cluster, name, name, &[])
}

/// [`start_controller`] as the pod named `pod` (its `$HOSTNAME`, so its identity in a leader
/// Lease), with `extra` args after the Deployment's; logs in `<cluster>-<pod>.log`.
pub fn start_replica(dir: &Path, cluster: &str, name: &str, pod: &str, extra: &[&str]) -> Process {
    let deployment: Value = serde_json::from_str(&kubectl(
        dir,
        cluster,
        &[
            "-n",
            "projectsveltos",
            "get",
            "deployment",
            name,
            "-o",
            "json",
        ],
    ))
    .unwrap();
    let spec = &deployment["spec"]["template"]["spec"];
    let container = &spec["containers"][0];
    let command = container["command"][0].as_str().unwrap();
    let mut process = Command::new(binary(command.trim_start_matches('/')));
    for arg in container["args"].as_array().unwrap() {
        let arg = arg.as_str().unwrap();
        process.arg(match arg.split_once("=0.0.0.0:") {
            Some((flag, _)) => format!("{flag}=127.0.0.1:0"),
            None => arg.to_owned(),
        });
    }
    process.args(extra);
    for var in container["env"].as_array().into_iter().flatten() {
        let value = match var["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            Some("metadata.namespace") => "projectsveltos".to_owned(),
            Some(other) => panic!("env {var} needs field {other}"),
            None => var["value"].as_str().unwrap().to_owned(),
        };
        process.env(var["name"].as_str().unwrap(), value);
    }
    let account = spec["serviceAccountName"].as_str().unwrap();
    let log = std::fs::File::create(dir.join(format!("{cluster}-{pod}.log"))).unwrap();
    let child = process
        .env(
            "KUBECONFIG",
            account_kubeconfig(dir, cluster, "projectsveltos", account),
        )
        .env("HOSTNAME", pod)
        .env("RUST_LOG", log_filter())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    Process(child)
}
