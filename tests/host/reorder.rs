//! Locality orderings from the outside: permutations refused unless bijections, orderings
//! that undo a random numbering, and CG solves in a renumbered system that give the user's
//! solution in the user's numbering.

use crate::common::true_relative_residual;
use spgpu::reorder::{self, Locality, Ordering, Permutation};
use spgpu::solver::{cg, CgParams, Host, PreconditionerKind, StopReason};
use spgpu::{gen, CsrMatrix};

/// `a` renumbered at random (seeded).
fn scattered(a: &CsrMatrix<f64>, seed: u64) -> CsrMatrix<f64> {
    use rand::{seq::SliceRandom, SeedableRng};
    let mut order: Vec<usize> = (0..a.nrows()).collect();
    order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
    Permutation::from_order(order).unwrap().permute_matrix(a).unwrap()
}

#[test]
fn a_permutation_is_a_bijection_or_an_error_naming_the_index() {
    let e = Permutation::from_order(vec![1, 0, 3]).unwrap_err().to_string();
    assert!(e.contains("order[2] is 3, past the length 3"), "{e}");
    let e = Permutation::from_positions(vec![2, 0, 0, 1]).unwrap_err().to_string();
    assert!(e.contains("0 appears twice in positions, at 1 and 2, and 3 not at all"), "{e}");
    let p = Permutation::from_order(vec![2, 0, 1]).unwrap();
    let e = p.permute_vector(&[1.0, 2.0]).unwrap_err().to_string();
    assert!(e.contains('2') && e.contains('3'), "{e}");
    let e = p.permute_matrix(&gen::laplacian_2d::<f64>(2)).unwrap_err().to_string();
    assert!(e.contains('4') && e.contains('3'), "{e}");
    // apply, invert, compose
    assert_eq!(p.permute_vector(&[10, 20, 30]).unwrap(), vec![30, 10, 20]);
    assert_eq!(p.unpermute_vector(&[30, 10, 20]).unwrap(), vec![10, 20, 30]);
    assert!(p.then(&p.inverse()).unwrap().is_identity());
    let q = Permutation::from_order(vec![1, 2, 0]).unwrap();
    let pq = p.then(&q).unwrap();
    assert_eq!(
        pq.permute_vector(&[10, 20, 30]).unwrap(),
        q.permute_vector(&p.permute_vector(&[10, 20, 30]).unwrap()).unwrap()
    );
}

#[test]
fn rcm_and_the_graph_ordering_undo_a_random_numbering() {
    let mesh = gen::laplacian_3d_7pt::<f64>(24);
    let natural = Locality::of(&mesh);
    let s = scattered(&mesh, 5);
    let random = Locality::of(&s);
    assert!(random.sectors_per_entry > 0.8, "{random:?}");
    for (name, p) in [("rcm", reorder::rcm(&s)), ("graph", reorder::graph_order(&s))] {
        let b = p.permute_matrix(&s).unwrap();
        let l = Locality::of(&b);
        // within a third of the natural numbering's sectors, and a band of a few planes
        assert!(l.sectors_per_entry < 1.35 * natural.sectors_per_entry, "{name}: {l:?} against {natural:?}");
        if name == "rcm" {
            assert!(l.bandwidth <= 2 * 24 * 24 + 24, "{name}: {l:?}");
        }
        // the same system: the same diagonal multiset and the same number of entries
        assert_eq!(b.nnz(), mesh.nnz());
    }
    // the ordering is deterministic
    assert_eq!(reorder::rcm(&s), reorder::rcm(&s));
    assert_eq!(reorder::graph_order(&s), reorder::graph_order(&s));
}

/// Solves `a x = b` (b = A * ones-like vector) with `reorder`; returns the solution and the
/// report.
fn solve(a: &CsrMatrix<f64>, reorder: Ordering, precond: PreconditionerKind) -> (Vec<f64>, spgpu::solver::CgReport) {
    let n = a.nrows();
    let exact: Vec<f64> = (0..n).map(|i| 1.0 + (i as f64 * 0.37).sin()).collect();
    let mut b = vec![0.0; n];
    spgpu::reference::spmv_csr(1.0, a, &exact, 0.0, &mut b).unwrap();
    let mut x = vec![0.0; n];
    let params = CgParams { reorder, preconditioner: precond, rtol: 1e-10, history: true, ..CgParams::default() };
    let report = cg(&Host, a, &b, &mut x, &params).unwrap();
    assert!(true_relative_residual(a, &x, &b) <= 1e-10 * 1.01, "{reorder}: the residual in the user's numbering");
    let err = x.iter().zip(&exact).map(|(u, v)| (u - v).abs()).fold(0.0, f64::max);
    assert!(err < 1e-5, "{reorder}: max error {err}");
    (x, report)
}

