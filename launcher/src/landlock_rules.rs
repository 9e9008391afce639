//! The Landlock ruleset of a launch: read where the policy allows reading,
//! write only in the write roots (and the sandbox's private /tmp).

use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use serde::{Deserialize, Serialize};
use zot_policy::sandbox::ReadScope;

use crate::{BackendKind, LandlockMode, LaunchError, LaunchSpec};

/// Highest ABI whose filesystem rights we ask for (best effort beyond v1).
const TARGET_ABI: ABI = ABI::V6;

/// How much of the requested Landlock ruleset the kernel enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LandlockLevel {
    Full,
    Partial,
    None,
}

/// Landlock outcome reported to the supervisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockReport {
    pub level: LandlockLevel,
    /// Why it is not full (kernel status), if so.
    pub detail: Option<String>,
}

fn add_path(
    ruleset: landlock::RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
    must_exist: bool,
) -> Result<landlock::RulesetCreated, LaunchError> {
    let fd = match PathFd::new(path) {
        Ok(fd) => fd,
        Err(_) if !must_exist => return Ok(ruleset),
        Err(e) => {
            return Err(LaunchError::LandlockOpen {
                path: path.to_path_buf(),
                source: e,
            });
        }
    };
    // Files only take file rights.
    let access = if path.is_dir() {
        access
    } else {
        access & AccessFs::from_file(TARGET_ABI)
    };
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .map_err(|e| LaunchError::LandlockPath {
            path: path.to_path_buf(),
            source: e,
        })
}

/// Build and enforce the ruleset for `spec`.
pub(crate) fn apply(spec: &LaunchSpec) -> Result<LandlockReport, LaunchError> {
    if spec.landlock == LandlockMode::Off {
        return Ok(LandlockReport {
            level: LandlockLevel::None,
            detail: Some("not requested".into()),
        });
    }
    let v1_level = match spec.landlock {
        LandlockMode::Required => CompatLevel::HardRequirement,
        _ => CompatLevel::BestEffort,
    };
    let read = AccessFs::from_read(TARGET_ABI);
    let all = AccessFs::from_all(TARGET_ABI);
    let dev = AccessFs::from_file(TARGET_ABI) | AccessFs::ReadDir;

    let ruleset = Ruleset::default()
        .set_compatibility(v1_level)
        .handle_access(AccessFs::from_all(ABI::V1))
        .map_err(LaunchError::Landlock)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(LaunchError::Landlock)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(LaunchError::Landlock)?
        .create()
        .map_err(LaunchError::Landlock)?;

    let mut reads: Vec<PathBuf> = read_rules(spec);
    reads.extend(spec.landlock_read.iter().cloned());
    let mut ruleset = ruleset;
    for p in &reads {
        ruleset = add_path(ruleset, p, read, false)?;
    }
    // In a restricted view built by mounts, listing directories is harmless
    // (only allowed paths exist); on the landlock backend it is not.
    if matches!(spec.policy.read, ReadScope::Restricted { .. })
        && spec.backend != BackendKind::Landlock
    {
        ruleset = add_path(
            ruleset,
            Path::new("/"),
            BitFlags::from(AccessFs::ReadDir),
            false,
        )?;
    }
    for p in &spec.landlock_dev {
        ruleset = add_path(ruleset, p, dev, false)?;
    }
    for p in &spec.policy.write_roots {
        ruleset = add_path(ruleset, p, all, true)?;
    }
    for p in &spec.landlock_write {
        ruleset = add_path(ruleset, p, all, false)?;
    }
    let status = ruleset.restrict_self().map_err(LaunchError::Landlock)?;
    let detail = format!("{:?}", status.landlock);
    let report = match status.ruleset {
        RulesetStatus::FullyEnforced => LandlockReport {
            level: LandlockLevel::Full,
            detail: None,
        },
        RulesetStatus::PartiallyEnforced => LandlockReport {
            level: LandlockLevel::Partial,
            detail: Some(detail),
        },
        RulesetStatus::NotEnforced => LandlockReport {
            level: LandlockLevel::None,
            detail: Some(detail),
        },
    };
    if spec.landlock == LandlockMode::Required && report.level == LandlockLevel::None {
        return Err(LaunchError::LandlockNotEnforced(
            report.detail.unwrap_or_default(),
        ));
    }
    Ok(report)
}

/// The read rules: the restricted paths, `/` for a full-disk view, or, on
/// the landlock backend (no mounts to mask deny-read paths), every sibling
/// along the way to each deny-read path. The ancestors themselves get no
/// rule (so listing `/` or `$HOME` fails there: the price of hiding).
pub fn read_rules(spec: &LaunchSpec) -> Vec<PathBuf> {
    match &spec.policy.read {
        ReadScope::Restricted { paths } => paths.clone(),
        ReadScope::FullDisk
            if spec.backend == BackendKind::Landlock && !spec.policy.deny_read.is_empty() =>
        {
            let denied: Vec<&Path> = spec
                .policy
                .deny_read
                .iter()
                .map(|p| p.as_path())
                .filter(|p| p.exists())
                .collect();
            let mut out = Vec::new();
            carve(Path::new("/"), &denied, &mut out);
            out
        }
        ReadScope::FullDisk => vec![PathBuf::from("/")],
    }
}

fn carve(dir: &Path, denied: &[&Path], out: &mut Vec<PathBuf>) {
    if denied.contains(&dir) {
        return;
    }
    if !denied.iter().any(|d| d.starts_with(dir)) {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut children: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    children.sort();
    for child in children {
        carve(&child, denied, out);
    }
}

/// One line per rule, for `zot debug sandbox --explain`.
pub fn describe(spec: &LaunchSpec) -> Vec<(PathBuf, &'static str)> {
    if spec.landlock == LandlockMode::Off {
        return Vec::new();
    }
    let mut out: Vec<(PathBuf, &'static str)> = Vec::new();
    out.extend(
        read_rules(spec)
            .into_iter()
            .chain(spec.landlock_read.iter().cloned())
            .map(|p| (p, "read, execute")),
    );
    out.extend(
        spec.landlock_dev
            .iter()
            .cloned()
            .map(|p| (p, "read, write, ioctl (devices)")),
    );
    out.extend(
        spec.policy
            .write_roots
            .iter()
            .chain(spec.landlock_write.iter())
            .cloned()
            .map(|p| (p, "read, write, create, remove")),
    );
    out
}
