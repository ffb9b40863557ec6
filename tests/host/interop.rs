//! Conversions to and from sprs and nalgebra-sparse: round trips over random small
//! matrices, zero-copy where the layouts agree, and validation on the way in.

use nalgebra_sparse as na;
use proptest::prelude::*;
use spgpu::{CooMatrix, CsrMatrix, FormatError, INDEX_LIMIT};
use sprs::{CsMat, CsMatI, TriMat, TriMatI};

/// A random small COO matrix (0 to 8 rows and columns, duplicates likely, empty rows).
fn coo() -> impl Strategy<Value = CooMatrix<f64>> {
    (0usize..=8, 0usize..=8)
        .prop_flat_map(|(r, c)| {
            let t = if r == 0 || c == 0 {
                Just(Vec::new()).boxed()
            } else {
                (prop::collection::vec((0..r as u32, 0..c as u32, -4i8..=4), 0..=24), prop::option::of(0..r as u32))
                    .prop_map(move |(mut t, long)| {
                        // Sometimes one long row: every column of row `long` stored.
                        if let Some(i) = long {
                            t.extend((0..c as u32).map(|j| (i, j, 1)));
                        }
                        t
                    })
                    .boxed()
            };
            (Just(r), Just(c), t)
        })
        .prop_map(|(r, c, t)| {
            let mut m = CooMatrix::new(r, c).unwrap();
            for (i, j, v) in t {
                m.push(i as usize, j as usize, f64::from(v)).unwrap();
            }
            m
        })
}

proptest! {
    #[test]
    fn csr_through_sprs_u32_both_storages(a in coo().prop_map(|c| c.to_csr())) {
        let s = CsMatI::<f64, u32>::try_from(a.clone()).unwrap();
        prop_assert!(s.is_csr());
        prop_assert_eq!((s.rows(), s.cols(), s.nnz()), (a.nrows(), a.ncols(), a.nnz()));
        prop_assert_eq!(s.check_compressed_structure(), Ok(()));
        for i in 0..a.nrows() {
            for j in 0..a.ncols() {
                prop_assert_eq!(s.get(i, j).copied(), a.get(i, j));
            }
        }
        let csc = s.to_csc();
        prop_assert_eq!(CsrMatrix::try_from(s), Ok(a.clone()));
        prop_assert_eq!(CsrMatrix::try_from(csc), Ok(a));
    }

    #[test]
    fn csr_through_sprs_usize_both_storages(a in coo().prop_map(|c| c.to_csr())) {
        let s: CsMat<f64> = a.clone().into();
        prop_assert_eq!(s.check_compressed_structure(), Ok(()));
        prop_assert_eq!(s.to_dense().iter().copied().collect::<Vec<_>>(), a.to_dense());
        let csc = s.to_csc();
        prop_assert_eq!(CsrMatrix::try_from(s), Ok(a.clone()));
        prop_assert_eq!(CsrMatrix::try_from(csc), Ok(a));
    }

    #[test]
    fn csr_through_nalgebra(a in coo().prop_map(|c| c.to_csr())) {
        let n: na::CsrMatrix<f64> = a.clone().into();
        prop_assert_eq!((n.nrows(), n.ncols(), n.nnz()), (a.nrows(), a.ncols(), a.nnz()));
        for (i, j, &v) in n.triplet_iter() {
            prop_assert_eq!(a.get(i, j), Some(v));
        }
        prop_assert_eq!(CsrMatrix::try_from(&n), Ok(a.clone()));
        let csc = na::CscMatrix::from(&n);
        prop_assert_eq!(CsrMatrix::try_from(&csc), Ok(a.clone()));
        prop_assert_eq!(CsrMatrix::try_from(csc), Ok(a.clone()));
        prop_assert_eq!(CsrMatrix::try_from(n), Ok(a));
    }

    #[test]
    fn csr_sprs_nalgebra_chain(a in coo().prop_map(|c| c.to_csr())) {
        // spgpu -> sprs (u32) -> spgpu -> nalgebra -> spgpu -> sprs (usize) -> spgpu.
        let s = CsMatI::<f64, u32>::try_from(a.clone()).unwrap();
        let b = CsrMatrix::try_from(s).unwrap();
        let n: na::CsrMatrix<f64> = b.into();
        let c = CsrMatrix::try_from(n).unwrap();
        let s2: CsMat<f64> = c.into();
        prop_assert_eq!(CsrMatrix::try_from(s2), Ok(a));
    }

    #[test]
    fn coo_through_trimat_and_nalgebra(m in coo()) {
        // Duplicates are kept on both sides; the triplets come back in the same order.
        let t: TriMatI<f64, u32> = m.clone().into();
        prop_assert_eq!(t.nnz(), m.nnz());
        prop_assert_eq!(t.row_inds(), m.row_indices());
        prop_assert_eq!(CooMatrix::try_from(&t), Ok(m.clone()));
        prop_assert_eq!(CooMatrix::try_from(t), Ok(m.clone()));
        let t: TriMat<f64> = m.clone().into();
        // sprs sums duplicates in its own CSR conversion: it agrees with ours.
        let via_sprs: CsMat<f64> = t.to_csr();
        prop_assert_eq!(CsrMatrix::try_from(via_sprs), Ok(m.to_csr()));
        prop_assert_eq!(CooMatrix::try_from(&t), Ok(m.clone()));
        prop_assert_eq!(CooMatrix::try_from(t), Ok(m.clone()));
        let n: na::CooMatrix<f64> = m.clone().into();
        prop_assert_eq!(n.nnz(), m.nnz());
        let n_csr = na::CsrMatrix::from(&n);
        prop_assert_eq!(CsrMatrix::try_from(n_csr), Ok(m.to_csr()));
        prop_assert_eq!(CooMatrix::try_from(&n), Ok(m.clone()));
        prop_assert_eq!(CooMatrix::try_from(n), Ok(m));
    }
}

