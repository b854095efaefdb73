//! Errors of the Kubernetes client in words: an API server's refusal as its own message and
//! code, where kube's text would repeat it inside a debug dump of the Status.

/// `error` as one sentence for a status message, an Event or a user.
pub fn words(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!("{} (HTTP {})", status.message, status.code),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_read_as_the_server_wrote_them() {
        let status = kube::core::Status::failure("namespaces \"x\" is forbidden", "Forbidden")
            .with_code(403);
        let said = words(&kube::Error::Api(Box::new(status)));
        assert_eq!(said, "namespaces \"x\" is forbidden (HTTP 403)");
    }
}
