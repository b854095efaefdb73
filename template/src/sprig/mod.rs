//! Sprig's text function map (Masterminds/sprig v3 `TxtFuncMap`), as Sveltos registers it.

pub mod case;
pub mod conv;
pub mod dates;
pub mod defaults;
pub mod dicts;
pub mod encoding;
pub mod gotime;
pub mod json;
pub mod lists;
pub mod math;
pub mod paths;
pub mod random;
pub mod regex;
pub mod semver;
pub mod strings;
pub mod version;

use std::sync::OnceLock;

use crate::funcs::FuncMap;

/// Sprig's functions by their Sprig names.
pub fn sprig_funcs() -> FuncMap {
    static SPRIG: OnceLock<FuncMap> = OnceLock::new();
    SPRIG
        .get_or_init(|| {
            let mut map = FuncMap::new();
            strings::register(&mut map);
            case::register(&mut map);
            lists::register(&mut map);
            dicts::register(&mut map);
            math::register(&mut map);
            defaults::register(&mut map);
            json::register(&mut map);
            paths::register(&mut map);
            encoding::register(&mut map);
            regex::register(&mut map);
            semver::register(&mut map);
            dates::register(&mut map);
            random::register(&mut map);
            // toToml is libsveltos', not sprig's.
            map.remove("toToml");
            map
        })
        .clone()
}
