//! Ctrl-C (SIGINT): status 130, and never a half-written output file.
//!
//! [`install`] sets a handler for the whole process. By default it removes the temporary
//! files of the outputs being written ([`register_temp`]: `unlink` is async-signal-safe)
//! and ends the process with status 130, as the shell reports a command killed by the
//! signal. Between [`defer`]`(true)` and `defer(false)` (`spgpu cg`'s solve) the first
//! Ctrl-C only raises a flag ([`interrupted`]) that the solve reads at its next checkpoint,
//! so that the report so far can be printed and the outputs written; a second one ends the
//! process as above.

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// The exit status of a command ended by Ctrl-C (128 + SIGINT).
pub const INTERRUPTED_STATUS: u8 = 130;

/// Set by the handler while deferring.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Whether the first Ctrl-C only raises [`INTERRUPTED`].
static DEFER: AtomicBool = AtomicBool::new(false);

/// Temporary files to remove when the process ends on Ctrl-C: NUL-terminated paths, never
/// freed (a handler on another thread may be reading one; a few bytes per output file).
static TEMPS: [AtomicPtr<u8>; 8] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 8];

/// Whether a Ctrl-C came while deferring.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Makes the first Ctrl-C raise [`interrupted`] instead of ending the process (`true`), or
/// end it again (`false`).
pub fn defer(on: bool) {
    DEFER.store(on, Ordering::SeqCst);
}

/// A registered temporary file ([`register_temp`]); dropping it unregisters the path.
pub struct TempGuard(Option<usize>);

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(slot) = self.0 {
            // leaked on purpose: see TEMPS
            TEMPS[slot].store(std::ptr::null_mut(), Ordering::SeqCst);
        }
    }
}

/// Registers `path` to be removed if the process ends on Ctrl-C while it exists. With
/// every slot taken, the file is not registered (a Ctrl-C then leaves it behind).
pub fn register_temp(path: &std::path::Path) -> TempGuard {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return TempGuard(None);
    };
    let ptr = c.into_raw().cast::<u8>();
    for (slot, t) in TEMPS.iter().enumerate() {
        if t.compare_exchange(std::ptr::null_mut(), ptr, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            return TempGuard(Some(slot));
        }
    }
    // SAFETY: `ptr` came from `CString::into_raw` just above and was stored nowhere.
    drop(unsafe { std::ffi::CString::from_raw(ptr.cast()) });
    TempGuard(None)
}

extern "C" fn on_sigint(_: libc::c_int) {
    if DEFER.load(Ordering::SeqCst) && !INTERRUPTED.swap(true, Ordering::SeqCst) {
        return;
    }
    for t in &TEMPS {
        let p = t.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: a NUL-terminated path from `CString::into_raw`, never freed;
            // unlink(2) is async-signal-safe.
            unsafe { libc::unlink(p.cast()) };
        }
    }
    // SAFETY: _exit(2) is async-signal-safe and ends every thread at once.
    unsafe { libc::_exit(i32::from(INTERRUPTED_STATUS)) };
}

/// Installs the Ctrl-C handler (see the module docs), unless SIGINT is ignored (a command
/// started in the background by a non-interactive shell keeps ignoring it). Where it
/// cannot be installed, Ctrl-C keeps its default action (the process ends; a temporary file
/// may stay behind).
pub fn install() {
    let handler: extern "C" fn(libc::c_int) = on_sigint;
    // SAFETY: sigaction(2) with zeroed structs (an empty mask, no flags but SA_RESTART), the
    // first call only reading the current action, and a handler that only touches atomics
    // and calls async-signal-safe functions.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGINT, std::ptr::null(), &mut old) != 0 || old.sa_sigaction == libc::SIG_IGN {
            return;
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
}
