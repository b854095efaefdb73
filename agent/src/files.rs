//! Where the offline commands (`eval`, `render`) read documents: files, or standard input for
//! `-` as kubectl reads it (once per invocation), each named in messages as the user knows it.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result};

/// Largest input read from one file or from standard input.
pub const MAX_FILE: u64 = api::load::MAX_INPUT_BYTES as u64;

/// Whether `path` is `-`, standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// How messages name `path`: `standard input` for `-`, otherwise as written.
pub fn name(path: &Path) -> String {
    if is_stdin(path) {
        "standard input".to_owned()
    } else {
        path.display().to_string()
    }
}

/// Refuses `-` named more than once: standard input can be read only once.
pub fn stdin_at_most_once<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Result<()> {
    if paths.into_iter().filter(|path| is_stdin(path)).count() > 1 {
        return Err(Error::Input(
            "- (standard input) is named more than once: it can be read only once".into(),
        ));
    }
    Ok(())
}

/// The text of a file, or of standard input for `-`, refusing more than [`MAX_FILE`] bytes.
pub fn read_text(path: &Path) -> Result<String> {
    let failed = |e: std::io::Error| Error::Input(format!("{}: {e}", name(path)));
    let mut bytes = Vec::new();
    if is_stdin(path) {
        std::io::stdin()
            .lock()
            .take(MAX_FILE + 1)
            .read_to_end(&mut bytes)
            .map_err(failed)?;
    } else {
        std::fs::File::open(path)
            .and_then(|file| file.take(MAX_FILE + 1).read_to_end(&mut bytes))
            .map_err(failed)?;
    }
    if bytes.len() as u64 > MAX_FILE {
        return Err(Error::Input(format!(
            "{}: larger than {MAX_FILE} bytes",
            name(path)
        )));
    }
    String::from_utf8(bytes)
        .map_err(|e| Error::Input(format!("{}: not UTF-8 text: {e}", name(path))))
}

/// The objects of one resource file.
#[derive(Debug, Default)]
pub struct Resources {
    /// Its objects, Lists read as their items, in order.
    pub objects: Vec<Value>,
    /// What the reader let pass that the user should know, each naming the file.
    pub notes: Vec<String>,
}

/// Reads the objects of a file (or of standard input for `-`) as `kubectl apply -f` reads
/// them: every YAML or JSON document, a List as its items.
pub fn read_resources(path: &Path) -> Result<Resources> {
    let text = read_text(path)?;
    let (objects, notes) = api::load::resources_noting(&text)
        .map_err(|e| Error::Input(format!("{}: {e}", name(path))))?;
    let notes = notes
        .into_iter()
        .map(|note| format!("{}: {note}", name(path)))
        .collect();
    Ok(Resources { objects, notes })
}

/// `NAME holds no resources` (`A, B hold ...` for several), for files that hold nothing.
pub fn hold_nothing(names: &[String]) -> String {
    match names {
        [one] => format!("{one} holds no resources"),
        several => format!("{} hold no resources", several.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn standard_input_is_named_in_words_and_read_once() {
        assert_eq!(name(Path::new("-")), "standard input");
        assert_eq!(name(Path::new("./-")), "./-");
        let paths = [Path::new("es.yaml"), Path::new("-")];
        assert!(stdin_at_most_once(paths).is_ok());
        let error = stdin_at_most_once([Path::new("-"), Path::new("-")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "- (standard input) is named more than once: it can be read only once"
        );
    }

    #[test]
    fn a_file_larger_than_the_limit_is_refused_with_its_name() {
        let dir = std::env::temp_dir().join(format!("agent-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.yaml");
        std::fs::write(&big, vec![b'#'; MAX_FILE as usize + 1]).unwrap();
        let error = read_text(&big).unwrap_err().to_string();
        assert!(
            error.ends_with("big.yaml: larger than 8388608 bytes"),
            "{error}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
