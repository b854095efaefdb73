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
    /// 500 InternalError.
    #[error("{0}")]
    Internal(String),
    /// I/O failure while starting or writing files.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// HTTP status code of this error.
    pub fn code(&self) -> u16 {
        match self {
            Error::NotFound(_) => 404,
            Error::AlreadyExists(_) | Error::Conflict { .. } => 409,
            Error::Invalid(_) => 422,
            Error::BadRequest(_) => 400,
            Error::Unauthorized(_) => 401,
            Error::Forbidden(_) => 403,
            Error::MethodNotAllowed(_) => 405,
            Error::UnsupportedMediaType(_) => 415,
            Error::Expired(_) => 410,
            Error::Internal(_) | Error::Io(_) => 500,
        }
    }

    /// The `Status.reason` string of this error.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::NotFound(_) => "NotFound",
            Error::AlreadyExists(_) => "AlreadyExists",
            Error::Conflict { .. } => "Conflict",
            Error::Invalid(_) => "Invalid",
            Error::BadRequest(_) => "BadRequest",
            Error::Unauthorized(_) => "Unauthorized",
            Error::Forbidden(_) => "Forbidden",
            Error::MethodNotAllowed(_) => "MethodNotAllowed",
            Error::UnsupportedMediaType(_) => "UnsupportedMediaType",
            Error::Expired(_) => "Expired",
            Error::Internal(_) | Error::Io(_) => "InternalError",
        }
    }
}
