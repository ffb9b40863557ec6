//! Number parsing for the reader: indices, integers and floats, on bytes, without allocation.
//!
//! Floats take a fast path when the decimal is exactly representable: at most 19
//! significant digits whose value fits the significand of the target type (2^53 for `f64`,
//! 2^24 for `f32`) and a power of ten that is itself exact (10^22 for `f64`, 10^10 for
//! `f32`). Then one multiplication or division of two exact values is correctly rounded
//! (Clinger's fast path). Everything else goes to the standard library's correctly rounded
//! parser (`str::parse::<f64>` or `str::parse::<f32>`), so the result always equals what
//! `str::parse` gives for the same text, bit for bit.

/// Why a token is not a number of the wanted kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumError {
    /// Not the syntax of a number.
    Syntax,
    /// A number, but too large for its type.
    Range,
}

/// Exact powers of ten as `f64` (10^22 is the largest exact one).
const POW10_F64: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];
/// Exact powers of ten as `f32` (10^10 is the largest exact one).
const POW10_F32: [f32; 11] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];

/// A decimal `(-1)^neg * mantissa * 10^exp10`, as scanned from the text.
struct Decimal {
    neg: bool,
    mantissa: u64,
    exp10: i64,
    /// More than 19 significant digits: `mantissa` holds only the first 19.
    truncated: bool,
}

/// Scans `[+-] digits [. digits] [(e|E) [+-] digits]` with at least one mantissa digit.
/// Returns `None` when the text is not of that form.
#[inline]
fn scan_decimal(s: &[u8]) -> Option<Decimal> {
    let mut i = 0;
    let mut neg = false;
    if let Some(&c) = s.first() {
        if c == b'-' || c == b'+' {
            neg = c == b'-';
            i = 1;
        }
    }
    let mut mantissa: u64 = 0;
    let mut digits = 0u32; // significant digits kept in `mantissa`
    let mut exp10: i64 = 0;
    let mut truncated = false;
    let mut any = false;
    while i < s.len() && s[i].is_ascii_digit() {
        let d = (s[i] - b'0') as u64;
        any = true;
        if digits < 19 {
            mantissa = mantissa * 10 + d;
            if mantissa != 0 {
                digits += 1;
            }
        } else {
            truncated |= d != 0;
            exp10 += 1;
        }
        i += 1;
    }
    if i < s.len() && s[i] == b'.' {
        i += 1;
        while i < s.len() && s[i].is_ascii_digit() {
            let d = (s[i] - b'0') as u64;
            any = true;
            if digits < 19 {
                mantissa = mantissa * 10 + d;
                if mantissa != 0 {
                    digits += 1;
                }
                exp10 -= 1;
            } else {
                truncated |= d != 0;
            }
            i += 1;
        }
    }
    if !any {
        return None;
    }
    if i < s.len() && (s[i] == b'e' || s[i] == b'E') {
        i += 1;
        let mut eneg = false;
        if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
            eneg = s[i] == b'-';
            i += 1;
        }
        let start = i;
        let mut e: i64 = 0;
        while i < s.len() && s[i].is_ascii_digit() {
            // Saturate: anything past 10^6 is out of every range already.
            if e < 1_000_000 {
                e = e * 10 + (s[i] - b'0') as i64;
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        exp10 += if eneg { -e } else { e };
    }
    if i != s.len() {
        return None;
    }
    Some(Decimal { neg, mantissa, exp10, truncated })
}

/// Whether the text, after an optional sign, starts with a letter: `inf`, `infinity` or
/// `nan` in any case are the only such numbers.
fn is_special(s: &[u8]) -> bool {
    let t = match s.first() {
        Some(b'+') | Some(b'-') => &s[1..],
        _ => s,
    };
    t.first().is_some_and(|c| c.is_ascii_alphabetic())
}

/// Tokens longer than this skip the fast path: with more than 15 significant digits they
/// rarely fit it (a full-precision `f64` has 16 or 17), and the standard parser is faster
/// than scanning twice.
const FAST_PATH_MAX_LEN: usize = 17;

/// Parses a float token as `f64`, exactly as `str::parse::<f64>` would.
///
/// Accepts decimal notation and `inf`, `infinity`, `nan` (any case, optional sign). A finite
/// decimal that overflows to infinity is [`NumError::Range`].
#[inline]
pub(crate) fn parse_f64(s: &[u8]) -> Result<f64, NumError> {
    if s.len() <= FAST_PATH_MAX_LEN {
        if let Some(d) = scan_decimal(s) {
            if !d.truncated && d.mantissa <= (1u64 << 53) && (-22..=22).contains(&d.exp10) {
                let m = d.mantissa as f64;
                let v = if d.exp10 < 0 { m / POW10_F64[(-d.exp10) as usize] } else { m * POW10_F64[d.exp10 as usize] };
                return Ok(if d.neg { -v } else { v });
            }
        }
    }
    match std_parse::<f64>(s)? {
        v if v.is_infinite() && !is_special(s) => Err(NumError::Range),
        v => Ok(v),
    }
}

/// Parses a float token as `f32`, exactly as `str::parse::<f32>` would (one rounding, not
/// two: never through `f64`).
#[inline]
pub(crate) fn parse_f32(s: &[u8]) -> Result<f32, NumError> {
    if s.len() <= FAST_PATH_MAX_LEN {
        if let Some(d) = scan_decimal(s) {
            if !d.truncated && d.mantissa <= (1u64 << 24) && (-10..=10).contains(&d.exp10) {
                let m = d.mantissa as f32;
                let v = if d.exp10 < 0 { m / POW10_F32[(-d.exp10) as usize] } else { m * POW10_F32[d.exp10 as usize] };
                return Ok(if d.neg { -v } else { v });
            }
        }
    }
    match std_parse::<f32>(s)? {
        v if v.is_infinite() && !is_special(s) => Err(NumError::Range),
        v => Ok(v),
    }
}

/// The standard library's correctly rounded parser (same grammar as [`scan_decimal`] plus
/// `inf`, `infinity`, `nan`).
#[inline]
fn std_parse<F: std::str::FromStr>(s: &[u8]) -> Result<F, NumError> {
    if !s.is_ascii() {
        return Err(NumError::Syntax);
    }
    // SAFETY: ASCII bytes are valid UTF-8.
    let t = unsafe { std::str::from_utf8_unchecked(s) };
    t.parse::<F>().map_err(|_| NumError::Syntax)
}

/// Parses an `integer` field value: `[+-] digits`, within `i64`.
#[inline]
pub(crate) fn parse_i64(s: &[u8]) -> Result<i64, NumError> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() {
        return Err(NumError::Syntax);
    }
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return Err(NumError::Syntax);
        }
        let d = (c - b'0') as i64;
        v = v
            .checked_mul(10)
            .and_then(|v| if neg { v.checked_sub(d) } else { v.checked_add(d) })
            .ok_or(NumError::Range)?;
    }
    Ok(v)
}

