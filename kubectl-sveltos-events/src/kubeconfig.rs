//! Kubeconfigs a controller in another pod can use: one context of a user's file made
//! self-contained (files read into the document), or the same cluster with a ServiceAccount
//! token instead of the user's credentials.

use std::path::Path;

use anyhow::{Context, anyhow, bail};
use base64::Engine;
use kube::config::{
    AuthInfo, Cluster, KubeConfigOptions, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};

/// One context of a kubeconfig: its name, cluster and user.
#[derive(Debug, Clone)]
pub struct Picked {
    /// The context's name.
    pub context: String,
    /// The cluster it names.
    pub cluster: Cluster,
    /// The user it names.
    pub user: AuthInfo,
}

/// Reads `path` and picks `context` (default: the file's current context).
pub fn read(path: &Path, context: Option<&str>) -> anyhow::Result<Picked> {
    let file = Kubeconfig::read_from(path)
        .with_context(|| format!("reading the kubeconfig {}", path.display()))?;
    pick(&file, context).with_context(|| format!("in the kubeconfig {}", path.display()))
}

/// The context `context` (default: the current one) of `file`, with its cluster and user.
pub fn pick(file: &Kubeconfig, context: Option<&str>) -> anyhow::Result<Picked> {
    let name = match context.or(file.current_context.as_deref()) {
        Some(name) if !name.is_empty() => name,
        _ => bail!("there is no current context; name one with --cluster-context"),
    };
    let named = file
        .contexts
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| {
            let known: Vec<&str> = file.contexts.iter().map(|c| c.name.as_str()).collect();
            anyhow!(
                "there is no context {name:?} (contexts: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )
        })?;
    let ctx = named
        .context
        .as_ref()
        .ok_or_else(|| anyhow!("context {name:?} is empty"))?;
    let cluster = file
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.clone())
        .ok_or_else(|| {
            anyhow!(
                "context {name:?} names cluster {:?}, which is not there",
                ctx.cluster
            )
        })?;
    let user_name = ctx.user.clone().unwrap_or_default();
    let user = file
        .auth_infos
        .iter()
        .find(|u| u.name == user_name)
        .and_then(|u| u.auth_info.clone())
        .unwrap_or_default();
    Ok(Picked {
        context: name.to_owned(),
        cluster,
        user,
    })
}

fn read_b64(path: &str, what: &str) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading the {what} file {path}"))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// `cluster` with its certificate authority file read into it.
fn self_contained_cluster(mut cluster: Cluster) -> anyhow::Result<Cluster> {
    if let Some(path) = cluster.certificate_authority.take() {
        cluster.certificate_authority_data = Some(read_b64(&path, "certificate authority")?);
    }
    Ok(cluster)
}

impl Picked {
    /// The same context with every file it names read into the document, so it works where
    /// those files are not (a controller's pod). A user signing in through an exec plugin or
    /// an auth provider cannot be carried there: that is an error saying what to do instead.
    pub fn self_contained(mut self) -> anyhow::Result<Self> {
        self.cluster = self_contained_cluster(self.cluster)?;
        let user = &mut self.user;
        if let Some(exec) = &user.exec {
            bail!(
                "context {:?} signs in by running {:?}, which the controllers cannot run in \
                 their pod: register with --service-account",
                self.context,
                exec.command.as_deref().unwrap_or("a command")
            );
        }
        if let Some(provider) = &user.auth_provider {
            bail!(
                "context {:?} signs in through the {:?} auth provider, which the controllers \
                 cannot use: register with --service-account",
                self.context,
                provider.name
            );
        }
        if let Some(path) = user.client_certificate.take() {
            user.client_certificate_data = Some(read_b64(&path, "client certificate")?);
        }
        if let Some(path) = user.client_key.take() {
            user.client_key_data = Some(read_b64(&path, "client key")?.into());
        }
        if let Some(path) = user.token_file.take() {
            let token = std::fs::read_to_string(&path)
                .with_context(|| format!("reading the token file {path}"))?;
            user.token = Some(token.trim().to_owned().into());
        }
        Ok(self)
    }

    /// The same cluster, signed in as `token` (a ServiceAccount's). When the context names no
    /// certificate authority (it trusts the system's, or skips verification), `ca_pem`, the
    /// cluster's own CA that came with the token, is trusted instead: the controllers' image
    /// holds only public roots, and a registration should verify its server.
    pub fn with_token(&self, token: &str, ca_pem: Option<&[u8]>) -> anyhow::Result<Picked> {
        let mut cluster = self_contained_cluster(self.cluster.clone())?;
        if cluster.certificate_authority_data.is_none()
            && let Some(pem) = ca_pem.filter(|p| !p.is_empty())
        {
            cluster.certificate_authority_data =
                Some(base64::engine::general_purpose::STANDARD.encode(pem));
            cluster.insecure_skip_tls_verify = None;
        }
        Ok(Picked {
            context: self.context.clone(),
            cluster,
            user: AuthInfo {
                token: Some(token.to_owned().into()),
                ..AuthInfo::default()
            },
        })
    }

