//! The upload's decisions after the kernel rule, in the order they are made: where the
//! automatic plan's SELL gives way to the balanced kernel (hot columns, column parts, SELL's
//! padding), whether the matrix runs in column parts, and the shape of the balanced kernel's
//! row blocks.
//!
//! Some of these need what only the device or a layout can tell (the hot-column kernel's
//! limits, the entries of each column, the slots SELL would take). The storage layer finds
//! them on demand through [`Probe`], each at most once; the rules and their order are here.

use crate::gpu::plan::balance::{choose_shape, RowShape};
use crate::gpu::plan::hot::{self, HotChoice, HotLimits};
use crate::gpu::plan::{parts, KernelChoice, SpmvKernel, SpmvPlan, Tuning};
use crate::{CsrMatrix, Error, Result, Scalar};

/// What the upload's rules ask of the matrix and the device; the storage layer answers.
pub(crate) trait Probe {
    /// The device's limits on hot columns for the automatic rule ([`HotChoice::Auto`]), or
    /// `None` when hot columns are not considered or no column fits.
    fn hot_limits(&mut self) -> Result<Option<HotLimits>>;
    /// The entries of each column (counted once).
    fn column_counts(&mut self) -> Result<&[u32]>;
    /// Lays out SELL with at most `max_slots` slots (kept for the upload): `Err(slots)`
    /// with the slots it would take when they are more.
    fn sell_layout(&mut self, max_slots: usize) -> Result<std::result::Result<(), usize>>;
}

/// The upload's decisions ([`decide`]).
#[derive(Debug)]
pub(crate) struct Decision {
    /// The plan, with its fallbacks.
    pub(crate) plan: SpmvPlan,
    /// Why the automatic plan runs balanced where its kernel rule said SELL.
    pub(crate) instead_of_sell: Option<String>,
    /// The column parts and the rule's note, when the matrix runs in parts.
    pub(crate) parts: Option<(usize, String)>,
    /// The shape of the balanced kernel's row blocks and why, when it runs in one pass.
    pub(crate) shape: Option<(RowShape, String)>,
}

/// Whether the balanced kernel would keep hot columns for `a` (the rule of [`hot`]): `Some`
/// with what they hold when it would. The row-block shape the balanced kernel would cut
/// sets the share they need (`shape`, filled when this looks first).
///
/// The upload asks before two choices:
///
/// - **SELL**, which gathers every entry of `x` from the L2: where hot columns would be
///   kept, balanced runs instead. On the H200 (2026-11-27), on matrices of even rows whose
///   columns are read unevenly (the transpose of a power-law graph: even rows of 13, the
///   most-read 6144 columns holding 27% of the entries), SELL ran 1.16x-1.24x the time of
///   balanced with hot columns, and about as fast as balanced without them. The matrices
///   that keep SELL (circuits, meshes, geometric graphs, random rows) have no hot columns
///   by the same rule.
/// - **Column parts** ([`parts`]): a matrix that keeps hot columns runs in one pass. On the
///   H200 (2026-11-27) R-MAT graphs with hot columns ran 1.066x (f64) and 1.093x (f32) the
///   one-pass time in parts (`rmat:23:16`), and gained at 16.8 million columns
///   (`rmat:24:16`, 0.879x / 0.965x).
fn balanced_keeps_hot<T: Scalar>(
    a: &CsrMatrix<T>,
    probe: &mut impl Probe,
    shape: &mut Option<(RowShape, String)>,
    tuning: &Tuning,
) -> Result<Option<String>> {
    let Some(limits) = probe.hot_limits()? else { return Ok(None) };
    let (s, _) = shape.get_or_insert_with(|| choose_shape(a.row_offsets(), a.col_indices(), None, tuning));
    let local = *s != RowShape::DEFAULT;
    let counts = probe.column_counts()?;
    Ok(hot::decide(counts, a.nnz(), a.ncols(), local, &limits, tuning).ok().map(|h| {
        format!(
            "its {} most-read columns hold {:.1}% of the entries, which the balanced kernel keeps in shared \
             memory and SELL gathers from the L2",
            h.len(),
            100.0 * h.entries() as f64 / a.nnz().max(1) as f64
        )
    }))
}

