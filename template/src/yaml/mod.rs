//! YAML as Go's encoders write it for `interface{}` values, by imitating go-yaml's emitter:
//! block style, keys in go-yaml's order, strings quoted exactly when reading them back would
//! give another type or break the syntax, multi-line strings as literal blocks, and long
//! strings folded where the encoder folds them. Two flavours: sigs.k8s.io/yaml (libsveltos'
//! `toYaml`, the addon-controller's `copy`: yaml.v2 behind a JSON round trip, 2-space indent,
//! sequences level with their key, lines folded past 80 columns) and gopkg.in/yaml.v3 v3.0.1
//! (event-manager's `copy`, `setField`, `removeField`: 4-space indent aligned to multiples of
//! four, sequences indented, no folding).

mod decode;
mod document;
mod errors;
mod position;
mod resolve;
mod scalar;
mod writer;

use crate::value::Value;
pub use decode::decode;
use writer::Writer;

/// How one Go YAML encoder lays documents out.
#[derive(Debug, Clone, Copy)]
pub struct Flavour {
    /// Indentation step (the emitter's `best_indent`).
    indent: usize,
    /// Lines fold at a space once past this column (`best_width`; yaml.v3 sets no limit).
    width: usize,
    /// A sequence that is a mapping value starts level with its key (yaml.v2).
    indentless_sequences: bool,
    /// Indentation goes to multiples of the step, but 2 past a sequence's `- ` (yaml.v3).
    aligned_indents: bool,
    /// Tabs keep a multi-line string in a literal block (yaml.v3); yaml.v2 escapes them.
    tabs_in_blocks: bool,
    /// A literal block's header line ends before its content is written (yaml.v2); yaml.v3
    /// 3.0.1 lets the content's first break end it, so a leading empty line is lost.
    break_after_block_header: bool,
    /// yaml.v3's key order puts a letter after a digit run first when the keys agreed on a
    /// digit just before it.
    letters_after_digits: bool,
    /// Floats as encoding/json writes them (the JSON round trip).
    json_numbers: bool,
}

/// sigs.k8s.io/yaml (yaml.v2 behind a JSON round trip).
pub const SIGS_K8S_YAML: Flavour = Flavour {
    indent: 2,
    width: 80,
    indentless_sequences: true,
    aligned_indents: false,
    tabs_in_blocks: false,
    break_after_block_header: true,
    letters_after_digits: false,
    json_numbers: true,
};

/// gopkg.in/yaml.v3's `Marshal`.
pub const YAML_V3: Flavour = Flavour {
    indent: 4,
    width: usize::MAX,
    indentless_sequences: false,
    aligned_indents: true,
    tabs_in_blocks: true,
    break_after_block_header: false,
    letters_after_digits: true,
    json_numbers: false,
};

/// Nesting beyond this is refused rather than risking the stack.
const MAX_DEPTH: usize = 200;

