//! `extensions/<dir>/extension.json`: a bundled extension's manifest (the
//! zot extension protocol, compatible with the reference runtime's).
//!
//! ```json
//! {"name": "todo", "exec": "./todo.py", "args": [], "version": "1.0.0",
//!  "language": "python", "description": "keeps a todo list", "enabled": true}
//! ```
//!
//! `name` and `exec` are required. `exec` is a bare program name (looked
//! up through the sandbox's `PATH`), an absolute path, or a path relative
//! to the extension's directory (it must contain a `/` and may not leave
//! the directory). Errors name the field.

use serde_json::Value;

/// The directory of bundled extensions in an agent.
pub const EXTENSIONS_DIR: &str = "extensions";
/// The manifest file of one extension.
pub const EXTENSION_FILE: &str = "extension.json";
/// Largest `extension.json` accepted.
pub const MAX_EXTENSION_FILE: usize = 64 << 10;

/// A parsed, valid `extension.json`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExtensionManifest {
    pub name: String,
    pub exec: String,
    pub args: Vec<String>,
    pub version: Option<String>,
    pub language: Option<String>,
    pub description: Option<String>,
    /// Default true; a disabled extension is listed but not started.
    pub enabled: bool,
}

/// How `exec` is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecKind<'a> {
    /// A bare name, looked up through `PATH` (the sandbox's).
    Path(&'a str),
    /// An absolute path.
    Absolute(&'a str),
    /// Relative to the extension's directory.
    Relative(&'a str),
}

impl ExtensionManifest {
    pub fn exec_kind(&self) -> ExecKind<'_> {
        if self.exec.starts_with('/') {
            ExecKind::Absolute(&self.exec)
        } else if self.exec.contains('/') {
            ExecKind::Relative(&self.exec)
        } else {
            ExecKind::Path(&self.exec)
        }
    }
}

/// Whether `name` is a valid extension (or extension tool / command) name:
/// 1 to 64 of `A-Z a-z 0-9 _ -` (and `.` after the first), starting with a
/// letter or digit.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn text(v: &Value, field: &str, max: usize) -> Result<Option<String>, String> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.len() > max => Err(format!("{field}: longer than {max} bytes")),
        Some(Value::String(s)) if s.contains('\0') => Err(format!("{field}: contains a NUL byte")),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{field}: must be a string")),
    }
}

/// Parse and check an `extension.json`. Returns the manifest and warnings
/// (unknown fields); an error names the field.
pub fn parse(bytes: &[u8]) -> Result<(ExtensionManifest, Vec<String>), String> {
    if bytes.len() > MAX_EXTENSION_FILE {
        return Err(format!("larger than {MAX_EXTENSION_FILE} bytes"));
    }
    // Duplicate keys are errors, as in `manifest.json`.
    let v: Value = super::strict_json(bytes)?;
    let Value::Object(obj) = &v else {
        return Err("must be a JSON object".into());
    };
    const KNOWN: &[&str] = &[
        "name",
        "exec",
        "args",
        "version",
        "language",
        "description",
        "enabled",
    ];
    let warnings = obj
        .keys()
        .filter(|k| !KNOWN.contains(&k.as_str()))
        .map(|k| format!("{k}: unknown field, ignored"))
        .collect();
    let name = text(&v, "name", 64)?.ok_or("name: required")?;
    if !valid_name(&name) {
        return Err(format!(
            "name: {name:?} is not a valid extension name (1 to 64 letters, digits, `_`, `-`, `.`, starting with a letter or digit)"
        ));
    }
    let exec = text(&v, "exec", 4096)?.ok_or("exec: required")?;
    if exec.trim().is_empty() {
        return Err("exec: must not be empty".into());
    }
    if !exec.starts_with('/') && exec.contains('/') && exec.split('/').any(|c| c == "..") {
        return Err(format!(
            "exec: {exec:?} leaves the extension's directory (a relative exec may not contain `..`)"
        ));
    }
    let args = match v.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => {
            let mut out = Vec::new();
            for (i, x) in a.iter().enumerate() {
                match x.as_str() {
                    Some(s) if !s.contains('\0') && s.len() <= 4096 => out.push(s.to_string()),
                    _ => {
                        return Err(format!(
                            "args[{i}]: must be a string without NUL bytes, at most 4096 bytes"
                        ))
                    }
                }
            }
            if out.len() > 256 {
                return Err("args: more than 256 entries".into());
            }
            out
        }
        Some(_) => return Err("args: must be an array of strings".into()),
    };
    let enabled = match v.get("enabled") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("enabled: must be true or false".into()),
    };
    Ok((
        ExtensionManifest {
            name,
            exec,
            args,
            version: text(&v, "version", 128)?,
            language: text(&v, "language", 64)?,
            description: text(&v, "description", 4096)?,
            enabled,
        },
        warnings,
    ))
}

/// The extension directory a package path belongs to when it is an
/// extension's manifest: `extensions/<dir>/extension.json` -> `<dir>`.
pub fn manifest_dir(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(EXTENSIONS_DIR)?.strip_prefix('/')?;
    let (dir, file) = rest.split_once('/')?;
    (file == EXTENSION_FILE && !dir.is_empty()).then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_names_the_field() {
        let (m, w) = parse(br#"{"name":"todo","exec":"./todo.py","args":["-u"],"x":1}"#).unwrap();
        assert_eq!(m.name, "todo");
        assert!(m.enabled);
        assert_eq!(m.exec_kind(), ExecKind::Relative("./todo.py"));
        assert_eq!(w, vec!["x: unknown field, ignored".to_string()]);
        for (bad, field) in [
            (&br#"{"exec":"x"}"#[..], "name: required"),
            (br#"{"name":"a b","exec":"x"}"#, "name:"),
            (br#"{"name":"a"}"#, "exec: required"),
            (br#"{"name":"a","exec":"../x/y"}"#, "exec:"),
            (br#"{"name":"a","exec":"x","args":[1]}"#, "args[0]"),
            (br#"{"name":"a","exec":"x","enabled":"yes"}"#, "enabled"),
            (br#"[]"#, "object"),
            (b"{", "JSON"),
            (br#"{"name":"a","exec":"x","exec":"y"}"#, "duplicate key"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(field), "{e}");
        }
        assert_eq!(manifest_dir("extensions/todo/extension.json"), Some("todo"));
        assert_eq!(manifest_dir("extensions/todo/x/extension.json"), None);
        assert_eq!(manifest_dir("skills/todo/extension.json"), None);
    }
}
