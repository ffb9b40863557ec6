//! Memory for arrays whose size the input dictates: checked against what the host can give
//! before it is allocated, and allocated fallibly, so that a file announcing a huge matrix
//! is an [`Error::InsufficientMemory`] naming the size, never an abort.
//!
//! The allowance for one allocation is the smaller of the limit set with
//! [`set_memory_limit`] (none by default) and [`available_host_memory`]: the memory the
//! system says is free, the headroom under the process's address-space and data limits
//! (`ulimit -v`, `ulimit -d`) and under its cgroup's memory limit.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Result};

/// The limit set with [`set_memory_limit`]; `u64::MAX` for none.
static LIMIT: AtomicU64 = AtomicU64::new(u64::MAX);

/// Sets the most bytes the reader allocates for one array whose size comes from the input
/// (row offsets, triplet arrays, a dense vector), for the whole process; `None` removes the
/// limit. Past it, a read fails with [`Error::InsufficientMemory`] before allocating.
///
/// Without a limit, the allowance is what [`available_host_memory`] reports. A service
/// that reads untrusted files sets one: a few bytes of header can announce a matrix of
/// 2^31 - 1 rows, whose CSR form needs 8 GiB of row offsets. The limit bounds each array;
/// a read holds at most a few of them at once (see `docs/matrix-market.md`).
///
/// # Example
///
/// ```
/// use spgpu::io::{memory_limit, read_csr_from_str, set_memory_limit};
/// let text = "%%MatrixMarket matrix coordinate real general\n2147483647 1 0\n";
/// set_memory_limit(Some(1 << 30));
/// let r = read_csr_from_str::<f64>(text);
/// assert!(matches!(r, Err(spgpu::Error::InsufficientMemory { needed: 17179869184, .. })));
/// set_memory_limit(None);
/// assert_eq!(memory_limit(), None);
/// ```
pub fn set_memory_limit(bytes: Option<u64>) {
    LIMIT.store(bytes.unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// The limit set with [`set_memory_limit`], if any.
pub fn memory_limit() -> Option<u64> {
    match LIMIT.load(Ordering::Relaxed) {
        u64::MAX => None,
        l => Some(l),
    }
}

/// The host memory this process can still allocate, as far as the system says: the least
/// of the available memory (`MemAvailable`), the headroom under the address-space and data
/// limits (`ulimit -v`, `ulimit -d`) and under the cgroup's memory limit. `None` where the
/// system does not say (outside Linux).
pub fn available_host_memory() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        linux::available()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Checks that an allocation of `bytes` for `what` fits the allowance (the limit set with
/// [`set_memory_limit`] and [`available_host_memory`]).
///
/// # Errors
///
/// [`Error::InsufficientMemory`] naming `what`, `bytes` and the allowance, when it does not
/// fit.
pub fn check_memory(what: &str, bytes: u64) -> Result<()> {
    check(bytes, || what.to_string())
}

/// The allowance for one allocation, and whether the limit of [`set_memory_limit`] is what
/// bounds it.
fn allowance() -> (u64, bool) {
    let limit = LIMIT.load(Ordering::Relaxed);
    match available_host_memory() {
        Some(a) if a < limit => (a, false),
        _ => (limit, true),
    }
}

/// The error for an allocation of `needed` bytes for `what` that does not fit.
pub(crate) fn insufficient(what: String, needed: u64) -> Error {
    let (available, by_limit) = allowance();
    let hint = if by_limit { "the limit set with spgpu::io::set_memory_limit".to_string() } else { String::new() };
    Error::InsufficientMemory { what, memory: "host", needed, available, hint }
}

/// Checks `bytes` against the allowance; `what` names the allocation in the error.
pub(crate) fn check(bytes: u64, what: impl FnOnce() -> String) -> Result<()> {
    // Small allocations cannot matter: spare the look-up.
    if bytes <= 1 << 20 && bytes <= LIMIT.load(Ordering::Relaxed) {
        return Ok(());
    }
    if bytes <= allowance().0 {
        Ok(())
    } else {
        Err(insufficient(what(), bytes))
    }
}

/// The bytes of `n` elements of `E`, saturating.
fn bytes_of<E>(n: usize) -> u64 {
    (n as u64).saturating_mul(std::mem::size_of::<E>() as u64)
}

/// A vector of `n` zeros of a type whose all-zero bytes are its zero (`u32`, `f32`, `f64`):
/// checked against the allowance and allocated fallibly, from zeroed pages (no pass that
/// writes the zeros).
///
/// # Safety
///
/// The all-zero byte pattern must be a valid value of `E`.
pub(crate) unsafe fn zeroed<E: Copy>(n: usize, what: impl Fn() -> String) -> Result<Vec<E>> {
    assert!(std::mem::size_of::<E>() > 0, "zeroed is for numbers, not zero-sized types");
    let bytes = bytes_of::<E>(n);
    check(bytes, &what)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<E>(n).map_err(|_| insufficient(what(), bytes))?;
    // SAFETY: `layout` has a non-zero size (n > 0, E not zero-sized).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<E>();
    if ptr.is_null() {
        return Err(insufficient(what(), bytes));
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `[E; n]`, the
    // size and alignment `Vec<E>` uses for a capacity of `n`, and its `n` elements are
    // initialized: all-zero bytes, a valid `E` by this function's contract.
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// Reserves room for `additional` more elements in `v`, growing it as `Vec::reserve` does
/// (at least doubling), checked against the allowance and fallibly.
pub(crate) fn reserve<E>(v: &mut Vec<E>, additional: usize, what: impl Fn() -> String) -> Result<()> {
    let needed = v.len().saturating_add(additional);
    if needed <= v.capacity() {
        return Ok(());
    }
    let target = needed.max(v.capacity().saturating_mul(2));
    let bytes = bytes_of::<E>(target);
    check(bytes, &what)?;
    v.try_reserve(additional).map_err(|_| insufficient(what(), bytes))
}

/// Reserves room for exactly `additional` more elements in `v`, checked and fallibly.
pub(crate) fn reserve_exact<E>(v: &mut Vec<E>, additional: usize, what: impl Fn() -> String) -> Result<()> {
    let needed = v.len().saturating_add(additional);
    if needed <= v.capacity() {
        return Ok(());
    }
    let bytes = bytes_of::<E>(needed);
    check(bytes, &what)?;
    v.try_reserve_exact(additional).map_err(|_| insufficient(what(), bytes))
}

#[cfg(target_os = "linux")]
mod linux {
    use std::fs;

    /// The value of `key` (in kB) in a `/proc` file of `key: value kB` lines, in bytes.
    fn kb_field(text: &str, key: &str) -> Option<u64> {
        let line = text.lines().find(|l| l.strip_prefix(key).is_some_and(|r| r.starts_with(':')))?;
        line[key.len() + 1..].split_whitespace().next()?.parse::<u64>().ok().map(|kb| kb.saturating_mul(1024))
    }

    /// The soft limit of `name` in `/proc/self/limits` (`None`: unlimited or unknown).
    fn soft_limit(limits: &str, name: &str) -> Option<u64> {
        let rest = limits.lines().find_map(|l| l.strip_prefix(name))?;
        rest.split_whitespace().next()?.parse().ok()
    }

    /// The cgroup's memory limit less its usage (cgroup v2, then v1).
    fn cgroup_headroom() -> Option<u64> {
        let cgroups = fs::read_to_string("/proc/self/cgroup").ok()?;
        let read = |p: String| fs::read_to_string(p).ok().and_then(|s| s.trim().parse::<u64>().ok());
        for line in cgroups.lines() {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let (max, current) = if controllers.is_empty() {
                let dir = format!("/sys/fs/cgroup{}", path.trim_end_matches('/'));
                (read(format!("{dir}/memory.max")), read(format!("{dir}/memory.current")))
            } else if controllers.split(',').any(|c| c == "memory") {
                let dir = format!("/sys/fs/cgroup/memory{}", path.trim_end_matches('/'));
                (read(format!("{dir}/memory.limit_in_bytes")), read(format!("{dir}/memory.usage_in_bytes")))
            } else {
                continue;
            };
            if let (Some(max), Some(current)) = (max, current) {
                return Some(max.saturating_sub(current));
            }
        }
        None
    }

    pub(super) fn available() -> Option<u64> {
        let mut least: Option<u64> = None;
        let mut take = |v: Option<u64>| {
            if let Some(v) = v {
                least = Some(least.map_or(v, |l| l.min(v)));
            }
        };
        take(fs::read_to_string("/proc/meminfo").ok().and_then(|m| kb_field(&m, "MemAvailable")));
        if let Ok(limits) = fs::read_to_string("/proc/self/limits") {
            let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
            for (limit, used) in [("Max address space", "VmSize"), ("Max data size", "VmData")] {
                if let Some(l) = soft_limit(&limits, limit) {
                    take(Some(l.saturating_sub(kb_field(&status, used).unwrap_or(0))));
                }
            }
        }
        take(cgroup_headroom());
        least
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn proc_fields_parse() {
            let meminfo = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   2000 kB\n";
            assert_eq!(kb_field(meminfo, "MemAvailable"), Some(2000 * 1024));
            assert_eq!(kb_field(meminfo, "MemFree"), Some(100 * 1024));
            assert_eq!(kb_field(meminfo, "Mem"), None);
            let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                          Max data size             unlimited            unlimited            bytes     \n\
                          Max address space         1073741824           unlimited            bytes     \n";
            assert_eq!(soft_limit(limits, "Max address space"), Some(1 << 30));
            assert_eq!(soft_limit(limits, "Max data size"), None);
            assert!(available().is_some_and(|a| a > 0));
        }
    }
}
