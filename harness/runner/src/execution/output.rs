//! The output cap: long outputs keep their head and tail around a line saying what was cut.

use std::collections::VecDeque;

/// Collects bytes, keeping the first half and the last half of `cap` bytes.
pub(crate) struct CappedBuf {
    cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
}

impl CappedBuf {
    pub(crate) fn new(cap: usize) -> Self {
        CappedBuf {
            cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    pub(crate) fn head_cap(&self) -> usize {
        self.cap / 2
    }

    pub(crate) fn tail_cap(&self) -> usize {
        self.cap - self.cap / 2
    }

    pub(crate) fn push(&mut self, data: &[u8]) {
        self.total += data.len();
        let room = self.head_cap().saturating_sub(self.head.len());
        let (to_head, rest) = data.split_at(room.min(data.len()));
        self.head.extend_from_slice(to_head);
        self.tail.extend(rest);
        let tail_cap = self.tail_cap();
        if self.tail.len() > tail_cap {
            let excess = self.tail.len() - tail_cap;
            self.tail.drain(..excess);
        }
    }

    pub(crate) fn finish(self) -> String {
        let tail: Vec<u8> = self.tail.into_iter().collect();
        if self.total <= self.cap {
            let mut all = self.head;
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        // Cut on char boundaries: drop an incomplete sequence at the end of the head and
        // continuation bytes at the start of the tail.
        let head_len = match std::str::from_utf8(&self.head) {
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            _ => self.head.len(),
        };
        let tail_skip = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0xC0) == 0x80)
            .count();
        let head = &self.head[..head_len];
        let tail = &tail[tail_skip..];
        let cut = self.total - head.len() - tail.len();
        format!(
            "{}\n[… {cut} bytes cut from the middle of the output …]\n{}",
            String::from_utf8_lossy(head),
            String::from_utf8_lossy(tail)
        )
    }
}

/// Caps a text at `cap` bytes, keeping its head and tail around a note.
pub(crate) fn cap_output(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let mut buf = CappedBuf::new(cap);
    buf.push(text.as_bytes());
    buf.finish()
}
