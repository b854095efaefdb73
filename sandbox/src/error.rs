//! The crate's error type; every variant maps onto a Kubernetes `Status` reason.

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of the sandbox; API errors carry the message the real server would send.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 404 NotFound.
    #[error("{0}")]
    NotFound(String),
    /// 409 AlreadyExists.
    #[error("{0}")]
    AlreadyExists(String),
    /// 409 Conflict (stale resourceVersion, failed precondition, apply conflict).
    #[error("{message}")]
    Conflict {
        /// Human readable message.
        message: String,
        /// `(conflict with "manager"..., field path)` (server-side apply only).
        fields: Vec<(String, String)>,
    },
    /// 422 Invalid.
    #[error("{0}")]
    Invalid(String),
    /// 422 Invalid with every field error, as kube-apiserver lists them: one is told as
    /// `<subject> is invalid: <field>: <text>`, several as `... is invalid: [<f>: <t>, ...]`.
    #[error("{subject} is invalid: {}", fields_text(causes))]
    InvalidFields {
        /// `Kind[.group] "name"`.
        subject: String,
        /// `(field, text)` of each error, in order.
        causes: Vec<(String, String)>,
    },
    /// 400 BadRequest.
    #[error("{0}")]
    BadRequest(String),
    /// 401 Unauthorized.
    #[error("{0}")]
    Unauthorized(String),
    /// 403 Forbidden.
    #[error("{0}")]
    Forbidden(String),
    /// 405 MethodNotAllowed.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// 415 UnsupportedMediaType.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 410 Expired (resourceVersion too old).
    #[error("{0}")]
    Expired(String),
    /// 410 Expired: a continue token older than the history, with a token that goes on at
    /// the latest resourceVersion (whose list may then be inconsistent).
    #[error(
        "The provided continue parameter is too old to display a consistent list result. You \
         can start a new list without the continue parameter, or use the continue token in \
         this response to retrieve the remainder of the results. Continuing with the provided \
         token results in an inconsistent list - objects that were created, modified, or \
         deleted between the time the first chunk was returned and now may show up in the list."
    )]
    ContinueExpired {
        /// The token going on at the latest resourceVersion.
        token: String,
    },
    /// 413 RequestEntityTooLarge: a request body over kube-apiserver's 3 MiB.
    #[error("Request entity too large: limit is {0}")]
    EntityTooLarge(usize),
    /// 429 TooManyRequests: the server sheds load; try again after a second.
    #[error("{0}")]
    TooManyRequests(String),
    /// 503 ServiceUnavailable: the server cannot serve the request now.
    #[error("{0}")]
    Unavailable(String),
    /// 504 Timeout: a list asked for a resourceVersion the cluster has not reached.
    #[error("Timeout: Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion {
        /// The resourceVersion asked for.
        requested: u64,
        /// The cluster's.
        current: u64,
        /// When to ask again (seconds; 0: not said).
        retry_after: u64,
    },
    /// 500 InternalError.
    #[error("{0}")]
    Internal(String),
    /// 500 without a reason: what kube-apiserver passes on from its storage as it came.
    #[error("{0}")]
    Storage(String),
    /// I/O failure while starting or writing files.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// A file or folder of the sandbox could not be used.
    #[error("cannot {action} {}", path.display())]
    File {
        /// What was being done (`create the folder`, `write`...).
        action: &'static str,
        /// The file or folder.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The sandbox's folder is held by another running sandbox.
    #[error(
        "{} is in use by another sandbox (process {pid}); stop it first with `kubectl \
         sveltos-events sandbox stop --dir {}`",
        dir.display(),
        dir.display()
    )]
    Locked {
        /// The folder.
        dir: std::path::PathBuf,
        /// The process holding its lock, as its lock file says.
        pid: String,
    },
    /// A folder the sandbox will not use.
    #[error("{0}")]
    Folder(String),
    /// A file of a cluster's stored state holds something other than what the sandbox
    /// writes.
    #[error(
        "{} is damaged at byte {offset} ({reason}); nothing was loaded: move {} aside to start \
         that cluster anew, or start the whole sandbox clean with `kubectl sveltos-events \
         sandbox reset --dir DIR`",
        path.display(),
        path.parent().unwrap_or(path).display()
    )]
    Damaged {
        /// The file.
        path: std::path::PathBuf,
        /// Where the damage starts.
        offset: u64,
        /// What is wrong there.
        reason: crate::journal::RecordError,
    },
}

impl Error {
    /// A file error: `action` on `path` failed with `source`.
    pub fn file(
        action: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.to_owned();
        move |source| Error::File {
            action,
            path,
            source,
        }
    }
}

impl Error {
    /// HTTP status code of this error.
    pub fn code(&self) -> u16 {
        match self {
            Error::NotFound(_) => 404,
            Error::AlreadyExists(_) | Error::Conflict { .. } => 409,
            Error::Invalid(_) | Error::InvalidFields { .. } => 422,
            Error::BadRequest(_) => 400,
            Error::Unauthorized(_) => 401,
            Error::Forbidden(_) => 403,
            Error::MethodNotAllowed(_) => 405,
            Error::UnsupportedMediaType(_) => 415,
            Error::Expired(_) | Error::ContinueExpired { .. } => 410,
            Error::TooLargeResourceVersion { .. } => 504,
            Error::EntityTooLarge(_) => 413,
            Error::TooManyRequests(_) => 429,
            Error::Unavailable(_) => 503,
            Error::Internal(_)
            | Error::Storage(_)
            | Error::Io(_)
            | Error::File { .. }
            | Error::Locked { .. }
            | Error::Folder(_)
            | Error::Damaged { .. } => 500,
        }
    }

    /// The `Status.reason` string of this error ("": none).
    pub fn reason(&self) -> &'static str {
        match self {
            Error::NotFound(_) => "NotFound",
            Error::AlreadyExists(_) => "AlreadyExists",
            Error::Conflict { .. } => "Conflict",
            Error::Invalid(_) | Error::InvalidFields { .. } => "Invalid",
            Error::BadRequest(_) => "BadRequest",
            Error::Unauthorized(_) => "Unauthorized",
            Error::Forbidden(_) => "Forbidden",
            Error::MethodNotAllowed(_) => "MethodNotAllowed",
            Error::UnsupportedMediaType(_) => "UnsupportedMediaType",
            Error::Expired(_) | Error::ContinueExpired { .. } => "Expired",
            Error::TooLargeResourceVersion { .. } => "Timeout",
            Error::EntityTooLarge(_) => "RequestEntityTooLarge",
            Error::TooManyRequests(_) => "TooManyRequests",
            Error::Unavailable(_) => "ServiceUnavailable",
            Error::Internal(_)
            | Error::Io(_)
            | Error::File { .. }
            | Error::Locked { .. }
            | Error::Folder(_)
            | Error::Damaged { .. } => "InternalError",
            Error::Storage(_) => "",
        }
    }
}

/// Field errors as Go's `ErrorList.ToAggregate` writes them.
fn fields_text(causes: &[(String, String)]) -> String {
    let each: Vec<String> = causes.iter().map(|(f, t)| format!("{f}: {t}")).collect();
    match each.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", each.join(", ")),
    }
}
