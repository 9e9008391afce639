//! The one validator walker of the crate's documents: the user config file
//! ([`crate::config`]), agent.toml ([`crate::agent_toml`]) and the zotfile
//! manifest ([`crate::zotfile`]).
//!
//! A validator walks its decoded document itself and hands the walker each
//! value with the path it sits at. The walker renders the paths
//! (`a.b[2]."odd key"`), reads values as the expected type with one wording
//! for what was found instead ("expected a string, found an integer"), and
//! collects the findings. The value model (TOML or JSON values) is a
//! [`Document`]; what else differs between the validators (the names of the
//! types, quoting of odd keys, strings refused everywhere) is a [`Dialect`].

use std::marker::PhantomData;

use crate::diagnostic::Diagnostic;

/// A decoded document's value model: what the walker reads values as.
pub trait Document: Sized {
    type Table;
    fn as_table(&self) -> Option<&Self::Table>;
    fn as_str(&self) -> Option<&str>;
    fn as_bool(&self) -> Option<bool>;
    fn as_i64(&self) -> Option<i64>;
    fn as_array(&self) -> Option<&[Self]>;
}

impl Document for toml::Value {
    type Table = toml::Table;
    fn as_table(&self) -> Option<&toml::Table> {
        toml::Value::as_table(self)
    }
    fn as_str(&self) -> Option<&str> {
        toml::Value::as_str(self)
    }
    fn as_bool(&self) -> Option<bool> {
        toml::Value::as_bool(self)
    }
    fn as_i64(&self) -> Option<i64> {
        toml::Value::as_integer(self)
    }
    fn as_array(&self) -> Option<&[Self]> {
        toml::Value::as_array(self).map(Vec::as_slice)
    }
}

impl Document for serde_json::Value {
    type Table = serde_json::Map<String, serde_json::Value>;
    fn as_table(&self) -> Option<&Self::Table> {
        serde_json::Value::as_object(self)
    }
    fn as_str(&self) -> Option<&str> {
        serde_json::Value::as_str(self)
    }
    fn as_bool(&self) -> Option<bool> {
        serde_json::Value::as_bool(self)
    }
    fn as_i64(&self) -> Option<i64> {
        serde_json::Value::as_i64(self)
    }
    fn as_array(&self) -> Option<&[Self]> {
        serde_json::Value::as_array(self).map(Vec::as_slice)
    }
}

/// One validator's document: its value model, how its types are named to
/// the user, and its rules that hold for every field.
pub trait Dialect {
    type Value: Document;
    /// A table in "expected ..." messages (`a table`, `an object`).
    const TABLE: &'static str;
    /// A boolean in "expected ..." messages (`a boolean`, `true or false`).
    const BOOLEAN: &'static str;
    /// Quote keys other than letters, digits, `_` and `-` in paths.
    const QUOTE_KEYS: bool;

    /// The value's type as the user reads it ("an array").
    fn kind(v: &Self::Value) -> &'static str;

    /// `v` as a table, when this document counts it as one.
    fn table(v: &Self::Value) -> Option<&Table<Self>> {
        v.as_table()
    }

    /// Why a string is refused whatever field holds it (`None`: accepted).
    fn refuse_string(_s: &str) -> Option<&'static str> {
        None
    }
}

/// The table type of a dialect's values.
pub type Table<D> = <<D as Dialect>::Value as Document>::Table;

/// Typed access to a document's values that records what is wrong, with
/// the path: errors, and warnings for what is only questionable.
pub struct Walker<D> {
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    dialect: PhantomData<D>,
}

impl<D> Default for Walker<D> {
    fn default() -> Self {
        Walker {
            errors: Vec::new(),
            warnings: Vec::new(),
            dialect: PhantomData,
        }
    }
}

impl<D: Dialect> Walker<D> {
    pub fn err(&mut self, path: &str, message: impl Into<String>) {
        self.errors.push(Diagnostic {
            path: path.to_string(),
            message: message.into(),
        });
    }