    /// The API server's URL.
    pub fn server(&self) -> &str {
        self.cluster.server.as_deref().unwrap_or_default()
    }

    /// A kubeconfig of this context alone, named `name`, its current context.
    pub fn document(&self, name: &str) -> Kubeconfig {
        Kubeconfig {
            api_version: Some("v1".to_owned()),
            kind: Some("Config".to_owned()),
            clusters: vec![NamedCluster {
                name: name.to_owned(),
                cluster: Some(self.cluster.clone()),
                other: Default::default(),
            }],
            auth_infos: vec![NamedAuthInfo {
                name: name.to_owned(),
                auth_info: Some(self.user.clone()),
                other: Default::default(),
            }],
            contexts: vec![NamedContext {
                name: name.to_owned(),
                context: Some(kube::config::Context {
                    cluster: name.to_owned(),
                    user: Some(name.to_owned()),
                    ..Default::default()
                }),
                other: Default::default(),
            }],
            current_context: Some(name.to_owned()),
            ..Kubeconfig::default()
        }
    }

    /// A client of this context.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        let config =
            kube::Config::from_custom_kubeconfig(self.document("c"), &KubeConfigOptions::default())
                .await
                .with_context(|| format!("reading context {:?}", self.context))?;
        clusters::client::client(config)
            .with_context(|| format!("building a client for {}", self.server()))
    }
}

/// The kubeconfig as YAML.
pub fn to_yaml(document: &Kubeconfig) -> anyhow::Result<String> {
    serde_saphyr::to_string(document).context("writing the kubeconfig")
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "
apiVersion: v1
kind: Config
current-context: a
clusters:
- name: one
  cluster: {server: 'https://one:6443', certificate-authority: ca.pem}
contexts:
- name: a
  context: {cluster: one, user: alice}
- name: e
  context: {cluster: one, user: exec}
- name: broken
  context: {cluster: nowhere, user: alice}
users:
- name: alice
  user: {client-certificate: cert.pem, client-key: key.pem}
- name: exec
  user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}}
";

    fn file(dir: &Path) -> std::path::PathBuf {
        std::fs::write(dir.join("ca.pem"), "CA").unwrap();
        std::fs::write(dir.join("cert.pem"), "CERT").unwrap();
        std::fs::write(dir.join("key.pem"), "KEY").unwrap();
        let path = dir.join("config");
        std::fs::write(&path, FILE).unwrap();
        path
    }

    fn temp(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("kc-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_context_is_made_self_contained_and_round_trips() {
        let dir = temp("inline");
        let picked = read(&file(&dir), None).unwrap().self_contained().unwrap();
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        assert_eq!(picked.context, "a");
        assert_eq!(picked.cluster.certificate_authority_data, Some(b64("CA")));
        assert_eq!(picked.cluster.certificate_authority, None);
        assert_eq!(picked.user.client_certificate_data, Some(b64("CERT")));
        let yaml = to_yaml(&picked.document("cluster-1")).unwrap();
        assert!(!yaml.contains("pem"), "{yaml}");
        let back = pick(&Kubeconfig::from_yaml(&yaml).unwrap(), None).unwrap();
        assert_eq!(back.server(), "https://one:6443");
        assert_eq!(back.user.client_certificate_data, Some(b64("CERT")));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn what_cannot_be_carried_is_refused_in_words() {
        let dir = temp("refuse");
        let path = file(&dir);
        let exec = read(&path, Some("e"))
            .unwrap()
            .self_contained()
            .unwrap_err();
        assert!(
            format!("{exec:#}").contains("--service-account"),
            "{exec:#}"
        );
        let missing = read(&path, Some("nope")).unwrap_err();
        assert!(
            format!("{missing:#}").contains("contexts: a, e, broken"),
            "{missing:#}"
        );
        let broken = read(&path, Some("broken")).unwrap_err();
        assert!(format!("{broken:#}").contains("nowhere"), "{broken:#}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_token_kubeconfig_keeps_the_cluster_and_only_the_token() {
        let dir = temp("token");
        let picked = read(&file(&dir), None).unwrap();
        // The CA file is read even when the user's own credentials could not be carried.
        let token = picked.with_token("t0k", Some(b"OTHER CA")).unwrap();
        let picked = picked.self_contained().unwrap();
        assert_eq!(
            token.cluster.certificate_authority_data,
            picked.cluster.certificate_authority_data
        );
        assert!(token.user.client_certificate_data.is_none());
        // A context that skips verification registers one that verifies, with the CA
        // that came with the token.
        let mut bare = picked.clone();
        bare.cluster.certificate_authority_data = None;
        bare.cluster.insecure_skip_tls_verify = Some(true);
        let filled = bare.with_token("t0k", Some(b"OTHER CA")).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode("OTHER CA");
        assert_eq!(filled.cluster.certificate_authority_data, Some(b64));
        assert_eq!(filled.cluster.insecure_skip_tls_verify, None);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