/// The upload's decisions for `a` after the kernel rule gave `plan`, asked with `choice`
/// (hot columns as `hot_choice`), in this order:
///
/// 1. The automatic plan's SELL runs balanced where the balanced kernel would keep hot
///    columns ([`balanced_keeps_hot`]).
/// 2. Column parts ([`parts`]), for the automatic plan's SELL or balanced kernel with
///    automatic hot columns, not `shifted` (tests' 64-bit positions), not few rows (a warp
///    per row keeps at least [`SpmvPlan::FEW_ROWS_THREADS`] threads busy): where
///    [`parts::parts_for`] gives more than one part on the device's L2 (`l2_bytes`), the
///    columns are scattered (the default row-block shape) and spread
///    ([`parts::spread`] at least [`parts::MIN_SPREAD`]) and the one pass keeps no hot
///    columns, the matrix runs in parts (SELL gives way).
/// 3. SELL gives way to balanced where its slices would store more than
///    [`SpmvPlan::SELL_MAX_PADDING`] slots per entry; a forced SELL is then refused.
/// 4. The balanced kernel's row blocks: the forced shape, else the rule's
///    ([`choose_shape`]).
///
/// # Errors
///
/// [`Error::InvalidArgument`] when SELL was forced and pads too much; the probe's errors.
#[allow(clippy::too_many_arguments)]
pub(crate) fn decide<T: Scalar>(
    a: &CsrMatrix<T>,
    mut plan: SpmvPlan,
    choice: KernelChoice,
    hot_choice: HotChoice,
    shifted: bool,
    l2_bytes: usize,
    tuning: &Tuning,
    probe: &mut impl Probe,
) -> Result<Decision> {
    let auto = choice == KernelChoice::Auto && hot_choice == HotChoice::Auto;
    let mut instead_of_sell = None;
    // the automatic shape of the row blocks, once looked at (it scans every entry), and
    // whether the balanced kernel would keep hot columns, once decided
    let mut shape = None;
    let mut hot_known = None;
    // 1: SELL keeps no hot columns: where the balanced kernel would keep some, it runs
    if plan.kernel() == SpmvKernel::Sell && auto {
        let hot = balanced_keeps_hot(a, probe, &mut shape, tuning)?;
        if let Some(why) = &hot {
            plan.fall_back_to_balanced(why);
            instead_of_sell = Some(why.clone());
        }
        hot_known = Some(hot);
    }
    // 2: x past the L2 on scattered, spread columns: the balanced kernel in column parts, in
    // place of SELL too (uniformly random rows)
    if matches!(plan.kernel(), SpmvKernel::Balanced | SpmvKernel::Sell)
        && auto
        && !shifted
        && a.nrows().saturating_mul(32) >= SpmvPlan::FEW_ROWS_THREADS
    {
        let k = parts::parts_for(a.nrows(), a.ncols(), a.nnz(), T::BYTES, l2_bytes, plan.kernel(), tuning);
        if k > 1 {
            let (s, _) = shape.get_or_insert_with(|| choose_shape(a.row_offsets(), a.col_indices(), None, tuning));
            // scattered columns, and not where the one pass keeps hot columns
            let spread = if *s == RowShape::DEFAULT { parts::spread(probe.column_counts()?) } else { 0.0 };
            if spread >= parts::MIN_SPREAD {
                let hot = match hot_known.take() {
                    Some(known) => known,
                    None => balanced_keeps_hot(a, probe, &mut shape, tuning)?,
                };
                if hot.is_none() {
                    let one_pass = plan.kernel();
                    if one_pass == SpmvKernel::Sell {
                        let why = format!(
                            "x takes {:.0}% of the L2 on scattered columns, which SELL would gather in one pass (if \
                             its padding allows it)",
                            100.0 * (a.ncols() * T::BYTES) as f64 / l2_bytes.max(1) as f64
                        );
                        plan.fall_back_to_balanced(&why);
                        instead_of_sell = Some(why);
                    }
                    let rule = parts::rule_note(a.nrows(), a.nnz(), one_pass, spread, tuning);
                    return Ok(Decision { plan, instead_of_sell, parts: Some((k, rule)), shape });
                }
            }
        }
    }
    // 3: SELL within its padding limit
    if plan.kernel() == SpmvKernel::Sell {
        let limit = SpmvPlan::SELL_MAX_PADDING * a.nnz() as f64;
        if let Err(slots) = probe.sell_layout(limit as usize)? {
            let why = format!(
                "SELL would store {slots} slots for {} entries, more than {} x the entries",
                a.nnz(),
                SpmvPlan::SELL_MAX_PADDING
            );
            if choice != KernelChoice::Auto {
                return Err(Error::InvalidArgument(format!("{why}: use another kernel")));
            }
            plan.fall_back_to_balanced(&why);
            instead_of_sell = Some(why);
        }
    }
    // 4: the row blocks of the shape the matrix's columns suit (the hot-column kernel, if
    // the device's count later gives the matrix hot columns, runs the default shape)
    let forced = choice.row_shape();
    let shape = (plan.kernel() == SpmvKernel::Balanced).then(|| match (shape, forced) {
        (Some(known), None) => known,
        _ => choose_shape(a.row_offsets(), a.col_indices(), forced, tuning),
    });
    Ok(Decision { plan, instead_of_sell, parts: None, shape })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers from fixed facts, counting the questions.
    struct Fixed {
        limits: Option<HotLimits>,
        counts: Vec<u32>,
        sell_slots: usize,
        asked: Vec<&'static str>,
    }

    impl Probe for Fixed {
        fn hot_limits(&mut self) -> Result<Option<HotLimits>> {
            self.asked.push("hot_limits");
            Ok(self.limits)
        }
        fn column_counts(&mut self) -> Result<&[u32]> {
            self.asked.push("column_counts");
            Ok(&self.counts)
        }
        fn sell_layout(&mut self, max_slots: usize) -> Result<std::result::Result<(), usize>> {
            self.asked.push("sell_layout");
            Ok(if self.sell_slots <= max_slots { Ok(()) } else { Err(self.sell_slots) })
        }
    }

    /// Rows of 3 to 30 entries: the kernel rule gives SELL.
    fn uneven(nrows: usize, ncols: usize) -> CsrMatrix<f64> {
        let mut off = vec![0u64];
        let mut cols = Vec::new();
        for r in 0..nrows {
            let len = 3 + r % 28;
            let mut c: Vec<u32> = (0..len).map(|k| ((r * 7919 + k * 104_729) % ncols) as u32).collect();
            c.sort_unstable();
            c.dedup();
            cols.extend(c);
            off.push(cols.len() as u64);
        }
        let n = cols.len();
        CsrMatrix::try_from_parts(nrows, ncols, off, cols, vec![1.0; n]).unwrap()
    }

    fn sell_plan(a: &CsrMatrix<f64>) -> SpmvPlan {
        let p = SpmvPlan::from_stats::<f64>(&a.row_stats(), 32);
        assert_eq!(p.kernel(), SpmvKernel::Sell, "{}", p.explain());
        p
    }

    #[test]
    fn sell_gives_way_to_hot_columns_and_to_its_padding() {
        let a = uneven(200_000, 200_000);
        let t = Tuning::default();
        let fixed = |limits, sell_slots| Fixed { limits, counts: vec![1; a.ncols()], sell_slots, asked: vec![] };
        // no hot columns, SELL within its padding: SELL, no shape
        let mut p = fixed(None, a.nnz());
        let d = decide(&a, sell_plan(&a), KernelChoice::Auto, HotChoice::Auto, false, 60 << 20, &t, &mut p).unwrap();
        assert_eq!(d.plan.kernel(), SpmvKernel::Sell);
        assert!(d.instead_of_sell.is_none() && d.parts.is_none() && d.shape.is_none());
        assert_eq!(p.asked, ["hot_limits", "sell_layout"]);
        // one column read by every row: the balanced kernel would keep it hot
        let mut p = fixed(Some(HotLimits { capacity: 100, min_entries: 10, auto: true }), a.nnz());
        p.counts[7] = 2_000_000;
        let d = decide(&a, sell_plan(&a), KernelChoice::Auto, HotChoice::Auto, false, 60 << 20, &t, &mut p).unwrap();
        assert_eq!(d.plan.kernel(), SpmvKernel::Balanced);
        assert!(d.instead_of_sell.as_deref().unwrap().contains("most-read columns"));
        assert_eq!(d.shape.unwrap().0, RowShape::DEFAULT);
        // SELL past its padding: balanced, or an error when forced
        let mut p = fixed(None, 2 * a.nnz());
        let d = decide(&a, sell_plan(&a), KernelChoice::Auto, HotChoice::Auto, false, 60 << 20, &t, &mut p).unwrap();
        assert_eq!(d.plan.kernel(), SpmvKernel::Balanced);
        assert!(d.instead_of_sell.unwrap().contains("SELL would store"));
        let forced = SpmvPlan::with_choice::<f64>(&a.row_stats(), 32, KernelChoice::Sell).unwrap();
        let mut p = fixed(None, 2 * a.nnz());
        let e = decide(&a, forced, KernelChoice::Sell, HotChoice::Auto, false, 60 << 20, &t, &mut p).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(m) if m.contains("use another kernel")));
        assert_eq!(p.asked, ["sell_layout"], "a forced kernel asks nothing of the hot columns");
    }

    #[test]
    fn parts_where_x_outgrows_the_l2_and_the_tuning_says_otherwise() {
        let a = uneven(200_000, 200_000);
        let spread_out = || Fixed { limits: None, counts: vec![20; a.ncols()], sell_slots: a.nnz(), asked: vec![] };
        // x of 1.6 MB against an L2 of 2 MB (80%): parts, SELL gives way
        let l2 = 2 << 20;
        let t = Tuning::default();
        let mut p = spread_out();
        let d = decide(&a, sell_plan(&a), KernelChoice::Auto, HotChoice::Auto, false, l2, &t, &mut p).unwrap();
        assert_eq!(d.parts.as_ref().map(|p| p.0), Some(2));
        assert_eq!(d.plan.kernel(), SpmvKernel::Balanced);
        assert!(d.instead_of_sell.unwrap().contains("of the L2 on scattered columns"));
        // the tuning's one pass keeps SELL; its count of parts is what the note says
        let one = Tuning { column_parts: Some(0), ..t };
        let d = decide(&a, sell_plan(&a), KernelChoice::Auto, HotChoice::Auto, false, l2, &one, &mut spread_out());
        assert_eq!(d.unwrap().plan.kernel(), SpmvKernel::Sell);
        let three = Tuning { column_parts: Some(3), ..t };
        let d = decide(&a, sell_plan(&a), KernelChoice::Auto, HotChoice::Auto, false, l2, &three, &mut spread_out());
        assert_eq!(d.unwrap().parts, Some((3, "SPGPU_COLUMN_PARTS=3".to_string())));
        // a large L2, shifted positions, or hot columns forced off: one pass
        for (l2, shifted, hot) in
            [(64 << 20, false, HotChoice::Auto), (l2, true, HotChoice::Auto), (l2, false, HotChoice::Off)]
        {
            let d = decide(&a, sell_plan(&a), KernelChoice::Auto, hot, shifted, l2, &t, &mut spread_out()).unwrap();
            assert!(d.parts.is_none());
        }
        // columns read unevenly (a few hold most entries): one pass
        let mut p = spread_out();
        p.counts.fill(0);
        p.counts[..10].fill(1_000_000);
        let d = decide(&a, sell_plan(&a), KernelChoice::Auto, HotChoice::Auto, false, l2, &t, &mut p).unwrap();
        assert!(d.parts.is_none() && d.plan.kernel() == SpmvKernel::Sell);
    }
}
