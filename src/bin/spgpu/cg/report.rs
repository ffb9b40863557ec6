//! What `spgpu cg` does around the solve: where the text report goes ([`Say`]).

use std::path::Path;

use super::Args;
use crate::files;

/// A path for messages: `-` is standard output.
pub(super) fn shown(path: &Path) -> String {
    if files::is_stdio(path) {
        "standard output".into()
    } else {
        path.display().to_string()
    }
}

/// Where the text report goes: standard output; standard error when a data output
/// (`-o -`, `--history -`) takes standard output.
pub(super) enum Say {
    Stdout,
    Stderr,
}

impl Say {
    pub(super) fn for_args(args: &Args) -> Say {
        if [&args.output, &args.history].into_iter().flatten().any(|p| files::is_stdio(p)) {
            Say::Stderr
        } else {
            Say::Stdout
        }
    }

    /// Writes `text` and a line end; a closed standard output drops it (the files are
    /// still written, see `crate::report`).
    pub(super) fn line(&self, text: &str) -> std::io::Result<()> {
        match self {
            Say::Stdout => reportln!("{text}"),
            Say::Stderr => {
                eprintln!("{text}");
                Ok(())
            }
        }
    }
}
