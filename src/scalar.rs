//! The element types spgpu computes with: [`f32`] and [`f64`].

use std::fmt::{Debug, Display};
use std::iter::Sum;
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

mod private {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// A floating-point element type supported by every format, kernel and solver of spgpu.
///
/// The trait is sealed: it is implemented for [`f32`] and [`f64`] only, the two types the
/// GPU kernels are compiled for. Host code that is generic over the element type uses the
/// arithmetic bounds and the conversions below.
///
/// # Example
///
/// ```
/// use spgpu::Scalar;
/// fn norm2<T: Scalar>(v: &[T]) -> f64 {
///     v.iter().map(|x| x.to_f64() * x.to_f64()).sum::<f64>().sqrt()
/// }
/// assert_eq!(norm2(&[3.0f32, 4.0]), 5.0);
/// assert_eq!(<f64 as Scalar>::NAME, "f64");
/// ```
pub trait Scalar:
    private::Sealed
    + Copy
    + Default
    + Debug
    + Display
    + PartialEq
    + PartialOrd
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + Sum
    + cust::memory::DeviceCopy
    + std::str::FromStr
{
    /// The type's name as it appears in kernel names and reports: `"f32"` or `"f64"`.
    const NAME: &'static str;
    /// Size of one element in bytes.
    const BYTES: usize;
    /// Additive identity.
    const ZERO: Self;
    /// Multiplicative identity.
    const ONE: Self;

    /// Widens (or keeps) the value as an `f64`; exact for both types.
    fn to_f64(self) -> f64;
    /// Converts from `f64`, rounding to nearest for `f32`.
    fn from_f64(v: f64) -> Self;
    /// Whether the value is neither infinite nor NaN.
    fn is_finite_value(self) -> bool {
        self.to_f64().is_finite()
    }
    /// Absolute value.
    fn abs_value(self) -> Self;
    /// Square root.
    fn sqrt_value(self) -> Self;
}

impl Scalar for f32 {
    const NAME: &'static str = "f32";
    const BYTES: usize = 4;
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline]
    fn abs_value(self) -> Self {
        self.abs()
    }
    #[inline]
    fn sqrt_value(self) -> Self {
        self.sqrt()
    }
}

impl Scalar for f64 {
    const NAME: &'static str = "f64";
    const BYTES: usize = 8;
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline]
    fn abs_value(self) -> Self {
        self.abs()
    }
    #[inline]
    fn sqrt_value(self) -> Self {
        self.sqrt()
    }
}