#[test]
fn sprs_u32_moves_the_entry_arrays_both_ways() {
    // The column indices and values move; the offsets (u64 in spgpu, u32 in CsMatI<T, u32>)
    // are converted, nrows + 1 integers.
    let a = spgpu::gen::laplacian_2d::<f64>(5);
    let offsets: Vec<u32> = a.row_offsets().iter().map(|&o| o as u32).collect();
    let ptrs = (a.col_indices().as_ptr(), a.values().as_ptr());
    let s = CsMatI::<f64, u32>::try_from(a).unwrap();
    assert_eq!((s.indices().as_ptr(), s.data().as_ptr()), ptrs);
    assert_eq!(s.indptr().raw_storage(), &offsets[..]);
    let b = CsrMatrix::try_from(s).unwrap();
    assert_eq!((b.col_indices().as_ptr(), b.values().as_ptr()), ptrs);
}

#[test]
fn usize_conversions_move_the_values() {
    let a = spgpu::gen::laplacian_2d::<f32>(4);
    let vals = a.values().as_ptr();
    let s: CsMat<f32> = a.into();
    assert_eq!(s.data().as_ptr(), vals);
    let b = CsrMatrix::try_from(s).unwrap();
    assert_eq!(b.values().as_ptr(), vals);
    let n: na::CsrMatrix<f32> = b.into();
    assert_eq!(n.values().as_ptr(), vals);
    let c = CsrMatrix::try_from(n).unwrap();
    assert_eq!(c.values().as_ptr(), vals);
    let coo = CooMatrix::from(c);
    let vals = coo.values().as_ptr();
    let t: TriMatI<f32, u32> = coo.into();
    assert_eq!(t.data().as_ptr(), vals);
    let coo = CooMatrix::try_from(t).unwrap();
    let vals = coo.values().as_ptr();
    let n: na::CooMatrix<f32> = coo.into();
    assert_eq!(n.values().as_ptr(), vals);
    assert_eq!(CooMatrix::try_from(n).unwrap().values().as_ptr(), vals);
}

#[test]
fn sprs_offsets_not_starting_at_zero_are_rebased() {
    // sprs accepts an owned indptr that starts past 0 (its entries start there).
    let s = CsMatI::<f64, u32>::new((2, 3), vec![4, 5, 7], vec![1, 0, 2], vec![1.0, 2.0, 3.0]);
    let a = CsrMatrix::try_from(s).unwrap();
    assert_eq!(a.row_offsets(), &[0, 1, 3]);
    assert_eq!(a.to_dense(), vec![0.0, 1.0, 0.0, 2.0, 0.0, 3.0]);
    let s = CsMat::<f64>::new((2, 3), vec![4, 5, 7], vec![1, 0, 2], vec![1.0, 2.0, 3.0]);
    assert_eq!(CsrMatrix::try_from(s), Ok(a));
}

#[test]
fn sprs_unchecked_matrices_are_validated() {
    // sprs' unchecked constructor lets an invalid matrix through; spgpu does not.
    // SAFETY (sprs' contract): the matrix is only converted, which reads its raw arrays.
    let bad =
        unsafe { CsMatI::<f64, u32>::new_unchecked(sprs::CSR, (2, 3), vec![0, 2, 3], vec![2, 1, 0], vec![1.0; 3]) };
    assert_eq!(CsrMatrix::try_from(bad), Err(FormatError::UnsortedColumns { row: 0, prev: 2, col: 1 }));
    let bad = unsafe { CsMat::<f64>::new_unchecked(sprs::CSR, (2, 3), vec![0, 1, 2], vec![0, 3], vec![1.0; 2]) };
    assert_eq!(CsrMatrix::try_from(bad), Err(FormatError::ColumnOutOfBounds { row: 1, col: 3, ncols: 3 }));
    // A usize index past the 32-bit range is reported with its true value.
    let bad = unsafe { CsMat::<f64>::new_unchecked(sprs::CSR, (1, 3), vec![0, 1], vec![1 << 40], vec![1.0]) };
    assert_eq!(CsrMatrix::try_from(bad), Err(FormatError::ColumnOutOfBounds { row: 0, col: 1 << 40, ncols: 3 }));
    let bad = unsafe { CsMat::<f64>::new_unchecked(sprs::CSR, (2, 3), vec![0, 2, 1], vec![0], vec![1.0]) };
    assert_eq!(CsrMatrix::try_from(bad), Err(FormatError::NonMonotonicOffsets { row: 1, start: 2, end: 1 }));
}

