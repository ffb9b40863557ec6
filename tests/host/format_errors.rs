//! A catalogue of invalid inputs: each asserts the exact `FormatError` kind and the row or
//! index it names, so that every variant is reachable and reported where it happens.

use spgpu::format::DEFAULT_MAX_ELL_PADDING_RATIO;
use spgpu::{CooMatrix, CsrMatrix, EllMatrix, Error, FormatError, INDEX_LIMIT};

fn csr(nrows: usize, ncols: usize, offsets: &[u64], cols: &[u32], nvals: usize) -> Result<CsrMatrix<f64>, FormatError> {
    CsrMatrix::try_from_parts(nrows, ncols, offsets.to_vec(), cols.to_vec(), vec![1.0; nvals])
}

#[test]
fn offsets_length() {
    assert_eq!(csr(2, 2, &[0, 1], &[0], 1), Err(FormatError::OffsetsLength { expected: 3, found: 2 }));
    assert_eq!(csr(0, 0, &[], &[], 0), Err(FormatError::OffsetsLength { expected: 1, found: 0 }));
    assert_eq!(csr(1, 1, &[0, 0, 0], &[], 0), Err(FormatError::OffsetsLength { expected: 2, found: 3 }));
}

#[test]
fn offsets_start() {
    assert_eq!(csr(2, 2, &[1, 1, 1], &[0], 1), Err(FormatError::OffsetsStart { found: 1 }));
}

#[test]
fn non_monotonic_offsets() {
    assert_eq!(
        csr(3, 3, &[0, 2, 1, 3], &[0, 1, 2], 3),
        Err(FormatError::NonMonotonicOffsets { row: 1, start: 2, end: 1 })
    );
}

#[test]
fn offsets_end() {
    assert_eq!(csr(2, 2, &[0, 1, 1], &[0, 1], 2), Err(FormatError::OffsetsEnd { expected: 2, found: 1 }));
    assert_eq!(csr(1, 2, &[0, 3], &[0, 1], 2), Err(FormatError::OffsetsEnd { expected: 2, found: 3 }));
}

#[test]
fn length_mismatch() {
    assert_eq!(csr(1, 2, &[0, 2], &[0, 1], 1), Err(FormatError::LengthMismatch { indices: 2, values: 1 }));
    let coo = CooMatrix::<f64>::try_from_triplets(2, 2, vec![0, 1], vec![0], vec![1.0, 2.0]);
    assert_eq!(coo, Err(FormatError::LengthMismatch { indices: 1, values: 2 }));
    let coo = CooMatrix::<f64>::try_from_triplets(2, 2, vec![0], vec![0, 1], vec![1.0, 2.0]);
    assert_eq!(coo, Err(FormatError::LengthMismatch { indices: 1, values: 2 }));
}

#[test]
fn row_out_of_bounds() {
    let coo = CooMatrix::<f64>::try_from_triplets(2, 3, vec![0, 2], vec![0, 1], vec![1.0, 2.0]);
    assert_eq!(coo, Err(FormatError::RowOutOfBounds { index: 1, row: 2, nrows: 2 }));
    let mut coo = CooMatrix::<f64>::new(2, 3).unwrap();
    coo.push(1, 2, 1.0).unwrap();
    assert_eq!(coo.push(5, 0, 1.0), Err(FormatError::RowOutOfBounds { index: 1, row: 5, nrows: 2 }));
    assert_eq!(coo.nnz(), 1, "a refused push leaves the matrix unchanged");
}

#[test]
fn column_out_of_bounds() {
    assert_eq!(csr(2, 3, &[0, 1, 2], &[2, 3], 2), Err(FormatError::ColumnOutOfBounds { row: 1, col: 3, ncols: 3 }));
    // u32::MAX is the ELL padding sentinel: as a CSR column it is out of bounds like any other.
    assert_eq!(
        csr(1, 3, &[0, 1], &[u32::MAX], 1),
        Err(FormatError::ColumnOutOfBounds { row: 0, col: u32::MAX as usize, ncols: 3 })
    );
    let coo = CooMatrix::<f64>::try_from_triplets(2, 3, vec![1], vec![7], vec![1.0]);
    assert_eq!(coo, Err(FormatError::ColumnOutOfBounds { row: 1, col: 7, ncols: 3 }));
    let mut coo = CooMatrix::<f64>::new(2, 3).unwrap();
    assert_eq!(coo.push(0, 3, 1.0), Err(FormatError::ColumnOutOfBounds { row: 0, col: 3, ncols: 3 }));
    // Columns of a 0-column matrix are all out of bounds.
    assert_eq!(csr(1, 0, &[0, 1], &[0], 1), Err(FormatError::ColumnOutOfBounds { row: 0, col: 0, ncols: 0 }));
}

#[test]
fn unsorted_columns() {
    assert_eq!(csr(2, 4, &[0, 1, 4], &[0, 1, 3, 2], 4), Err(FormatError::UnsortedColumns { row: 1, prev: 3, col: 2 }));
}

#[test]
fn duplicate_entry() {
    assert_eq!(csr(2, 4, &[0, 0, 3], &[1, 2, 2], 3), Err(FormatError::DuplicateEntry { row: 1, col: 2 }));
}

