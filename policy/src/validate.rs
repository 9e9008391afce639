//! The one validator walker of the crate's documents: the user config file
//! ([`crate::config`]), agent.toml ([`crate::agent_toml`]) and the zotfile
//! manifest ([`crate::zotfile`]).
//!
//! A validator walks its decoded document itself and hands the walker each
//! value with the path it sits at. The walker renders the paths
//! (`a.b[2]."odd key"`), reads values as the expected type with one wording
//! for what was found instead ("expected a string, found an integer"), and
//! collects the findings. What differs between the documents (the value
//! model, the names of the types, quoting of odd keys, strings refused
//! everywhere) is the validator's [`Dialect`].

use std::marker::PhantomData;

use crate::diagnostic::Diagnostic;

/// A document's value model and how its types are named to the user.
pub trait Dialect {
    type Value;
    type Table;
    /// A table in "expected ..." messages (`a table`, `an object`).
    const TABLE: &'static str;
    /// A boolean in "expected ..." messages (`a boolean`, `true or false`).
    const BOOLEAN: &'static str;
    /// Quote keys other than letters, digits, `_` and `-` in paths.
    const QUOTE_KEYS: bool;

    /// The value's type as the user reads it ("an array").
    fn kind(v: &Self::Value) -> &'static str;
    fn as_table(v: &Self::Value) -> Option<&Self::Table>;
    fn as_str(v: &Self::Value) -> Option<&str>;
    fn as_bool(v: &Self::Value) -> Option<bool>;
    fn as_i64(v: &Self::Value) -> Option<i64>;
    fn as_array(v: &Self::Value) -> Option<&[Self::Value]>;

    /// Why a string is refused whatever field holds it (`None`: accepted).
    fn refuse_string(_s: &str) -> Option<&'static str> {
        None
    }
}

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

    pub fn table<'a>(&mut self, v: &'a D::Value, path: &str) -> Option<&'a D::Table> {
        let t = D::as_table(v);
        if t.is_none() {
            self.expected(path, D::TABLE, v);
        }
        t
    }

    /// An array of `what` ("an array of paths").
    pub fn array<'a>(&mut self, v: &'a D::Value, path: &str, what: &str) -> Option<&'a [D::Value]> {
        let a = D::as_array(v);
        if a.is_none() {
            self.expected(path, what, v);
        }
        a
    }

    pub fn string(&mut self, v: &D::Value, path: &str) -> Option<String> {
        let Some(s) = D::as_str(v) else {
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
        let b = D::as_bool(v);
        if b.is_none() {
            self.expected(path, D::BOOLEAN, v);
        }
        b
    }

    /// An integer in `min..=max` (`max == i64::MAX`: no upper bound).
    pub fn int(&mut self, v: &D::Value, path: &str, min: i64, max: i64) -> Option<i64> {
        let Some(n) = D::as_i64(v) else {
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
