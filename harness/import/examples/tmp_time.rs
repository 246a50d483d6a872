//! temp
fn main() {
    let dir = std::path::PathBuf::from("/work/shared/data");
    let found = harness_import::fs::discover(&[dir]).unwrap();
    let files: Vec<(String, Vec<u8>)> = found.iter().map(|d| (d.path.display().to_string(), std::fs::read(&d.path).unwrap())).collect();
    let total: usize = files.iter().map(|f| f.1.len()).sum();
    for round in 0..3 {
        let t = std::time::Instant::now();
        let mut all = Vec::new();
        for (n, b) in &files { if let Ok(s) = harness_import::import_bytes(n, b, None) { all.extend(s); } }
        harness_import::link_forks(&mut all);
        let el = t.elapsed();
        let t2 = std::time::Instant::now();
        let mut toks = 0u64;
        for s in &all { for m in &s.messages { toks += harness_core::tokens::message_tokens(m) as u64; } }
        println!("round {round}: {} bytes, {} sessions, import {:?}, re-tokenize alone {:?} ({toks} tokens)", total, all.len(), el, t2.elapsed());
    }
}