/// Parses an unsigned whole number (an index or a size): digits only.
#[inline]
pub(crate) fn parse_u64(s: &[u8]) -> Result<u64, NumError> {
    if s.is_empty() {
        return Err(NumError::Syntax);
    }
    let mut v: u64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return Err(NumError::Syntax);
        }
        v = v.checked_mul(10).and_then(|v| v.checked_add((c - b'0') as u64)).ok_or(NumError::Range)?;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same_f64(s: &str) {
        let std = s.parse::<f64>();
        let ours = parse_f64(s.as_bytes());
        match (std, ours) {
            (Ok(a), Ok(b)) => assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "{s}: {a} vs {b}"),
            (Ok(a), Err(NumError::Range)) => assert!(a.is_infinite(), "{s}"),
            (Err(_), Err(_)) => {}
            (a, b) => panic!("{s}: std {a:?}, ours {b:?}"),
        }
    }

    fn same_f32(s: &str) {
        let std = s.parse::<f32>();
        let ours = parse_f32(s.as_bytes());
        match (std, ours) {
            (Ok(a), Ok(b)) => assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "{s}: {a} vs {b}"),
            (Ok(a), Err(NumError::Range)) => assert!(a.is_infinite(), "{s}"),
            (Err(_), Err(_)) => {}
            (a, b) => panic!("{s}: std {a:?}, ours {b:?}"),
        }
    }

    #[test]
    fn floats_match_std() {
        for s in [
            "0",
            "-0",
            "+0",
            "1",
            "1.",
            ".5",
            "-.5e3",
            "1e22",
            "1e23",
            "9007199254740993",
            "0.1",
            "0.30000000000000004",
            "1.7976931348623157e308",
            "1.8e308",
            "4.9e-324",
            "2e-324",
            "1e-400",
            "123456789012345678901234567890",
            "0.000000000000000000000000000000001",
            "1e",
            "e5",
            ".",
            "-",
            "+",
            "1.2.3",
            "1e+",
            "1e-5",
            "1E5",
            "nan",
            "-inf",
            "Infinity",
            "infx",
            "0x10",
            "1_000",
            "",
            " 1",
            "3.4028235e38",
            "3.4028236e38",
            "16777217",
            "0.1234567890123456789",
            "00000000000000000000000001.5",
        ] {
            same_f64(s);
            same_f32(s);
        }
    }

    #[test]
    fn range_errors() {
        assert_eq!(parse_f64(b"1e400"), Err(NumError::Range));
        assert_eq!(parse_f32(b"1e39"), Err(NumError::Range));
        assert_eq!(parse_i64(b"9223372036854775808"), Err(NumError::Range));
        assert_eq!(parse_i64(b"-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(parse_u64(b"18446744073709551616"), Err(NumError::Range));
        assert_eq!(parse_u64(b"-1"), Err(NumError::Syntax));
        assert_eq!(parse_i64(b"1.0"), Err(NumError::Syntax));
    }

    proptest::proptest! {
        #[test]
        fn random_decimals_match_std(
            neg in proptest::bool::ANY,
            int in "[0-9]{0,25}",
            frac in proptest::option::of("[0-9]{0,25}"),
            exp in proptest::option::of(-350i32..350),
        ) {
            let mut s = String::new();
            if neg { s.push('-'); }
            s.push_str(&int);
            if let Some(f) = &frac { s.push('.'); s.push_str(f); }
            if let Some(e) = exp { s.push_str(&format!("e{e}")); }
            same_f64(&s);
            same_f32(&s);
        }

        #[test]
        fn shortest_forms_round_trip(bits in proptest::num::u64::ANY, bits32 in proptest::num::u32::ANY) {
            let x = f64::from_bits(bits);
            if x.is_finite() {
                let s = ryu::Buffer::new().format_finite(x).to_string();
                proptest::prop_assert_eq!(parse_f64(s.as_bytes()).map(f64::to_bits), Ok(x.to_bits()));
                same_f64(&format!("{x:e}"));
            }
            let y = f32::from_bits(bits32);
            if y.is_finite() {
                let s = ryu::Buffer::new().format_finite(y).to_string();
                proptest::prop_assert_eq!(parse_f32(s.as_bytes()).map(f32::to_bits), Ok(y.to_bits()));
            }
        }
    }
}
