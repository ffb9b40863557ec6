//! Timing on the device: CUDA events around many back-to-back launches, CUDA-graph replay
//! for small matrices, and the device-to-device copy bandwidth that serves as the limit.
//!
//! Every GPU time of `spgpu bench` is the median of several repetitions; each repetition
//! records an event, enqueues back-to-back launches, records a second event and reads the
//! elapsed time between the two once the second has completed. The launches are calibrated
//! so that a repetition lasts about [`TARGET_SECONDS`]: long enough that the event
//! resolution (about half a microsecond) does not matter, short enough to keep a run over
//! dozens of matrices within minutes. A kernel that takes longer than the target on its own
//! gets one launch per repetition: a slow kernel costs `reps + 2` launches, not hundreds.
//! Launch overhead is part of these times; for matrices where it dominates, [`time_graph`]
//! captures the launches into a CUDA graph once and times its replays, which shows what the
//! kernel itself costs.

use super::BenchResult;
use crate::gpu::{Event, Stream};
use cust::event::EventFlags;
use cust::memory::DeviceBuffer;
use cust::sys as cu;

/// Wall time a repetition aims at, in seconds.
pub const TARGET_SECONDS: f64 = 2e-3;

/// Launches captured in one CUDA graph.
pub const GRAPH_LAUNCHES: usize = 100;

/// How a time was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// CUDA events around back-to-back launches on the stream.
    Events,
    /// CUDA events around replays of a graph of [`GRAPH_LAUNCHES`] captured launches.
    Graph,
    /// The host's monotonic clock (CPU baselines).
    Wall,
}

impl Method {
    /// The name used in tables, CSV and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Method::Events => "events",
            Method::Graph => "graph",
            Method::Wall => "wall",
        }
    }
}

/// The time of one operation: median, minimum and maximum over the repetitions.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Median seconds per operation.
    pub median: f64,
    /// Fastest repetition, seconds per operation.
    pub min: f64,
    /// Slowest repetition, seconds per operation.
    pub max: f64,
    /// Operations per repetition.
    pub per_rep: usize,
    /// Repetitions.
    pub reps: usize,
    /// How it was measured.
    pub method: Method,
}

impl Timing {
    /// Summarizes per-operation times of each repetition.
    pub fn from_samples(mut samples: Vec<f64>, per_rep: usize, method: Method) -> Self {
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let median = if n == 0 {
            f64::NAN
        } else if n % 2 == 1 {
            samples[n / 2]
        } else {
            0.5 * (samples[n / 2 - 1] + samples[n / 2])
        };
        Timing {
            median,
            min: samples.first().copied().unwrap_or(f64::NAN),
            max: samples.last().copied().unwrap_or(f64::NAN),
            per_rep,
            reps: n,
            method,
        }
    }
}

/// Turns a raw driver status into an error naming the call.
pub fn check(status: cu::CUresult, what: &str) -> BenchResult<()> {
    if status == cu::cudaError_enum::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("CUDA error in {what}: {status:?}").into())
    }
}

/// Seconds between two recorded events, once `end` has completed.
fn elapsed(start: &Event, end: &Event) -> BenchResult<f64> {
    end.synchronize()?;
    Ok(f64::from(end.elapsed_time_f32(start)?) * 1e-3)
}

/// How many operations of `seconds` each fill [`TARGET_SECONDS`], within `[min, max]`.
pub fn calibrate(seconds: f64, min: usize, max: usize) -> usize {
    calibrate_for(TARGET_SECONDS, seconds, max).max(min)
}

/// How many operations of `seconds` each fill `target` seconds: at least 1, at most `max`.
fn calibrate_for(target: f64, seconds: f64, max: usize) -> usize {
    if seconds.is_nan() || seconds <= 0.0 {
        return max;
    }
    ((target / seconds).ceil() as usize).clamp(1, max.max(1))
}

/// Most launches in one repetition of [`time_events`].
pub const MAX_LAUNCHES: usize = 20_000;

/// Times `launch`, which enqueues one operation on `stream`, with CUDA events.
///
/// One warm-up launch (the caller's correctness check is another), then a calibration: one
/// timed launch and, when that is shorter than a twentieth of [`TARGET_SECONDS`] (where the
/// launch latency, not the kernel, sets a lone launch's time), a timed run of enough
/// launches to fill that twentieth. Then `reps` repetitions of the calibrated number of
/// launches (1 to [`MAX_LAUNCHES`]). `launch` must not synchronize.
pub fn time_events(stream: &Stream, reps: usize, mut launch: impl FnMut() -> BenchResult<()>) -> BenchResult<Timing> {
    let (start, end) = (Event::new(EventFlags::DEFAULT)?, Event::new(EventFlags::DEFAULT)?);
    launch()?;
    stream.synchronize()?;
    let run = |n: usize, launch: &mut dyn FnMut() -> BenchResult<()>| -> BenchResult<f64> {
        start.record(stream)?;
        for _ in 0..n {
            launch()?;
        }
        end.record(stream)?;
        Ok(elapsed(&start, &end)? / n as f64)
    };
    let short = TARGET_SECONDS / 20.0;
    let mut once = run(1, &mut launch)?;
    if once < short {
        once = run(calibrate_for(short, once, MAX_LAUNCHES), &mut launch)?;
    }
    let n = calibrate(once, 1, MAX_LAUNCHES);
    let samples = (0..reps.max(1)).map(|_| run(n, &mut launch)).collect::<BenchResult<Vec<_>>>()?;
    Ok(Timing::from_samples(samples, n, Method::Events))
}

