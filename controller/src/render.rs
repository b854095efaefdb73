//! The seam between the manager's decisions and the template engine: everything the manager
//! renders goes through [`Render`], so decisions are testable with any engine.

use serde_json::Value;

/// Renders Go text/template text with Sveltos' function set and `missingkey=error`.
pub trait Render {
    /// Renders `text`, naming the template `name` in errors (upstream uses
    /// `<clusterNamespace>-<clusterName>-<trigger>`).
    fn render(&self, name: &str, text: &str, data: &Value) -> Result<String, String>;
}

/// Name templates get in error messages: `<clusterNamespace>-<clusterName>-<trigger>`.
pub fn template_name(cluster_namespace: &str, cluster_name: &str, trigger: &str) -> String {
    format!("{cluster_namespace}-{cluster_name}-{trigger}")
}

/// Renders `text` unless it has no action delimiters (most names are plain strings).
pub fn render_field(
    render: &dyn Render,
    name: &str,
    text: &str,
    data: &Value,
) -> Result<String, String> {
    if text.contains("{{") {
        render.render(name, text, data)
    } else {
        Ok(text.to_string())
    }
}
