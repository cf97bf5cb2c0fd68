//! Property suites for the theorems catalogued in `normoracle::theorems`.
