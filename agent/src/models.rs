//! The built-in model catalog and model selection.

use crate::deps::AgentSpec;
use crate::RunError;

/// One catalog entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelInfo {
    pub id: &'static str,
    pub provider: &'static str,
    pub context_window: u64,
    pub reasoning: bool,
    /// Whether this build can talk to the model (only the simulator can:
    /// network providers come later).
    pub available: bool,
}

/// The simulator's id.
pub const SIM: &str = "sim";

/// The built-in catalog. Every model is tool-capable; none declares vision.
pub const CATALOG: &[ModelInfo] = &[
    ModelInfo {
        id: SIM,
        provider: "simulator",
        context_window: 200_000,
        reasoning: false,
        available: true,
    },
    ModelInfo {
        id: "claude-opus-4-5",
        provider: "anthropic",
        context_window: 200_000,
        reasoning: true,
        available: false,
    },
    ModelInfo {
        id: "claude-sonnet-4-5",
        provider: "anthropic",
        context_window: 200_000,
        reasoning: true,
        available: false,
    },
    ModelInfo {
        id: "claude-haiku-4-5",
        provider: "anthropic",
        context_window: 200_000,
        reasoning: true,
        available: false,
    },
    ModelInfo {
        id: "gpt-5.5",
        provider: "openai",
        context_window: 400_000,
        reasoning: true,
        available: false,
    },
    ModelInfo {
        id: "gpt-5",
        provider: "openai",
        context_window: 400_000,
        reasoning: true,
        available: false,
    },
    ModelInfo {
        id: "gpt-4.1",
        provider: "openai",
        context_window: 1_000_000,
        reasoning: false,
        available: false,
    },
];

pub fn lookup(id: &str) -> Option<&'static ModelInfo> {
    CATALOG.iter().find(|m| m.id == id)
}

/// Why `model` does not satisfy the manifest, or `None` when it does.
pub fn incompatibility(model: &ModelInfo, spec: &AgentSpec) -> Option<String> {
    for cap in &spec.model_requires {
        match cap.as_str() {
            "tools" => {}
            "reasoning" if !model.reasoning => return Some("does not support reasoning".into()),
            "reasoning" => {}
            "vision" => {
                return Some("vision is not represented in the catalog, no model qualifies".into())
            }
            other => return Some(format!("unknown capability {other:?}")),
        }
    }
    if let Some(min) = spec.min_context {
        if model.context_window < min {
            return Some(format!(
                "context window {} is below model.min_context {min}",
                model.context_window
            ));
        }
    }
    None
}

/// Select the model: an explicit choice must satisfy the manifest; a
/// configured default is kept when compatible; then the first compatible
/// available `preferred` model; then any compatible available model.
pub fn select(
    explicit: Option<&str>,
    configured: Option<&str>,
    spec: &AgentSpec,
) -> Result<&'static ModelInfo, RunError> {
    if let Some(id) = explicit {
        let m = lookup(id)
            .ok_or_else(|| RunError::Model(format!("unknown model {id:?} (known: {})", known())))?;
        if let Some(why) = incompatibility(m, spec) {
            return Err(RunError::Model(format!(
                "{id} does not satisfy the agent's model requirements: {why}"
            )));
        }
        if !m.available {
            return Err(RunError::Model(format!(
                "{id} needs the {} provider, which this build does not include yet; use --model sim",
                m.provider
            )));
        }
        return Ok(m);
    }
    let usable =
        |id: &str| lookup(id).filter(|m| m.available && incompatibility(m, spec).is_none());
    if let Some(m) = configured.and_then(usable) {
        return Ok(m);
    }
    if let Some(m) = spec.preferred.iter().find_map(|id| usable(id)) {
        return Ok(m);
    }
    if let Some(m) = CATALOG.iter().find(|m| usable(m.id).is_some()) {
        return Ok(m);
    }
    let why: Vec<String> = CATALOG
        .iter()
        .filter(|m| m.available)
        .map(|m| format!("{}: {}", m.id, incompatibility(m, spec).unwrap_or_default()))
        .collect();
    Err(RunError::Model(format!(
        "no available model satisfies the agent's requirements ({})",
        why.join("; ")
    )))
}

fn known() -> String {
    CATALOG.iter().map(|m| m.id).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_rules() {
        let mut spec = AgentSpec::default();
        assert_eq!(select(None, None, &spec).unwrap().id, SIM);
        assert_eq!(select(Some("sim"), None, &spec).unwrap().id, SIM);
        assert!(select(Some("nope"), None, &spec).is_err());
        assert!(select(Some("gpt-5.5"), None, &spec)
            .unwrap_err()
            .to_string()
            .contains("provider"));
        spec.preferred = vec!["gpt-5.5".into(), "sim".into()];
        assert_eq!(
            select(None, Some("claude-opus-4-5"), &spec).unwrap().id,
            SIM
        );
        spec.model_requires = vec!["reasoning".into()];
        let e = select(None, None, &spec).unwrap_err().to_string();
        assert!(e.contains("reasoning"), "{e}");
        assert!(select(Some("sim"), None, &spec).is_err());
        spec.model_requires = vec!["tools".into()];
        spec.min_context = Some(300_000);
        assert!(select(None, None, &spec).is_err());
        spec.min_context = Some(64_000);
        assert_eq!(select(None, None, &spec).unwrap().id, SIM);
        spec.model_requires = vec!["vision".into()];
        assert!(select(None, None, &spec).is_err());
    }
}
