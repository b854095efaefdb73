//! Runs ../shared/tools/go-baseline for the benches that print Go's figure beside their own
//! (`render` here, `lua_eval` in the agent, which includes this file).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// go-baseline's wall-clock ns per operation of the benchmarks whose names start with one of
/// `prefixes` (comma-separated, as its `-bench` flag takes them), measured now, by name.
pub fn go_figures(go: &Path, prefixes: &str) -> Result<BTreeMap<String, f64>, String> {
    let output = Command::new(go)
        .args(["-bench", prefixes, "-min-time", "2s"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", go.display()))?;
    if !output.status.success() {
        return Err(format!("{} failed: {}", go.display(), output.status));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(text
        .lines()
        .filter_map(|line| line.split_once('='))
        .filter_map(|(key, value)| {
            let name = key.strip_suffix("_ns_per_op")?;
            Some((name.to_owned(), value.parse().ok()?))
        })
        .collect())
}
