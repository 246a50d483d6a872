//! Draws the precision sample of hidden references (docs/replay.md): `N` references per policy,
//! uniformly over every hidden reference of the corpus, with a fixed seed, each printed with
//! the response that used it and the earlier message it came from, for a reader to judge.
//!
//! ```sh
//! cargo run --release -p harness-runner --example hidden_sample -- DATA [N] [SEED] [POLICY...]
//! ```
//!
//! Default policies: `trim`, `compact:window=60000` (compact never fires at 200k on the real
//! sessions), `fold`.

use std::path::PathBuf;

use harness_replay::{ReplayConfig, Replayer};

/// A fixed-seed generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `width` characters of `text` around the first whole-token occurrence of `token`.
fn around(text: &str, token: &str, width: usize) -> String {
    let at = text.find(token).unwrap_or(0);
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let pos = chars.partition_point(|(i, _)| *i < at);
    let from = pos.saturating_sub(width);
    let to = (pos + token.chars().count() + width).min(chars.len());
    chars[from..to]
        .iter()
        .map(|(_, c)| if c.is_control() { ' ' } else { *c })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let data = PathBuf::from(args.first().map_or("data", String::as_str));
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(40);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(13);
    let mut wanted: Vec<String> = args.iter().skip(3).cloned().collect();
    if wanted.is_empty() {
        wanted = ["trim", "compact:window=60000", "fold"]
            .map(String::from)
            .to_vec();
    }
    let report = harness_import::import_paths(&[data], None).expect("the data folder reads");
    let sessions = report.sessions;
    let mut specs = vec![policies::parse_policy("none").unwrap()];
    specs.extend(wanted.iter().map(|p| policies::parse_policy(p).unwrap()));
    let replayer = Replayer::new(ReplayConfig {
        policies: specs,
        ..ReplayConfig::default()
    })
    .unwrap();
    let replays = replayer.replay_all(&sessions, None, 2);
    for policy in &wanted {
        // Every hidden reference: (session, recorded request, index in its list).
        let mut all = Vec::new();
        for (si, r) in replays.iter().enumerate() {
            let p = r.policy(policy).unwrap();
            for q in &p.requests {
                for (h, _) in q.hidden.iter().enumerate() {
                    all.push((si, q.request.unwrap_or(0), q.turn, h));
                }
            }
        }
        let total = all.len();
        let mut rng = Rng(seed);
        // A partial Fisher-Yates shuffle: the first `n` are a uniform sample.
        for i in 0..n.min(total) {
            let j = i + (rng.next() % (total - i) as u64) as usize;
            all.swap(i, j);
        }
        println!(
            "=== {policy}: {total} hidden references; sample of {}",
            n.min(total)
        );
        for (k, &(si, req, turn, h)) in all.iter().take(n).enumerate() {
            let s = &sessions[si];
            let q = replays[si]
                .policy(policy)
                .unwrap()
                .requests
                .iter()
                .find(|q| q.request == Some(req))
                .unwrap();
            let hr = &q.hidden[h];
            let resp = &s.messages[s.requests[req].message];
            let mut resp_text = resp.text.clone();
            for c in &resp.tool_calls {
                resp_text.push_str(&format!(" [{}] {}", c.name, c.args));
            }
            let src = s.messages[..s.requests[req].context].iter().find(|m| {
                m.turn < resp.turn
                    && matches!(
                        m.role,
                        harness_core::Role::Tool | harness_core::Role::Assistant
                    )
                    && (m.text.contains(&hr.text)
                        || m.tool_calls
                            .iter()
                            .any(|c| c.args.to_string().contains(&hr.text)))
            });
            println!(
                "\n#{} {} req {req} turn {turn} token `{}` ({:?}, from turn {})",
                k + 1,
                s.id,
                hr.text,
                hr.source,
                hr.from_turn
            );
            println!("  RESPONSE: …{}…", around(&resp_text, &hr.text, 160));
            if let Some(m) = src {
                let mut t = m.text.clone();
                for c in &m.tool_calls {
                    t.push_str(&format!(" [{}] {}", c.name, c.args));
                }
                println!(
                    "  SOURCE ({:?} {} turn {}): …{}…",
                    m.role,
                    m.tool_name.as_deref().unwrap_or(""),
                    m.turn,
                    around(&t, &hr.text, 160)
                );
            }
        }
    }
}
