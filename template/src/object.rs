//! Go values with methods: what a function returns that is not plain data (sprig's `semver`
//! returns a `*semver.Version`). A template calls their methods (`$v.Major`,
//! `(semver "1.3.3").Compare $v`), `fmt` prints them through their `String` method, and the
//! JSON and YAML encoders write what their `MarshalJSON` gives.

use std::any::Any;
use std::fmt;

use crate::funcs::Function;

/// A Go value with methods, held in [`Value::Object`](crate::Value::Object).
pub trait Object: fmt::Debug + Send + Sync + Any {
    /// Go's type name (`*semver.Version`), as `typeOf`, `%T` and error messages show it.
    fn type_name(&self) -> &'static str;

    /// reflect's kind name (`ptr`, `struct`), as `kindOf` shows it.
    fn kind_name(&self) -> &'static str;

    /// What `fmt` prints for the value (its `String` method).
    fn text(&self) -> String;

    /// What encoding/json writes for the value (its `MarshalJSON`).
    fn json(&self) -> serde_json::Value;

    /// The method `name` bound to this value, with its Go signature; `None` if there is none.
    fn method(&self, name: &str) -> Option<Function>;

    /// Whether the type has an unexported field `name` (Go's error then names it).
    fn has_unexported_field(&self, name: &str) -> bool;

    /// `reflect.DeepEqual` with another object (pointers compare their targets).
    fn deep_equal(&self, other: &dyn Object) -> bool;

    /// The value as `Any`, for `deep_equal` to downcast the other side.
    fn as_any(&self) -> &dyn Any;
}

impl PartialEq for dyn Object {
    fn eq(&self, other: &Self) -> bool {
        self.deep_equal(other)
    }
}
