//! The flags that name the management cluster, as kubectl spells them, and the client they
//! make.

use anyhow::Context;

/// `--kubeconfig` and `--context`, as kubectl takes them (`$KUBECONFIG` and `~/.kube/config`
/// otherwise, or the in-cluster account inside a pod).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file of the management cluster.
    #[arg(long)]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long)]
    pub context: Option<String>,
}

impl ClusterArgs {
    /// The client configuration these flags name.
    pub async fn config(&self) -> anyhow::Result<kube::Config> {
        Ok(
            clusters::registry::load_config(self.kubeconfig.as_deref(), self.context.as_deref())
                .await?,
        )
    }

    /// A client of the management cluster, checked by asking its version: returns the client,
    /// the server's URL and its version (`v1.20.2`).
    pub async fn connect(&self) -> anyhow::Result<(kube::Client, String, String)> {
        let config = self.config().await?;
        let url = config.cluster_url.to_string();
        let client = clusters::client::client(config)
            .with_context(|| format!("building a client for {url}"))?;
        let version = client
            .apiserver_version()
            .await
            .with_context(|| format!("cannot reach the Kubernetes API server at {url}"))?;
        Ok((client, url, version.git_version))
    }
}
