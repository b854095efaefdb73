//! Masterminds/semver v3's `Version` (v3.3.0, sprig 3.3.0's pin): parsing as `NewVersion`
//! does, precedence as `Compare` does, and the `*semver.Version` value sprig's `semver`
//! returns, whose methods a template can call (`$v.Major`, `(semver "1.3.3").Compare $v`).

use std::any::Any;
use std::cmp::Ordering;
use std::rc::Rc;

use crate::funcs::{FuncError, Function, Param};
use crate::object::Object;
use crate::sprig::conv::str_arg;
use crate::value::Value;

/// Go's name of the pointer type `semver` returns.
const POINTER_TYPE: &str = "*semver.Version";

/// Go's name of the struct type the `Inc*`/`Set*` methods return.
const STRUCT_TYPE: &str = "semver.Version";

/// The struct's fields, all unexported (a template naming one gets Go's error for that).
const FIELDS: [&str; 6] = ["major", "minor", "patch", "pre", "metadata", "original"];

pub(crate) fn invalid() -> FuncError {
    FuncError("Invalid Semantic Version".into())
}

/// A parsed version; `minor_dirty`/`patch_dirty` mark parts missing or wildcards in a
/// constraint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Version {
    pub(crate) major: u64,
    pub(crate) minor: u64,
    pub(crate) patch: u64,
    pub(crate) pre: String,
    pub(crate) metadata: String,
    /// The text parsed (`Original()`).
    pub(crate) original: String,
    pub(crate) minor_dirty: bool,
    pub(crate) patch_dirty: bool,
}

/// Dot-separated identifiers of letters, digits and hyphens, none empty (the parser's regex).
fn well_formed(s: &str) -> bool {
    s.split('.')
        .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}

/// A numeric identifier with a leading zero (`01`), which `validatePrerelease` refuses.
fn leading_zero(part: &str) -> bool {
    part.len() > 1 && part.starts_with('0') && part.bytes().all(|b| b.is_ascii_digit())
}

/// `validatePrerelease`: empty identifiers pass, as in Go.
fn validate_prerelease(pre: &str) -> Result<(), FuncError> {
    for part in pre.split('.') {
        if part.bytes().all(|b| b.is_ascii_digit()) {
            if leading_zero(part) {
                return Err("Version segment starts with 0".into());
            }
        } else if !part.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err("Invalid Prerelease string".into());
        }
    }
    Ok(())
}

