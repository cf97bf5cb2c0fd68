//! The papers' theorems: statements, sources and exact checkers, and the catalogue the CLI lists.
