//! `SKILL.md`: YAML front matter (`name`, `description`) between `---`
//! lines, then the body. One parser for every package format and for the
//! runtime's skill discovery.

use serde_json::Value;

use crate::strict_json::StrictValue;

/// Front matter of a `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFrontMatter {
    pub name: String,
    pub description: String,
}

/// Parse the YAML front matter of a `SKILL.md`: `name` and `description`
/// are required nonempty strings; other keys are the skill's own business.
pub fn parse_skill_front_matter(text: &str) -> Result<SkillFrontMatter, String> {
    parse_skill(text).map(|(fm, _)| fm)
}

/// Parse a `SKILL.md` into its front matter and body.
pub fn parse_skill(text: &str) -> Result<(SkillFrontMatter, &str), String> {
    let (yaml, body) =
        split_front_matter(text).ok_or("SKILL.md needs YAML front matter between `---` lines")?;
    let v: Value = serde_norway::from_str::<StrictValue>(yaml)
        .map(|s| s.0)
        .map_err(|e| format!("invalid YAML front matter: {e}"))?;
    let Value::Object(map) = v else {
        return Err("front matter must be a mapping".into());
    };
    let get = |k: &str| match map.get(k) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Some(_) => Err(format!("front matter `{k}` must be a nonempty string")),
        None => Err(format!("front matter is missing `{k}`")),
    };
    let fm = SkillFrontMatter {
        name: get("name")?,
        description: get("description")?,
    };
    Ok((fm, body))
}

/// Split `---\n<yaml>\n---\n<body>`.
pub(crate) fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    if rest[offset..].trim_end() == "---" {
        return Some((&rest[..offset], ""));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_follows_the_closing_line() {
        let (fm, body) = parse_skill("---\nname: a\ndescription: d\n---\n# A\nstep\n").unwrap();
        assert_eq!(fm.name, "a");
        assert_eq!(fm.description, "d");
        assert_eq!(body, "# A\nstep\n");
        let (_, body) = parse_skill("---\r\nname: a\r\ndescription: d\r\n---\r\nx").unwrap();
        assert_eq!(body, "x");
    }

    #[test]
    fn malformed_front_matter_is_named() {
        for (text, why) in [
            ("no front matter", "needs YAML front matter"),
            ("---\nname: a\ndescription: d\n", "needs YAML front matter"),
            ("---\n- a\n---\n", "must be a mapping"),
            ("---\nname: a\n---\n", "missing `description`"),
            (
                "---\nname: ''\ndescription: d\n---\n",
                "`name` must be a nonempty string",
            ),
            (
                "---\nname: a\nname: b\ndescription: d\n---\n",
                "invalid YAML",
            ),
        ] {
            let e = parse_skill(text).unwrap_err();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }
}
