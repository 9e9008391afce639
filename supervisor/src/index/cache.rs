//! The index persisted per set of workspace roots under
//! `$ZOT_HOME/cache/index/`: every directory's identity, mtime and ctime,
//! its child directories and what git finds in it, so that a one-shot
//! launch validates it with one `statx` per directory.
//!
//! Trusted only when it is this user's regular file, mode 0600, in a
//! directory of this user's that nobody else can write, and its HMAC (a
//! key of this user's, kept next to it) checks: a corrupt, edited,
//! foreign-owned or unparsable cache is discarded and rebuilt.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::tree::{DirStat, Id, Mark, Node, Stamp, Tree, NO_PARENT};

const MAGIC: &[u8; 8] = b"ZOTIDX1\n";
const KEY_FILE: &str = "key";
/// A cache bigger than this is not read.
const MAX_BYTES: u64 = 256 << 20;

/// Why a cache was not used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("no cache yet")]
    Missing,
    #[error("{path}: {what}")]
    Untrusted { path: PathBuf, what: &'static str },
    #[error("{path}: corrupt ({what})")]
    Corrupt { path: PathBuf, what: &'static str },
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl CacheError {
    /// Whether the report should mention it (a missing cache is normal).
    pub fn worth_noting(&self) -> bool {
        !matches!(self, CacheError::Missing)
    }
}

/// Where the index of `roots` lives below the state directory `state`.
pub fn path_for(state: &Path, roots: &[PathBuf]) -> PathBuf {
    let mut h = Sha256::new();
    for r in roots {
        h.update(r.as_os_str().as_bytes());
        h.update([0]);
    }
    let d = h.finalize();
    state
        .join("cache/index")
        .join(format!("{}.idx", hex::encode(&d[..12])))
}

fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// A directory of this user's that no one else can write.
fn check_dir(dir: &Path) -> Result<(), CacheError> {
    let m = std::fs::symlink_metadata(dir).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            CacheError::Missing
        } else {
            CacheError::Io {
                what: format!("reading {}", dir.display()),
                source: e,
            }
        }
    })?;
    if !m.is_dir() || m.uid() != euid() || m.mode() & 0o022 != 0 {
        return Err(CacheError::Untrusted {
            path: dir.to_path_buf(),
            what: "not a directory of this user's that only this user can write",
        });
    }
    Ok(())
}

/// Read a private file of this user's: regular, owned by us, mode 0600.
fn read_private(path: &Path, max: u64) -> Result<Vec<u8>, CacheError> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => CacheError::Missing,
            _ => CacheError::Untrusted {
                path: path.to_path_buf(),
                what: "cannot be opened as a regular file",
            },
        })?;
    let m = f.metadata().map_err(|e| CacheError::Io {
        what: format!("reading {}", path.display()),
        source: e,
    })?;
    if !m.is_file() {
        return Err(CacheError::Untrusted {
            path: path.to_path_buf(),
            what: "not a regular file",
        });
    }
    if m.uid() != euid() {
        return Err(CacheError::Untrusted {
            path: path.to_path_buf(),
            what: "owned by another user",
        });
    }
    if m.mode() & 0o077 != 0 {
        return Err(CacheError::Untrusted {
            path: path.to_path_buf(),
            what: "readable or writable by other users",
        });
    }
    if m.len() > max {
        return Err(CacheError::Corrupt {
            path: path.to_path_buf(),
            what: "too large",
        });
    }
    let mut buf = Vec::with_capacity(m.len() as usize);
    f.take(max)
        .read_to_end(&mut buf)
        .map_err(|e| CacheError::Io {
            what: format!("reading {}", path.display()),
            source: e,
        })?;
    Ok(buf)
}

/// The HMAC key of the cache directory, made on first use.
fn key(dir: &Path, create: bool) -> Result<Vec<u8>, CacheError> {
    let p = dir.join(KEY_FILE);
    match read_private(&p, 64) {
        Ok(k) if k.len() == 32 => return Ok(k),
        Ok(_) => {
            return Err(CacheError::Corrupt {
                path: p,
                what: "key of the wrong length",
            })
        }
        Err(CacheError::Missing) if create => {}
        Err(e) => return Err(e),
    }
    let mut k = vec![0u8; 32];
    let mut got = 0;
    while got < k.len() {
        // SAFETY: writes within the buffer.
        let n = unsafe { libc::getrandom(k[got..].as_mut_ptr().cast(), k.len() - got, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(CacheError::Io {
                what: "getrandom".into(),
                source: e,
            });
        }
        got += n as usize;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&p)
        .map_err(|e| CacheError::Io {
            what: format!("creating {}", p.display()),
            source: e,
        })?;
    f.write_all(&k).map_err(|e| CacheError::Io {
        what: format!("writing {}", p.display()),
        source: e,
    })?;
    Ok(k)
}

fn mac(key: &[u8], body: &[u8]) -> [u8; 32] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length");
    m.update(body);
    m.finalize().into_bytes().into()
}

