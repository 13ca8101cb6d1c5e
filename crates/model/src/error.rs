//! What can go wrong when a model is read, checked, solved or fitted. Each message is one
//! line that says what is wrong and how to fix it, so the CLI can print it as it is.

/// Why a model could not be read, checked, solved or fitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// The model file is not valid TOML, or has a key or value of the wrong shape.
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line of the offending text.
        line: usize,
        /// 1-based column (in characters) of the offending text.
        column: usize,
        /// What the TOML reader said, on one line.
        message: String,
    },
    /// The model is well-formed but not a valid closed network (a negative demand, an
    /// unknown class, a zero population ...). The text says which item and how to fix it.
    #[error("{0}")]
    Invalid(String),
    /// Exact MVA was asked for a network it cannot solve exactly.
    #[error("{0}")]
    ExactNotApplicable(String),
    /// The approximate solver did not settle within its iteration budget.
    #[error("Schweitzer MVA did not converge in {iterations} iterations (last relative change {change:.2e}); loosen --tolerance")]
    NotConverged {
        /// Iterations run.
        iterations: usize,
        /// Largest relative change of a queue length in the last iteration.
        change: f64,
    },
    /// Measurements that cannot support the fit asked for (too few, flat, no N = 1 region).
    #[error("{0}")]
    Unfittable(String),
    /// A CSV text could not be read.
    #[error("line {line}: {message}")]
    Csv {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

impl Error {
    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::Invalid(message.into())
    }
}
