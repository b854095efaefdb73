//! The YAML reader's limits on users' input (nesting, documents, nodes, aliases), and each
//! limit said in words when a file breaks it.

use serde_saphyr::Budget;
use serde_saphyr::budget::BudgetBreach;

/// Deepest nesting of mappings and sequences read.
pub const MAX_DEPTH: usize = 64;
/// Most documents read from one input.
pub const MAX_DOCUMENTS: usize = 1024;
/// Most nodes (mappings, sequences and scalars) read from one input.
pub const MAX_NODES: usize = 250_000;
/// Most parser events read from one input.
pub const MAX_EVENTS: usize = 1_000_000;
/// Most aliases (`*name`) read from one input.
pub const MAX_ALIASES: usize = 50_000;
/// Most anchors (`&name`) read from one input.
pub const MAX_ANCHORS: usize = 50_000;
/// Most merge keys (`<<`) read from one input.
pub const MAX_MERGE_KEYS: usize = 10_000;
/// Most bytes of scalar text, aliases expanded, read from one input.
pub const MAX_SCALAR_BYTES: usize = 64 << 20;
/// Most uses of each anchor on average, once there are 100 aliases (an alias bomb otherwise).
pub const MAX_ALIASES_PER_ANCHOR: usize = 10;

/// The reader's budget: the limits above, the rest as the crate sets them.
pub fn budget() -> Budget {
    let mut budget = Budget::default();
    budget.max_depth = MAX_DEPTH;
    budget.max_documents = MAX_DOCUMENTS;
    budget.max_nodes = MAX_NODES;
    budget.max_events = MAX_EVENTS;
    budget.max_aliases = MAX_ALIASES;
    budget.max_anchors = MAX_ANCHORS;
    budget.max_merge_keys = MAX_MERGE_KEYS;
    budget.max_total_scalar_bytes = MAX_SCALAR_BYTES;
    budget.enforce_alias_anchor_ratio = true;
    budget.alias_anchor_ratio_multiplier = MAX_ALIASES_PER_ANCHOR;
    budget
}

/// What a breached limit means, in words (`nested deeper than 64 levels`).
pub fn describe(breach: &BudgetBreach) -> String {
    match breach {
        BudgetBreach::Depth { .. } => format!("nested deeper than {MAX_DEPTH} levels"),
        BudgetBreach::Documents { .. } => format!("more than {MAX_DOCUMENTS} documents"),
        BudgetBreach::Nodes { .. } => format!(
            "more than {MAX_NODES} values (keys, scalars, mappings and sequences) in one input"
        ),
        BudgetBreach::Events { .. } => {
            format!("more than {MAX_EVENTS} YAML events in one input")
        }
        BudgetBreach::Aliases { .. } => format!("more than {MAX_ALIASES} aliases (*name)"),
        BudgetBreach::Anchors { .. } => format!("more than {MAX_ANCHORS} anchors (&name)"),
        BudgetBreach::MergeKeys { .. } => format!("more than {MAX_MERGE_KEYS} merge keys (<<)"),
        BudgetBreach::ScalarBytes { .. } => format!(
            "more than {} MiB of text, aliases expanded",
            MAX_SCALAR_BYTES >> 20
        ),
        BudgetBreach::AliasAnchorRatio { aliases, anchors } => format!(
            "{aliases} aliases for {anchors} anchors: more than {MAX_ALIASES_PER_ANCHOR} uses of \
             each anchor, the shape of an alias bomb"
        ),
        BudgetBreach::SequenceUnbalanced => {
            "a mapping or sequence closes that never opened (is the input cut short?)".to_owned()
        }
        other => format!("beyond a limit of the YAML reader ({other:?})"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::load::documents_noting;

    #[test]
    fn nesting_too_deep_is_said_in_words_with_its_line() {
        // 65 mappings, one inside the other.
        let mut text = String::new();
        for level in 0..70 {
            text.push_str(&format!("{}k{level}:\n", "  ".repeat(level)));
        }
        let error = documents_noting(&text).unwrap_err().to_string();
        assert_eq!(error, "line 65: nested deeper than 64 levels");
    }

    #[test]
    fn too_many_documents_are_said_in_words_with_the_line_of_the_first_too_many() {
        let text: String = (0..1100)
            .map(|i| format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n"))
            .collect();
        let error = documents_noting(&text).unwrap_err().to_string();
        assert_eq!(error, "line 4097: more than 1024 documents");
        // 1024 documents are read.
        let text: String = (0..1024)
            .map(|i| format!("---\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n"))
            .collect();
        assert_eq!(documents_noting(&text).unwrap().0.len(), 1024);
    }

    #[test]
    fn an_alias_bomb_is_said_in_words() {
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        let mut previous = "a".to_owned();
        for level in 0..12 {
            let name = format!("l{level}");
            let uses = vec![format!("*{previous}"); 10].join(", ");
            text.push_str(&format!("{name}: &{name} [{uses}]\n"));
            previous = name;
        }
        // Expanded, the aliases make 10^13 values.
        let error = documents_noting(&text).unwrap_err().to_string();
        assert!(
            error.starts_with("line ")
                && error.ends_with(
                    ": more than 250000 values (keys, scalars, mappings and sequences) in one input"
                ),
            "{error}"
        );
    }
}
