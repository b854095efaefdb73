//! Random strings and identifiers (`randAlphaNum`, `randBytes`, `uuidv4`, `shuffle`...) and
//! the cryptographic functions this engine does not provide, which fail with a clear error.

use base64::Engine;
use rand::Rng;
use rand::seq::SliceRandom;

use crate::funcs::{FuncMap, FuncResult, Function, Param};
use crate::sprig::conv::{check_size, int_arg, ok_str, str_arg};
use crate::value::Value;

/// Sprig functions registered only to explain that they are not supported.
pub const UNSUPPORTED: [&str; 14] = [
    "bcrypt",
    "htpasswd",
    "genPrivateKey",
    "derivePassword",
    "buildCustomCert",
    "genCA",
    "genCAWithKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    "encryptAES",
    "decryptAES",
    "toToml",
];

/// Registers the random functions and the unsupported ones.
pub fn register(map: &mut FuncMap) {
    let sets: [(&str, &[u8]); 4] = [
        (
            "randAlphaNum",
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        ),
        (
            "randAlpha",
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        ),
        ("randNumeric", b"0123456789"),
        (
            "randAscii",
            b" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~",
        ),
    ];
    for (name, alphabet) in sets {
        map.insert(
            name,
            Function::new(&[Param::Int], move |a| {
                random_string(int_arg(&a[0]), alphabet)
            }),
        );
    }
    map.insert(
        "randBytes",
        Function::new(&[Param::Int], |a| {
            let count = usize::try_from(int_arg(&a[0])).unwrap_or(0);
            check_size(count.saturating_mul(2), "randBytes")?;
            let mut bytes = vec![0u8; count];
            rand::rng().fill(bytes.as_mut_slice());
            ok_str(base64::engine::general_purpose::STANDARD.encode(bytes))
        }),
    );
    map.insert(
        "uuidv4",
        Function::new(&[], |_| ok_str(uuid::Uuid::new_v4().to_string())),
    );
    map.insert(
        "shuffle",
        Function::new(&[Param::String], |a| {
            let mut chars: Vec<char> = str_arg(&a[0]).chars().collect();
            chars.shuffle(&mut rand::rng());
            ok_str(chars.into_iter().collect::<String>())
        }),
    );
    for name in UNSUPPORTED {
        map.insert(
            name,
            Function::variadic(&[], Param::Any, move |_| -> FuncResult {
                Err(format!("{name} is not supported by sveltos-events").into())
            }),
        );
    }
}

fn random_string(count: i64, alphabet: &'static [u8]) -> FuncResult {
    if count < 0 {
        return Err("randomString: count must be >= 0".into());
    }
    check_size(count as usize, "random string")?;
    let mut rng = rand::rng();
    let text: String = (0..count)
        .map(|_| alphabet[rng.random_range(0..alphabet.len())] as char)
        .collect();
    Ok(Value::string(text))
}