/// `validateMetadata`: empty identifiers pass, as in Go.
fn validate_metadata(metadata: &str) -> Result<(), FuncError> {
    let ok = metadata
        .split('.')
        .all(|part| part.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    if ok {
        Ok(())
    } else {
        Err("Invalid Metadata string".into())
    }
}

impl Version {
    /// `semver.NewVersion`: `v1.2.3-pre+meta`, minor and patch optional.
    pub(crate) fn parse(text: &str) -> Result<Version, FuncError> {
        let version = Version::parse_with(text, false)?;
        validate_prerelease(&version.pre)?;
        Ok(version)
    }

    /// Parses `v1.2.3-pre+meta`; missing minor/patch are allowed, wildcards only in constraints.
    pub(crate) fn parse_with(text: &str, wildcards: bool) -> Result<Version, FuncError> {
        // Only a lower-case v, as the parser's regex.
        let body = text.strip_prefix('v').unwrap_or(text);
        let (body, metadata) = body.split_once('+').unwrap_or((body, ""));
        let (core, pre) = match body.find('-') {
            Some(i) => (&body[..i], &body[i + 1..]),
            None => (body, ""),
        };
        if (body.contains('-') && !well_formed(pre))
            || (text.contains('+') && !well_formed(metadata))
        {
            return Err(invalid());
        }
        if wildcards && pre.split('.').any(leading_zero) {
            return Err(invalid());
        }
        let parts: Vec<&str> = core.split('.').collect();
        if parts.is_empty() || parts.len() > 3 {
            return Err(invalid());
        }
        let mut v = Version {
            pre: pre.to_string(),
            metadata: metadata.to_string(),
            original: text.to_string(),
            minor_dirty: parts.len() < 2,
            patch_dirty: parts.len() < 3,
            ..Version::default()
        };
        for (i, part) in parts.iter().enumerate() {
            let number = if wildcards && matches!(*part, "x" | "X" | "*") {
                if i < 2 {
                    v.minor_dirty = true;
                }
                v.patch_dirty = true;
                0
            } else if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
                part.parse().map_err(|_| invalid())?
            } else {
                return Err(invalid());
            };
            match i {
                0 => v.major = number,
                1 => v.minor = number,
                _ => v.patch = number,
            }
        }
        if v.minor_dirty {
            v.minor = 0;
            v.patch = 0;
        }
        if v.patch_dirty {
            v.patch = 0;
        }
        Ok(v)
    }

    /// `Compare`'s precedence: numbers, then a pre-release sorts before none; metadata ignored.
    pub(crate) fn compare(&self, other: &Version) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| compare_pre(&self.pre, &other.pre))
    }

    /// `String()`: `1.2.3-pre+meta`, without a `v`.
    fn text(&self) -> String {
        let mut out = format!("{}.{}.{}", self.major, self.minor, self.patch);
        if !self.pre.is_empty() {
            out.push('-');
            out.push_str(&self.pre);
        }
        if !self.metadata.is_empty() {
            out.push('+');
            out.push_str(&self.metadata);
        }
        out
    }

    /// The next version from `change`, its original text re-derived as Go's `Inc*`/`Set*` do.
    fn derived(&self, change: impl FnOnce(&mut Version)) -> Version {
        let mut next = self.clone();
        change(&mut next);
        let prefix = if self.original.starts_with('v') {
            "v"
        } else {
            ""
        };
        next.original = format!("{prefix}{}", next.text());
        next
    }
}

pub(crate) fn compare_pre(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let (mut xs, mut ys) = (a.split('.'), b.split('.'));
    loop {
        match (xs.next(), ys.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let order = match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(i), Ok(j)) => i.cmp(&j),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    (Err(_), Err(_)) => x.cmp(y),
                };
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

/// A `*semver.Version` (what `semver` returns) or a `semver.Version` (what `IncMajor` and the
/// other value-returning methods give).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemverValue {
    version: Version,
    pointer: bool,
}

impl SemverValue {
    /// The `*semver.Version` for a parsed version.
    pub(crate) fn pointer(version: Version) -> Value {
        Value::Object(Rc::new(Box::new(SemverValue {
            version,
            pointer: true,
        })))
    }

    fn value(version: Version) -> Value {
        Value::Object(Rc::new(Box::new(SemverValue {
            version,
            pointer: false,
        })))
    }
}

/// The version inside a `*semver.Version` argument; nil makes Go's method dereference panic.
fn operand(value: &Value) -> Result<&Version, FuncError> {
    match value {
        Value::Object(object) => object
            .as_any()
            .downcast_ref::<SemverValue>()
            .map(|v| &v.version)
            .ok_or_else(|| FuncError("wrong type for value; expected *semver.Version".into())),
        _ => Err("runtime error: invalid memory address or nil pointer dereference".into()),
    }
}

/// A method taking another `*semver.Version` and comparing with it.
fn comparison(version: &Version, result: fn(Ordering) -> Value) -> Function {
    let version = version.clone();
    Function::new(&[Param::Object(POINTER_TYPE)], move |a| {
        Ok(result(version.compare(operand(&a[0])?)))
    })
}

/// A method of no arguments returning what `get` gives.
fn getter(version: &Version, get: fn(&Version) -> Value) -> Function {
    let version = version.clone();
    Function::new(&[], move |_| Ok(get(&version)))
}

