//! Defaults and flow (`default`, `empty`, `coalesce`, `all`, `any`, `ternary`, `fail`),
//! reflection (`typeOf`, `kindIs`, `deepEqual`...) and the host-facing functions, which are
//! hermetic here: `env`, `expandenv` and `getHostByName` never read the host.

use crate::funcs::{FuncMap, Function, Param};
use crate::sprig::conv::{is_empty, kind_name, str_arg};
use crate::value::Value;

use Param::{Any, Bool, String as Str};

/// Registers the default, flow, reflection and host functions.
pub fn register(map: &mut FuncMap) {
    map.insert(
        "default",
        Function::variadic(&[Any], Any, |a| {
            Ok(match a.get(1) {
                Some(given) if !is_empty(given) => given.clone(),
                _ => a[0].clone(),
            })
        }),
    );
    map.insert(
        "empty",
        Function::new(&[Any], |a| Ok(Value::bool(is_empty(&a[0])))),
    );
    map.insert(
        "coalesce",
        Function::variadic(&[], Any, |a| {
            Ok(a.iter()
                .find(|v| !is_empty(v))
                .cloned()
                .unwrap_or(Value::Null))
        }),
    );
    map.insert(
        "all",
        Function::variadic(&[], Any, |a| {
            Ok(Value::bool(a.iter().all(|v| !is_empty(v))))
        }),
    );
    map.insert(
        "any",
        Function::variadic(&[], Any, |a| {
            Ok(Value::bool(a.iter().any(|v| !is_empty(v))))
        }),
    );
    map.insert(
        "ternary",
        Function::new(&[Any, Any, Bool], |a| {
            Ok(if a[2].is_true() {
                a[0].clone()
            } else {
                a[1].clone()
            })
        }),
    );
    map.insert(
        "fail",
        Function::new(&[Str], |a| Err(str_arg(&a[0]).into())),
    );
    map.insert(
        "typeOf",
        Function::new(&[Any], |a| Ok(Value::string(a[0].type_name()))),
    );
    map.insert(
        "typeIs",
        Function::new(&[Str, Any], |a| {
            Ok(Value::bool(str_arg(&a[0]) == a[1].type_name()))
        }),
    );
    map.insert(
        "typeIsLike",
        Function::new(&[Str, Any], |a| {
            let (target, t) = (str_arg(&a[0]), a[1].type_name());
            Ok(Value::bool(target == t || target == format!("*{t}")))
        }),
    );
    map.insert(
        "kindOf",
        Function::new(&[Any], |a| Ok(Value::string(kind_name(&a[0])))),
    );
    map.insert(
        "kindIs",
        Function::new(&[Str, Any], |a| {
            Ok(Value::bool(str_arg(&a[0]) == kind_name(&a[1])))
        }),
    );
    map.insert(
        "deepEqual",
        Function::new(&[Any, Any], |a| Ok(Value::bool(a[0] == a[1]))),
    );
    // Hermetic: templates of one tenant must not see the controller's environment or network.
    map.insert("env", Function::new(&[Str], |_| Ok(Value::string(""))));
    map.insert(
        "expandenv",
        Function::new(&[Str], |a| Ok(Value::string(expand_empty(str_arg(&a[0]))))),
    );
    map.insert(
        "getHostByName",
        Function::new(&[Str], |_| Ok(Value::string(""))),
    );
}

/// Go's `os.Expand` with every variable unset: `$NAME`, `${NAME}` and the special one-character
/// names expand to "".
fn expand_empty(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' && i + 1 < bytes.len() {
            out.push_str(&s[copied..i]);
            let rest = &bytes[i + 1..];
            let consumed = if rest[0] == b'{' {
                match rest.iter().position(|&b| b == b'}') {
                    Some(1) => 2,
                    Some(close) => close + 1,
                    None => 1,
                }
            } else if b"*#$@!?-0123456789".contains(&rest[0]) {
                1
            } else {
                let n = rest
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                    .count();
                if n == 0 {
                    // Go drops a `$` followed by an invalid name character... and keeps it.
                    out.push('$');
                }
                n
            };
            i += 1 + consumed;
            copied = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[copied..]);
    out
}
