//! Where `zot pack` (and `zot convert`) write: the output path rules and
//! the creation of missing parent directories, undone when writing fails.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::PackageError;

/// A resolved output file.
#[derive(Debug, Clone)]
pub struct Output {
    /// The path as the user wrote it (with the default name or extension
    /// added), for messages.
    pub path: PathBuf,
    /// Absolute: the canonical longest existing ancestor joined with the
    /// missing directories and the file name.
    pub abs: PathBuf,
    existing: PathBuf,
    missing: Vec<OsString>,
}

impl Output {
    /// `out` defaults to `<name>.<ext>` in the current directory; an existing
    /// directory or a path ending in `/` receives `<name>.<ext>`; `.<ext>` is
    /// appended when missing. Nothing is created.
    pub fn resolve(out: Option<&Path>, name: &str, ext: &str) -> Result<Output, PackageError> {
        let default = format!("{name}.{ext}");
        let path = match out {
            None => PathBuf::from(default),
            Some(o) if o.as_os_str().as_encoded_bytes().ends_with(b"/") || o.is_dir() => {
                o.join(default)
            }
            Some(o) => {
                let mut s = o.as_os_str().to_owned();
                if !o
                    .as_os_str()
                    .as_encoded_bytes()
                    .ends_with(format!(".{ext}").as_bytes())
                {
                    s.push(format!(".{ext}"));
                }
                PathBuf::from(s)
            }
        };
        let Some(file_name) = path.file_name().map(|f| f.to_owned()) else {
            return Err(PackageError::BadName {
                path,
                reason: "output has no file name",
            });
        };
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let (existing, missing) = split_existing(&parent)?;
        let abs = missing
            .iter()
            .fold(existing.clone(), |p, c| p.join(c))
            .join(file_name);
        Ok(Output {
            path,
            abs,
            existing,
            missing,
        })
    }

    /// Create the missing parent directories. They are removed again when
    /// the returned guard is dropped without [`CreatedDirs::keep`].
    pub fn create_parents(&self) -> Result<CreatedDirs, PackageError> {
        let mut created = CreatedDirs(Vec::new());
        let mut cur = self.existing.clone();
        for c in &self.missing {
            cur.push(c);
            fs::create_dir(&cur).map_err(PackageError::io("creating output directory", &cur))?;
            created.0.push(cur.clone());
        }
        Ok(created)
    }
}

/// Directories [`Output::create_parents`] made, deepest last.
#[must_use = "dropping the guard removes the directories it created"]
pub struct CreatedDirs(Vec<PathBuf>);

impl CreatedDirs {
    /// The output was written: keep the directories.
    pub fn keep(mut self) {
        self.0.clear();
    }
}

impl Drop for CreatedDirs {
    fn drop(&mut self) {
        for d in self.0.iter().rev() {
            let _ = fs::remove_dir(d);
        }
    }
}

/// The canonical longest existing ancestor of `dir` and the components
/// below it that do not exist yet.
fn split_existing(dir: &Path) -> Result<(PathBuf, Vec<OsString>), PackageError> {
    let mut missing = Vec::new();
    let mut cur = dir.to_path_buf();
    loop {
        match cur.canonicalize() {
            Ok(c) => {
                missing.reverse();
                return Ok((c, missing));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let Some(Component::Normal(name)) = cur.components().next_back() else {
                    return Err(PackageError::io("resolving output directory", dir)(e));
                };
                missing.push(name.to_owned());
                cur = match cur.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                };
            }
            Err(e) => return Err(PackageError::io("resolving output directory", dir)(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_rules() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().canonicalize().unwrap();
        let r = |o: &str| Output::resolve(Some(&d.join(o)), "agent", "zot").unwrap();
        assert_eq!(r("x").abs, d.join("x.zot"));
        assert_eq!(r("x.zot").abs, d.join("x.zot"));
        assert_eq!(r("out/").abs, d.join("out/agent.zot"));
        fs::create_dir(d.join("dist")).unwrap();
        assert_eq!(r("dist").abs, d.join("dist/agent.zot"));
        let o = r("a/b/c.zot");
        assert_eq!(o.abs, d.join("a/b/c.zot"));
        assert!(!d.join("a").exists(), "resolve creates nothing");
        let g = o.create_parents().unwrap();
        assert!(d.join("a/b").is_dir());
        drop(g);
        assert!(
            !d.join("a").exists(),
            "a dropped guard removes what it made"
        );
        o.create_parents().unwrap().keep();
        assert!(d.join("a/b").is_dir());
    }
}