#[test]
fn cg_in_a_renumbered_system_returns_the_users_solution() {
    let s = scattered(&gen::laplacian_2d::<f64>(40), 11);
    let (x_none, plain) = solve(&s, Ordering::None, PreconditionerKind::Jacobi);
    assert!(plain.reorder.is_none());
    for ordering in [Ordering::Rcm, Ordering::Graph] {
        let (x, r) = solve(&s, ordering, PreconditionerKind::Jacobi);
        assert_eq!(r.stop_reason, StopReason::Converged);
        let info = r.reorder.as_ref().unwrap();
        assert_eq!((info.requested, info.ordering, info.probe_iterations), (ordering, ordering, 0));
        let after = info.after.unwrap();
        assert!(after.sectors_per_entry < 0.5 * info.before.sectors_per_entry, "{ordering}: {info:?}");
        assert!(r.setup_time >= info.time && info.time.as_nanos() > 0);
        // the same system: iterations within a few of the user's numbering
        assert!(
            r.iterations.abs_diff(plain.iterations) <= plain.iterations / 10 + 2,
            "{} vs {}",
            r.iterations,
            plain.iterations
        );
        let diff = x.iter().zip(&x_none).map(|(u, v)| (u - v).abs()).fold(0.0, f64::max);
        assert!(diff < 1e-6, "{ordering}: {diff}");
        assert_eq!(r.history.as_ref().unwrap().len(), r.iterations + 1 + r.restarts);
    }
    // deterministic
    assert_eq!(
        solve(&s, Ordering::Rcm, PreconditionerKind::Jacobi).0,
        solve(&s, Ordering::Rcm, PreconditionerKind::Jacobi).0
    );
}

#[test]
fn auto_keeps_a_good_numbering_without_a_probe() {
    let a = gen::laplacian_2d::<f64>(40);
    let (_, r) = solve(&a, Ordering::Auto, PreconditionerKind::Jacobi);
    let info = r.reorder.unwrap();
    assert_eq!((info.ordering, info.probe_iterations), (Ordering::None, 0));
    assert!(info.reason.contains("already shares the gathers of x"), "{}", info.reason);
}

#[test]
fn auto_on_a_scattered_numbering_probes_then_decides_and_says_why() {
    let s = scattered(&gen::laplacian_2d::<f64>(60), 2);
    for precond in [PreconditionerKind::None, PreconditionerKind::Jacobi] {
        let (_, r) = solve(&s, Ordering::Auto, precond);
        let info = r.reorder.as_ref().unwrap();
        assert_eq!(info.probe_iterations, 32, "{}", info.reason);
        assert!(info.reason.contains("iterations left at") && info.reason.contains("to compute it"), "{}", info.reason);
        match info.ordering {
            Ordering::None => assert!(info.reason.starts_with("kept"), "{}", info.reason),
            o => assert!(info.reason.starts_with(o.name()) && info.after.is_some(), "{}", info.reason),
        }
        // the probe's iterations and norms are part of the solve's
        assert!(r.iterations > 32);
        assert_eq!(r.history.as_ref().unwrap().len(), r.iterations + 2 + r.restarts);
    }
    // a solve shorter than the probe ends in it
    let small = scattered(&gen::laplacian_2d::<f64>(6), 2);
    let (_, r) = solve(&small, Ordering::Auto, PreconditionerKind::Jacobi);
    let info = r.reorder.unwrap();
    assert_eq!(info.ordering, Ordering::None);
    assert!(
        info.reason.contains("ended within the probe") || info.reason.contains("already shares"),
        "{}",
        info.reason
    );
}

#[test]
fn auto_with_multigrid_keeps_the_numbering() {
    let s = scattered(&gen::laplacian_2d::<f64>(30), 4);
    let (_, r) = solve(&s, Ordering::Auto, PreconditionerKind::Amg);
    let info = r.reorder.unwrap();
    assert_eq!(info.ordering, Ordering::None);
    assert!(info.reason.contains("too few iterations"), "{}", info.reason);
    // asked for, the ordering is used with multigrid too, its hierarchy built on P A P^T
    let (_, r) = solve(&s, Ordering::Rcm, PreconditionerKind::Amg);
    assert_eq!(r.reorder.unwrap().ordering, Ordering::Rcm);
    assert!(r.amg.is_some());
}