#[test]
fn foreign_matrices_past_the_index_limit_are_refused() {
    let cols = |value| FormatError::TooLarge { what: "columns", value, limit: INDEX_LIMIT };
    let rows = |value| FormatError::TooLarge { what: "rows", value, limit: INDEX_LIMIT };
    // u32 indices can describe 3e9 columns, spgpu's 32-bit signed kernel indices cannot.
    let s = CsMatI::<f64, u32>::zero((1, 3_000_000_000));
    assert_eq!(CsrMatrix::try_from(s), Err(cols(3_000_000_000)));
    let s = CsMat::<f64>::zero((2, INDEX_LIMIT + 1));
    assert_eq!(CsrMatrix::try_from(s), Err(cols(INDEX_LIMIT + 1)));
    // A CSC matrix with too many rows: its arrays are those of the transpose, but the error
    // names the matrix's own dimension.
    let s = CsMat::<f64>::new_csc((INDEX_LIMIT + 1, 2), vec![0, 0, 0], vec![], vec![]);
    assert_eq!(CsrMatrix::try_from(s), Err(rows(INDEX_LIMIT + 1)));
    let n = na::CscMatrix::<f64>::zeros(INDEX_LIMIT + 1, 1);
    assert_eq!(CsrMatrix::try_from(n), Err(rows(INDEX_LIMIT + 1)));
    let n = na::CsrMatrix::<f64>::zeros(1, INDEX_LIMIT + 1);
    assert_eq!(CsrMatrix::try_from(&n), Err(cols(INDEX_LIMIT + 1)));
    assert_eq!(CsrMatrix::try_from(n), Err(cols(INDEX_LIMIT + 1)));
    let n = na::CooMatrix::<f64>::new(INDEX_LIMIT + 1, 1);
    assert_eq!(CooMatrix::try_from(n), Err(rows(INDEX_LIMIT + 1)));
    let t = TriMat::<f64>::new((1, usize::MAX));
    assert_eq!(CooMatrix::try_from(&t), Err(cols(usize::MAX)));
    let t = TriMatI::<f64, u32>::new((3_000_000_000, 1));
    assert_eq!(CooMatrix::try_from(t), Err(rows(3_000_000_000)));
}

#[test]
fn sprs_csc_to_csr_is_the_same_matrix() {
    // [1 0 2]
    // [0 3 0]   stored column by column
    let csc = CsMatI::<f64, u32>::new_csc((2, 3), vec![0, 1, 2, 3], vec![0, 1, 0], vec![1.0, 3.0, 2.0]);
    let a = CsrMatrix::try_from(csc).unwrap();
    assert_eq!((a.nrows(), a.ncols()), (2, 3));
    assert_eq!(a.to_dense(), vec![1.0, 0.0, 2.0, 0.0, 3.0, 0.0]);
}

#[test]
fn sprs_views_and_borrowed_matrices_are_copied() {
    let a = spgpu::gen::laplacian_2d::<f64>(4); // 16 x 16
    let s = CsMatI::<f64, u32>::try_from(a.clone()).unwrap();
    assert_eq!(CsrMatrix::try_from(&s), Ok(a.clone()));
    assert_eq!(CsrMatrix::try_from(s.view()), Ok(a.clone()));
    let su: CsMat<f64> = a.clone().into();
    assert_eq!(CsrMatrix::try_from(&su), Ok(a.clone()));
    assert_eq!(CsrMatrix::try_from(su.view()), Ok(a.clone()));
    // Rows 5..9: a view whose offsets start past 0.
    let rows_of = |b: &CsrMatrix<f64>| {
        assert_eq!((b.nrows(), b.ncols()), (4, 16));
        for i in 0..4 {
            assert_eq!(b.row(i), a.row(5 + i));
        }
    };
    rows_of(&CsrMatrix::try_from(s.slice_outer(5..9)).unwrap());
    rows_of(&CsrMatrix::try_from(su.slice_outer(5..9)).unwrap());
    // Columns 2..5 of a CSC matrix: a 16 x 3 matrix.
    let csc = su.to_csc();
    assert_eq!(CsrMatrix::try_from(csc.view()), Ok(a.clone()));
    let c = CsrMatrix::try_from(csc.slice_outer(2..5)).unwrap();
    assert_eq!((c.nrows(), c.ncols()), (16, 3));
    for i in 0..16 {
        for j in 0..3 {
            assert_eq!(c.get(i, j), a.get(i, j + 2), "({i}, {j})");
        }
    }
    let csc32 = s.to_csc();
    assert_eq!(CsrMatrix::try_from(&csc32), Ok(a));
}
