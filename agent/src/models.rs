//! Providers, the model catalog and model selection.
//!
//! The [`Registry`] joins three sources: the built-in providers (`sim`,
//! `openai`, `anthropic`) and catalog, the user's config file (provider
//! settings, custom providers, `[[models]]`), and the environment (which
//! keys are set, `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL`). A model is
//! *available* when its provider has its key (or needs none).

use serde::Serialize;
use zot_policy::config::{self, Api, Config, HttpSettings, ReasoningEffort};

use crate::deps::AgentSpec;
use crate::RunError;

/// The simulator's model id (and provider name).
pub const SIM: &str = "sim";

/// How zot reaches a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    Sim,
    Net(Api),
}

impl ProviderKind {
    pub fn api_name(self) -> &'static str {
        match self {
            ProviderKind::Sim => "sim",
            ProviderKind::Net(a) => a.as_str(),
        }
    }
}

/// One provider, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderInfo {
    pub name: String,
    pub kind: ProviderKind,
    /// The base URL in effect (network providers).
    pub base_url: Option<String>,
    /// Where the base URL came from: `config`, a variable name, `default`.
    pub base_url_from: &'static str,
    /// Why the base URL is unusable (a bad `*_BASE_URL` value).
    pub base_url_error: Option<String>,
    /// The variable holding the key; `None`: no key needed.
    pub key_env: Option<String>,
    pub key_present: bool,
    /// `[http]` merged under the provider's own settings.
    pub http: HttpSettings,
    pub custom: bool,
}

impl ProviderInfo {
    /// `Ok` when the provider can be used; else why not.
    pub fn availability(&self) -> Result<(), String> {
        if let Some(e) = &self.base_url_error {
            return Err(e.clone());
        }
        match (&self.key_env, self.key_present) {
            (Some(v), false) => Err(format!("{v} is not set")),
            _ => Ok(()),
        }
    }
}

/// Where a model's description comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelSource {
    /// The built-in catalog.
    Catalog,
    /// A `[[models]]` entry of the config file.
    Config,
    /// An id neither knows, accepted for a provider: capabilities unknown.
    Unlisted,
}

/// One model. Every model is treated as tool-capable (zot's loop needs
/// tools); capabilities not declared are absent, so they never satisfy a
/// manifest's `requires`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelInfo {
    pub id: String,
    pub provider: String,
    pub context_window: Option<u64>,
    pub reasoning: bool,
    pub vision: bool,
    pub max_output_tokens: Option<u64>,
    pub source: ModelSource,
}

struct Entry {
    id: &'static str,
    provider: &'static str,
    context_window: u64,
    reasoning: bool,
    vision: bool,
    max_output_tokens: Option<u64>,
}

const fn entry(
    id: &'static str,
    provider: &'static str,
    context_window: u64,
    reasoning: bool,
    max_output: u64,
) -> Entry {
    Entry {
        id,
        provider,
        context_window,
        reasoning,
        vision: true,
        max_output_tokens: Some(max_output),
    }
}

/// The built-in catalog, in the order implicit selection tries it: the
/// offline simulator first (a real model costs money: it is used when the
/// user or the agent names it, or when nothing else satisfies the agent).
const CATALOG: &[Entry] = &[
    Entry {
        id: SIM,
        provider: SIM,
        context_window: 200_000,
        reasoning: false,
        vision: false,
        max_output_tokens: None,
    },
    entry("claude-sonnet-4-5", "anthropic", 200_000, true, 64_000),
    entry("claude-haiku-4-5", "anthropic", 200_000, true, 64_000),
    entry("claude-opus-4-5", "anthropic", 200_000, true, 64_000),
    entry("gpt-5", "openai", 400_000, true, 128_000),
    entry("gpt-5-mini", "openai", 400_000, true, 128_000),
    entry("gpt-5.5", "openai", 400_000, true, 128_000),
    entry("gpt-4.1", "openai", 1_047_576, false, 32_768),
];

