//! The agent, the manager and the deployer together in one process on the sandbox. The
//! suites are in `tests/` (with their shared set-up in `tests/support/`), the end-to-end
//! benchmark in `benches/`; the library itself is empty.
