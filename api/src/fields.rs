//! Reading fields of JSON objects by key path. `serde_json::Value::pointer` allocates for
//! every step of its path (it unescapes `~0`/`~1`); these do not, which matters where every
//! event reads the same few fields of a thousand objects.

use serde_json::Value;

/// The value at `path` (object keys only).
pub fn at<'a>(object: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(object, |current, key| current.get(key))
}

/// The string at `path`.
pub fn text<'a>(object: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(object, path)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_read_what_pointers_read() {
        let object = json!({"metadata": {"name": "web", "labels": {"a/b": "c"}}, "n": 1});
        for (path, pointer) in [
            (&["metadata", "name"][..], "/metadata/name"),
            (&["metadata", "labels", "a/b"][..], "/metadata/labels/a~1b"),
            (&["n"][..], "/n"),
            (&["n", "x"][..], "/n/x"),
            (&["missing", "x"][..], "/missing/x"),
            (&[][..], ""),
        ] {
            assert_eq!(at(&object, path), object.pointer(pointer), "{pointer}");
        }
        assert_eq!(text(&object, &["metadata", "name"]), Some("web"));
        assert_eq!(text(&object, &["n"]), None);
    }
}