/// Default base URLs and key variables of the built-in providers.
fn builtin_defaults(api: Api) -> (&'static str, &'static str, &'static str) {
    match api {
        Api::OpenAi => (
            "https://api.openai.com/v1",
            "OPENAI_BASE_URL",
            "OPENAI_API_KEY",
        ),
        Api::Anthropic => (
            "https://api.anthropic.com",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_API_KEY",
        ),
    }
}

/// Providers and models known to this run.
#[derive(Debug, Clone)]
pub struct Registry {
    pub providers: Vec<ProviderInfo>,
    pub models: Vec<ModelInfo>,
    pub defaults: config::Defaults,
}

/// The variables holding zot's provider keys (built-in and configured
/// providers): an `env.read` prefix never passes them into an agent's
/// commands.
pub fn provider_key_vars(cfg: &zot_policy::config::Config) -> Vec<String> {
    let mut keys: Vec<String> = Registry::new(cfg, &|_| None)
        .providers
        .into_iter()
        .filter_map(|p| p.key_env)
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

impl Registry {
    /// Join the catalog, `cfg` and the environment (`env` returns a
    /// variable's value).
    pub fn new(cfg: &Config, env: &dyn Fn(&str) -> Option<String>) -> Registry {
        let set = |k: &str| env(k).is_some_and(|v| !v.trim().is_empty());
        let mut providers = vec![ProviderInfo {
            name: SIM.into(),
            kind: ProviderKind::Sim,
            base_url: None,
            base_url_from: "",
            base_url_error: None,
            key_env: None,
            key_present: false,
            http: HttpSettings::default(),
            custom: false,
        }];
        for api in config::BUILTIN_PROVIDERS {
            let (url, url_var, key_var) = builtin_defaults(api);
            let pc = cfg.providers.get(api.as_str());
            let (base_url, from, error) = match (pc.and_then(|p| p.base_url.clone()), env(url_var))
            {
                (Some(u), _) => (u, "config", None),
                (None, Some(v)) if !v.trim().is_empty() => match config::check_base_url(&v) {
                    Ok(u) => (u, url_var, None),
                    Err(m) => (url.to_string(), url_var, Some(format!("{url_var}: {m}"))),
                },
                _ => (url.to_string(), "default", None),
            };
            let key_env = match pc.and_then(|p| p.api_key_env.clone()) {
                Some(k) if k.is_empty() => None,
                Some(k) => Some(k),
                None => Some(key_var.to_string()),
            };
            providers.push(ProviderInfo {
                name: api.as_str().into(),
                kind: ProviderKind::Net(api),
                base_url: Some(base_url),
                base_url_from: from,
                base_url_error: error,
                key_present: key_env.as_deref().is_some_and(set),
                key_env,
                http: pc.map(|p| p.http).unwrap_or_default().or(cfg.http),
                custom: false,
            });
        }
        for (name, pc) in &cfg.providers {
            if Api::parse(name).is_some() {
                continue;
            }
            let key_env = pc.api_key_env.clone().filter(|k| !k.is_empty());
            providers.push(ProviderInfo {
                name: name.clone(),
                kind: ProviderKind::Net(
                    pc.api.expect("validated: custom providers name their api"),
                ),
                base_url: pc.base_url.clone(),
                base_url_from: "config",
                base_url_error: None,
                key_present: key_env.as_deref().is_some_and(set),
                key_env,
                http: pc.http.or(cfg.http),
                custom: true,
            });
        }
        let mut models: Vec<ModelInfo> = CATALOG
            .iter()
            .map(|e| ModelInfo {
                id: e.id.into(),
                provider: e.provider.into(),
                context_window: Some(e.context_window),
                reasoning: e.reasoning,
                vision: e.vision,
                max_output_tokens: e.max_output_tokens,
                source: ModelSource::Catalog,
            })
            .collect();
        for m in &cfg.models {
            let existing = models
                .iter_mut()
                .find(|x| x.id == m.id && x.provider == m.provider);
            match existing {
                Some(x) => {
                    // A config entry corrects what the catalog says.
                    x.context_window = m.context_window.or(x.context_window);
                    x.reasoning = m.reasoning.unwrap_or(x.reasoning);
                    x.vision = m.vision.unwrap_or(x.vision);
                    x.max_output_tokens = m.max_output_tokens.or(x.max_output_tokens);
                    x.source = ModelSource::Config;
                }
                None => models.push(ModelInfo {
                    id: m.id.clone(),
                    provider: m.provider.clone(),
                    context_window: m.context_window,
                    reasoning: m.reasoning.unwrap_or(false),
                    vision: m.vision.unwrap_or(false),
                    max_output_tokens: m.max_output_tokens,
                    source: ModelSource::Config,
                }),
            }
        }
        Registry {
            providers,
            models,
            defaults: cfg.defaults.clone(),
        }
    }

    /// The registry of the real environment.
    pub fn from_env(cfg: &Config) -> Registry {
        Registry::new(cfg, &|k| std::env::var(k).ok())
    }

    pub fn provider(&self, name: &str) -> Option<&ProviderInfo> {
        self.providers.iter().find(|p| p.name == name)
    }

    fn provider_names(&self) -> Vec<&str> {
        self.providers.iter().map(|p| p.name.as_str()).collect()
    }

    fn known_provider(&self, name: &str, what: &str) -> Result<&ProviderInfo, RunError> {
        self.provider(name).ok_or_else(|| {
            let names = self.provider_names();
            let hint = zot_policy::suggest(name, &names)
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_else(|| {
                    format!(
                        " (providers: {}; add a [providers.{name}] table to the config file for another)",
                        names.join(", ")
                    )
                });
            RunError::Usage(format!("{what}: unknown provider `{name}`{hint}"))
        })
    }

    /// The model `id` (of `provider` when given; else of `fallback`, the
    /// configured default provider, for an id nobody lists).
    fn resolve(
        &self,
        id: &str,
        provider: Option<&str>,
        fallback: Option<&str>,
    ) -> Result<ModelInfo, String> {
        if let Some(p) = provider {
            if let Some(m) = self.models.iter().find(|m| m.provider == p && m.id == id) {
                return Ok(m.clone());
            }
            return match self.provider(p).map(|p| p.kind) {
                Some(ProviderKind::Sim) => Err(format!(
                    "the sim provider has one model, `sim` (not `{id}`)"
                )),
                Some(ProviderKind::Net(_)) => Ok(unlisted(id, p)),
                None => Err(format!("unknown provider `{p}`")),
            };
        }
        let found: Vec<&ModelInfo> = self.models.iter().filter(|m| m.id == id).collect();
        match found.as_slice() {
            [one] => Ok((*one).clone()),
            [] => match fallback.filter(|f| *f != SIM) {
                Some(f) if self.provider(f).is_some() => Ok(unlisted(id, f)),
                _ => {
                    let ids: Vec<&str> = self.models.iter().map(|m| m.id.as_str()).collect();
                    let hint = zot_policy::suggest(id, &ids)
                        .map(|s| format!("did you mean `{s}`? "))
                        .unwrap_or_default();
                    Err(format!(
                        "unknown model `{id}` ({hint}known: {}); pass --provider NAME to use a model the catalog does not list",
                        ids.join(", ")
                    ))
                }
            },
            many => match fallback.and_then(|f| many.iter().find(|m| m.provider == f)) {
                Some(m) => Ok((*m).clone()),
                None => Err(format!(
                    "model `{id}` is offered by several providers ({}): pass --provider",
                    many.iter()
                        .map(|m| m.provider.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            },
        }
    }
}

fn unlisted(id: &str, provider: &str) -> ModelInfo {
    ModelInfo {
        id: id.into(),
        provider: provider.into(),
        context_window: None,
        reasoning: false,
        vision: false,
        max_output_tokens: None,
        source: ModelSource::Unlisted,
    }
}

/// Why `model` does not satisfy the manifest (and `--reasoning`, when
/// `reasoning` is set), or `None` when it does.
pub fn incompatibility(model: &ModelInfo, spec: &AgentSpec, reasoning: bool) -> Option<String> {
    let unknown = model.source == ModelSource::Unlisted;
    let declare = "declare it in a [[models]] entry of the config file";
    let lacks = |what: &str| {
        if unknown {
            format!("its {what} support is unknown ({declare})")
        } else {
            format!("does not support {what}")
        }
    };
    for cap in &spec.model_requires {
        match cap.as_str() {
            "tools" => {}
            "reasoning" if !model.reasoning => return Some(lacks("reasoning")),
            "vision" if !model.vision => return Some(lacks("vision")),
            "reasoning" | "vision" => {}
            other => return Some(format!("unknown capability {other:?}")),
        }
    }
    if reasoning && !model.reasoning {
        return Some(format!("{} (--reasoning)", lacks("reasoning")));
    }
    if let Some(min) = spec.min_context {
        match model.context_window {
            None => {
                return Some(format!(
                    "its context window is unknown and model.min_context is {min} ({declare})"
                ))
            }
            Some(c) if c < min => {
                return Some(format!(
                    "context window {c} is below model.min_context {min}"
                ))
            }
            Some(_) => {}
        }
    }
    None
}

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    /// `--model`.
    pub model: Option<String>,
    /// `--provider`.
    pub provider: Option<String>,
    /// `--reasoning`.
    pub reasoning: Option<ReasoningEffort>,
    /// `ZOT_MODEL` (overrides the config's `defaults.model`).
    pub env_model: Option<String>,
}

/// The model of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub model: ModelInfo,
    pub provider: ProviderInfo,
    pub reasoning: Option<ReasoningEffort>,
    /// Things the user should know (shown as warnings).
    pub notes: Vec<String>,
}

/// Select the model (the spec's rules, with real providers):
/// 1. `--model` (with `--provider`) must satisfy the manifest and be
///    available;
/// 2. an agent.toml `[model]` pin likewise (unless `--provider` names
///    another provider): never silently replaced;
/// 3. the configured default (`ZOT_MODEL`, else `defaults.model`) when
///    compatible and available;
/// 4. the first compatible, available `model.preferred` entry;
/// 5. the first compatible, available model of the registry;
///
/// Steps 3-5 keep to `--provider`, else to `defaults.provider`. `--reasoning`
/// counts as a requirement. Nothing qualifying is an error saying why each
/// candidate failed.
pub fn select(reg: &Registry, choice: &Choice, spec: &AgentSpec) -> Result<Selection, RunError> {
    if let Some(p) = &choice.provider {
        reg.known_provider(p, "--provider")?;
    }
    let wants_reasoning = choice.reasoning.is_some();
    let finish = |m: ModelInfo, notes: Vec<String>| -> Selection {
        let provider = reg
            .provider(&m.provider)
            .cloned()
            .expect("resolved models have providers");
        let reasoning = choice
            .reasoning
            .or(reg.defaults.reasoning.filter(|_| m.reasoning));
        Selection {
            model: m,
            provider,
            reasoning,
            notes,
        }
    };
    let check = |m: &ModelInfo| -> Result<(), String> {
        if let Some(why) = incompatibility(m, spec, wants_reasoning) {
            return Err(format!("does not satisfy the agent's requirements: {why}"));
        }
        let p = reg
            .provider(&m.provider)
            .expect("resolved models have providers");
        p.availability()
            .map_err(|why| format!("is not available: {why}"))
    };
    let mut notes = Vec::new();
    let default_provider = reg.defaults.provider.as_deref();

    if let Some(id) = &choice.model {
        let m = reg
            .resolve(id, choice.provider.as_deref(), default_provider)
            .map_err(|e| RunError::Usage(format!("--model: {e}")))?;
        check(&m).map_err(|e| RunError::model(format!("{} ({}) {e}", m.id, m.provider)))?;
        if let Some((pp, pm)) = &spec.model_pin {
            if (pp, pm) != (&m.provider, &m.id) {
                notes.push(format!(
                    "--model overrides the model the agent pins ({pp}/{pm})"
                ));
            }
        }
        return Ok(finish(m, notes));
    }

    if let Some((pp, pm)) = &spec.model_pin {
        match &choice.provider {
            Some(p) if p != pp => notes.push(format!(
                "--provider {p} overrides the model the agent pins ({pp}/{pm})"
            )),
            _ => {
                reg.known_provider(pp, "the agent's [model] pin")?;
                let m = reg
                    .resolve(pm, Some(pp), None)
                    .map_err(|e| RunError::model(format!("the agent pins {pp}/{pm}: {e}")))?;
                check(&m).map_err(|e| {
                    RunError::model(format!(
                        "the agent pins {pp}/{pm}, which {e}; pass --model to choose another"
                    ))
                })?;
                return Ok(finish(m, notes));
            }
        }
    }

    let filter = choice.provider.as_deref().or(default_provider);
    let in_filter = |m: &ModelInfo| filter.is_none_or(|f| m.provider == f);

    let configured = choice
        .env_model
        .clone()
        .filter(|m| !m.is_empty())
        .or_else(|| reg.defaults.model.clone());
    if let Some(id) = configured {
        let from = if choice.env_model.as_deref().is_some_and(|m| !m.is_empty()) {
            "ZOT_MODEL"
        } else {
            "defaults.model"
        };
        match reg.resolve(&id, filter, default_provider) {
            Ok(m) if !in_filter(&m) => {}
            Ok(m) => match check(&m) {
                Ok(()) => return Ok(finish(m, notes)),
                Err(e) => notes.push(format!(
                    "the configured default model ({from}) {} {e}",
                    m.id
                )),
            },
            Err(e) => notes.push(format!("the configured default model ({from}): {e}")),
        }
    }

    let mut why = Vec::new();
    for id in &spec.preferred {
        if let Ok(m) = reg.resolve(id, filter, None) {
            if in_filter(&m) {
                match check(&m) {
                    Ok(()) => return Ok(finish(m, notes)),
                    Err(e) => why.push(format!("{} ({}) {e}", m.id, m.provider)),
                }
            }
        }
    }
    for m in reg.models.iter().filter(|m| in_filter(m)) {
        match check(m) {
            Ok(()) => return Ok(finish(m.clone(), notes)),
            Err(e) if !why.iter().any(|w| w.starts_with(&format!("{} (", m.id))) => {
                why.push(format!("{} ({}) {e}", m.id, m.provider))
            }
            Err(_) => {}
        }
    }
    let scope = match (&choice.provider, default_provider) {
        (Some(p), _) => format!(" from provider {p}"),
        (None, Some(p)) => format!(" from provider {p} (defaults.provider)"),
        _ => String::new(),
    };
    if why.is_empty() {
        why.push(format!(
            "provider {} lists no models: pass --model",
            filter.unwrap_or("?")
        ));
    }
    Err(RunError::model(format!(
        "no available model{scope} satisfies the agent's requirements: {}",
        why.join("; ")
    )))
}

/// One provider in `zot models`.
#[derive(Debug, Clone, Serialize)]
pub struct ProviderRow {
    pub name: String,
    pub api: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    pub available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub custom: bool,
}

/// One model in `zot models`.
#[derive(Debug, Clone, Serialize)]
pub struct ModelRow {
    #[serde(flatten)]
    pub model: ModelInfo,
    pub available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Selected by default (no flags, an agent without requirements).
    pub default: bool,
}

/// What `zot models` shows.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The config file looked at (absent when none could be located).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<std::path::PathBuf>,
    pub config_exists: bool,
    pub providers: Vec<ProviderRow>,
    pub models: Vec<ModelRow>,
}

impl Registry {
    /// The rows of `zot models`.
    pub fn report(&self, default: Option<&Selection>) -> (Vec<ProviderRow>, Vec<ModelRow>) {
        let providers = self
            .providers
            .iter()
            .map(|p| ProviderRow {
                name: p.name.clone(),
                api: p.kind.api_name(),
                base_url: p.base_url.clone(),
                api_key_env: p.key_env.clone(),
                available: p.availability().is_ok(),
                reason: p.availability().err(),
                custom: p.custom,
            })
            .collect();
        let models = self
            .models
            .iter()
            .map(|m| {
                let a = self
                    .provider(&m.provider)
                    .map(ProviderInfo::availability)
                    .unwrap_or_else(|| Err("unknown provider".into()));
                ModelRow {
                    model: m.clone(),
                    available: a.is_ok(),
                    reason: a.err(),
                    default: default
                        .is_some_and(|s| s.model.id == m.id && s.model.provider == m.provider),
                }
            })
            .collect();
        (providers, models)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(cfg: &str, vars: &[(&str, &str)]) -> Registry {
        let cfg = config::parse(cfg).unwrap();
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        Registry::new(&cfg, &move |k| {
            vars.iter().find(|(a, _)| a == k).map(|(_, b)| b.clone())
        })
    }

    fn pick(
        r: &Registry,
        model: Option<&str>,
        provider: Option<&str>,
        spec: &AgentSpec,
    ) -> Result<String, String> {
        let c = Choice {
            model: model.map(Into::into),
            provider: provider.map(Into::into),
            ..Default::default()
        };
        select(r, &c, spec)
            .map(|s| format!("{}/{}", s.provider.name, s.model.id))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn selection_rules() {
        let none = reg("", &[]);
        let mut spec = AgentSpec::default();
        assert_eq!(pick(&none, None, None, &spec).unwrap(), "sim/sim");
        let e = pick(&none, Some("gpt-5"), None, &spec).unwrap_err();
        assert!(e.contains("OPENAI_API_KEY is not set"), "{e}");
        let keyed = reg("", &[("OPENAI_API_KEY", "k"), ("ANTHROPIC_API_KEY", "k")]);
        assert_eq!(pick(&keyed, None, None, &spec).unwrap(), "sim/sim");
        assert_eq!(
            pick(&keyed, Some("gpt-5"), None, &spec).unwrap(),
            "openai/gpt-5"
        );
        assert_eq!(
            pick(&keyed, None, Some("anthropic"), &spec).unwrap(),
            "anthropic/claude-sonnet-4-5"
        );
        // Unknown ids: accepted for a named provider, with unknown capabilities.
        assert_eq!(
            pick(&keyed, Some("o9"), Some("openai"), &spec).unwrap(),
            "openai/o9"
        );
        let e = pick(&keyed, Some("o9"), None, &spec).unwrap_err();
        assert!(
            e.contains("unknown model `o9`") && e.contains("--provider"),
            "{e}"
        );
        let e = pick(&keyed, Some("x"), Some("opneai"), &spec).unwrap_err();
        assert!(e.contains("did you mean `openai`"), "{e}");
        spec.model_requires = vec!["reasoning".into()];
        let e = pick(&keyed, Some("o9"), Some("openai"), &spec).unwrap_err();
        assert!(e.contains("reasoning support is unknown"), "{e}");
        assert_eq!(
            pick(&keyed, None, None, &spec).unwrap(),
            "anthropic/claude-sonnet-4-5"
        );
        let e = pick(&none, None, None, &spec).unwrap_err();
        assert!(
            e.contains("sim (sim) does not satisfy") && e.contains("ANTHROPIC_API_KEY is not set"),
            "{e}"
        );
        spec.model_requires = vec!["tools".into()];
        spec.min_context = Some(300_000);
        assert_eq!(pick(&keyed, None, None, &spec).unwrap(), "openai/gpt-5");
        spec.min_context = None;
        spec.preferred = vec!["gpt-4.1".into(), "sim".into()];
        assert_eq!(pick(&keyed, None, None, &spec).unwrap(), "openai/gpt-4.1");
        assert_eq!(pick(&none, None, None, &spec).unwrap(), "sim/sim");
        // --reasoning on a model without it is an error, not a dropped flag.
        let c = Choice {
            model: Some("gpt-4.1".into()),
            reasoning: Some(ReasoningEffort::High),
            ..Default::default()
        };
        let e = select(&keyed, &c, &AgentSpec::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("does not support reasoning (--reasoning)"),
            "{e}"
        );
    }

    #[test]
    fn pins_config_and_defaults() {
        let mut spec = AgentSpec {
            model_pin: Some(("openai".into(), "gpt-5".into())),
            ..Default::default()
        };
        let none = reg("", &[]);
        let e = pick(&none, None, None, &spec).unwrap_err();
        assert!(
            e.contains("pins openai/gpt-5") && e.contains("OPENAI_API_KEY"),
            "{e}"
        );
        assert_eq!(pick(&none, Some("sim"), None, &spec).unwrap(), "sim/sim");
        spec.model_pin = Some(("nope".into(), "m".into()));
        assert!(pick(&none, None, None, &spec)
            .unwrap_err()
            .contains("unknown provider `nope`"));
        let spec = AgentSpec {
            min_context: Some(8000),
            ..Default::default()
        };
        let cfg = r#"
[defaults]
provider = "local"
model = "qwen3"
reasoning = "low"
[providers.local]
api = "openai"
base_url = "http://127.0.0.1:1/v1"
api_key_env = ""
[[models]]
id = "qwen3"
provider = "local"
context_window = 32768
reasoning = true
"#;
        let r = reg(cfg, &[]);
        let s = select(&r, &Choice::default(), &spec).unwrap();
        assert_eq!(
            (s.provider.name.as_str(), s.model.id.as_str()),
            ("local", "qwen3")
        );
        assert_eq!(s.reasoning, Some(ReasoningEffort::Low));
        assert_eq!(s.provider.key_env, None);
        assert!(s.provider.availability().is_ok());
        // An id nobody lists goes to the default provider.
        assert_eq!(
            pick(&r, Some("llama3"), None, &AgentSpec::default()).unwrap(),
            "local/llama3"
        );
        let e = pick(&r, Some("llama3"), None, &spec).unwrap_err();
        assert!(e.contains("context window is unknown"), "{e}");
        // ZOT_MODEL overrides defaults.model; an unusable default is noted.
        let c = Choice {
            env_model: Some("gpt-5".into()),
            provider: Some("openai".into()),
            ..Default::default()
        };
        let e = select(&r, &c, &spec).unwrap_err().to_string();
        assert!(e.contains("OPENAI_API_KEY"), "{e}");
        let bad = reg(
            "",
            &[
                ("OPENAI_BASE_URL", "localhost:8000"),
                ("OPENAI_API_KEY", "k"),
            ],
        );
        let e = pick(&bad, Some("gpt-5"), None, &AgentSpec::default()).unwrap_err();
        assert!(e.contains("OPENAI_BASE_URL"), "{e}");
        let env_url = reg("", &[("OPENAI_BASE_URL", "http://h:1/v1/")]);
        assert_eq!(
            env_url.provider("openai").unwrap().base_url.as_deref(),
            Some("http://h:1/v1")
        );
        let cfg_url = reg(
            "[providers.openai]\nbase_url = \"http://c/v1\"\n",
            &[("OPENAI_BASE_URL", "http://h:1/v1/")],
        );
        assert_eq!(
            cfg_url.provider("openai").unwrap().base_url.as_deref(),
            Some("http://c/v1")
        );
    }
}
