//! The behaviour profile ([`harness_core::behaviour::Profile`]) measured from the losses of the
//! sessions replayed: what `--behaviour-out FILE` writes.

use std::collections::BTreeMap;

use harness_core::behaviour::{
    KindProfile, LossKind, Means, Profile, Provenance, ProvenanceSession, Rate, References, Sizes,
    FORMAT, VERSION,
};

use super::stats::{kind_group, GroupStats};
use super::{SessionLosses, WINDOW_CALLS};

fn quantile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize] as f64
}

/// A figure to six decimals: what the file holds, read back the same.
fn r6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn rate(r: Rate) -> Rate {
    Rate {
        point: r6(r.point),
        lo: r6(r.lo),
        hi: r6(r.hi),
    }
}

fn kind_profile(g: &GroupStats) -> KindProfile {
    let a = &g.after;
    let mut sizes: Vec<u64> = a.refetch_sizes.clone();
    sizes.sort_unstable();
    let n = sizes.len() as u64;
    let none = Rate::exact(0.0);
    KindProfile {
        losses: g.measured as u64,
        calls: a.calls as u64,
        refetches: a.refetches() as u64,
        base_calls: g.base.calls as u64,
        base_refetches: g.base.refetches() as u64,
        refetch_rate: rate(g.refetch_rate),
        base_rate: rate(g.base_rate.unwrap_or(none)),
        excess_rate: rate(g.excess_rate.unwrap_or(g.refetch_rate)),
        references: References {
            held: a.refs_held as u64,
            refetched: a.refs_refetched as u64,
            new_output: a.refs_new_output as u64,
            no_source: a.refs_no_source as u64,
        },
        base_references: References {
            held: g.base.refs_held as u64,
            refetched: g.base.refs_refetched as u64,
            new_output: g.base.refs_new_output as u64,
            no_source: g.base.refs_no_source as u64,
        },
        recover: rate(g.recover),
        no_source: rate(g.no_source),
        means: {
            let m = Means::of(
                a.reread_unchanged as u64,
                a.reruns as u64,
                a.searches as u64,
                a.archive_reads as u64,
            );
            Means {
                reread: r6(m.reread),
                rerun: r6(m.rerun),
                search: r6(m.search),
                archive: r6(m.archive),
            }
        },
        sizes: Sizes {
            count: n,
            mean: if n == 0 {
                0.0
            } else {
                r6(sizes.iter().sum::<u64>() as f64 / n as f64)
            },
            median: quantile(&sizes, 0.5),
            p90: quantile(&sizes, 0.9),
        },
    }
}

/// The profile of `sessions`' losses, named `name`, measured by `command`; `None` when no loss
/// was measured (nothing to write).
pub fn profile(sessions: &[SessionLosses], name: &str, command: &str) -> Option<Profile> {
    let of = |k: LossKind| {
        kind_group(sessions, k)
            .filter(|g| g.measured > 0)
            .map(|g| kind_profile(&g))
    };
    let (summary, none) = (of(LossKind::Summary), of(LossKind::None));
    if summary.is_none() && none.is_none() {
        return None;
    }
    let mut agents: BTreeMap<String, u64> = BTreeMap::new();
    let mut models: BTreeMap<String, u64> = BTreeMap::new();
    let mut listed = Vec::new();
    let mut losses = 0u64;
    let mut base_windows = 0u64;
    for s in sessions {
        let measured = s.losses.iter().filter(|l| l.measured).count() as u64;
        if measured == 0 && s.base.is_empty() {
            continue;
        }
        losses += measured;
        base_windows += s.base.len() as u64;
        let agent = s
            .agent_name
            .clone()
            .unwrap_or_else(|| s.agent.name().to_string());
        for l in s.losses.iter().filter(|l| l.measured) {
            *agents.entry(agent.clone()).or_default() += 1;
            *models
                .entry(l.model.clone().unwrap_or_else(|| "(none recorded)".into()))
                .or_default() += 1;
        }
        let model = s
            .losses
            .iter()
            .find_map(|l| l.model.clone())
            .or_else(|| s.base.iter().find_map(|b| b.model.clone()));
        listed.push(ProvenanceSession {
            id: s.session.clone(),
            source: s.source.clone(),
            agent,
            model,
            losses: measured,
        });
    }
    Some(Profile {
        format: FORMAT.to_string(),
        version: VERSION,
        name: name.to_string(),
        window_calls: WINDOW_CALLS as u32,
        summary,
        none,
        provenance: Provenance {
            measured_with: command.to_string(),
            sessions: listed,
            agents,
            models,
            losses,
            base_windows,
            note: String::new(),
        },
    })
}
