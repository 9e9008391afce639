//! Package collection over a [`Source`]: the manifest, instructions,
//! runtime files and skills, with every limit and path rule, collecting all
//! diagnostics.

use std::collections::{BTreeMap, BTreeSet};

use globset::GlobBuilder;
use zot_policy::agent_toml::paths::{
    check_relative, check_skill_name, is_credential_path, is_glob, is_parent_of,
};
use zot_policy::agent_toml::{
    check_manifest, parse_skill_front_matter, Diagnostics, FileEntry, Manifest, ManifestFormat,
    DEFAULT_INSTRUCTIONS_FILE, MANIFEST_NAMES, MAX_FILE_BYTES, MAX_NESTING, MAX_PACKAGE_BYTES,
    MAX_RUNTIME_FILES, MAX_TOTAL_FILE_BYTES, MAX_VISITED,
};

use super::source::{join, Node, Source};
use super::{RuntimeFile, Skill, SkillFile};

/// Default skill root and the legacy one.
pub(crate) const SKILLS_ROOT: &str = ".agents/skills";
const LEGACY_SKILLS_ROOT: &str = "skills";
const LEGACY_FILES_ROOT: &str = "files";

/// What collection produced: the parts of an `AgentPackage`.
pub(crate) struct Collected {
    pub manifest: Option<Manifest>,
    pub manifest_file: Option<String>,
    pub instructions: String,
    pub files: Vec<RuntimeFile>,
    pub skills: Vec<Skill>,
    pub bytes_read: u64,
}

pub(crate) struct Collector<'a> {
    src: &'a dyn Source,
    pub d: Diagnostics,
    visited: BTreeSet<String>,
    visited_reported: bool,
    bytes_read: u64,
    package_reported: bool,
    root_walk: Option<Vec<(String, bool)>>,
}

/// A planned runtime file before its bytes are read.
struct Planned {
    dest: String,
    from: From,
    readonly: bool,
    origin: String,
}

#[derive(PartialEq)]
enum From {
    Source(String),
    Inline(Vec<u8>),
}

impl<'a> Collector<'a> {
    pub fn new(src: &'a dyn Source) -> Self {
        Collector {
            src,
            d: Diagnostics::new(),
            visited: BTreeSet::new(),
            visited_reported: false,
            bytes_read: 0,
            package_reported: false,
            root_walk: None,
        }
    }

    pub fn collect(mut self) -> (Collected, Diagnostics) {
        let mut out = Collected {
            manifest: None,
            manifest_file: None,
            instructions: String::new(),
            files: Vec::new(),
            skills: Vec::new(),
            bytes_read: 0,
        };
        let Some((file, format)) = self.find_manifest() else {
            out.bytes_read = self.bytes_read;
            return (out, self.d);
        };
        let Some(text) = self.read_text(file, MAX_FILE_BYTES, file) else {
            out.bytes_read = self.bytes_read;
            return (out, self.d);
        };
        let (manifest, diags) = check_manifest(&text, format);
        for diag in diags {
            let path = if diag.path.is_empty() {
                file.to_string()
            } else {
                diag.path
            };
            self.d.push(path, diag.message);
        }
        out.manifest_file = Some(file.to_string());
        let Some(manifest) = manifest else {
            out.bytes_read = self.bytes_read;
            return (out, self.d);
        };
        out.instructions = self.instructions(&manifest);
        out.files = self.files(&manifest);
        out.skills = self.skills(&manifest);
        out.manifest = Some(manifest);
        out.bytes_read = self.bytes_read;
        (out, self.d)
    }

