//! Asking the models of `judge run` ([`score`]): the baselines answer every item, then each
//! model, at most `jobs` requests at once; the overview is the module's (`super`).

use std::sync::{Arc, Mutex};

use harness_core::judge::{
    aggregate, baseline_record, dataset_stats, Aggregate, Item, JudgedRecord, SourceStats,
    BASELINES,
};

use crate::backends::SharedModel;

use super::answer::{self, Answering};
use super::request::{request_for, JudgeOptions};

/// The baselines' records over the items; `prompt_tokens` is the size of the request a model
/// would get (tool outputs cut to `cap` when given).
pub fn baseline_records(items: &[Item], cap: Option<usize>) -> Vec<JudgedRecord> {
    let sizes: Vec<u64> = items.iter().map(|it| request_for(it, cap).tokens).collect();
    let mut out = Vec::new();
    for j in BASELINES {
        for (it, size) in items.iter().zip(&sizes) {
            let mut r = baseline_record(j, it, &it.context());
            r.prompt_tokens = *size;
            out.push(r);
        }
    }
    out
}

/// What `judge run` gives: every record (the baselines' first, then the models'), the judges'
/// names in table order, each judge's scores summed, and the dataset's counts per source.
#[derive(Debug, Clone)]
pub struct Scored {
    /// The baselines' records, then each model's, grouped by judge in item order.
    pub records: Vec<JudgedRecord>,
    /// The baselines' names ([`BASELINES`]), then the models'.
    pub judges: Vec<String>,
    /// One aggregate per judge, in the order of `judges`.
    pub aggregates: Vec<Aggregate>,
    /// The dataset's counts per source: the host's filter and the lexical rule.
    pub sources: Vec<SourceStats>,
}

/// `judge run`: the baselines answer every item, then each model does as its [`Answering`]
/// says; the records are summed per judge.
pub async fn score(
    items: &[Item],
    models: &[(SharedModel, Answering)],
    opts: &JudgeOptions,
) -> Scored {
    let mut records = baseline_records(items, opts.max_tool_output);
    records.extend(judge_models_answering(items, models, opts).await);
    let mut judges: Vec<String> = BASELINES.iter().map(|j| j.name().to_string()).collect();
    judges.extend(models.iter().map(|(m, _)| m.name()));
    let aggregates = judges.iter().map(|n| aggregate(n, &records)).collect();
    Scored {
        records,
        judges,
        aggregates,
        sources: dataset_stats(items),
    }
}

/// Asks each model about every item (concurrently, at most `jobs` requests at once) and judges
/// the answers; records come back grouped by model, in item order. Models answer with tool calls.
pub async fn judge_models(
    items: &[Item],
    models: &[SharedModel],
    opts: &JudgeOptions,
) -> Vec<JudgedRecord> {
    let models: Vec<(SharedModel, Answering)> = models
        .iter()
        .map(|m| (Arc::clone(m), Answering::default()))
        .collect();
    judge_models_answering(items, &models, opts).await
}

/// [`judge_models`], each model answering as its [`Answering`] says.
pub async fn judge_models_answering(
    items: &[Item],
    models: &[(SharedModel, Answering)],
    opts: &JudgeOptions,
) -> Vec<JudgedRecord> {
    let items: Arc<Vec<Item>> = Arc::new(items.to_vec());
    let sem = Arc::new(tokio::sync::Semaphore::new(opts.jobs.max(1)));
    let total = items.len() * models.len();
    let done = Arc::new(Mutex::new(0usize));
    let mut handles = Vec::new();
    for (mi, (model, how)) in models.iter().enumerate() {
        for ii in 0..items.len() {
            let (items, sem, model, opts, done, how) = (
                Arc::clone(&items),
                Arc::clone(&sem),
                Arc::clone(model),
                opts.clone(),
                Arc::clone(&done),
                *how,
            );
            handles.push(tokio::spawn(async move {
                let _permit = sem.acquire_owned().await;
                let item = &items[ii];
                let rec = answer::ask(item, &model, how, &opts).await;
                if opts.progress {
                    let n = done.lock().map(|mut d| {
                        *d += 1;
                        *d
                    });
                    let what = match &rec.error {
                        Some(e) => format!("error: {e}"),
                        None if rec.score.unparsable => format!("unparsable: {:?}", rec.text),
                        None if rec.score.ignored => "ignored the card".to_string(),
                        None => rec
                            .calls
                            .iter()
                            .map(|c| match (c.from, c.to) {
                                (Some(a), Some(b)) => format!("fold {a}-{b} {:?}", c.verdict),
                                _ => format!("{:?}", c.verdict),
                            })
                            .collect::<Vec<_>>()
                            .join(", "),
                    };
                    crate::progress::say(&format!(
                        "judge: [{}/{total}] {} {} ({:.1}s): {what}",
                        n.unwrap_or(0),
                        rec.model,
                        item.id,
                        rec.latency_ms as f64 / 1000.0
                    ));
                }
                (mi, ii, rec)
            }));
        }
    }
    let mut got: Vec<(usize, usize, JudgedRecord)> = Vec::new();
    for h in handles {
        if let Ok(r) = h.await {
            got.push(r);
        }
    }
    got.sort_by_key(|(m, i, _)| (*m, *i));
    got.into_iter().map(|(_, _, r)| r).collect()
}