/// Load the cache at `path` for exactly these `roots`.
pub fn load(path: &Path, roots: &[PathBuf]) -> Result<Tree, CacheError> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    check_dir(dir)?;
    let buf = read_private(path, MAX_BYTES)?;
    let corrupt = |what| CacheError::Corrupt {
        path: path.to_path_buf(),
        what,
    };
    if buf.len() < MAGIC.len() + 32 || &buf[..MAGIC.len()] != MAGIC {
        return Err(corrupt("not an index"));
    }
    let k = key(dir, false).map_err(|e| match e {
        CacheError::Missing => corrupt("no key"),
        e => e,
    })?;
    let (body, tag) = buf.split_at(buf.len() - 32);
    let want = mac(&k, body);
    // Constant time is not needed (the key never leaves this user), but
    // costs nothing.
    if want.iter().zip(tag).fold(0u8, |a, (x, y)| a | (x ^ y)) != 0 {
        return Err(corrupt("checksum mismatch"));
    }
    let tree = decode(&body[MAGIC.len()..]).ok_or_else(|| corrupt("unparsable"))?;
    if tree.roots != super::tree::top_roots(roots) {
        return Err(corrupt("for other roots"));
    }
    Ok(tree)
}

/// Write `tree` to `path` atomically (a private temporary file renamed
/// over it), mode 0600.
pub fn save(path: &Path, tree: &Tree) -> Result<(), CacheError> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let io = |what: String| move |source| CacheError::Io { what, source };
    if let Err(CacheError::Missing) = check_dir(dir) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io(format!("creating {}", dir.display())))?;
    }
    check_dir(dir)?;
    let k = key(dir, true)?;
    let mut body = MAGIC.to_vec();
    encode(tree, &mut body);
    let tag = mac(&k, &body);
    body.extend_from_slice(&tag);
    let mut tmp = tempfile::Builder::new()
        .prefix(".idx-")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .map_err(io(format!("creating a file in {}", dir.display())))?;
    tmp.write_all(&body)
        .map_err(io(format!("writing {}", tmp.path().display())))?;
    tmp.persist(path).map_err(|e| CacheError::Io {
        what: format!("renaming into {}", path.display()),
        source: e.error,
    })?;
    Ok(())
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn put_stamp(out: &mut Vec<u8>, s: Stamp) {
    out.extend_from_slice(&s.sec.to_le_bytes());
    out.extend_from_slice(&s.nsec.to_le_bytes());
}

fn put_id(out: &mut Vec<u8>, id: Id) {
    out.extend_from_slice(&id.dev.to_le_bytes());
    out.extend_from_slice(&id.ino.to_le_bytes());
}

fn encode(tree: &Tree, out: &mut Vec<u8>) {
    put_stamp(out, tree.taken);
    out.push(tree.complete as u8);
    out.extend_from_slice(&(tree.roots.len() as u32).to_le_bytes());
    for r in &tree.roots {
        put_bytes(out, r.as_os_str().as_bytes());
    }
    let order = tree.walk_order();
    let mut map = vec![NO_PARENT; tree.nodes.len()];
    for (new, (old, _)) in order.iter().enumerate() {
        map[*old as usize] = new as u32;
    }
    out.extend_from_slice(&(order.len() as u32).to_le_bytes());
    for (old, _) in &order {
        let n = &tree.nodes[*old as usize];
        put_bytes(out, n.name.as_bytes());
        let parent = if n.parent == NO_PARENT {
            NO_PARENT
        } else {
            map[n.parent as usize]
        };
        out.extend_from_slice(&parent.to_le_bytes());
        put_id(out, n.stat.id);
        put_stamp(out, n.stat.mtime);
        put_stamp(out, n.stat.ctime);
        match n.mark {
            None => out.push(0),
            Some(Mark::DotGitDir(id)) => {
                out.push(1);
                put_id(out, id);
            }
            Some(Mark::DotGitFile(id)) => {
                out.push(2);
                put_id(out, id);
            }
            Some(Mark::Bare) => out.push(3),
        }
        out.push(n.unlistable as u8);
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        let n = self.u32()? as usize;
        self.take(n).map(<[u8]>::to_vec)
    }
    fn stamp(&mut self) -> Option<Stamp> {
        let sec = self.u64()? as i64;
        let nsec = self.u32()?;
        (nsec < 1_000_000_000).then_some(Stamp { sec, nsec })
    }
    fn id(&mut self) -> Option<Id> {
        Some(Id {
            dev: self.u64()?,
            ino: self.u64()?,
        })
    }
}