    pub fn warn(&mut self, path: &str, message: impl Into<String>) {
        self.warnings.push(Diagnostic {
            path: path.to_string(),
            message: message.into(),
        });
    }

    /// True when an error is about `path` or a field inside it.
    pub fn has_error_under(&self, path: &str) -> bool {
        self.errors
            .iter()
            .any(|e| e.path == path || e.path.starts_with(&format!("{path}.")))
    }

    /// The path of `key` in the table at `path`: `a.b`, `a."odd key"`.
    pub fn key(&self, path: &str, key: &str) -> String {
        let plain = !D::QUOTE_KEYS
            || (!key.is_empty()
                && key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
        let k = if plain {
            key.to_string()
        } else {
            format!("{key:?}")
        };
        if path.is_empty() {
            k
        } else {
            format!("{path}.{k}")
        }
    }

    /// The path of item `i` of the array at `path`: `a[3]`.
    pub fn index(&self, path: &str, i: usize) -> String {
        format!("{path}[{i}]")
    }

    /// Record that `v` is not `what` was expected ("expected {what}, found
    /// a string").
    pub fn expected(&mut self, path: &str, what: &str, v: &D::Value) {
        self.err(path, format!("expected {what}, found {}", D::kind(v)));
    }

    pub fn table<'a>(&mut self, v: &'a D::Value, path: &str) -> Option<&'a Table<D>> {
        let t = D::table(v);
        if t.is_none() {
            self.expected(path, D::TABLE, v);
        }
        t
    }

    /// An array of `what` ("an array of paths").
    pub fn array<'a>(&mut self, v: &'a D::Value, path: &str, what: &str) -> Option<&'a [D::Value]> {
        let a = v.as_array();
        if a.is_none() {
            self.expected(path, what, v);
        }
        a
    }

    pub fn string(&mut self, v: &D::Value, path: &str) -> Option<String> {
        let Some(s) = v.as_str() else {
            self.expected(path, "a string", v);
            return None;
        };
        if let Some(why) = D::refuse_string(s) {
            self.err(path, why);
            return None;
        }
        Some(s.to_string())
    }

    pub fn nonempty(&mut self, v: &D::Value, path: &str) -> Option<String> {
        let s = self.string(v, path)?;
        if s.trim().is_empty() {
            self.err(path, "must not be empty");
            return None;
        }
        Some(s)
    }

    /// An array of strings, each checked as [`Walker::string`] at its
    /// index; `None` when any is wrong.
    pub fn strings(&mut self, v: &D::Value, path: &str) -> Option<Vec<String>> {
        let items = self.array(v, path, "an array of strings")?;
        let mut out = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match self.string(item, &self.index(path, i)) {
                Some(s) => out.push(s),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// A string that must be one of `allowed`.
    pub fn enumeration(&mut self, v: &D::Value, path: &str, allowed: &[&str]) -> Option<String> {
        let s = self.string(v, path)?;
        if allowed.contains(&s.as_str()) {
            return Some(s);
        }
        let list = allowed
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ");
        self.err(
            path,
            format!("unsupported value `{s}`; expected one of {list}"),
        );
        None
    }

    pub fn bool(&mut self, v: &D::Value, path: &str) -> Option<bool> {
        let b = v.as_bool();
        if b.is_none() {
            self.expected(path, D::BOOLEAN, v);
        }
        b
    }

    /// An integer in `min..=max` (`max == i64::MAX`: no upper bound).
    pub fn int(&mut self, v: &D::Value, path: &str, min: i64, max: i64) -> Option<i64> {
        let Some(n) = v.as_i64() else {
            self.expected(path, "an integer", v);
            return None;
        };
        if (min..=max).contains(&n) {
            Some(n)
        } else if max == i64::MAX {
            self.err(path, format!("must be at least {min}, found {n}"));
            None
        } else {
            self.err(path, format!("must be between {min} and {max}, found {n}"));
            None
        }
    }
}
