//! Smoothed-aggregation AMG on the host: iteration counts, the setup's invariants,
//! determinism, bad input and the Auto choice. Sizes are small so the file runs in seconds
//! in a debug build.

mod common;

use spgpu::solver::{
    auto_precheck, cg, cg_with, Amg, AmgHierarchy, AmgParams, CgError, CgParams, CgReport, Host, PreconditionerKind,
    Smoother,
};
use spgpu::{gen, CsrMatrix};

fn params(kind: PreconditionerKind) -> CgParams {
    CgParams { preconditioner: kind, ..CgParams::default() }
}

/// Solves `A x = A 1` from zero with `params`.
fn solve(a: &CsrMatrix<f64>, params: &CgParams) -> (Result<CgReport, CgError>, Vec<f64>) {
    let ones = vec![1.0; a.nrows()];
    let mut b = vec![0.0; a.nrows()];
    spgpu::reference::spmv_csr(1.0, a, &ones, 0.0, &mut b).unwrap();
    let mut x = vec![0.0; a.nrows()];
    let r = cg(&Host, a, &b, &mut x, params);
    (r, x)
}

fn iterations(a: &CsrMatrix<f64>, params: &CgParams) -> usize {
    let report = solve(a, params).0.unwrap();
    assert!(report.relative_residual <= 1e-8);
    report.iterations
}

#[test]
fn lap2d_converges_in_few_iterations_that_grow_slowly() {
    let amg = params(PreconditionerKind::Amg);
    let counts: Vec<usize> = [64, 128, 256].iter().map(|&n| iterations(&gen::laplacian_2d(n), &amg)).collect();
    eprintln!("lap2d 64/128/256: {counts:?}");
    assert!(counts.iter().all(|&k| k <= 15), "{counts:?}");
    assert!(counts[2] as f64 <= 1.5 * counts[0] as f64, "{counts:?}");
}

#[test]
fn lap3d_converges_in_few_iterations() {
    let amg = params(PreconditionerKind::Amg);
    let counts: Vec<usize> = [16, 32].iter().map(|&n| iterations(&gen::laplacian_3d_7pt(n), &amg)).collect();
    eprintln!("lap3d 16/32: {counts:?}");
    assert!(counts.iter().all(|&k| k <= 15), "{counts:?}");
    assert!(counts[1] as f64 <= 1.5 * counts[0] as f64, "{counts:?}");
}

#[test]
fn elasticity_with_rigid_body_modes_beats_jacobi_by_far() {
    let n = 8;
    let a = gen::elasticity_3d::<f64>(n).unwrap();
    let jacobi = iterations(&a, &params(PreconditionerKind::Jacobi));
    let mut p = params(PreconditionerKind::Amg);
    p.amg = AmgParams { near_nullspace: Some(gen::rigid_body_modes(n)), block_size: 3, max_coarse: 100, ..p.amg };
    let amg = iterations(&a, &p);
    eprintln!("elast:{n}: jacobi {jacobi}, amg {amg}");
    assert!(amg * 3 <= jacobi, "amg {amg}, jacobi {jacobi}");
}

/// The hierarchy of `lap2d:n` with the default parameters.
fn lap2d_hierarchy(n: usize) -> AmgHierarchy {
    AmgHierarchy::build(&gen::laplacian_2d(n), &AmgParams { max_coarse: 50, ..AmgParams::default() }).unwrap()
}