fn decode(body: &[u8]) -> Option<Tree> {
    let mut r = Reader(body);
    let taken = r.stamp()?;
    let complete = r.u8()? == 1;
    let nroots = r.u32()? as usize;
    if nroots > 4096 {
        return None;
    }
    let mut roots = Vec::with_capacity(nroots);
    for _ in 0..nroots {
        roots.push(PathBuf::from(OsString::from_vec(r.bytes()?)));
    }
    let n = r.u32()? as usize;
    if n > body.len() / 40 + 1 || n < nroots {
        return None;
    }
    let mut nodes: Vec<Node> = Vec::with_capacity(n);
    for i in 0..n {
        let name = OsString::from_vec(r.bytes()?);
        let parent = r.u32()?;
        let stat = DirStat {
            id: r.id()?,
            mtime: r.stamp()?,
            ctime: r.stamp()?,
        };
        let mark = match r.u8()? {
            0 => None,
            1 => Some(Mark::DotGitDir(r.id()?)),
            2 => Some(Mark::DotGitFile(r.id()?)),
            3 => Some(Mark::Bare),
            _ => return None,
        };
        let unlistable = r.u8()? == 1;
        // Roots first, in order, without parents; every other node after
        // its parent, with a plain name.
        if i < nroots {
            if parent != NO_PARENT || name != roots[i].as_os_str() {
                return None;
            }
        } else {
            if parent as usize >= i
                || name.is_empty()
                || name.as_bytes().contains(&b'/')
                || name == "."
                || name == ".."
            {
                return None;
            }
            nodes[parent as usize].children.push(i as u32);
        }
        nodes.push(Node {
            name,
            parent,
            stat,
            children: Vec::new(),
            mark,
            unlistable,
            dead: false,
        });
    }
    if !r.0.is_empty() {
        return None;
    }
    let mut tree = Tree {
        roots,
        nodes,
        taken,
        complete,
        flagged: Vec::new(),
    };
    tree.reflag();
    Some(tree)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, Tree) {
        let t = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(t.path()).unwrap();
        let ws = base.join("ws");
        fs::create_dir_all(ws.join("a/b/.git")).unwrap();
        fs::create_dir_all(ws.join("c/d")).unwrap();
        let state = base.join("state");
        let tree = Tree::scan(std::slice::from_ref(&ws), super::super::SCAN_BUDGET);
        (t, ws, state, tree)
    }

    #[test]
    fn round_trip_private_and_atomic() {
        let (_t, ws, state, tree) = setup();
        let p = path_for(&state, std::slice::from_ref(&ws));
        save(&p, &tree).unwrap();
        let m = fs::metadata(&p).unwrap();
        assert_eq!(m.mode() & 0o777, 0o600);
        let back = load(&p, std::slice::from_ref(&ws)).unwrap();
        assert_eq!(back.repos(), tree.repos());
        assert_eq!(back.dirs(), tree.dirs());
        assert!(matches!(
            load(&p, &[ws.join("a")]),
            Err(CacheError::Corrupt { .. })
        ));
    }

    #[test]
    fn an_edited_cache_is_not_trusted() {
        let (_t, ws, state, tree) = setup();
        let p = path_for(&state, std::slice::from_ref(&ws));
        save(&p, &tree).unwrap();
        // Drop the repository: its mark byte (1 = `.git` directory) made 0.
        let mut bytes = fs::read(&p).unwrap();
        let b = tree.nodes.iter().position(|n| n.mark.is_some()).unwrap();
        let name = tree.nodes[b].name.as_bytes().to_vec();
        let at = bytes
            .windows(name.len() + 4)
            .position(|w| w[4..] == name[..] && w[..4] == (name.len() as u32).to_le_bytes())
            .unwrap();
        let mark_at = at + 4 + name.len() + 4 + 16 + 12 + 12;
        assert_eq!(bytes[mark_at], 1);
        bytes[mark_at] = 0;
        bytes.drain(mark_at + 1..mark_at + 17);
        fs::write(&p, &bytes).unwrap();
        assert!(matches!(
            load(&p, std::slice::from_ref(&ws)),
            Err(CacheError::Corrupt { .. })
        ));
        // Garbage and truncation alike.
        fs::write(&p, b"ZOTIDX1\nxx").unwrap();
        assert!(load(&p, std::slice::from_ref(&ws)).is_err());
        // World-readable: not ours alone.
        save(&p, &tree).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            load(&p, std::slice::from_ref(&ws)),
            Err(CacheError::Untrusted { .. })
        ));
    }

    #[test]
    fn another_users_cache_is_not_trusted() {
        if !nix::unistd::geteuid().is_root() {
            return; // only root can give a file away
        }
        let (_t, ws, state, tree) = setup();
        let p = path_for(&state, std::slice::from_ref(&ws));
        save(&p, &tree).unwrap();
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        assert!(matches!(
            load(&p, std::slice::from_ref(&ws)),
            Err(CacheError::Untrusted { .. })
        ));
    }
}
