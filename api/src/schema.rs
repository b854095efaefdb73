//! Hand-written schema fragments for fields whose Rust type cannot express the CRD rule.

use schemars::{Schema, SchemaGenerator, json_schema};

/// `maxUpdate`: an int-or-string matching a count or a percentage.
pub fn max_update(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-int-or-string": true,
        "pattern": "^((100|[0-9]{1,2})%|[0-9]+)$",
        "nullable": true
    })
}

/// A `[]byte` field: base64 text on the wire.
pub fn bytes(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "format": "byte", "nullable": true})
}

/// A `[][]byte` field: a list of base64 texts.
pub fn bytes_list(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "array", "items": {"type": "string", "format": "byte"}})
}

/// `kind` of a policyRef or kustomizationRef.
pub fn policy_ref_kind(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "enum": ["GitRepository", "OCIRepository", "Bucket", "ConfigMap", "Secret"]
    })
}

/// `kind` of a valuesFrom entry.
pub fn config_map_or_secret(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "enum": ["ConfigMap", "Secret"]})
}

/// A `metav1.Time`: an RFC 3339 date-time.
pub fn date_time(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "format": "date-time"})
}
