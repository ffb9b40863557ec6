//! The runtime layer: the CUDA driver, the context, streams, device memory, vectors and
//! modules. It knows nothing of matrices or plans.

pub(crate) mod context;
pub mod driver;
pub(crate) mod memory;
pub(crate) mod module;
pub(crate) mod positions;
pub(crate) mod stream;
pub(crate) mod vector;