    fn find_manifest(&mut self) -> Option<(&'static str, ManifestFormat)> {
        let mut found = Vec::new();
        for (name, format) in MANIFEST_NAMES {
            match self.src.node(name) {
                Ok(None) => {}
                Ok(Some(Node::File { .. })) => found.push((name, format)),
                Ok(Some(Node::Symlink)) => self.d.push(name, "symlinks are not allowed"),
                Ok(Some(_)) => self.d.push(name, "manifest is not a regular file"),
                Err(e) => self.d.push(name, format!("cannot read: {e}")),
            }
        }
        match found.len() {
            0 => {
                if self.d.is_empty() {
                    let names = MANIFEST_NAMES
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ");
                    self.d.push(
                        "",
                        format!("no manifest at the package root (expected one of {names})"),
                    );
                }
                None
            }
            1 => Some(found[0]),
            _ => {
                let names = found.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
                self.d.push(
                    "",
                    format!(
                        "more than one manifest at the package root ({names}); keep exactly one"
                    ),
                );
                None
            }
        }
    }

    /// Read a file, counting it against the package limit and `limit`.
    fn read(&mut self, rel: &str, limit: u64, diag: &str) -> Option<Vec<u8>> {
        match self.src.node(rel) {
            Ok(Some(Node::File { .. })) => {}
            Ok(Some(Node::Symlink)) => {
                self.d.push(
                    diag,
                    format!("`{rel}` is a symlink; symlinks are not allowed"),
                );
                return None;
            }
            Ok(Some(_)) => {
                self.d.push(diag, format!("`{rel}` is not a regular file"));
                return None;
            }
            Ok(None) => {
                self.d.push(diag, format!("`{rel}` does not exist"));
                return None;
            }
            Err(e) => {
                self.d.push(diag, format!("cannot read `{rel}`: {e}"));
                return None;
            }
        }
        match self.src.read(rel, limit) {
            Ok(bytes) if bytes.len() as u64 > limit => {
                self.d.push(
                    diag,
                    format!("`{rel}` is larger than the {} limit", human(limit)),
                );
                None
            }
            Ok(bytes) => {
                self.bytes_read += bytes.len() as u64;
                if self.bytes_read > MAX_PACKAGE_BYTES && !self.package_reported {
                    self.package_reported = true;
                    self.d.push(
                        "",
                        format!(
                            "package is larger than the {} limit",
                            human(MAX_PACKAGE_BYTES)
                        ),
                    );
                }
                Some(bytes)
            }
            Err(e) => {
                self.d.push(diag, format!("cannot read `{rel}`: {e}"));
                None
            }
        }
    }

    fn read_text(&mut self, rel: &str, limit: u64, diag: &str) -> Option<String> {
        let bytes = self.read(rel, limit, diag)?;
        match String::from_utf8(bytes) {
            Ok(s) => Some(s),
            Err(_) => {
                self.d.push(diag, format!("`{rel}` is not valid UTF-8"));
                None
            }
        }
    }

    /// Mark an entry visited; false once the visit budget is spent.
    fn visit(&mut self, rel: &str) -> bool {
        self.visited.insert(rel.to_string());
        if self.visited.len() > MAX_VISITED {
            if !self.visited_reported {
                self.visited_reported = true;
                self.d.push(
                    rel,
                    format!("more than {MAX_VISITED} entries visited while collecting the package"),
                );
            }
            return false;
        }
        true
    }

