//! Where the command line reads and writes: `-` for standard input and output, outputs
//! checked before any work, and files written atomically.
//!
//! [`check_outputs`] runs before a command starts its work: an output that is one of the
//! inputs (the same file through any path: same device and inode), two outputs that are
//! one file, or two outputs on standard output are usage errors; an output that cannot be
//! written (a missing folder, a read-only file, a directory) is refused with its option.
//!
//! [`write`] writes a regular file through a temporary file beside it (`.NAME.PID.tmp`),
//! renamed over the target only when complete, so a failed or interrupted write never
//! leaves a truncated file nor replaces the input; the temporary file is removed on error
//! and on Ctrl-C ([`crate::signal`]). A symbolic link is followed and its target replaced.
//! What is not a regular file (`/dev/stdout`, `/dev/null`, a FIFO) is written in place.
//! A name ending in `.gz` is gzip-compressed.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use crate::{progress, CliResult, UsageError};

/// The name that stands for standard input or output.
pub const STDIO: &str = "-";

/// Whether `path` is `-`: standard input or output.
pub fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == STDIO
}

/// What names a file for comparisons: its device and inode when it exists (the same file
/// through any path, link or `/dev/fd`), else its absolute path.
#[derive(PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
}

/// The identity of what standard output is open on (`None` when it is closed).
fn stdout_identity() -> Option<Identity> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let fd = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    let m = File::from(fd).metadata().ok()?;
    Some(Identity::Inode(m.dev(), m.ino()))
}

/// Whether `path` is the null device, which any number of outputs may share.
fn is_null_device(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(path), std::fs::metadata("/dev/null")) {
        (Ok(m), Ok(null)) => !m.is_file() && !m.is_dir() && m.rdev() == null.rdev(),
        _ => false,
    }
}

/// Whether writing `path` writes standard output: `-`, or a name of the file standard
/// output is open on (`/dev/stdout`, `/proc/self/fd/1`, or the file it is redirected to),
/// unless that is the null device.
pub fn is_stdout(path: &Path) -> bool {
    if is_stdio(path) {
        return true;
    }
    if is_null_device(path) {
        return false;
    }
    match (std::fs::metadata(path), stdout_identity()) {
        (Ok(_), Some(out)) => identity(path).is_some_and(|id| id == out),
        _ => false,
    }
}

/// Whether `path` names a folder rather than a file: it ends in `/`, `.` or `..`, or has
/// no name at all.
fn names_a_folder(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let last = bytes.rsplit(|&b| b == b'/').next().unwrap_or_default();
    last.is_empty() || last == b"." || last == b".." || path.file_name().is_none()
}

fn identity(path: &Path) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(m) => Some(Identity::Inode(m.dev(), m.ino())),
        Err(_) => {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            Some(Identity::Path(parent.canonicalize().ok()?.join(path.file_name()?)))
        }
    }
}

/// Checks, before any work, that every output can be written and replaces no input.
/// `inputs` are the files read (a `gen:` name or `-` is skipped); `outputs` are
/// `(option, path)`, `-` for standard output.
///
/// # Errors
///
/// A [`UsageError`] for an output that is an input, two outputs that are one file, or two
/// on standard output; an ordinary error, naming the option, for an output that cannot be
/// written.
pub fn check_outputs(inputs: &[&Path], outputs: &[(&str, &Path)]) -> CliResult {
    let inputs: Vec<(&Path, Identity)> = inputs
        .iter()
        .filter(|p| !is_stdio(p) && !p.to_string_lossy().starts_with("gen:"))
        .filter_map(|&p| std::fs::metadata(p).ok().and(identity(p)).map(|id| (p, id)))
        .collect();
    // (option, path, whether it is standard output, its identity)
    let mut seen: Vec<(&str, &Path, bool, Option<Identity>)> = Vec::new();
    for &(option, path) in outputs {
        let stdout = is_stdout(path);
        // standard output's identity: what it is open on, checked against the inputs
        let id = if stdout { stdout_identity() } else { identity(path) };
        let null = !stdout && is_null_device(path);
        for (other, _, other_stdout, other_id) in &seen {
            let same = match (stdout, *other_stdout) {
                (true, true) => true,
                (false, false) => !null && id.is_some() && id == *other_id,
                _ => false,
            };
            if same {
                let place = if stdout { "standard output".to_string() } else { path.display().to_string() };
                return Err(UsageError(format!(
                    "{other} and {option} both write to {place}: give them different files"
                ))
                .into());
            }
        }
        if let Some(id) = &id {
            if let Some((input, _)) = inputs.iter().find(|(_, i)| i == id) {
                let place = if stdout && is_stdio(path) {
                    "- (standard output)".to_string()
                } else {
                    path.display().to_string()
                };
                return Err(UsageError(format!(
                    "{option} {place} is the input {} (the same file): writing it would replace the input; choose \
                     another output",
                    input.display()
                ))
                .into());
            }
        }
        if !stdout {
            writable(path).map_err(|why| format!("{option} {}: cannot be written: {why}", path.display()))?;
        }
        seen.push((option, path, stdout, id));
    }
    Ok(())
}