#[test]
fn too_large_without_allocating() {
    let rows = FormatError::TooLarge { what: "rows", value: INDEX_LIMIT + 1, limit: INDEX_LIMIT };
    let cols = FormatError::TooLarge { what: "columns", value: INDEX_LIMIT + 1, limit: INDEX_LIMIT };
    assert_eq!(CooMatrix::<f64>::new(INDEX_LIMIT + 1, 1), Err(rows.clone()));
    assert_eq!(CooMatrix::<f32>::with_capacity(1, INDEX_LIMIT + 1, 4), Err(cols.clone()));
    assert_eq!(CooMatrix::<f64>::try_from_triplets(INDEX_LIMIT + 1, 1, vec![], vec![], vec![]), Err(rows.clone()));
    // zeros must refuse before it allocates nrows + 1 offsets.
    assert_eq!(CsrMatrix::<f64>::zeros(INDEX_LIMIT + 1, 1), Err(rows.clone()));
    assert_eq!(
        CsrMatrix::<f64>::zeros(1, usize::MAX),
        Err(FormatError::TooLarge { what: "columns", value: usize::MAX, limit: INDEX_LIMIT })
    );
    assert_eq!(CsrMatrix::<f64>::identity(INDEX_LIMIT + 1), Err(rows.clone()));
    // The size is checked before the offsets' length (which would need 2^31 entries).
    assert_eq!(CsrMatrix::<f64>::try_from_parts(INDEX_LIMIT + 1, 1, vec![0], vec![], vec![]), Err(rows));
    assert_eq!(CsrMatrix::<f64>::try_from_parts(1, INDEX_LIMIT + 1, vec![0, 0], vec![], vec![]), Err(cols));
    // The limit itself is allowed.
    assert!(CooMatrix::<f64>::new(INDEX_LIMIT, INDEX_LIMIT).is_ok());
}

#[test]
fn ell_slots_past_the_32_bit_range_are_bounded_by_the_padding_limit_only() {
    // 2^20 rows, one of them 2048 long: ELL would need 2^31 slots. Slots are no longer bound
    // by 32-bit indices (the kernel has a 64-bit variant), so the padding limit is what
    // refuses it, before allocating.
    let nrows = 1usize << 20;
    let mut offsets = vec![0u64; nrows + 1];
    for o in offsets.iter_mut().skip(1) {
        *o = 2048;
    }
    let a = CsrMatrix::try_from_parts(nrows, 4096, offsets, (0..2048).collect(), vec![1.0f32; 2048]).unwrap();
    let limit = DEFAULT_MAX_ELL_PADDING_RATIO * nrows;
    assert_eq!(
        EllMatrix::try_from_csr(&a),
        Err(FormatError::EllPaddingLimit { width: 2048, nrows, nnz: 2048, padded: 1 << 31, limit })
    );
}

#[test]
fn ell_padding_limit() {
    // One row of 10 entries among 100 rows of 1: width 10, 1000 slots for 109 entries.
    let mut coo = CooMatrix::<f64>::new(100, 20).unwrap();
    for i in 0..100 {
        coo.push(i, i % 20, 1.0).unwrap();
    }
    for j in 0..10 {
        coo.push(0, j + 10, 2.0).unwrap();
    }
    let a = coo.to_csr();
    assert_eq!(a.nnz(), 110);
    let limit = DEFAULT_MAX_ELL_PADDING_RATIO * 110;
    assert_eq!(
        EllMatrix::try_from_csr(&a),
        Err(FormatError::EllPaddingLimit { width: 11, nrows: 100, nnz: 110, padded: 1100, limit })
    );
    assert_eq!(
        EllMatrix::try_from(&a),
        Err(FormatError::EllPaddingLimit { width: 11, nrows: 100, nnz: 110, padded: 1100, limit })
    );
    // A caller-set limit: exactly the slots needed passes, one less is refused.
    assert_eq!(EllMatrix::try_from_csr_with_limit(&a, 1100).map(|e| e.width()), Ok(11));
    assert_eq!(
        EllMatrix::try_from_csr_with_limit(&a, 1099),
        Err(FormatError::EllPaddingLimit { width: 11, nrows: 100, nnz: 110, padded: 1100, limit: 1099 })
    );
}

#[test]
fn errors_convert_and_read_well() {
    let e = csr(2, 4, &[0, 0, 3], &[1, 2, 2], 3).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("row 1") && msg.contains("column 2"), "{msg}");
    let e: Error = e.into();
    assert!(matches!(e, Error::Format(FormatError::DuplicateEntry { row: 1, col: 2 })));
    let msg = FormatError::TooLarge { what: "rows", value: INDEX_LIMIT + 1, limit: INDEX_LIMIT }.to_string();
    assert!(msg.contains("2147483648") && msg.contains("2147483647"), "{msg}");
}

#[test]
fn first_broken_invariant_wins() {
    // Both the offsets' start and a column are wrong: the offsets are checked first.
    assert_eq!(csr(1, 1, &[1, 1], &[5], 1), Err(FormatError::OffsetsStart { found: 1 }));
    // An unsorted row 0 is reported before an out-of-bounds column in row 1.
    assert_eq!(csr(2, 3, &[0, 2, 3], &[2, 1, 9], 3), Err(FormatError::UnsortedColumns { row: 0, prev: 2, col: 1 }));
}