    /// Every allowed file and directory under `dir` (relative to the
    /// package root), skipping credential paths. `(path, is_dir)`.
    fn walk(&mut self, dir: &str, diag: &str) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        self.walk_into(dir, 0, diag, &mut out);
        out
    }

    fn walk_into(&mut self, dir: &str, depth: usize, diag: &str, out: &mut Vec<(String, bool)>) {
        if depth >= MAX_NESTING {
            self.d.push(
                dir,
                format!("folder nesting deeper than {MAX_NESTING} levels"),
            );
            return;
        }
        let names = match self.src.list(dir) {
            Ok(n) => n,
            Err(e) => {
                self.d.push(
                    if dir.is_empty() { diag } else { dir },
                    format!("cannot list: {e}"),
                );
                return;
            }
        };
        for name in names {
            let rel = join(dir, &name);
            if is_credential_path(&rel) {
                continue; // never read, never listed
            }
            if !self.visit(&rel) {
                return;
            }
            match self.src.node(&rel) {
                Ok(Some(Node::Dir)) => {
                    out.push((rel.clone(), true));
                    self.walk_into(&rel, depth + 1, diag, out);
                }
                Ok(Some(Node::File { .. })) => out.push((rel, false)),
                Ok(Some(Node::Symlink)) => self.d.push(&rel, "symlinks are not allowed"),
                Ok(Some(Node::Other)) => self.d.push(&rel, "not a regular file or directory"),
                Ok(None) => {}
                Err(e) => self.d.push(&rel, format!("cannot read: {e}")),
            }
        }
    }

    fn root_walk(&mut self, diag: &str) -> Vec<(String, bool)> {
        if self.root_walk.is_none() {
            let w = self.walk("", diag);
            self.root_walk = Some(w);
        }
        self.root_walk.clone().unwrap_or_default()
    }

    fn instructions(&mut self, m: &Manifest) -> String {
        if let Some(text) = m.instructions.as_ref().filter(|s| !s.trim().is_empty()) {
            return text.clone();
        }
        if let Some(file) = &m.instructions_file {
            return self
                .read_text(file, MAX_FILE_BYTES, "instructions_file")
                .unwrap_or_default();
        }
        match self.src.node(DEFAULT_INSTRUCTIONS_FILE) {
            Ok(None) => String::new(),
            _ => self
                .read_text(
                    DEFAULT_INSTRUCTIONS_FILE,
                    MAX_FILE_BYTES,
                    DEFAULT_INSTRUCTIONS_FILE,
                )
                .unwrap_or_default(),
        }
    }

    fn files(&mut self, m: &Manifest) -> Vec<RuntimeFile> {
        let mut planned: Vec<Planned> = Vec::new();
        match &m.files {
            Some(entries) => {
                for (i, entry) in entries.iter().enumerate() {
                    let origin = format!("files[{i}]");
                    self.plan(entry, &origin, &mut planned);
                }
            }
            None => {
                // Legacy: `files/` maps to the runtime root.
                if self.src.node(LEGACY_FILES_ROOT).ok().flatten() == Some(Node::Dir) {
                    for (rel, is_dir) in self.walk(LEGACY_FILES_ROOT, LEGACY_FILES_ROOT) {
                        if !is_dir {
                            let dest = rel[LEGACY_FILES_ROOT.len() + 1..].to_string();
                            planned.push(Planned {
                                dest,
                                from: From::Source(rel),
                                readonly: true,
                                origin: "files/".into(),
                            });
                        }
                    }
                }
            }
        }

        // Destinations: unique (identical selections are merged), no
        // parent/child collisions.
        let mut by_dest: BTreeMap<String, Planned> = BTreeMap::new();
        for p in planned {
            if let Some(prev) = by_dest.get(&p.dest) {
                if prev.from != p.from || prev.readonly != p.readonly {
                    self.d.push(
                        &p.origin,
                        format!(
                            "destination `{}` is also produced by {}; destinations must be unique",
                            p.dest, prev.origin
                        ),
                    );
                }
                continue;
            }
            by_dest.insert(p.dest.clone(), p);
        }
        let dests: BTreeSet<&str> = by_dest.keys().map(String::as_str).collect();
        for d in &dests {
            let comps: Vec<&str> = d.split('/').collect();
            for k in 1..comps.len() {
                let prefix = comps[..k].join("/");
                if dests.contains(prefix.as_str()) {
                    let origin = &by_dest[*d].origin;
                    self.d.push(
                        origin,
                        format!(
                            "destination `{d}` collides with the file `{prefix}` (a file cannot be a parent folder)"
                        ),
                    );
                }
            }
        }
        if by_dest.len() > MAX_RUNTIME_FILES {
            self.d.push(
                "files",
                format!(
                    "{} runtime files selected; the limit is {MAX_RUNTIME_FILES}",
                    by_dest.len()
                ),
            );
            return Vec::new();
        }

        let mut total = 0u64;
        let mut out = Vec::new();
        for (dest, p) in by_dest {
            let bytes = match p.from {
                From::Inline(b) => b,
                From::Source(rel) => match self.read(&rel, MAX_FILE_BYTES, &p.origin) {
                    Some(b) => b,
                    None => continue,
                },
            };
            total += bytes.len() as u64;
            out.push(RuntimeFile {
                dest,
                bytes,
                readonly: p.readonly,
            });
        }
        if total > MAX_TOTAL_FILE_BYTES {
            self.d.push(
                "files",
                format!(
                    "runtime files total {total} bytes; the limit is {}",
                    human(MAX_TOTAL_FILE_BYTES)
                ),
            );
        }
        out
    }

    fn plan(&mut self, entry: &FileEntry, origin: &str, planned: &mut Vec<Planned>) {
        let (source, dest, readonly) = match entry {
            FileEntry::Inline {
                dest,
                content,
                readonly,
                ..
            } => {
                planned.push(Planned {
                    dest: dest.clone(),
                    from: From::Inline(content.clone()),
                    readonly: *readonly,
                    origin: origin.to_string(),
                });
                return;
            }
            FileEntry::Select {
                source,
                dest,
                readonly,
            } => (source, dest, *readonly),
        };
        let before = planned.len();
        if is_glob(source) {
            let matcher = match GlobBuilder::new(source).literal_separator(true).build() {
                Ok(g) => g.compile_matcher(),
                Err(e) => {
                    self.d.push(origin, format!("invalid glob: {e}"));
                    return;
                }
            };
            let all = self.root_walk(origin);
            let matched_dirs: Vec<&String> = all
                .iter()
                .filter(|(p, d)| *d && matcher.is_match(p))
                .map(|(p, _)| p)
                .collect();
            for (rel, is_dir) in &all {
                if *is_dir {
                    continue;
                }
                if matcher.is_match(rel) || matched_dirs.iter().any(|d| is_parent_of(d, rel)) {
                    let dest = dest.clone().unwrap_or_else(|| rel.clone());
                    planned.push(Planned {
                        dest,
                        from: From::Source(rel.clone()),
                        readonly,
                        origin: origin.to_string(),
                    });
                }
            }
        } else {
            match self.src.node(source) {
                Ok(Some(Node::File { .. })) => {
                    let dest = dest.clone().unwrap_or_else(|| source.clone());
                    planned.push(Planned {
                        dest,
                        from: From::Source(source.clone()),
                        readonly,
                        origin: origin.to_string(),
                    });
                }
                Ok(Some(Node::Dir)) => {
                    for (rel, is_dir) in self.walk(source, origin) {
                        if is_dir {
                            continue;
                        }
                        let inner = if source.is_empty() {
                            rel.as_str()
                        } else {
                            &rel[source.len() + 1..]
                        };
                        let dest = match dest {
                            Some(d) => join(d, inner),
                            None => rel.clone(),
                        };
                        planned.push(Planned {
                            dest,
                            from: From::Source(rel.clone()),
                            readonly,
                            origin: origin.to_string(),
                        });
                    }
                }
                Ok(Some(Node::Symlink)) => {
                    self.d.push(
                        origin,
                        format!("source `{source}` is a symlink; symlinks are not allowed"),
                    );
                    return;
                }
                Ok(Some(Node::Other)) => {
                    self.d.push(
                        origin,
                        format!("source `{source}` is not a regular file or directory"),
                    );
                    return;
                }
                Ok(None) => {}
                Err(e) => {
                    self.d.push(origin, format!("cannot read `{source}`: {e}"));
                    return;
                }
            }
        }
        if planned.len() == before {
            let shown = if source.is_empty() {
                "."
            } else {
                source.as_str()
            };
            self.d
                .push(origin, format!("source `{shown}` matches no file"));
        }
    }

    pub(crate) fn skills(&mut self, m: &Manifest) -> Vec<Skill> {
        let roots: Vec<(String, String)> = match &m.skills {
            Some(list) => list
                .iter()
                .enumerate()
                .map(|(i, r)| (r.clone(), format!("skills[{i}]")))
                .collect(),
            None => {
                let has = |s: &Self, p: &str| !matches!(s.src.node(p), Ok(None));
                match (has(self, SKILLS_ROOT), has(self, LEGACY_SKILLS_ROOT)) {
                    (true, true) => {
                        self.d.push(
                            "skills",
                            "both `.agents/skills/` and legacy `skills/` exist; choose one with `skills = [\".agents/skills\"]`",
                        );
                        vec![(SKILLS_ROOT.to_string(), SKILLS_ROOT.to_string())]
                    }
                    (true, false) => vec![(SKILLS_ROOT.to_string(), SKILLS_ROOT.to_string())],
                    (false, true) => vec![(
                        LEGACY_SKILLS_ROOT.to_string(),
                        LEGACY_SKILLS_ROOT.to_string(),
                    )],
                    (false, false) => Vec::new(),
                }
            }
        };
        let mut out: Vec<Skill> = Vec::new();
        for (root, origin) in roots {
            match self.src.node(&root) {
                Ok(Some(Node::Dir)) => {}
                Ok(Some(Node::Symlink)) => {
                    self.d.push(
                        &origin,
                        format!("`{root}` is a symlink; symlinks are not allowed"),
                    );
                    continue;
                }
                Ok(None) => {
                    self.d
                        .push(&origin, format!("skill folder `{root}` does not exist"));
                    continue;
                }
                Ok(Some(_)) => {
                    self.d.push(&origin, format!("`{root}` is not a directory"));
                    continue;
                }
                Err(e) => {
                    self.d.push(&origin, format!("cannot read `{root}`: {e}"));
                    continue;
                }
            }
            let names = match self.src.list(&root) {
                Ok(n) => n,
                Err(e) => {
                    self.d.push(&origin, format!("cannot list `{root}`: {e}"));
                    continue;
                }
            };
            for name in names {
                let dir = join(&root, &name);
                if is_credential_path(&dir) || !self.visit(&dir) {
                    continue;
                }
                match self.src.node(&dir) {
                    Ok(Some(Node::Dir)) => {}
                    Ok(Some(Node::Symlink)) => {
                        self.d.push(&dir, "symlinks are not allowed");
                        continue;
                    }
                    _ => continue, // loose files next to skill folders are not skills
                }
                if let Some(skill) = self.skill(&dir, &name) {
                    if out.iter().any(|s| s.name == skill.name) {
                        self.d
                            .push(&dir, format!("duplicate skill `{}`", skill.name));
                    } else {
                        out.push(skill);
                    }
                }
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    fn skill(&mut self, dir: &str, name: &str) -> Option<Skill> {
        let skill_md = join(dir, "SKILL.md");
        if let Err(e) = check_skill_name(name) {
            self.d.push(dir, e);
            return None;
        }
        if matches!(self.src.node(&skill_md), Ok(None)) {
            self.d.push(dir, "incomplete skill: missing SKILL.md");
            return None;
        }
        let text = self.read_text(&skill_md, MAX_FILE_BYTES, &skill_md)?;
        let fm = match parse_skill_front_matter(&text) {
            Ok(fm) => fm,
            Err(e) => {
                self.d.push(&skill_md, e);
                return None;
            }
        };
        if fm.name != name {
            self.d.push(
                &skill_md,
                format!(
                    "front matter name `{}` does not match the folder name `{name}`",
                    fm.name
                ),
            );
            return None;
        }
        let mut files = vec![SkillFile {
            path: "SKILL.md".into(),
            bytes: text.into_bytes(),
        }];
        for (rel, is_dir) in self.walk(dir, dir) {
            if is_dir || rel == skill_md {
                continue;
            }
            if let Some(bytes) = self.read(&rel, MAX_FILE_BYTES, &rel) {
                files.push(SkillFile {
                    path: rel[dir.len() + 1..].to_string(),
                    bytes,
                });
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Some(Skill {
            name: fm.name,
            description: fm.description,
            files,
        })
    }
}

/// Validate a ZIP entry or folder path with the package path rules.
pub(crate) fn check_entry_path(raw: &str) -> Result<String, String> {
    check_relative(raw, false)
}

pub(crate) fn human(n: u64) -> String {
    if n % (1024 * 1024) == 0 {
        format!("{} MiB", n / (1024 * 1024))
    } else {
        format!("{n} bytes")
    }
}