#[test]
fn aggregates_partition_the_nodes_into_connected_sets_around_distant_roots() {
    let h = lap2d_hierarchy(40);
    assert!(h.levels().len() >= 3);
    for level in &h.levels()[..h.levels().len() - 1] {
        let (offsets, cols) = level.strength().unwrap();
        let (agg, count) = level.aggregates().unwrap();
        let n = agg.len();
        let roots = level.roots().unwrap();
        assert_eq!(roots.len(), count);
        // every node in exactly one aggregate, numbered below count; root k heads aggregate k
        assert!(agg.iter().all(|&a| (a as usize) < count));
        for (k, &r) in roots.iter().enumerate() {
            assert_eq!(agg[r], k as u32);
        }
        let neighbours = |i: usize| &cols[offsets[i] as usize..offsets[i + 1] as usize];
        // each aggregate connected in S: a search from its root inside it reaches all of it
        let mut seen = vec![false; n];
        for (k, &r) in roots.iter().enumerate() {
            let mut stack = vec![r];
            seen[r] = true;
            while let Some(i) = stack.pop() {
                for &j in neighbours(i) {
                    let j = j as usize;
                    if !seen[j] && agg[j] == k as u32 {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        assert!(seen.iter().all(|&s| s), "an aggregate is not connected in S");
        // roots at distance >= 3 in S
        let mut is_root = vec![false; n];
        roots.iter().for_each(|&r| is_root[r] = true);
        for &r in &roots {
            for &j in neighbours(r) {
                assert!(!is_root[j as usize]);
                for &l in neighbours(j as usize) {
                    assert!(l as usize == r || !is_root[l as usize], "roots {r} and {l} at distance 2");
                }
            }
        }
    }
}

#[test]
fn transfer_operators_and_coarse_matrices_have_their_properties() {
    let h = lap2d_hierarchy(40);
    let levels = h.levels();
    for (l, level) in levels[..levels.len() - 1].iter().enumerate() {
        // P_tent has orthonormal columns
        let pt = level.tentative_prolongator().unwrap();
        let (rows, nc, dense) = (pt.nrows(), pt.ncols(), pt.to_dense());
        let gram: Vec<f64> =
            (0..nc * nc).map(|ij| (0..rows).map(|k| dense[k * nc + ij / nc] * dense[k * nc + ij % nc]).sum()).collect();
        for i in 0..pt.ncols() {
            for j in 0..pt.ncols() {
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((gram[i * pt.ncols() + j] - want).abs() < 1e-12);
            }
        }
        // R = P^T exactly
        assert_eq!(level.restriction().unwrap(), &level.prolongator().unwrap().transpose());
        // A_c symmetric (to rounding: R A P in a fixed order)
        let ac = levels[l + 1].matrix();
        let t = ac.transpose();
        assert_eq!((ac.row_offsets(), ac.col_indices()), (t.row_offsets(), t.col_indices()));
        for (x, y) in ac.values().iter().zip(t.values()) {
            assert!((x - y).abs() <= 1e-12 * x.abs().max(1.0), "{x} {y}");
        }
    }
    // the coarse inverse times A_c is the identity
    let ac = levels.last().unwrap().matrix();
    let inv = h.coarse_inverse().unwrap();
    let (n, d, c) = (ac.nrows(), ac.to_dense(), inv.to_dense());
    for i in 0..n {
        for j in 0..n {
            let v: f64 = (0..n).map(|k| c[i * n + k] * d[k * n + j]).sum();
            assert!((v - if i == j { 1.0 } else { 0.0 }).abs() < 1e-10, "({i}, {j}): {v}");
        }
    }
}

#[test]
fn builds_and_solves_repeat_bit_for_bit() {
    let a = gen::laplacian_2d::<f64>(60);
    let p = AmgParams::default();
    let (h1, h2) = (AmgHierarchy::build(&a, &p).unwrap(), AmgHierarchy::build(&a, &p).unwrap());
    assert_eq!(h1.levels(), h2.levels());
    assert_eq!(h1.coarse_inverse(), h2.coarse_inverse());
    let amg = Amg::build(&Host, &a, &p).unwrap();
    let b: Vec<f64> = (0..a.nrows()).map(|i| ((i * 7919) % 101) as f64 / 101.0).collect();
    let solve = || {
        let mut x = vec![0.0; a.nrows()];
        let r = cg_with(&Host, &a, &amg, &b, &mut x, &CgParams::default(), &mut |_| {}).unwrap();
        (x, r.iterations)
    };
    let (x1, k1) = solve();
    let (x2, k2) = solve();
    assert_eq!(k1, k2);
    assert!(x1.iter().zip(&x2).all(|(a, b)| a.to_bits() == b.to_bits()));
    // and a fresh build solves the same way
    let amg2 = Amg::build(&Host, &a, &p).unwrap();
    let mut x3 = vec![0.0; a.nrows()];
    cg_with(&Host, &a, &amg2, &b, &mut x3, &CgParams::default(), &mut |_| {}).unwrap();
    assert!(x1.iter().zip(&x3).all(|(a, b)| a.to_bits() == b.to_bits()));
}

#[test]
fn bad_input_is_refused_with_what_was_wrong() {
    let a = gen::laplacian_2d::<f64>(10);
    // a near-nullspace of the wrong length names both lengths
    let p = AmgParams { near_nullspace: Some(vec![1.0; 99]), ..AmgParams::default() };
    let err = Amg::build(&Host, &a, &p).unwrap_err();
    assert!(matches!(err, CgError::NearNullspace { rows: 100, found: 99 }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("99") && msg.contains("100"), "{msg}");
    // a zero diagonal names the row
    let mut z = a.clone();
    let k = z.row_offsets()[7] as usize + z.row(7).0.iter().position(|&c| c == 7).unwrap();
    z.values_mut()[k] = 0.0;
    let err = solve(&z, &params(PreconditionerKind::Amg)).0.unwrap_err();
    assert!(matches!(err, CgError::InvalidDiagonal { row: 7, value } if value == 0.0), "{err:?}");
    z.values_mut()[k] = -4.0;
    let err = solve(&z, &params(PreconditionerKind::Amg)).0.unwrap_err();
    assert!(matches!(err, CgError::InvalidDiagonal { row: 7, .. }), "{err:?}");
    // a block size that does not divide the rows
    let p = AmgParams { block_size: 3, ..AmgParams::default() };
    assert!(matches!(Amg::build(&Host, &a, &p).unwrap_err(), CgError::InvalidParams(_)));
}

/// `lap2d:n` with one 2x2 block `[1 2; 2 1]` (eigenvalues 3 and -1) placed on two extra
/// rows: symmetric with a positive diagonal, indefinite.
fn indefinite(n: usize) -> CsrMatrix<f64> {
    let a = gen::laplacian_2d::<f64>(n);
    let m = a.nrows();
    let (_, _, mut offsets, mut cols, mut vals) = a.into_parts();
    for row in [[1.0, 2.0], [2.0, 1.0]] {
        cols.extend([m as u32, m as u32 + 1]);
        vals.extend_from_slice(&row);
        offsets.push(cols.len() as u64);
    }
    CsrMatrix::try_from_parts(m + 2, m + 2, offsets, cols, vals).unwrap()
}

#[test]
fn an_indefinite_matrix_is_a_breakdown() {
    let a = indefinite(40);
    let mut b = vec![1.0; a.nrows()];
    let m = a.nrows();
    b[m - 1] = -1.0;
    let mut x = vec![0.0; m];
    let err = cg(&Host, &a, &b, &mut x, &params(PreconditionerKind::Amg)).unwrap_err();
    assert!(matches!(err, CgError::Breakdown { .. }), "{err:?}");
    assert!(err.to_string().contains("not symmetric positive definite"));
}

#[test]
fn auto_takes_jacobi_on_skewed_graphs_and_amg_on_poisson() {
    for spec in ["graphlap:rmat:12:8", "graphlap:powerlaw:4000"] {
        let a: CsrMatrix<f64> = gen::from_spec(spec).unwrap();
        let choice = auto_precheck(&a).unwrap_or_else(|| panic!("{spec}: no early choice"));
        assert_eq!(choice.chosen, PreconditionerKind::Jacobi, "{spec}: {}", choice.reason);
        let report = solve(&a, &params(PreconditionerKind::Auto)).0.unwrap();
        assert_eq!(report.preconditioner, "jacobi");
        assert!(report.auto.unwrap().reason.contains("skewed"));
        assert!(report.amg.is_none());
    }
    let a = gen::laplacian_2d::<f64>(64);
    assert!(auto_precheck(&a).is_none());
    let report = solve(&a, &params(PreconditionerKind::Auto)).0.unwrap();
    assert_eq!(report.preconditioner, "amg");
    assert_eq!(report.auto.as_ref().unwrap().chosen, PreconditionerKind::Amg);
    assert!(report.amg.unwrap().auto_reason.is_some());
    // a non-positive diagonal: no preconditioner
    let mut z = gen::laplacian_2d::<f64>(8);
    z.values_mut()[0] = -1.0;
    assert_eq!(auto_precheck(&z).unwrap().chosen, PreconditionerKind::None);
}

#[test]
fn update_values_redoes_the_numbers_on_the_same_aggregates() {
    let a = gen::laplacian_2d::<f64>(40);
    let mut amg = Amg::build(&Host, &a, &AmgParams::default()).unwrap();
    let aggregates = amg.hierarchy().unwrap().levels()[0].aggregates().unwrap().0.to_vec();
    // 2 A + I: same pattern, new values
    let mut a2 = a.clone();
    for i in 0..a2.nrows() {
        let lo = a2.row_offsets()[i] as usize;
        let (cols, _) = a.row(i);
        for (k, &c) in cols.iter().enumerate() {
            let v = &mut a2.values_mut()[lo + k];
            *v = 2.0 * *v + if c as usize == i { 1.0 } else { 0.0 };
        }
    }
    amg.update_values(&Host, &a2).unwrap();
    assert_eq!(amg.hierarchy().unwrap().levels()[0].aggregates().unwrap().0, &aggregates[..]);
    assert_eq!(amg.hierarchy().unwrap().levels()[0].matrix(), &a2);
    // the same as a fresh build on the new values
    let fresh = AmgHierarchy::build(&a2, &AmgParams::default()).unwrap();
    assert_eq!(amg.hierarchy().unwrap().levels()[1].matrix(), fresh.levels()[1].matrix());
    let b = vec![1.0; a2.nrows()];
    let mut x = vec![0.0; a2.nrows()];
    let r = cg_with(&Host, &a2, &amg, &b, &mut x, &CgParams::default(), &mut |_| {}).unwrap();
    assert!(r.iterations <= 15);
    // another pattern is refused
    let err = amg.update_values(&Host, &gen::laplacian_2d(41)).unwrap_err();
    assert!(matches!(err, CgError::InvalidParams(_)));
}

#[test]
fn l1_jacobi_and_f32_converge_too() {
    let a = gen::laplacian_2d::<f64>(64);
    let mut p = params(PreconditionerKind::Amg);
    p.amg.smoother = Smoother::L1Jacobi { sweeps: 2 };
    let k = iterations(&a, &p);
    assert!(k <= 25, "{k}");
    let a32 = gen::laplacian_2d::<f32>(64);
    let b = vec![1.0f32; a32.nrows()];
    let mut x = vec![0.0f32; a32.nrows()];
    let p = CgParams { rtol: 1e-4, ..params(PreconditionerKind::Amg) };
    let r = cg(&Host, &a32, &b, &mut x, &p).unwrap();
    assert!(r.iterations <= 12, "{}", r.iterations);
}

#[test]
fn the_command_line_prints_the_levels_and_refuses_a_short_near_nullspace() {
    let run = |args: &[&str]| std::process::Command::new(common::spgpu_binary()).args(args).output().unwrap();
    let out = run(&["cg", "gen:lap2d:32", "--precond", "amg", "--device", "cpu"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("AMG hierarchy") && text.contains("operator complexity"), "{text}");
    assert!(text.contains("level 0's P and R applied from P_tent (not stored)"), "{text}");
    let out = run(&["cg", "gen:lap2d:32", "--precond", "amg", "--device", "cpu", "--fine-transfer", "stored"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("level 0's P and R stored"), "{text}");
    let out = run(&["cg", "gen:elast:4", "--precond", "auto", "--device", "cpu"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("auto: "), "{text}");
    let path = std::env::temp_dir().join(format!("spgpu-amg-nullspace-{}.mtx", std::process::id()));
    std::fs::write(&path, "%%MatrixMarket matrix array real general\n3 1\n1\n1\n1\n").unwrap();
    let out =
        run(&["cg", "gen:lap2d:8", "--precond", "amg", "--device", "cpu", "--near-nullspace", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("3 rows") && err.contains("64 rows"), "{err}");
}

/// On the device, Auto decides from the diagonal alone: Jacobi for a positive one (AMG's
/// setup can cost more than a whole Jacobi-CG solve there), none when an entry is not
/// positive, naming it.
#[test]
fn auto_on_the_device_reads_the_diagonal_only() {
    let jacobi = spgpu::solver::auto_for_device(&[4.0f64, 2.0, 1.0]);
    assert_eq!(jacobi.chosen, PreconditionerKind::Jacobi);
    assert!(jacobi.reason.contains("AMG's setup"), "{}", jacobi.reason);
    let none = spgpu::solver::auto_for_device(&[4.0f32, 0.0, -1.0]);
    assert_eq!(none.chosen, PreconditionerKind::None);
    assert!(none.reason.contains("row 1 is 0"), "{}", none.reason);
}

#[test]
fn the_memory_report_counts_every_matrix_of_the_hierarchy() {
    let a: CsrMatrix<f64> = gen::laplacian_2d(256);
    let amg = Amg::build(&Host, &a, &AmgParams::default()).unwrap();
    let info = amg.info();
    let m = info.memory.expect("the host counts its matrices' bytes");
    let (n, nnz) = (a.nrows() as u64, a.nnz() as u64);
    assert_eq!(m.matrix, (n + 1) * 8 + nnz * 12);
    // At least the coarser levels' A, and P and R (one entry per fine row each at least),
    // each entry 12 bytes.
    let coarse: u64 = info.levels[1..].iter().map(|l| l.entries as u64).sum();
    assert!(m.hierarchy >= (coarse + 2 * n) * 12, "{m:?}, coarse entries {coarse}");
    eprintln!("lap2d:256 host memory {m:?}, ratio {:.3}", m.ratio());
    // 1.88 measured: P and R (smoothed, about 2 entries per fine row each) are most of it.
    assert!(m.ratio() <= 2.0, "{m:?}");
    assert!(info.table().contains("x the matrix's"), "{}", info.table());
}

/// CG on the hierarchy's own level 0 ([`Amg::operator`]) is CG on `A`: the same matrix,
/// so the same iterations and the same bits.
#[test]
fn cg_on_the_hierarchys_level_0_is_cg_on_a() {
    let a = gen::laplacian_2d::<f64>(40);
    let amg = Amg::build(&Host, &a, &AmgParams::default()).unwrap();
    assert_eq!(amg.operator(), &a);
    let mut b = vec![0.0; a.nrows()];
    spgpu::reference::spmv_csr(1.0, &a, &vec![1.0; a.nrows()], 0.0, &mut b).unwrap();
    let params = CgParams::default();
    let (mut x1, mut x2) = (vec![0.0; a.nrows()], vec![0.0; a.nrows()]);
    let r1 = cg_with(&Host, amg.operator(), &amg, &b, &mut x1, &params, &mut |_| {}).unwrap();
    let r2 = cg_with(&Host, &a, &amg, &b, &mut x2, &params, &mut |_| {}).unwrap();
    assert_eq!(r1.iterations, r2.iterations);
    assert!(r1.relative_residual <= 1e-8);
    assert_eq!(x1, x2);
}

/// Level 0's prolongator applied from `P_tent` (the default) converges as the stored one,
/// to the same solution within the tolerance, and holds less memory; with the l1-Jacobi
/// smoother `P` and `R` are stored whatever is asked.
#[test]
fn the_implicit_fine_transfer_solves_as_the_stored_one_in_less_memory() {
    use spgpu::solver::FineTransfer;
    let a = gen::laplacian_2d::<f64>(96);
    let with = |fine_transfer, smoother| {
        let mut p = params(PreconditionerKind::Amg);
        p.amg = AmgParams { fine_transfer, smoother, ..AmgParams::default() };
        let (r, x) = solve(&a, &p);
        let r = r.unwrap();
        assert!(r.relative_residual <= 1e-8);
        let amg = r.amg.expect("an AMG report");
        (r.iterations, x, amg.fine_transfer, amg.memory.map(|m| m.hierarchy))
    };
    let cheb = Smoother::Chebyshev { degree: 2 };
    let (i_imp, x_imp, t_imp, m_imp) = with(FineTransfer::Implicit, cheb);
    let (i_sto, x_sto, t_sto, m_sto) = with(FineTransfer::Stored, cheb);
    assert_eq!((t_imp, t_sto), (FineTransfer::Implicit, FineTransfer::Stored));
    assert!(i_imp.abs_diff(i_sto) <= 1, "implicit {i_imp}, stored {i_sto}");
    let diff = x_imp.iter().zip(&x_sto).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
    assert!(diff < 1e-6, "solutions differ by {diff}");
    if let (Some(mi), Some(ms)) = (m_imp, m_sto) {
        assert!(mi < ms, "implicit {mi} bytes, stored {ms}");
    }
    let (i_all, x_all, t_all, m_all) = with(FineTransfer::ImplicitAllLevels, cheb);
    assert_eq!(t_all, FineTransfer::ImplicitAllLevels);
    assert!(i_all.abs_diff(i_sto) <= 1, "implicit on every level {i_all}, stored {i_sto}");
    let diff = x_all.iter().zip(&x_sto).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
    assert!(diff < 1e-6, "solutions differ by {diff}");
    if let (Some(ma), Some(mi)) = (m_all, m_imp) {
        assert!(ma < mi, "implicit on every level {ma} bytes, on level 0 {mi}");
    }
    let (_, _, t_l1, _) = with(FineTransfer::Implicit, Smoother::L1Jacobi { sweeps: 2 });
    assert_eq!(t_l1, FineTransfer::Stored);
}

/// A strength threshold that leaves too few connections to coarsen (`theta` 0.1 on
/// elasticity's blocks, which stopped the hierarchy at level 0 before) is replaced by 0 on
/// that level; the coarse threshold cuts the 2-D iterations; bad thresholds are refused.
#[test]
fn strength_thresholds_fall_back_and_are_checked() {
    let n = 8;
    let a = gen::elasticity_3d::<f64>(n).unwrap();
    let base = AmgParams {
        near_nullspace: Some(gen::rigid_body_modes(n)),
        block_size: 3,
        max_coarse: 100,
        ..AmgParams::default()
    };
    let levels = |p: &AmgParams| Amg::build(&Host, &a, p).unwrap().info().levels.len();
    assert_eq!(levels(&AmgParams { theta: 0.1, ..base.clone() }), levels(&base));
    assert!(levels(&base) > 1);
    let lap = gen::laplacian_2d::<f64>(256);
    let its = |coarse_theta| {
        let mut p = params(PreconditionerKind::Amg);
        p.amg = AmgParams { coarse_theta, ..AmgParams::default() };
        iterations(&lap, &p)
    };
    let (zero, default) = (its(0.0), its(spgpu::solver::COARSE_THETA));
    eprintln!("lap2d:256 coarse theta 0: {zero} iterations, default: {default}");
    assert!(default < zero, "coarse theta 0: {zero}, default: {default}");
    for bad in [-0.1, f64::NAN, f64::INFINITY] {
        let p = AmgParams { coarse_theta: bad, ..AmgParams::default() };
        assert!(matches!(Amg::build(&Host, &lap, &p).unwrap_err(), CgError::InvalidParams(_)), "{bad}");
    }
}
