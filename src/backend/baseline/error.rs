//! The baseline compiler's error.

backend_error!(
    /// A function the baseline compiler cannot compile (today: stack slots aligned beyond 16
    /// bytes).
    BaselineError,
    "baseline"
);