#[test]
fn reordering_a_non_square_system_is_refused() {
    let a = CsrMatrix::<f64>::try_from_parts(2, 3, vec![0, 1, 2], vec![0, 1], vec![1.0, 1.0]).unwrap();
    let mut x = vec![0.0; 3];
    let params = CgParams { reorder: Ordering::Rcm, ..CgParams::default() };
    let e = cg(&Host, &a, &vec![1.0, 1.0], &mut x, &params).unwrap_err().to_string();
    assert!(e.contains("2 x 3"), "{e}");
}

#[test]
fn permute_names_a_random_numbering_of_any_generated_matrix() {
    let a = gen::from_spec::<f64>("lap3d:12").unwrap();
    let pa = gen::from_spec::<f64>("permute:lap3d:12").unwrap();
    let p = gen::numbering("gen:permute:lap3d:12").unwrap().expect("a permute: name");
    assert_eq!(pa, p.permute_matrix(&a).unwrap());
    assert_eq!((pa.nrows(), pa.nnz()), (a.nrows(), a.nnz()));
    // the same matrix (to its numbering): same diagonal multiset, same solution of A x = A 1
    let (mut d, mut pd) = (a.diagonal(), pa.diagonal());
    d.sort_by(f64::total_cmp);
    pd.sort_by(f64::total_cmp);
    assert_eq!(d, pd);
    // scattered where the natural numbering is local, and seeded: the same every time
    let (before, after) = (Locality::of(&a), Locality::of(&pa));
    assert!(after.sectors_per_entry > 2.5 * before.sectors_per_entry, "{before:?} -> {after:?}");
    assert!(after.bandwidth > 10 * before.bandwidth, "{before:?} -> {after:?}");
    assert_eq!(pa, gen::from_spec::<f64>("permute:lap3d:12").unwrap());
    assert!(gen::numbering("lap3d:12").unwrap().is_none());
    // elasticity keeps a grid point's three displacements together
    let p = gen::numbering("permute:elast:4").unwrap().unwrap();
    for node in p.order().chunks(3) {
        assert_eq!((node[0] % 3, node[1], node[2]), (0, node[0] + 1, node[0] + 2), "{node:?}");
    }
    // the estimate counts both copies; a rectangular inner matrix is refused
    let (e, f) = (
        gen::estimate_host_bytes::<f64>("lap2d:300").unwrap(),
        gen::estimate_host_bytes::<f64>("permute:lap2d:300").unwrap(),
    );
    assert!(f >= 2 * e, "{f} < 2 x {e}");
    let err = gen::from_spec::<f64>("permute:uniform:10:20:3").unwrap_err().to_string();
    assert!(err.contains("permute") && err.contains("square"), "{err}");
    let err = gen::from_spec::<f64>("permute:").unwrap_err().to_string();
    assert!(err.contains("unknown generated matrix"), "{err}");
}

#[test]
fn communities_stay_local_until_renumbered_and_the_graph_ordering_finds_them() {
    let a = gen::from_spec::<f64>("communities:40000:400").unwrap();
    assert_eq!(a, gen::communities(40_000, 400, 16, 42).unwrap());
    assert_eq!(a.nrows(), 40_000);
    assert!(a.nnz() > 15 * 40_000 && a.nnz() <= 16 * 40_000, "{}", a.nnz());
    let inside: usize =
        (0..a.nrows()).map(|i| a.row(i).0.iter().filter(|&&j| j as usize / 400 == i / 400).count()).sum();
    let share = inside as f64 / a.nnz() as f64;
    assert!((share - 0.9).abs() < 0.02, "{share}"); // 90% inside, plus the few outside draws that land inside
    let l = gen::from_spec::<f64>("permute:graphlap:communities:40000:400").unwrap();
    let scattered = Locality::of(&l);
    let p = reorder::graph_order(&l);
    let ordered = Locality::of(&p.permute_matrix(&l).unwrap());
    assert!(
        ordered.sectors_per_entry < 0.75 * scattered.sectors_per_entry,
        "graph ordering: {scattered:?} -> {ordered:?}"
    );
    let err = gen::from_spec::<f64>("communities:100:0").unwrap_err().to_string();
    assert!(err.contains("communities of 0 vertices"), "{err}");
    let err = gen::from_spec::<f64>("communities:100").unwrap_err().to_string();
    assert!(err.contains("communities takes 2 to 4 parameter(s), got 1"), "{err}");
}