/// Whether `path` can be written: the file in place when it is not a regular one, else a
/// temporary file beside it (made and removed).
fn writable(path: &Path) -> Result<(), String> {
    if names_a_folder(path) {
        return Err("the name is a folder's (it ends in '/', '.' or '..'), not a file's".into());
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err("it is a directory".into()),
        // a FIFO is not opened: that would wait for a reader, and closing it would end the
        // reader's input before the data comes
        Ok(m) if m.file_type().is_fifo() => return access_w(path),
        Ok(m) if !m.is_file() => {
            return OpenOptions::new().write(true).open(path).map(drop).map_err(|e| e.to_string());
        }
        Ok(m) if m.permissions().readonly() => return Err("the file is read-only".into()),
        _ => {}
    }
    let target = resolved(path);
    let dir = folder(&target);
    if !dir.is_dir() {
        return Err(format!("no folder {}", dir.display()));
    }
    let probe = temp_beside(&target);
    match OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!("cannot create a file in {}: {e}", dir.display())),
    }
}

/// Whether the process may write `path` (access(2) with W_OK).
fn access_w(path: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated path that lives across the call.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

/// The file a path names: a symbolic link's target (also when that does not exist yet:
/// the file is made where the link points, as a shell's `>` would), else the path itself.
fn resolved(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => path.canonicalize().unwrap_or_else(|_| {
            // a dangling link, perhaps through others: follow it by hand, a few links deep
            let mut at = path.to_path_buf();
            for _ in 0..40 {
                match std::fs::read_link(&at) {
                    Ok(next) => at = folder(&at).join(next),
                    Err(_) => break,
                }
            }
            at
        }),
        _ => path.to_path_buf(),
    }
}

