//! The storage layer: CSR, ELL and SELL layouts on the device, row blocks, hot columns,
//! column parts and narrow columns, and the maps that move new values into them
//! ([`values`]). It carries out a plan and launches through [`kernels`](crate::gpu::kernels).

pub mod balance;
pub(crate) mod csr;
pub(crate) mod ell;
pub mod hot;
pub mod narrow;
pub mod sell;
pub mod split;
pub mod values;
