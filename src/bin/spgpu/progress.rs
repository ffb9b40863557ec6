//! Progress on standard error, only when it is a terminal: never in a pipe or a log.

use std::io::{IsTerminal, Read, Write};

use indicatif::{ProgressBar, ProgressStyle};

/// Whether progress is shown at all: standard error is a terminal.
pub fn shown() -> bool {
    std::io::stderr().is_terminal()
}

/// A bar of `total` bytes (or a counter of bytes when the total is unknown), labelled
/// `what`; hidden unless [`shown`].
pub fn bytes(what: &str, total: Option<u64>) -> ProgressBar {
    if !shown() {
        return ProgressBar::hidden();
    }
    let (bar, template) = match total {
        Some(t) => (ProgressBar::new(t), "{msg} {bar:30} {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)"),
        None => (ProgressBar::no_length(), "{spinner} {msg} {bytes} ({bytes_per_sec}) [{elapsed}]"),
    };
    bar.set_style(ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()));
    bar.set_message(what.to_string());
    bar
}

/// A spinner with the time elapsed, for work that cannot count its steps (building a
/// generated matrix); hidden unless [`shown`].
pub fn spinner(what: &str) -> ProgressBar {
    if !shown() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(what.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// A reader or writer that advances a bar by the bytes that pass.
pub struct Counting<S> {
    inner: S,
    bar: ProgressBar,
}

impl<S> Counting<S> {
    /// Counts what passes through `inner` on `bar`.
    pub fn new(inner: S, bar: ProgressBar) -> Self {
        Counting { inner, bar }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<S> Drop for Counting<S> {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