/// The folder of `path` (`.` for a bare name).
fn folder(path: &Path) -> PathBuf {
    path.parent().filter(|p| !p.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The temporary file beside `target`: `.NAME.PID.tmp` in the same folder, so that the
/// rename stays on one file system.
fn temp_beside(target: &Path) -> PathBuf {
    let name = target.file_name().map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    folder(target).join(format!(".{name}.{}.tmp", std::process::id()))
}

/// A file being written through a temporary file beside it; removed unless
/// [`AtomicFile::commit`] renames it over the target.
struct AtomicFile {
    temp: PathBuf,
    target: PathBuf,
    file: Option<BufWriter<File>>,
    _guard: crate::signal::TempGuard,
}

impl AtomicFile {
    fn create(path: &Path) -> std::io::Result<AtomicFile> {
        let target = resolved(path);
        let temp = temp_beside(&target);
        let guard = crate::signal::register_temp(&temp);
        let file = OpenOptions::new().write(true).create_new(true).open(&temp)?;
        // An existing file keeps its permissions.
        if let Ok(m) = std::fs::metadata(&target) {
            let _ = file.set_permissions(m.permissions());
        }
        Ok(AtomicFile { temp, target, file: Some(BufWriter::with_capacity(1 << 20, file)), _guard: guard })
    }

    fn commit(mut self) -> std::io::Result<()> {
        let Some(file) = self.file.take() else {
            return Err(std::io::Error::other("the file was committed already"));
        };
        let done = file.into_inner().map_err(|e| e.into_error()).and_then(|file| {
            file.sync_all()?;
            drop(file);
            std::fs::rename(&self.temp, &self.target)
        });
        // a failed commit leaves no temporary file behind
        if done.is_err() {
            let _ = std::fs::remove_file(&self.temp);
        }
        done
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("open until committed").write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("open until committed").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.is_some() {
            self.file = None;
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Where the bytes go.
enum Sink {
    Stdout(BufWriter<std::io::Stdout>),
    InPlace(BufWriter<File>),
    Atomic(AtomicFile),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Stdout(w) => w.write(buf),
            Sink::InPlace(w) => w.write(buf),
            Sink::Atomic(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Stdout(w) => w.flush(),
            Sink::InPlace(w) => w.flush(),
            Sink::Atomic(w) => w.flush(),
        }
    }
}

impl Sink {
    fn open(path: &Path) -> std::io::Result<Sink> {
        // `/dev/stdout` and the like are written through standard output itself, so that
        // its open mode holds: `>> log` appends, never truncates
        if is_stdout(path) {
            return Ok(Sink::Stdout(BufWriter::with_capacity(1 << 20, std::io::stdout())));
        }
        match std::fs::metadata(path) {
            Ok(m) if !m.is_file() => {
                let f = OpenOptions::new().write(true).truncate(true).open(path)?;
                Ok(Sink::InPlace(BufWriter::with_capacity(1 << 20, f)))
            }
            // `/dev/stdout` and `/proc/self/fd/N` redirected to a regular file: written in
            // place (a rename would replace the link)
            _ if path.starts_with("/dev") || path.starts_with("/proc") => {
                let f = OpenOptions::new().write(true).create(true).truncate(true).open(path)?;
                Ok(Sink::InPlace(BufWriter::with_capacity(1 << 20, f)))
            }
            _ => Ok(Sink::Atomic(AtomicFile::create(path)?)),
        }
    }

    fn finish(self) -> std::io::Result<()> {
        match self {
            Sink::Stdout(mut w) => w.flush(),
            Sink::InPlace(w) => w.into_inner().map_err(|e| e.into_error())?.sync_all().or(Ok(())),
            Sink::Atomic(a) => a.commit(),
        }
    }
}

/// Writes `path` (`-`: standard output) with `body`, atomically for a regular file (see
/// the module docs), gzip-compressed when the name ends in `.gz`, with a byte count on a
/// terminal. Errors name the file; a closed standard output stays a broken pipe (which
/// `main` ends quietly on).
pub fn write(path: &Path, body: impl FnOnce(&mut dyn Write) -> spgpu::Result<()>) -> CliResult {
    let name = || if is_stdio(path) { PathBuf::from("standard output") } else { path.to_path_buf() };
    let at = |source: std::io::Error| spgpu::Error::Io { path: Some(name()), source };
    let sink = Sink::open(path).map_err(at)?;
    let bar = progress::bytes(&format!("writing {}", name().display()), None);
    let gz = !is_stdio(path) && path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    let sink = if gz {
        let mut enc = flate2::write::GzEncoder::new(sink, flate2::Compression::default());
        body(&mut progress::Counting::new(&mut enc, bar)).map_err(|e| named(e, &name()))?;
        enc.finish().map_err(at)?
    } else {
        let mut sink = sink;
        body(&mut progress::Counting::new(&mut sink, bar)).map_err(|e| named(e, &name()))?;
        sink
    };
    sink.finish().map_err(at)?;
    Ok(())
}

/// Names `path` in an error that does not name a file (as the library's readers and
/// writers do for a path they were given).
pub fn named(e: spgpu::Error, path: &Path) -> spgpu::Error {
    match e {
        spgpu::Error::Io { path: None, source } => spgpu::Error::Io { path: Some(path.to_path_buf()), source },
        spgpu::Error::MatrixMarket(mut m) => {
            if m.path.is_none() {
                m.path = Some(path.to_path_buf());
            }
            spgpu::Error::MatrixMarket(m)
        }
        spgpu::Error::InsufficientMemory { what, memory, needed, available, hint } => {
            spgpu::Error::InsufficientMemory {
                what: format!("{}: {what}", path.display()),
                memory,
                needed,
                available,
                hint,
            }
        }
        e => e,
    }
}

/// The name standard input goes by in messages.
pub const STDIN_NAME: &str = "<stdin>";

/// A reader of what `path` names for a Matrix Market read that streams (`-`: standard
/// input; a large file on a terminal: with a progress bar), and the name for its errors;
/// `None` for a file best read by path (the library then knows its size).
pub fn streamed(path: &Path) -> std::io::Result<Option<(Box<dyn Read + Send>, PathBuf)>> {
    if is_stdio(path) {
        let bar = progress::bytes("reading standard input", None);
        return Ok(Some((Box::new(progress::Counting::new(std::io::stdin(), bar)), PathBuf::from(STDIN_NAME))));
    }
    // Below this a read takes well under a second: no bar.
    const SHOWN_FROM: u64 = 64 << 20;
    if !progress::shown() {
        return Ok(None);
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() >= SHOWN_FROM => {
            let file = File::open(path)?;
            let bar = progress::bytes(&format!("reading {}", path.display()), Some(m.len()));
            Ok(Some((Box::new(progress::Counting::new(file, bar)), path.to_path_buf())))
        }
        _ => Ok(None),
    }
}

/// A reader that keeps a copy of the first bytes that pass (a header read after the
/// stream).
pub struct Prefix<R> {
    inner: R,
    kept: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    limit: usize,
}

impl<R> Prefix<R> {
    /// Keeps up to `limit` bytes of `inner` in the returned buffer.
    pub fn new(inner: R, limit: usize) -> (Self, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
        let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        (Prefix { inner, kept: kept.clone(), limit }, kept)
    }
}

impl<R: Read> Read for Prefix<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Ok(mut kept) = self.kept.lock() {
            let room = self.limit.saturating_sub(kept.len()).min(n);
            kept.extend_from_slice(&buf[..room]);
        }
        Ok(n)
    }
}