/// `SetPrerelease`/`SetMetadata`: a string checked by `validate`, stored by `set`.
fn setter(
    version: &Version,
    validate: fn(&str) -> Result<(), FuncError>,
    set: fn(&mut Version, &str),
) -> Function {
    let version = version.clone();
    Function::new(&[Param::String], move |a| {
        let text = str_arg(&a[0]);
        if !text.is_empty() {
            validate(text)?;
        }
        Ok(SemverValue::value(version.derived(|v| set(v, text))))
    })
}

impl SemverValue {
    /// The methods of `semver.Version` (value receivers, callable on both forms).
    fn value_method(&self, name: &str) -> Option<Function> {
        let v = &self.version;
        Some(match name {
            "String" => getter(v, |v| Value::string(v.text())),
            "Major" => getter(v, |v| Value::Int64(v.major as i64)),
            "Minor" => getter(v, |v| Value::Int64(v.minor as i64)),
            "Patch" => getter(v, |v| Value::Int64(v.patch as i64)),
            "Prerelease" => getter(v, |v| Value::string(v.pre.as_str())),
            "Metadata" => getter(v, |v| Value::string(v.metadata.as_str())),
            "IncPatch" => getter(v, |v| {
                SemverValue::value(v.derived(|n| {
                    if n.pre.is_empty() {
                        n.patch += 1;
                    }
                    n.pre.clear();
                    n.metadata.clear();
                }))
            }),
            "IncMinor" => getter(v, |v| {
                SemverValue::value(v.derived(|n| {
                    n.minor += 1;
                    n.patch = 0;
                    n.pre.clear();
                    n.metadata.clear();
                }))
            }),
            "IncMajor" => getter(v, |v| {
                SemverValue::value(v.derived(|n| {
                    n.major += 1;
                    n.minor = 0;
                    n.patch = 0;
                    n.pre.clear();
                    n.metadata.clear();
                }))
            }),
            "SetPrerelease" => setter(v, validate_prerelease, |n, s| n.pre = s.to_owned()),
            "SetMetadata" => setter(v, validate_metadata, |n, s| n.metadata = s.to_owned()),
            _ => return None,
        })
    }

    /// The methods of `*semver.Version` only (pointer receivers).
    fn pointer_method(&self, name: &str) -> Option<Function> {
        let v = &self.version;
        Some(match name {
            "Original" => getter(v, |v| Value::string(v.original.as_str())),
            "Compare" => comparison(v, |o| Value::Int(o as i64)),
            "LessThan" => comparison(v, |o| Value::bool(o.is_lt())),
            "LessThanEqual" => comparison(v, |o| Value::bool(o.is_le())),
            "GreaterThan" => comparison(v, |o| Value::bool(o.is_gt())),
            "GreaterThanEqual" => comparison(v, |o| Value::bool(o.is_ge())),
            "Equal" => {
                let version = v.clone();
                // Go's Equal checks for nil before comparing, so nil is just unequal.
                Function::new(&[Param::Object(POINTER_TYPE)], move |a| {
                    Ok(Value::bool(match &a[0] {
                        Value::Null => false,
                        other => version.compare(operand(other)?).is_eq(),
                    }))
                })
            }
            _ => return None,
        })
    }
}

impl Object for SemverValue {
    fn type_name(&self) -> &'static str {
        if self.pointer {
            POINTER_TYPE
        } else {
            STRUCT_TYPE
        }
    }

    fn kind_name(&self) -> &'static str {
        if self.pointer { "ptr" } else { "struct" }
    }

    fn text(&self) -> String {
        self.version.text()
    }

    fn json(&self) -> serde_json::Value {
        serde_json::Value::String(self.version.text())
    }

    fn method(&self, name: &str) -> Option<Function> {
        self.value_method(name).or_else(|| {
            if self.pointer {
                self.pointer_method(name)
            } else {
                None
            }
        })
    }

    fn has_unexported_field(&self, name: &str) -> bool {
        FIELDS.contains(&name)
    }

    fn deep_equal(&self, other: &dyn Object) -> bool {
        other.as_any().downcast_ref::<SemverValue>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
