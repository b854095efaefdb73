//! Sprig's text function map (Masterminds/sprig v3 `TxtFuncMap`), as Sveltos registers it.

use crate::funcs::FuncMap;

/// Sprig's functions by their Sprig names.
pub fn sprig_funcs() -> FuncMap {
    FuncMap::new()
}