/// A captured graph and its executable instance, destroyed on drop.
struct Graph {
    graph: cu::CUgraph,
    exec: cu::CUgraphExec,
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: both handles were created by the driver in `time_graph` (or are null) and
        // are destroyed exactly once, here; nothing uses them afterwards.
        unsafe {
            if !self.exec.is_null() {
                cu::cuGraphExecDestroy(self.exec);
            }
            if !self.graph.is_null() {
                cu::cuGraphDestroy(self.graph);
            }
        }
    }
}

/// Times `launch` by capturing [`GRAPH_LAUNCHES`] launches into a CUDA graph and timing
/// replays of the graph with CUDA events; returns seconds per launch.
///
/// `launch` must enqueue work on `stream` only, and nothing a capture forbids (no
/// synchronization, no allocation, no copy from pageable host memory).
pub fn time_graph(stream: &Stream, reps: usize, mut launch: impl FnMut() -> BenchResult<()>) -> BenchResult<Timing> {
    let raw = stream.as_inner();
    let mut g = Graph { graph: std::ptr::null_mut(), exec: std::ptr::null_mut() };
    // SAFETY: `raw` is the live stream of `stream`; the capture is ended below on every path
    // before this function returns, so the stream never stays in capture mode.
    check(
        unsafe { cu::cuStreamBeginCapture_v2(raw, cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) },
        "cuStreamBeginCapture",
    )?;
    let captured = (0..GRAPH_LAUNCHES).try_for_each(|_| launch());
    // SAFETY: ends the capture begun above on the same stream; `g.graph` receives the graph
    // (or null when the capture was invalidated) and is owned by `g` from here on.
    let ended = check(unsafe { cu::cuStreamEndCapture(raw, &mut g.graph) }, "cuStreamEndCapture");
    captured?;
    ended?;
    // SAFETY: `g.graph` is the valid graph just captured; `g.exec` receives its instance.
    check(unsafe { cu::cuGraphInstantiateWithFlags(&mut g.exec, g.graph, 0) }, "cuGraphInstantiateWithFlags")?;
    // SAFETY (both closures): `g.exec` is a valid instance and `raw` a live stream.
    let replay = || check(unsafe { cu::cuGraphLaunch(g.exec, raw) }, "cuGraphLaunch");
    replay()?;
    stream.synchronize()?;
    let (start, end) = (Event::new(EventFlags::DEFAULT)?, Event::new(EventFlags::DEFAULT)?);
    let run = |n: usize| -> BenchResult<f64> {
        start.record(stream)?;
        for _ in 0..n {
            replay()?;
        }
        end.record(stream)?;
        Ok(elapsed(&start, &end)? / (n * GRAPH_LAUNCHES) as f64)
    };
    let n = calibrate(run(2)? * GRAPH_LAUNCHES as f64, 2, 200);
    let samples = (0..reps.max(1)).map(|_| run(n)).collect::<BenchResult<Vec<_>>>()?;
    Ok(Timing::from_samples(samples, n * GRAPH_LAUNCHES, Method::Graph))
}

/// Device-to-device copy bandwidth in bytes per second, counting bytes read plus bytes
/// written, from copies of `bytes` between two buffers (median of `reps`).
pub fn copy_bandwidth(stream: &Stream, bytes: usize, reps: usize) -> BenchResult<(f64, Timing)> {
    let words = bytes / 4;
    let src = DeviceBuffer::<u32>::zeroed(words)?;
    let dst = DeviceBuffer::<u32>::zeroed(words)?;
    let (s, d) = (src.as_device_ptr().as_raw(), dst.as_device_ptr().as_raw());
    let raw = stream.as_inner();
    // SAFETY: `src` is a live allocation of `words` u32; the fill stays inside it.
    check(unsafe { cu::cuMemsetD32Async(s, 0x3f80_0000, words, raw) }, "cuMemsetD32Async")?;
    let timing = time_events(stream, reps, || {
        // SAFETY: both buffers hold `words * 4` bytes and outlive the synchronized timing.
        check(unsafe { cu::cuMemcpyDtoDAsync_v2(d, s, words * 4, raw) }, "cuMemcpyDtoDAsync")
    })?;
    stream.synchronize()?;
    Ok((2.0 * (words * 4) as f64 / timing.median, timing))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_samples() {
        let t = Timing::from_samples(vec![3.0, 1.0, 2.0], 7, Method::Events);
        assert_eq!((t.median, t.min, t.max, t.reps, t.per_rep), (2.0, 1.0, 3.0, 3, 7));
        let t = Timing::from_samples(vec![4.0, 1.0, 3.0, 2.0], 1, Method::Wall);
        assert_eq!(t.median, 2.5);
        assert!(Timing::from_samples(vec![], 1, Method::Wall).median.is_nan());
    }

    #[test]
    fn calibration_fills_the_target_within_bounds() {
        assert_eq!(calibrate(TARGET_SECONDS / 50.0, 10, 20_000), 50);
        assert_eq!(calibrate(1.0, 10, 20_000), 10);
        assert_eq!(calibrate(1e-12, 10, 20_000), 20_000);
        assert_eq!(calibrate(0.0, 10, 20_000), 20_000);
        // a kernel slower than the target runs once per repetition
        assert_eq!(calibrate(3.7e-3, 1, MAX_LAUNCHES), 1);
        assert_eq!(calibrate_for(TARGET_SECONDS / 20.0, 8e-6, MAX_LAUNCHES), 13);
        assert_eq!(calibrate_for(1.0, f64::NAN, 7), 7);
    }
}
