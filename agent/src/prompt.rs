//! The system prompt and skills.

use std::path::{Path, PathBuf};

use zot_policy::skill::parse_skill;

use crate::RunError;

/// zot's base system prompt.
pub const BASE_PROMPT: &str =
    "You are zot, a careful software agent running on the user's machine. \
Use the tools to inspect and change files and to run commands; every tool is confined to the \
permissions the user granted, and a refused call is reported to you as a tool error: do not try \
to work around it. Be concise and report what you did.";

/// One skill: name, description and where its body lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
    pub source: &'static str,
}

fn scan(dir: &Path, source: &'static str, out: &mut Vec<Skill>, warnings: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path().join("SKILL.md");
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        match std::fs::read_to_string(&p)
            .map_err(|e| e.to_string())
            .and_then(|t| parse_skill(&t).map(|(fm, _)| fm))
        {
            Ok(zot_policy::skill::SkillFrontMatter { name, description }) => {
                if !out.iter().any(|s| s.name == name) {
                    out.push(Skill {
                        name,
                        description,
                        path: p,
                        source,
                    });
                }
            }
            Err(m) => warnings.push(format!("skill {}: {m}", p.display())),
        }
    }
}

/// Bundled skills (`<agent>/skills/*/SKILL.md`) first, then the user's
/// (`$ZOT_HOME/skills/*/SKILL.md`). A bundled skill wins a name clash.
pub fn discover(agent_root: &Path, zot_home: &Path) -> (Vec<Skill>, Vec<String>) {
    discover_in(&[
        (agent_root.join("skills"), "agent"),
        (zot_home.join("skills"), "user"),
    ])
}

/// Skills in these directories (`<dir>/<name>/SKILL.md`); the first one
/// found wins a name clash.
pub fn discover_in(dirs: &[(PathBuf, &'static str)]) -> (Vec<Skill>, Vec<String>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for (dir, source) in dirs {
        scan(dir, source, &mut out, &mut warnings);
    }
    (out, warnings)
}

/// Load a skill's body by name.
pub fn load_skill(skills: &[Skill], name: &str) -> Result<String, String> {
    let s = skills.iter().find(|s| s.name == name).ok_or_else(|| {
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        format!(
            "no skill named {name:?} (available: {})",
            if names.is_empty() {
                "none".into()
            } else {
                names.join(", ")
            }
        )
    })?;
    let text =
        std::fs::read_to_string(&s.path).map_err(|e| format!("{}: {e}", s.path.display()))?;
    parse_skill(&text).map(|(_, body)| body.to_string())
}

/// Build the system prompt: base + AGENT.md (or AGENT.md alone with
/// `replace_system_prompt`), then generated context (workspace, tools,
/// skills manifest).
pub fn system_prompt(
    agent_root: &Path,
    replace: bool,
    workspace: &Path,
    tools: &[&str],
    skills: &[Skill],
) -> Result<String, RunError> {
    let agent_md = match std::fs::read_to_string(agent_root.join("AGENT.md")) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(RunError::io("AGENT.md", e)),
    };
    Ok(compose(agent_md, replace, workspace, tools, skills))
}

/// [`system_prompt`] with the agent's instructions given (`None`: none).
pub fn compose(
    agent_md: Option<String>,
    replace: bool,
    workspace: &Path,
    tools: &[&str],
    skills: &[Skill],
) -> String {
    let mut out = String::new();
    match (replace, agent_md) {
        (true, md) => out.push_str(md.unwrap_or_default().trim()),
        (false, Some(md)) => {
            out.push_str(BASE_PROMPT);
            out.push_str("\n\n");
            out.push_str(md.trim());
        }
        (false, None) => out.push_str(BASE_PROMPT),
    }
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(&format!(
        "# Context\n\nWorkspace: {}\nTools: {}\n",
        workspace.display(),
        tools.join(", ")
    ));
    if !skills.is_empty() {
        out.push_str(
            "\n# Skills\n\nLoad a skill's instructions with the `skill` tool when it applies.\n\n",
        );
        for s in skills {
            out.push_str(&format!("- {}: {}\n", s.name, s.description));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_and_prompt() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("agent");
        std::fs::create_dir_all(root.join("skills/inv")).unwrap();
        std::fs::create_dir_all(root.join("skills/bad")).unwrap();
        std::fs::write(
            root.join("skills/inv/SKILL.md"),
            "---\nname: investigate\ndescription: 'Find: the cause'\n---\n# Body\nstep\n",
        )
        .unwrap();
        std::fs::write(root.join("skills/bad/SKILL.md"), "no front matter").unwrap();
        let (skills, warnings) = discover(&root, &d.path().join("home"));
        assert_eq!(skills.len(), 1);
        assert_eq!(skills[0].description, "Find: the cause");
        assert_eq!(warnings.len(), 1);
        assert_eq!(
            load_skill(&skills, "investigate").unwrap(),
            "# Body\nstep\n"
        );
        assert!(load_skill(&skills, "x").is_err());
        let p = system_prompt(&root, false, Path::new("/w"), &["read"], &skills).unwrap();
        assert!(p.starts_with(BASE_PROMPT) && p.contains("- investigate: Find: the cause"));
        std::fs::write(root.join("AGENT.md"), "I review.").unwrap();
        let p = system_prompt(&root, false, Path::new("/w"), &["read"], &[]).unwrap();
        assert!(p.contains(BASE_PROMPT) && p.contains("I review."));
        let p = system_prompt(&root, true, Path::new("/w"), &["read"], &[]).unwrap();
        assert!(!p.contains(BASE_PROMPT) && p.starts_with("I review."));
        std::fs::write(root.join("AGENT.md"), "").unwrap();
        let p = system_prompt(&root, true, Path::new("/w"), &["read"], &[]).unwrap();
        assert!(p.starts_with("# Context"));
    }
}
