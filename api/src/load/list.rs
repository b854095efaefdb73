//! Lists (`kubectl get -o yaml` of several objects writes a `v1` `List`; typed lists such as
//! `ServiceList` too) read as their items, as `kubectl apply -f` reads them.

use serde_json::Value;

/// Deepest nesting of lists in lists unwrapped (the YAML reader bounds it anyway).
const MAX_NESTED_LISTS: usize = 8;

/// Whether `document` is a list: a kind ending in `List` with an `items` array.
pub fn is_list(document: &Value) -> bool {
    document["kind"]
        .as_str()
        .is_some_and(|kind| kind.ends_with("List"))
        && document["items"].is_array()
}

/// The documents with every list replaced by its items (lists in lists too), in order.
pub fn unwrap_lists(documents: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::with_capacity(documents.len());
    for document in documents {
        unwrap_into(document, 0, &mut out);
    }
    out
}

fn unwrap_into(document: Value, depth: usize, out: &mut Vec<Value>) {
    if depth >= MAX_NESTED_LISTS || !is_list(&document) {
        out.push(document);
        return;
    }
    let Value::Object(mut fields) = document else {
        return;
    };
    if let Some(Value::Array(items)) = fields.remove("items") {
        for item in items {
            unwrap_into(item, depth + 1, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_list_is_its_items_and_other_documents_are_themselves() {
        let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}});
        let map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}});
        let documents = vec![
            json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                   "items": [service, {"apiVersion": "v1", "kind": "ConfigMapList", "items": [map]}]}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}}),
            // `items` is an ordinary field of a kind not ending in List.
            json!({"apiVersion": "x/v1", "kind": "Basket", "items": [1, 2]}),
        ];
        let read = unwrap_lists(documents);
        let kinds: Vec<&str> = read
            .iter()
            .map(|d| d["kind"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(kinds, ["Service", "ConfigMap", "Secret", "Basket"]);
        // An empty List holds nothing.
        assert!(unwrap_lists(vec![json!({"kind": "List", "items": []})]).is_empty());
        // A kind ending in List without items is kept.
        assert_eq!(unwrap_lists(vec![json!({"kind": "List"})]).len(), 1);
    }
}
