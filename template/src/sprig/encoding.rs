//! Encodings and digests: `b64enc`/`b64dec`, `b32enc`/`b32dec`, `sha1sum`, `sha256sum`,
//! `sha512sum`, `adler32sum`.

use std::fmt::Write;

use base64::Engine;
use sha1::Digest;

use crate::funcs::{FuncMap, Function, Param};
use crate::sprig::conv::{StrFn, ok_str, str_arg};

/// Registers the encoding and digest functions.
pub fn register(map: &mut FuncMap) {
    let fns: [(&str, StrFn); 8] = [
        ("b64enc", |s| {
            base64::engine::general_purpose::STANDARD.encode(s)
        }),
        ("b64dec", b64dec),
        ("b32enc", |s| data_encoding::BASE32.encode(s.as_bytes())),
        ("b32dec", b32dec),
        ("sha1sum", |s| hex(&sha1::Sha1::digest(s.as_bytes()))),
        ("sha256sum", |s| hex(&sha2::Sha256::digest(s.as_bytes()))),
        ("sha512sum", |s| hex(&sha2::Sha512::digest(s.as_bytes()))),
        ("adler32sum", |s| {
            let mut adler = adler2::Adler32::new();
            adler.write_slice(s.as_bytes());
            adler.checksum().to_string()
        }),
    ];
    for (name, f) in fns {
        map.insert(
            name,
            Function::new(&[Param::String], move |a| ok_str(f(str_arg(&a[0])))),
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Decoded bytes as text, or Go's error text (sprig returns it as the result).
fn b64dec(s: &str) -> String {
    match base64::engine::general_purpose::STANDARD.decode(s) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) => {
            let offset = match error {
                base64::DecodeError::InvalidByte(offset, _)
                | base64::DecodeError::InvalidLastSymbol(offset, _) => offset,
                base64::DecodeError::InvalidLength(len) => len / 4 * 4,
                base64::DecodeError::InvalidPadding => s.len(),
            };
            format!("illegal base64 data at input byte {offset}")
        }
    }
}

fn b32dec(s: &str) -> String {
    match data_encoding::BASE32.decode(s.as_bytes()) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) => format!("illegal base32 data at input byte {}", error.position),
    }
}