/// `value` as a YAML document (with its final newline).
pub fn encode(value: &Value, flavour: Flavour) -> Result<String, String> {
    let mut writer = Writer::new(flavour);
    writer.document(value)?;
    Ok(writer.out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml(value: serde_json::Value, flavour: Flavour) -> String {
        encode(&Value::from(&value), flavour).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn sigs_k8s_layout_keeps_sequences_level_with_their_key() {
        let object = json!({"metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"ports": [{"port": 80, "name": "http"}], "selector": {}, "empty": []}});
        assert_eq!(
            yaml(object, SIGS_K8S_YAML),
            "metadata:\n  labels:\n    app: web\n  name: web\nspec:\n  empty: []\n  ports:\n  - name: http\n    port: 80\n  selector: {}\n"
        );
    }

    #[test]
    fn yaml_v3_layout_indents_four_and_indents_sequences() {
        let object = json!({"spec": {"ports": [{"port": 80, "name": "http"}, 443]}});
        assert_eq!(
            yaml(object, YAML_V3),
            "spec:\n    ports:\n        - name: http\n          port: 80\n        - 443\n"
        );
    }

    #[test]
    fn strings_are_quoted_when_they_would_read_back_as_something_else() {
        let object = json!({"a": "true", "b": "443", "c": "", "d": "yes", "e": "1.5",
            "f": "plain text", "g": "- item", "h": "key: value", "i": "it's", "j": "0x1F",
            "k": "*ref", "l": "tab\there", "m": "bell\u{7}", "n": "1e3", "o": "~"});
        assert_eq!(
            yaml(object, SIGS_K8S_YAML),
            "a: \"true\"\nb: \"443\"\nc: \"\"\nd: \"yes\"\ne: \"1.5\"\nf: plain text\ng: '- item'\nh: 'key: value'\ni: it's\nj: \"0x1F\"\nk: '*ref'\nl: \"tab\\there\"\nm: \"bell\\a\"\n\"n\": \"1e3\"\no: \"~\"\n"
        );
    }

    #[test]
    fn keys_follow_go_yamls_order() {
        // go-yaml's encode_test.go TestSortedOutput (the string keys).
        let order = [
            "", ".1", ".2", ".a", "1", "2", "a!10", "a/0001", "a/002", "a/3", "a/10", "a/11",
            "a/0012", "a/100", "a~10", "ab/1", "b/1", "b/01", "b/2", "b/02", "b/3", "b/03", "b1",
            "b01", "b3", "c2.10", "c10.2", "d1", "d7", "d7abc", "d12", "d12a",
        ];
        let map: serde_json::Map<String, serde_json::Value> =
            order.iter().map(|k| (k.to_string(), json!(1))).collect();
        let text = yaml(serde_json::Value::Object(map), SIGS_K8S_YAML);
        let keys: Vec<&str> = text
            .lines()
            .map(|line| line.trim_end_matches(": 1").trim_matches('"'))
            .collect();
        assert_eq!(keys, order);
    }

    #[test]
    fn long_strings_fold_at_80_columns_in_yaml_v2_only() {
        // go-yaml v2 encode_test.go TestLineWrapping; v3 "Ensure that strings do not wrap".
        let text = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 ";
        assert_eq!(
            yaml(json!({"a": text}), SIGS_K8S_YAML),
            "a: 'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 abcdefghijklmnopqrstuvwxyz\n  ABCDEFGHIJKLMNOPQRSTUVWXYZ 1234567890 '\n"
        );
        assert_eq!(yaml(json!({"a": text}), YAML_V3), format!("a: '{text}'\n"));
    }

    #[test]
    fn yaml_v3_aligns_indentation_to_multiples_of_four() {
        // yaml.v3 encode_test.go marshalTests.
        assert_eq!(
            yaml(json!({"v": ["A", 1, {"B": [2, 3]}]}), YAML_V3),
            "v:\n    - A\n    - 1\n    - B:\n        - 2\n        - 3\n"
        );
        assert_eq!(
            yaml(json!({"v": ["A", 1, {"B": [2, 3]}]}), SIGS_K8S_YAML),
            "v:\n- A\n- 1\n- B:\n  - 2\n  - 3\n"
        );
        assert_eq!(
            yaml(json!({"a": "\tB\n\tC\n"}), YAML_V3),
            "a: |\n    \tB\n    \tC\n"
        );
    }

    #[test]
    fn multi_line_strings_become_literal_blocks() {
        let object = json!({"data": {"script": "line one\nline two\n", "raw": "a\nb"}});
        assert_eq!(
            yaml(object, SIGS_K8S_YAML),
            "data:\n  raw: |-\n    a\n    b\n  script: |\n    line one\n    line two\n"
        );
    }

    #[test]
    fn scalars_and_numbers() {
        assert_eq!(yaml(json!(null), SIGS_K8S_YAML), "null\n");
        assert_eq!(
            yaml(json!({"f": 1.5, "g": 2000000.0}), YAML_V3),
            "f: 1.5\ng: 2e+06\n"
        );
        assert_eq!(
            yaml(json!({"f": 1.5, "i": 7}), SIGS_K8S_YAML),
            "f: 1.5\ni: 7\n"
        );
    }
}
