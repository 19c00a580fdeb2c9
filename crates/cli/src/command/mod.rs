//! The commands, one module each: what a subcommand does from its parsed options to its exit
//! code. Commands use the shared modules below them (planning, measuring, verdicts, outputs);
//! no command uses another's module.
//!
//! - [`run`]: the main run, `hostmax` with no subcommand (the host-max test, judged when spec
//!   options are given).
//! - [`demo`]: `hostmax demo`, the main run on a simulated host.
//! - [`verify`]: `hostmax verify`, the phases a spec needs and one verdict over them.
//! - [`sweep`]: `hostmax sweep`, the IOPS ceiling by load steps.
//! - [`curve`]: `hostmax curve`, the load-latency curve by queue depth.
//! - [`suite`]: `hostmax suite`, the CloudHarmony-style block size x mix matrix with
//!   preconditioning, SNIA steady state, checkpoints and reports.
//! - [`doctor`]: `hostmax doctor`, the host settings that hold a test back.
//! - [`merge`]: `hostmax merge`, one exact fleet report from many hosts' reports.
//! - [`prepare`]: `hostmax prepare`, every block of volumes restored from snapshots read once.

pub mod curve;
pub mod demo;
pub mod doctor;
pub mod merge;
pub mod prepare;
pub mod run;
pub mod suite;
pub mod sweep;
pub mod verify;
