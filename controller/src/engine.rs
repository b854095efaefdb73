//! The template engine behind [`Render`]: Go text/template with Sprig and Sveltos' event
//! functions, `missingkey=error`, parsed templates cached by content.

use std::sync::Arc;

use serde_json::Value;
use template::sprig::sprig_funcs;
use template::sveltos::{Resources, sveltos_addon_funcs, sveltos_event_funcs};
use template::{FuncMap, MissingKey, Options, Template, TemplateCache};

use crate::render::Render;

/// How many distinct templates stay parsed.
const CACHE_CAPACITY: usize = 4096;

/// Renders event templates as Sveltos' event-manager does.
#[derive(Debug)]
pub struct GoTemplates {
    cache: TemplateCache,
    options: Options,
}

impl GoTemplates {
    /// The engine with Sveltos' event-manager function set.
    pub fn new() -> Self {
        let mut funcs = FuncMap::new();
        funcs.extend(&sprig_funcs());
        funcs.extend(&sveltos_event_funcs());
        GoTemplates {
            cache: TemplateCache::new(Arc::new(funcs), CACHE_CAPACITY),
            options: Options {
                missing_key: MissingKey::Error,
                ..Options::default()
            },
        }
    }
}

impl Default for GoTemplates {
    fn default() -> Self {
        GoTemplates::new()
    }
}

impl Render for GoTemplates {
    fn render(&self, name: &str, text: &str, data: &Value) -> Result<String, String> {
        let template = self
            .cache
            .get_or_parse(name, text, &self.options)
            .map_err(|e| e.to_string())?;
        template
            .execute(&template::Value::from(data))
            .map_err(|e| e.to_string())
    }
}

/// Renders an add-on template (`projectsveltos.io/template`) as Sveltos' addon-controller
/// does: Sprig and Sveltos functions, with `getResource` and friends reading `resources`
/// (templateResourceRefs by identifier), `missingkey=error`.
pub fn render_addon(
    name: &str,
    text: &str,
    data: &Value,
    resources: &Resources,
) -> Result<String, String> {
    let mut funcs = FuncMap::new();
    funcs.extend(&sprig_funcs());
    funcs.extend(&sveltos_event_funcs());
    funcs.extend(&sveltos_addon_funcs(Arc::clone(resources)));
    let options = Options {
        missing_key: MissingKey::Error,
        ..Options::default()
    };
    let template =
        Template::parse(name, text, Arc::new(funcs), options).map_err(|e| e.to_string())?;
    template
        .execute(&template::Value::from(data))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_with_go_semantics_and_missingkey_error() {
        let engine = GoTemplates::new();
        let data = json!({"Resource": {"metadata": {"name": "web"}, "spec": {"port": 443}}});
        assert_eq!(
            engine.render("t", "front-{{ .Resource.metadata.name }}", &data),
            Ok("front-web".to_string())
        );
        assert_eq!(
            engine.render(
                "t",
                "{{ if eq .Resource.spec.port 443 }}tls{{ end }}",
                &data
            ),
            Ok("tls".to_string())
        );
        // Go's column is the 0-based offset of the chain's second field (`.spec`).
        let error = engine.render("ns-c1-t", "{{ .Resource.spec.nope }}", &data);
        assert_eq!(
            error,
            Err(r#"template: ns-c1-t:1:12: executing "ns-c1-t" at <.Resource.spec.nope>: map has no entry for key "nope""#.to_string())
        );
    }
}
