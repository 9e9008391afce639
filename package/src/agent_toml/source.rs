//! Where package bytes come from: a folder on disk or the entries of a ZIP
//! held in memory. The collector sees both through [`Source`], so the same
//! path, limit and credential rules apply to each.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

/// What a package-relative path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Node {
    File {
        size: u64,
    },
    Dir,
    Symlink,
    /// Device, socket, fifo.
    Other,
}

pub(crate) trait Source {
    /// The node at `rel` (`""` is the root); `None` when missing. Any
    /// symlink on the way reports [`Node::Symlink`].
    fn node(&self, rel: &str) -> io::Result<Option<Node>>;
    /// Child names of a directory, sorted.
    fn list(&self, rel: &str) -> io::Result<Vec<String>>;
    /// A regular file's bytes, reading at most `limit + 1` bytes (a result
    /// longer than `limit` means "too large").
    fn read(&self, rel: &str, limit: u64) -> io::Result<Vec<u8>>;
}

pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// A folder on disk. Nothing is followed: symlinks anywhere are reported.
pub(crate) struct FsSource {
    pub root: PathBuf,
}

impl FsSource {
    fn path(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }
}

fn node_of(meta: &fs::Metadata) -> Node {
    let ft = meta.file_type();
    if ft.is_symlink() {
        Node::Symlink
    } else if ft.is_dir() {
        Node::Dir
    } else if ft.is_file() {
        Node::File { size: meta.len() }
    } else {
        Node::Other
    }
}

impl Source for FsSource {
    fn node(&self, rel: &str) -> io::Result<Option<Node>> {
        // Check every component so a symlinked parent is never traversed.
        let mut cur = String::new();
        let comps: Vec<&str> = if rel.is_empty() {
            Vec::new()
        } else {
            rel.split('/').collect()
        };
        let root_meta = match fs::symlink_metadata(&self.root) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut node = node_of(&root_meta);
        for comp in comps {
            if node != Node::Dir {
                return Ok(if node == Node::Symlink {
                    Some(Node::Symlink)
                } else {
                    None
                });
            }
            cur = join(&cur, comp);
            node = match fs::symlink_metadata(self.path(&cur)) {
                Ok(m) => node_of(&m),
                Err(e)
                    if e.kind() == io::ErrorKind::NotFound
                        || e.raw_os_error() == Some(libc::ENOTDIR) =>
                {
                    return Ok(None)
                }
                Err(e) => return Err(e),
            };
        }
        Ok(Some(node))
    }

    fn list(&self, rel: &str) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(self.path(rel))? {
            let entry = entry?;
            match entry.file_name().into_string() {
                Ok(n) => names.push(n),
                Err(raw) => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("file name {raw:?} is not valid UTF-8"),
                    ))
                }
            }
        }
        names.sort();
        Ok(names)
    }

    fn read(&self, rel: &str, limit: u64) -> io::Result<Vec<u8>> {
        if self.node(rel)? == Some(Node::Symlink) {
            return Err(io::Error::other("is a symlink"));
        }
        let file: File = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(self.path(rel))?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::other("is not a regular file"));
        }
        let mut buf = Vec::new();
        file.take(limit + 1).read_to_end(&mut buf)?;
        Ok(buf)
    }
}

/// ZIP entries already read (within limits) into memory.
#[derive(Debug, Default)]
pub(crate) struct MemSource {
    pub nodes: BTreeMap<String, MemNode>,
}

#[derive(Debug)]
pub(crate) enum MemNode {
    Dir,
    File(Vec<u8>),
}

impl Source for MemSource {
    fn node(&self, rel: &str) -> io::Result<Option<Node>> {
        if rel.is_empty() {
            return Ok(Some(Node::Dir));
        }
        Ok(self.nodes.get(rel).map(|n| match n {
            MemNode::Dir => Node::Dir,
            MemNode::File(b) => Node::File {
                size: b.len() as u64,
            },
        }))
    }

    fn list(&self, rel: &str) -> io::Result<Vec<String>> {
        let prefix = if rel.is_empty() {
            String::new()
        } else {
            format!("{rel}/")
        };
        let mut out: Vec<String> = self
            .nodes
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter_map(|(k, _)| {
                let rest = &k[prefix.len()..];
                (!rest.is_empty() && !rest.contains('/')).then(|| rest.to_string())
            })
            .collect();
        out.sort();
        Ok(out)
    }

    fn read(&self, rel: &str, limit: u64) -> io::Result<Vec<u8>> {
        match self.nodes.get(rel) {
            Some(MemNode::File(b)) => Ok(b[..b.len().min(limit as usize + 1)].to_vec()),
            Some(MemNode::Dir) => Err(io::Error::other("is a directory")),
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }
}
