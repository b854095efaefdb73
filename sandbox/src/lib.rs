//! In-process Kubernetes API server hosting several virtual clusters.
