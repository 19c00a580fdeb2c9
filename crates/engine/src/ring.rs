//! Unsafe io_uring code.
