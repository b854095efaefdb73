//! Block mappings and sequences as go-yaml's emitter lays them out: each node's indentation
//! from its parent's (`yaml_emitter_increase_indent` of yaml.v2 and of yaml.v3, which differ),
//! keys in go-yaml's order, empty collections in flow style.

use crate::dict::Entries;
use crate::gofmt::format_float_g;
use crate::key::Key;
use crate::sprig::json::format_float;
use crate::value::MAX_TEXT;
use crate::value::Value;
use crate::yaml::MAX_DEPTH;
use crate::yaml::scalar::simple_key_allowed;
use crate::yaml::writer::Writer;

/// Where a node sits, which decides its indentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The document itself.
    Root,
    /// A mapping key (only complex `? key` keys can span lines).
    Key,
    /// A mapping value.
    Value,
    /// A sequence item.
    Item,
}

impl Writer {
    /// `value` as a document, ending with a newline.
    pub(super) fn document(&mut self, value: &Value) -> Result<(), String> {
        self.node(value, None, Place::Root, 0)?;
        self.write_indent(0);
        Ok(())
    }

    /// The indentation of a node placed under a parent at `parent` (`None` at the root):
    /// scalars are "flow" for the emitter, and yaml.v2 keeps a sequence that is a mapping
    /// value level with its key.
    fn indent_for(&self, parent: Option<usize>, place: Place, scalar: bool, seq: bool) -> usize {
        let step = self.flavour.indent;
        let Some(parent) = parent else {
            return if scalar { step } else { 0 };
        };
        let in_mapping = matches!(place, Place::Key | Place::Value);
        if seq && self.flavour.indentless_sequences && in_mapping && !self.indention {
            return parent;
        }
        if !self.flavour.aligned_indents {
            return parent + step;
        }
        // yaml.v3: the first level inside a sequence item skips "- "; everything else goes
        // to the next multiple of the indentation.
        if place == Place::Item {
            parent + 2
        } else {
            step * ((parent + step) / step)
        }
    }

    fn node(
        &mut self,
        value: &Value,
        parent: Option<usize>,
        place: Place,
        depth: usize,
    ) -> Result<(), String> {
        if depth > MAX_DEPTH || self.out.len() > MAX_TEXT {
            return Err("value nested too deeply or too large for YAML".to_owned());
        }
        match value {
            // What its MarshalJSON gives (a version's text).
            Value::Object(object) => self.node(&Value::from(&object.json()), parent, place, depth),
            Value::Map(map) if !map.is_empty() => {
                let indent = self.indent_for(parent, place, false, false);
                self.mapping(&map.read(), indent, depth)
            }
            Value::List(items) if !items.is_empty() => {
                let indent = self.indent_for(parent, place, false, true);
                for item in items.iter() {
                    self.write_indent(indent);
                    self.write_indicator("-", true, false, true);
                    self.node(item, Some(indent), Place::Item, depth + 1)?;
                }
                Ok(())
            }
            Value::Map(_) => {
                self.write_indicator("{", true, true, false);
                self.write_indicator("}", false, false, false);
                Ok(())
            }
            Value::List(_) => {
                self.write_indicator("[", true, true, false);
                self.write_indicator("]", false, false, false);
                Ok(())
            }
            Value::String(s) => {
                let indent = self.indent_for(parent, place, true, false);
                self.string(s, indent, false);
                Ok(())
            }
            Value::Null => self.word("null", parent, place),
            Value::Bool(b) => self.word(if b.get() { "true" } else { "false" }, parent, place),
            Value::Int(n) | Value::Int64(n) => self.word(&n.to_string(), parent, place),
            Value::Float(f) => {
                let text = self.float(f.get())?;
                self.word(&text, parent, place)
            }
        }
    }

    /// A plain scalar that is not a string (null, a bool, a number).
    fn word(&mut self, text: &str, parent: Option<usize>, place: Place) -> Result<(), String> {
        let indent = self.indent_for(parent, place, true, false);
        self.plain(text, indent, place != Place::Key);
        Ok(())
    }

    fn float(&self, f: f64) -> Result<String, String> {
        if self.flavour.json_numbers {
            // The JSON round trip: json.Marshal's text, read back as YAML.
            return format_float(f);
        }
        Ok(if f.is_nan() {
            ".nan".to_owned()
        } else if f.is_infinite() {
            if f > 0.0 { ".inf" } else { "-.inf" }.to_owned()
        } else {
            format_float_g(f, None, false)
        })
    }

    fn mapping(&mut self, map: &Entries, indent: usize, depth: usize) -> Result<(), String> {
        for (key, item) in sorted_entries(map, self.flavour.letters_after_digits) {
            self.write_indent(indent);
            let key_indent = self.indent_for(Some(indent), Place::Key, true, false);
            if simple_key_allowed(key) {
                self.string(key, key_indent, true);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.string(key, key_indent, false);
                self.write_indent(indent);
                self.write_indicator(":", true, false, true);
            }
            self.node(item, Some(indent), Place::Value, depth + 1)?;
        }
        Ok(())
    }
}

/// The entries in go-yaml's key order (its `keyList.Less`), by a merge sort that cannot
/// panic whatever the comparison does.
fn sorted_entries(map: &Entries, letters_after_digits: bool) -> Vec<(&Key, &Value)> {
    let mut entries: Vec<(&Key, &Value)> = map.iter().collect();
    let less = |a: &(&Key, &Value), b: &(&Key, &Value)| key_less(a.0, b.0, letters_after_digits);
    merge_sort(&mut entries, &less);
    entries
}

fn merge_sort<T: Copy>(items: &mut [T], less: &impl Fn(&T, &T) -> bool) {
    if items.len() < 2 {
        return;
    }
    let middle = items.len() / 2;
    merge_sort(&mut items[..middle], less);
    merge_sort(&mut items[middle..], less);
    let mut merged = Vec::with_capacity(items.len());
    let (mut i, mut j) = (0, middle);
    while i < middle && j < items.len() {
        if less(&items[j], &items[i]) {
            merged.push(items[j]);
            j += 1;
        } else {
            merged.push(items[i]);
            i += 1;
        }
    }
    merged.extend_from_slice(&items[i..middle]);
    merged.extend_from_slice(&items[j..]);
    items.copy_from_slice(&merged);
}

/// go-yaml's string key order: runes compared one by one, letters after other characters,
/// runs of digits compared as numbers (`a2` before `a10`). yaml.v3 puts a letter after a digit
/// run first when the keys agreed on a digit just before (`letters_after_digits`).
fn key_less(a: &str, b: &str, letters_after_digits: bool) -> bool {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut digits = false;
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            digits = ar[i].is_ascii_digit();
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return if letters_after_digits && digits {
                al
            } else {
                bl
            };
        }
        let (mut an, mut bn): (i64, i64) = (0, 0);
        if ar[i] == '0' || br[i] == '0' {
            // Zeros after non-zero digits of the same run count.
            if ar[..i]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_digit())
                .any(|&c| c != '0')
            {
                (an, bn) = (1, 1);
            }
        }
        let (ai, an) = number_run(&ar, i, an);
        let (bi, bn) = number_run(&br, i, bn);
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// The digits from `start` read onto `n` (wrapping as Go's int64 does), and where they end.
fn number_run(chars: &[char], start: usize, mut n: i64) -> (usize, i64) {
    let mut end = start;
    while let Some(digit) = chars.get(end).and_then(|c| c.to_digit(10)) {
        n = n.wrapping_mul(10).wrapping_add(i64::from(digit));
        end += 1;
    }
    (end, n)
}
